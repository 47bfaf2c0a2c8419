"""The model-selection rules, computed once, on record arrays: DomainBed's three and ours.

This module is the one implementation of the methods that :mod:`dganalysis.records.selection` names and documents
(DomainBed's ``model_selection.py``, Gulrajani & Lopez-Paz 2021, Sec. 3; Yu et al. 2024 for several test domains;
Ye et al. 2022 for OoD validation). It runs on :class:`Records`: a sweep's checkpoints as arrays, built either from
the columnar index (:func:`gather`, what ``dganalysis collect`` and ``dganalysis audit`` use) or from a tidy frame
(:func:`from_frame`, what :func:`dganalysis.records.select` does with the frame it is given).

A *record* is one (job, step); its accuracies are one row of a matrix per *layout* (the (domain, split, role) list
its rows follow, in the frame's row order). A method is (i) which of a layout's columns make the score, (ii) which
records are candidates (every checkpoint, or each job's last), (iii) whether it chooses per config or per
(config, test domain); leave-one-out is the special case whose score reads other jobs' records (the *helpers*).
A score is reduced with DomainBed's own arithmetic: ``np.mean`` along the last axis of the matrix of a layout's
columns in row order (which sums as a 1-D ``np.mean`` of the same values does); leave-one-out's
``np.sum(...) / n`` over the held-out domains in environment order, several helpers of one domain first averaged
as pandas' grouped mean averages them. The argmax (:func:`argmax`) breaks ties as DomainBed's ``collect_results``
does: the highest ``hparams_seed``, then the earliest step, then the smallest job id; ``tie_tol`` > 0 widens a tie.

``tests/records/test_selection.py`` and ``tests/records/test_rules.py`` compare the output, column for column and
bit for bit, with a tidy-frame computation of the same rules kept in the tests as an oracle, and
``tests/reference/test_domainbed_selection.py`` with DomainBed's own ``collect_results``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dganalysis.records.selection_methods import BUILT_IN, OUTPUT
from dganalysis.validation import ConfigError

if TYPE_CHECKING:
    import pandas as pd

#: the fields of a meta tuple, in order (the index's metadata: :data:`dganalysis.records.index.META_FIELDS`)
META_FIELDS = ("dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting", "hparams_seed",
               "trial_seed", "hparams")
_DS, _ALG, _TRAIN, _TEST, _VAL, _SETTING, _HSEED, _TSEED, _HPARAMS = range(9)


@dataclass
class Records:
    """A sweep's checkpoints as arrays, with metas and layouts in tables.

    Jobs are in the order of their first appearance and each holds at least one record; records of job ``j`` are
    ``job_start[j]:job_start[j + 1]``; record ``r``'s accuracies are ``acc[rec_off[r] : rec_off[r + 1]]`` in the
    order of ``layouts[rec_layout[r]]`` (tuples (domain, split, role)); its meta (a tuple of :data:`META_FIELDS`) is
    ``metas[rec_meta[r]]``. A job's config is its first record's meta, as select() takes it from a job's first row.
    ``env_order`` (per dataset, domain → environment index) and ``job_rank`` (each job's place in the order of job
    ids) are given by :func:`from_frame`, which takes them from the frame; otherwise they follow from the records.
    """

    job_names: list[Any]
    job_start: np.ndarray
    metas: list[tuple]
    layouts: list[tuple[tuple[str, str, str], ...]]
    rec_meta: np.ndarray
    rec_layout: np.ndarray
    rec_step: np.ndarray
    rec_off: np.ndarray
    acc: np.ndarray
    env_order: dict[str, dict[str, int]] | None = None
    job_rank: np.ndarray | None = None

    @property
    def rec_job(self) -> np.ndarray:
        """Each record's job."""
        return np.repeat(np.arange(len(self.job_names), dtype=np.int64), np.diff(self.job_start))

    def tables(self) -> _Tables:
        """The lookups the methods share, built once."""
        if getattr(self, "_tables", None) is None:
            self._tables = _Tables(self)
        return self._tables

    @property
    def job_meta(self) -> np.ndarray:
        """The meta of each job's first record: select() takes a job's config from its first row."""
        return self.rec_meta[self.job_start[:-1]]


@dataclass
class Chosen:
    """The selected rows, one per (config, test domain): each row's job, record (the chosen checkpoint), column in
    the record's layout that names its test domain (-1: none, for a user scorer's domain), test domain (a code of
    :attr:`_Tables.domains`), reported accuracy (the test domain's 'in' split) and selection score."""

    job: np.ndarray
    record: np.ndarray
    col: np.ndarray
    domain: np.ndarray
    acc: np.ndarray
    val: np.ndarray


def ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(a, b)`` for each pair ``(starts[i], stops[i])``, vectorized (one cumulative sum): the
    rows of several records, the records of several jobs."""
    lens = stops - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lens > 0
    starts, lens = starts[keep], lens[keep]
    steps = np.ones(total, dtype=np.int64)
    steps[0] = starts[0]
    ends = np.cumsum(lens)[:-1]
    steps[ends] = starts[1:] - (starts[:-1] + lens[:-1] - 1)
    return np.cumsum(steps)


def _intern(table: list, ids: dict, value: Any) -> int:
    i = ids.get(value)
    if i is None:
        i = ids[value] = len(table)
        table.append(value)
    return i


# ---------------------------------------------------------------- records from the index


def gather(chunks: Sequence[tuple[Any, Sequence[tuple[int, int, str]]]]) -> Records | None:
    """The records of ``chunks`` — (index, chosen jobs as (first record, end record, job id)) per store, as
    :func:`dganalysis.records.index.choose` chooses them — or None when a (job, step) or a layout's (domain, split)
    repeats (load drops such duplicate rows: the caller builds the frame, whose records then hold none)."""
    metas: list[tuple] = []
    meta_ids: dict[tuple, int] = {}
    layouts: list[tuple] = []
    layout_ids: dict[tuple, int] = {}
    names: list[str] = []
    lens, rec_meta, rec_layout, rec_step, accs, acc_lens = [], [], [], [], [], []
    for idx, chosen in chunks:
        chosen = [c for c in chosen if c[1] > c[0]]
        if not chosen:
            continue
        mmap = np.array([_intern(metas, meta_ids, tuple(m)) for m in idx.metas], dtype=np.int64)
        lmap = np.array([_intern(layouts, layout_ids, tuple(tuple(r) for r in lay)) for lay in idx.layouts],
                        dtype=np.int64)
        a = np.array([c[0] for c in chosen], dtype=np.int64)
        b = np.array([c[1] for c in chosen], dtype=np.int64)
        names.extend(c[2] for c in chosen)
        lens.append(b - a)
        off = idx.rec_offsets()
        if len(chosen) == len(idx.jobs) and int((b - a).sum()) == len(idx.rec_step):  # every record, in order
            recs = None
            accs.append(idx.acc)
        else:
            recs = ranges(a, b)
            accs.append(idx.acc[ranges(off[recs], off[recs + 1])])

        def pick(x: np.ndarray, recs: np.ndarray | None = recs) -> np.ndarray:
            return x if recs is None else x[recs]

        rec_meta.append(mmap[pick(idx.rec_meta)])
        rec_layout.append(lmap[pick(idx.rec_layout)])
        rec_step.append(pick(idx.rec_step).astype(np.int64, copy=False))
        acc_lens.append(pick(np.diff(off)))
    if not names:
        return None
    if any(_repeats(lay) for lay in layouts):
        return None
    n = np.concatenate(lens)
    job_start = np.concatenate([[0], np.cumsum(n)]).astype(np.int64)
    steps = np.concatenate(rec_step)
    rec_job = np.repeat(np.arange(len(names), dtype=np.int64), n)
    order = np.lexsort((steps, rec_job))
    if len(order) > 1 and np.any((rec_job[order][1:] == rec_job[order][:-1]) & (steps[order][1:] == steps[order][:-1])):
        return None
    rec_off = np.concatenate([[0], np.cumsum(np.concatenate(acc_lens))]).astype(np.int64)
    return Records(names, job_start, metas, layouts, np.concatenate(rec_meta), np.concatenate(rec_layout), steps,
                   rec_off, np.concatenate(accs) if len(accs) > 1 else accs[0])


def _repeats(layout: Sequence[Sequence[str]]) -> bool:
    """Whether a layout names a (domain, split) twice."""
    return len({(r[0], r[1]) for r in layout}) < len(layout)


# ---------------------------------------------------------------- records from a tidy frame


@dataclass
class FrameRecords:
    """:func:`from_frame`'s result: the frame's :class:`Records`, the frame position of each of their rows
    (``rows[rec_off[r] + k]``: row ``k`` of record ``r``) and of each job's first row (``job_rows``)."""

    records: Records
    rows: np.ndarray
    job_rows: np.ndarray


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """The position of each code's first appearance, for codes numbered in order of first appearance."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    top = np.maximum.accumulate(codes)
    return np.flatnonzero(np.concatenate([[True], top[1:] > top[:-1]]))


def from_frame(df: pd.DataFrame) -> FrameRecords:
    """The records of a tidy frame (the columns of :func:`dganalysis.records.load`, ``hparams`` and
    ``setting`` included): one record per (job_id, step), its rows in frame order; jobs in order of first
    appearance. ValueError when a (job_id, step, domain, split) repeats (:func:`~dganalysis.records.load`
    keeps the last record of a step recorded twice; the rules need one row each)."""
    import pandas as pd

    job_codes, job_names = pd.factorize(df["job_id"], use_na_sentinel=False)
    job_codes = job_codes.astype(np.int64, copy=False)
    steps = df["step"].to_numpy()
    if steps.dtype.kind in "iu" and len(steps):
        lo, hi = int(steps.min()), int(steps.max())
        span = hi - lo + 1
        if span * max(len(job_names), 1) < 2**62:
            key = job_codes * span + (steps.astype(np.int64) - lo)
            rec_codes = pd.factorize(key)[0].astype(np.int64)
        else:
            rec_codes = df.groupby([job_codes, steps], sort=False).ngroup().to_numpy(np.int64)
    else:
        rec_codes = df.groupby([job_codes, steps], sort=False).ngroup().to_numpy(np.int64)
    first = _first_rows(rec_codes)  # each record's first row, records in order of appearance
    rec_job = job_codes[first]
    by_job = np.argsort(rec_job, kind="stable")  # records grouped by job, in order of appearance within a job
    new_rec = np.empty(len(first), dtype=np.int64)
    new_rec[by_job] = np.arange(len(first))
    row_rec = new_rec[rec_codes]
    if len(row_rec) > 1 and np.any(row_rec[1:] < row_rec[:-1]):
        rows = np.argsort(row_rec, kind="stable")  # rows grouped by record, frame order within a record
        row_rec = row_rec[rows]
    else:
        rows = np.arange(len(row_rec), dtype=np.int64)
    n_rec = len(first)
    size = np.bincount(row_rec, minlength=n_rec).astype(np.int64)
    rec_off = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    rec_step = steps[first][by_job]
    # each row's (domain, split, role) as one code; a record's layout is the sequence of its rows' codes
    parts = [pd.factorize(df[c], use_na_sentinel=False) for c in ("domain", "split", "role")]
    kind = np.zeros(len(df), dtype=np.int64)
    for codes, uniques in parts:
        kind = kind * len(uniques) + codes
    kind = kind[rows]
    n_kinds = max(len(parts[0][1]) * len(parts[1][1]) * len(parts[2][1]), 1)
    values = [list(u) for _, u in parts]

    def triple(k: int) -> tuple:
        k, r = divmod(int(k), len(values[2]))
        d, s = divmod(k, len(values[1]))
        return values[0][d], values[1][s], values[2][r]

    layouts: list[tuple] = []
    rec_layout = np.empty(n_rec, dtype=np.int64)
    for n in np.unique(size).tolist():
        recs = np.flatnonzero(size == n)
        mat = kind[rec_off[recs][:, None] + np.arange(n)[None, :]]
        if n_kinds ** n < 2**62:
            code = np.zeros(len(recs), dtype=np.int64)
            for i in range(n):
                code = code * n_kinds + mat[:, i]
            ids = pd.factorize(code)[0]
            uniq = mat[_first_rows(ids.astype(np.int64))]
        else:
            uniq, ids = np.unique(mat, axis=0, return_inverse=True)
        for row in uniq:
            lay = tuple(triple(k) for k in row)
            if _repeats(lay):
                raise ValueError(f"the frame holds a (job_id, step, domain, split) more than once (domain "
                                 f"{lay[0][0]!r} …); expected one row each, as load gives (it keeps the last record "
                                 f"of a step recorded twice)")
            layouts.append(lay)
        rec_layout[recs] = np.asarray(ids).reshape(-1) + (len(layouts) - len(uniq))
    job_rows = _first_rows(job_codes)
    metas: list[tuple] = []
    meta_ids: dict[tuple, int] = {}
    columns = [df[c].iloc[job_rows].tolist() for c in META_FIELDS]
    job_meta = np.array([_intern(metas, meta_ids, m) for m in zip(*columns)], dtype=np.int64)
    job_start = np.concatenate([[0], np.cumsum(np.bincount(rec_job, minlength=len(job_names)))]).astype(np.int64)
    # per dataset, its domains in order of first appearance among the frame's rows (records list them in env order)
    ds_codes, ds_names = pd.factorize(df["dataset"], use_na_sentinel=False)
    pair = ds_codes.astype(np.int64) * len(values[0]) + parts[0][0]
    env_order: dict[Any, dict[Any, int]] = {}
    for p in pd.unique(pair).tolist():
        envs = env_order.setdefault(ds_names[p // len(values[0])], {})
        envs.setdefault(values[0][p % len(values[0])], len(envs))
    order = pd.Series(job_names).sort_values(kind="stable").index.to_numpy()
    job_rank = np.empty(len(job_names), dtype=np.int64)
    job_rank[order] = np.arange(len(job_names))
    records = Records(list(job_names), job_start, metas, layouts, job_meta[rec_job[by_job]], rec_layout,
                      rec_step.astype(np.int64, copy=False), rec_off, df["acc"].to_numpy(dtype=np.float64, na_value=np.nan)[rows],
                      env_order, job_rank)
    return FrameRecords(records, rows, job_rows)


# ---------------------------------------------------------------- the argmax with DomainBed's ties


def argmax(group: np.ndarray, val: np.ndarray, hseed: np.ndarray, step: np.ndarray, job_rank: np.ndarray,
           tie_tol: float) -> np.ndarray:
    """Positions of the winner of each group: the highest non-NaN ``val``; ties (within ``tie_tol`` of the group's
    best) go to the highest hparams_seed (DomainBed's ``hparams_accs`` sorts runs by ascending seed, stable-sorts by
    score and reverses), then the earliest step (its ``argmax``, Python's ``max``: the first maximum), then the
    smallest job id."""
    ok = np.flatnonzero(~np.isnan(val))
    if not len(ok):
        return ok
    best = np.full(int(group.max()) + 1, -np.inf)
    np.maximum.at(best, group[ok], val[ok])
    keep = ok[val[ok] >= best[group[ok]] - tie_tol]
    order = keep[np.lexsort((job_rank[keep], step[keep], -hseed[keep], group[keep]))]
    first = np.ones(len(order), dtype=bool)
    first[1:] = group[order][1:] != group[order][:-1]
    return order[first]


class _Tables:
    """Per-layout column lookups and per-job keys shared by the methods."""

    def __init__(self, rec: Records) -> None:
        self.rec = rec
        self.domains: list[str] = sorted({d for lay in rec.layouts for d, _, _ in lay})
        self.domain_code = {d: i for i, d in enumerate(self.domains)}
        dcode = self.domain_code
        n_lay, n_dom = len(rec.layouts), len(self.domains)
        self.in_col = np.full((n_lay, n_dom), -1, dtype=np.int64)  # the 'in' row of a domain, any role
        self.test_in = []  # per layout: [(domain code, col)] of the test domains' 'in' rows, in row order
        self.test_doms = []  # per layout: [(domain code, in col, out col)] of test domains, first-appearance order
        self.train_out = []  # per layout: cols of the training domains' 'out' rows
        self.val_cols = []  # per layout: cols of the validation domains' 'out' rows ('in' for a domain without one)
        for li, lay in enumerate(rec.layouts):
            seen: dict[str, list[int]] = {}
            val_out = {d for d, s, role in lay if role == "val" and s == "out"}
            for k, (d, s, role) in enumerate(lay):
                if s == "in":
                    self.in_col[li, dcode[d]] = k
                if role == "test":
                    cols = seen.setdefault(d, [-1, -1])
                    if s in ("in", "out"):
                        cols[s == "out"] = k
            self.test_in.append([(dcode[d], k) for k, (d, s, role) in enumerate(lay) if role == "test" and s == "in"])
            self.test_doms.append([(dcode[d], c[0], c[1]) for d, c in seen.items()])
            self.train_out.append([k for k, (_, s, role) in enumerate(lay) if role == "train" and s == "out"])
            self.val_cols.append([k for k, (d, s, role) in enumerate(lay)
                                  if role == "val" and (s == "out" or d not in val_out)])
        self.has_test_in = np.array([bool(x) for x in self.test_in], dtype=bool)
        self.rec_job = rec.rec_job
        job_meta = rec.job_meta
        configs: list[tuple] = []
        cfg_ids: dict[tuple, int] = {}
        cfg_of_meta = np.array([_intern(configs, cfg_ids, (*m[:_HSEED], m[_TSEED])) for m in rec.metas],
                               dtype=np.int64)
        self.job_cfg = cfg_of_meta[job_meta]
        self.job_hseed = np.array([int(m[_HSEED]) for m in rec.metas], dtype=np.int64)[job_meta]
        draws: dict[tuple, int] = {}  # per-draw configs (select(..., per_draw=True)): the config and the hparams seed
        self.job_draw = np.array([draws.setdefault((*m[:_HSEED], m[_TSEED], m[_HSEED]), len(draws))
                                  for m in rec.metas], dtype=np.int64)[job_meta]
        if rec.job_rank is not None:
            self.job_rank = rec.job_rank
        else:
            self.job_rank = np.empty(len(rec.job_names), dtype=np.int64)
            self.job_rank[np.argsort(np.array(rec.job_names), kind="stable")] = np.arange(len(rec.job_names))
        self._scores: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def scores(self, method: str) -> tuple[np.ndarray, np.ndarray]:
        """(candidate records, their scores) of a method that chooses per config, computed once: the selection of
        each config and of each hparams draw share them."""
        if method not in self._scores:
            if method == "leave_one_out":
                self._scores[method] = _leave_one_out(self)
            else:
                cols, last = {"training_domain": (self.train_out, False),
                              "training_domain_last": (self.train_out, True),
                              "oracle_pooled": ([[out for _, _, out in doms] for doms in self.test_doms], True),
                              "ood_validation": (self.val_cols, False)}[method]
                self._scores[method] = self.mean_scores(cols, self.last_records() if last else None)
        return self._scores[method]

    def last_records(self) -> np.ndarray:
        """Each job's record at its last step (select()'s methods without early stopping)."""
        rec = self.rec
        last = np.maximum.reduceat(rec.rec_step, rec.job_start[:-1])
        return np.flatnonzero(rec.rec_step == last[self.rec_job])

    def layout_records(self, recs: np.ndarray | None = None) -> list[tuple[int, np.ndarray]]:
        """(layout, its records) for the records ``recs`` (default: all), each layout's in record order."""
        lay = self.rec.rec_layout if recs is None else self.rec.rec_layout[recs]
        order = np.argsort(lay, kind="stable")
        bounds = np.searchsorted(lay[order], np.arange(len(self.rec.layouts) + 1))
        if recs is not None:
            order = recs[order]
        return [(li, order[bounds[li]:bounds[li + 1]]) for li in range(len(self.rec.layouts))
                if bounds[li + 1] > bounds[li]]

    def values(self, recs: np.ndarray, cols: Sequence[int]) -> np.ndarray:
        """The (len(recs), len(cols)) matrix of accuracies (C order); NaN for a column -1 (a row the layout lacks)."""
        cols = np.asarray(cols, dtype=np.int64)
        out = self.rec.acc[self.rec.rec_off[recs][:, None] + np.maximum(cols, 0)[None, :]]
        if (cols < 0).any():
            out[:, cols < 0] = np.nan
        return out

    def mean_scores(self, cols_of: list[list[int]], recs: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(records, scores): each of ``recs`` (default: all) that holds test 'in' rows and a column of
        ``cols_of[layout]``, scored by ``np.mean`` of those columns in row order."""
        out_recs, out_vals = [], []
        for li, r in self.layout_records(recs):
            cols = cols_of[li]
            if not cols or not self.test_in[li]:
                continue
            out_recs.append(r)
            out_vals.append(np.mean(self.values(r, cols), axis=1))
        if not out_recs:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(out_recs), np.concatenate(out_vals)


# ---------------------------------------------------------------- leave-one-domain-out


def _env_order(rec: Records) -> dict[str, dict[str, int]]:
    """Domain → environment index per dataset: the order of first appearance among the rows (records list their
    domains in environment order)."""
    if rec.env_order is not None:
        return rec.env_order
    datasets: list[str] = []
    ds_ids: dict[str, int] = {}
    ds_of_meta = np.array([_intern(datasets, ds_ids, m[_DS]) for m in rec.metas], dtype=np.int64)
    pair = ds_of_meta[rec.rec_meta] * len(rec.layouts) + rec.rec_layout
    uniq, first = np.unique(pair, return_index=True)
    order: dict[str, dict[str, int]] = {}
    for code in uniq[np.argsort(first, kind="stable")].tolist():
        envs = order.setdefault(datasets[code // len(rec.layouts)], {})
        for d, _, _ in rec.layouts[code % len(rec.layouts)]:
            envs.setdefault(d, len(envs))
    return order


def record_domain_orders(rec: Records) -> dict[str, list[str]]:
    """Each dataset's domains in environment order: :func:`dganalysis.records.read.domain_orders` of the tidy frame."""
    return {ds: list(envs) for ds, envs in _env_order(rec).items()}


def _leave_one_out(t: _Tables) -> tuple[np.ndarray, np.ndarray]:
    """(records, scores) of leave-one-domain-out cross-validation (DomainBed's ``LeaveOneOutSelectionMethod``): for
    a job with training domains T (at least two), each d in T needs a *helper* job of the same dataset, algorithm,
    setting, trial_seed and hparams_seed trained on T \\ {d} holding d out (a test or val domain); the score of the
    job's record at a step is the mean over d, in environment order, of the helpers' 'in' accuracy on d at that step
    (``np.sum(...) / n``, as DomainBed). Several helpers for one d are averaged first (pandas' grouped mean); steps
    where a helper is missing are not candidates."""
    rec = t.rec
    empty = np.zeros(0, dtype=np.int64), np.zeros(0)
    if not len(rec.job_names):
        return empty
    order = _env_order(rec)
    dcode = t.domain_code
    n_dom = len(t.domains)
    # domain sets as ids: a job's training set, the set left when one domain is held out, a job's held-out set
    sets: list[frozenset] = []
    set_ids: dict[frozenset, int] = {}
    split_cache: dict[str, int] = {}

    def set_id(joined: str) -> int:
        i = split_cache.get(joined)
        if i is None:
            i = split_cache[joined] = _intern(sets, set_ids, frozenset(d for d in str(joined).split(",") if d))
        return i

    families: list[tuple] = []
    fam_ids: dict[tuple, int] = {}
    meta_fam = np.array([_intern(families, fam_ids, (m[_DS], m[_ALG], m[_SETTING], m[_TSEED], m[_HSEED]))
                         for m in rec.metas], dtype=np.int64)
    meta_train = np.array([set_id(m[_TRAIN]) for m in rec.metas], dtype=np.int64)
    meta_held = np.array([_intern(sets, set_ids, sets[set_id(m[_TEST])] | sets[set_id(m[_VAL])]) for m in rec.metas],
                         dtype=np.int64)
    # per meta: its queries (held-out domain code, environment index, id of the training set without it)
    q_of_meta: list[list[tuple[int, int, int]]] = []
    for m, train in zip(rec.metas, meta_train.tolist()):
        doms = sets[train]
        envs = order.get(m[_DS], {})
        if len(doms) < 2 or not all(d in envs and d in dcode for d in doms):
            q_of_meta.append([])
            continue
        q_of_meta.append([(dcode[d], envs[d], _intern(sets, set_ids, doms - {d}))
                          for d in sorted(doms, key=envs.__getitem__)])
    held_tab = np.zeros((len(sets), max(n_dom, 1)), dtype=bool)
    for i, s in enumerate(sets):
        held_tab[i, [dcode[d] for d in s if d in dcode]] = True
    job_meta = rec.job_meta
    fam, train, held = meta_fam[job_meta], meta_train[job_meta], meta_held[job_meta]
    n_q = np.array([len(q) for q in q_of_meta], dtype=np.int64)[job_meta]
    n_train = n_q  # a job asks one query per training domain
    if not n_q.sum():
        return empty
    flat = [q for qs in q_of_meta for q in qs]
    q_start = np.concatenate([[0], np.cumsum([len(q) for q in q_of_meta])]).astype(np.int64)
    q_flat = np.array(flat, dtype=np.int64).reshape(-1, 3)
    q_job = np.repeat(np.arange(len(job_meta), dtype=np.int64), n_q)
    q_rows = ranges(q_start[job_meta], q_start[job_meta + 1])
    q_dom, q_env, q_sub = q_flat[q_rows, 0], q_flat[q_rows, 1], q_flat[q_rows, 2]
    # helpers: jobs of the same family whose training set is the query's, holding its domain out
    n_sets = len(sets)
    h_key = fam * n_sets + train
    h_order = np.argsort(h_key, kind="stable")
    h_sorted = h_key[h_order]
    q_key = fam[q_job] * n_sets + q_sub
    lo = np.searchsorted(h_sorted, q_key, side="left")
    hi = np.searchsorted(h_sorted, q_key, side="right")
    q_of = np.repeat(np.arange(len(q_job)), hi - lo)
    helper = h_order[ranges(lo, hi)]
    ok = held_tab[held[helper], q_dom[q_of]]
    q_of, helper = q_of[ok], helper[ok]
    if not len(q_of):
        return empty
    # every record of each pair's helper that holds the held-out domain's 'in' row
    counts = rec.job_start[helper + 1] - rec.job_start[helper]
    hrec = ranges(rec.job_start[helper], rec.job_start[helper + 1])
    pj, pdom, pe, ph = (np.repeat(x, counts) for x in (q_job[q_of], q_dom[q_of], q_env[q_of], helper))
    col = t.in_col[rec.rec_layout[hrec], pdom]
    keep = col >= 0
    hrec, pj, pe, ph, col = hrec[keep], pj[keep], pe[keep], ph[keep], col[keep]
    step = rec.rec_step[hrec]
    acc = rec.acc[rec.rec_off[hrec] + col]
    o = np.lexsort((ph, pe, step, pj))
    pj, pe, step, acc = pj[o], pe[o], step[o], acc[o]
    same = np.zeros(len(pj), dtype=bool)
    same[1:] = (pj[1:] == pj[:-1]) & (step[1:] == step[:-1]) & (pe[1:] == pe[:-1])
    if same.any():  # several helpers hold one domain out: their mean, as pandas' grouped mean computes it
        import pandas as pd

        first = ~same
        gid = np.cumsum(first) - 1
        acc = pd.Series(acc).groupby(gid, sort=False).mean().to_numpy()
        pj, pe, step = pj[first], pe[first], step[first]
    new = np.ones(len(pj), dtype=bool)
    new[1:] = (pj[1:] != pj[:-1]) | (step[1:] != step[:-1])
    starts = np.flatnonzero(new)
    size = np.diff(np.append(starts, len(pj)))
    g_job, g_step = pj[starts], step[starts]
    complete = size == n_train[g_job]  # every training domain has its helper's record at this step
    score = np.full(len(starts), np.nan)
    for n in np.unique(size[complete]).tolist():
        g = np.flatnonzero(complete & (size == n))
        mat = acc[starts[g][:, None] + np.arange(n)[None, :]]
        score[g] = np.sum(mat, axis=1) / n  # DomainBed: np.sum(val_accs) / (n_envs - 1), in env order
    g_job, g_step, score = g_job[complete], g_step[complete], score[complete]
    # the candidate is the job's own record at that step, which must hold test 'in' rows
    r = record_at(rec, g_job, g_step)
    ok = r >= 0
    ok[ok] = t.has_test_in[rec.rec_layout[r[ok]]]
    return r[ok], score[ok]


def record_at(rec: Records, job: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The record of each ``job`` at its ``step`` (-1 where it has none); a job's steps do not repeat."""
    out = np.full(len(job), -1, dtype=np.int64)
    if not len(job) or not len(rec.rec_step):
        return out
    lo = int(min(rec.rec_step.min(), step.min()))
    span = int(max(rec.rec_step.max(), step.max())) - lo + 1
    if span * len(rec.job_names) >= 2**62:  # keys would overflow: one search per job
        for i in range(len(job)):
            a, b = rec.job_start[job[i]], rec.job_start[job[i] + 1]
            hit = np.flatnonzero(rec.rec_step[a:b] == step[i])
            out[i] = a + hit[0] if len(hit) else -1
        return out
    keys = rec.rec_job * span + (rec.rec_step - lo)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    q = job * span + (step - lo)
    pos = np.minimum(np.searchsorted(sorted_keys, q), len(sorted_keys) - 1)
    hit = sorted_keys[pos] == q
    out[hit] = order[pos[hit]]
    return out


# ---------------------------------------------------------------- the selections


def choose(rec: Records, method: str, tie_tol: float = 0.0, per_draw: bool = False) -> Chosen:
    """The rows ``method`` (one of :data:`~dganalysis.records.selection_methods.BUILT_IN`) selects: per config
    (``per_draw``: per config and hparams seed)
    the winning checkpoint's test domains, or for the oracle the winner of each (config, test domain)."""
    if method not in BUILT_IN:
        raise ConfigError(f"choose: unknown method {method!r}; expected one of {list(BUILT_IN)}")
    t = rec.tables()
    cfg = t.job_draw if per_draw else t.job_cfg
    if method == "oracle":
        r_last = t.last_records()  # one per job (steps do not repeat)
        parts: list[list[np.ndarray]] = [[], [], [], [], []]  # record, domain, col, score, acc
        lay_last = rec.rec_layout[r_last]
        for li in np.unique(lay_last).tolist():
            r = r_last[lay_last == li]
            for dom, cin, cout in t.test_doms[li]:
                for part, x in zip(parts, (r, np.full(len(r), dom, dtype=np.int64),
                                           np.full(len(r), cin if cin >= 0 else cout, dtype=np.int64),
                                           t.values(r, [cout])[:, 0], t.values(r, [cin])[:, 0])):
                    part.append(x)
        if not parts[0]:
            return _empty()
        r, dom, col, val, acc = (np.concatenate(p) for p in parts)
        job = t.rec_job[r]
        win = argmax(cfg[job] * len(t.domains) + dom, val, t.job_hseed[job], rec.rec_step[r], t.job_rank[job],
                     tie_tol)
        return Chosen(job[win], r[win], col[win], dom[win], acc[win], val[win])
    r, val = t.scores(method)
    job = t.rec_job[r]
    win = argmax(cfg[job], val, t.job_hseed[job], rec.rec_step[r], t.job_rank[job], tie_tol)
    return _test_rows(t, r[win], val[win])


def choose_scored(rec: Records, job: np.ndarray, step: np.ndarray, val: np.ndarray, tie_tol: float = 0.0,
                  per_draw: bool = False, domain: Sequence[Any] | None = None,
                  acc: np.ndarray | None = None) -> Chosen:
    """The argmax of :func:`choose` over candidates scored elsewhere (a scorer registered with
    :func:`dganalysis.records.selection_methods.register_method`): ``job`` (indexes of ``rec``'s jobs, -1 for none),
    ``step`` and score ``val`` per candidate; with ``domain`` (and its accuracy ``acc``) the choice is per (config,
    test domain), else the candidate must be a record holding test 'in' rows and every one of them is reported."""
    t = rec.tables()
    cfg = t.job_draw if per_draw else t.job_cfg
    job = np.asarray(job, dtype=np.int64)
    r = np.full(len(job), -1, dtype=np.int64)
    known = job >= 0
    r[known] = record_at(rec, job[known], np.asarray(step, dtype=np.int64)[known])
    val = np.asarray(val, dtype=np.float64)
    if domain is None:
        ok = r >= 0
        ok[ok] = t.has_test_in[rec.rec_layout[r[ok]]]
        r, val = r[ok], val[ok]
        j = t.rec_job[r]
        win = argmax(cfg[j], val, t.job_hseed[j], rec.rec_step[r], t.job_rank[j], tie_tol)
        return _test_rows(t, r[win], val[win])
    dom = np.array([t.domain_code.get(d, -1) for d in domain], dtype=np.int64)
    ok = (r >= 0) & (dom >= 0)
    r, val, dom, acc = r[ok], val[ok], dom[ok], np.asarray(acc, dtype=np.float64)[ok]
    j = t.rec_job[r]
    win = argmax(cfg[j] * len(t.domains) + dom, val, t.job_hseed[j], rec.rec_step[r], t.job_rank[j], tie_tol)
    return Chosen(j[win], r[win], np.full(len(win), -1, dtype=np.int64), dom[win], acc[win], val[win])


def _test_rows(t: _Tables, records: np.ndarray, val: np.ndarray) -> Chosen:
    """The chosen records' test domains: one row per test 'in' row of each, in row order."""
    rec = t.rec
    n = np.array([len(t.test_in[li]) for li in rec.rec_layout[records].tolist()], dtype=np.int64)
    cells = [c for li in rec.rec_layout[records].tolist() for c in t.test_in[li]]
    if not cells:
        return _empty()
    dom, col = np.array(cells, dtype=np.int64).T
    r = np.repeat(records, n)
    return Chosen(t.rec_job[r], r, col, dom, rec.acc[rec.rec_off[r] + col], np.repeat(val, n))


def _empty() -> Chosen:
    z = np.zeros(0, dtype=np.int64)
    return Chosen(z, z, z, z, np.zeros(0), np.zeros(0))


def select_records(rec: Records, method: str, tie_tol: float = 0.0, per_draw: bool = False) -> dict[str, list]:
    """select()'s output for ``method`` (and ``per_draw``) as columns (:data:`OUTPUT` → list, rows sorted as select()
    sorts them): what the sweep index's selections keep (:mod:`dganalysis.records.indexed`)."""
    c = choose(rec, method, tie_tol, per_draw)
    t = rec.tables()
    job_meta = rec.job_meta
    out = []
    for j, r, dom, acc, val in zip(c.job.tolist(), c.record.tolist(), c.domain.tolist(), c.acc.tolist(),
                                   c.val.tolist()):
        m = rec.metas[int(job_meta[j])]
        out.append((m[_DS], m[_ALG], m[_TRAIN], m[_TEST], m[_VAL], m[_SETTING], int(m[_TSEED]), t.domains[dom],
                    acc, val, int(m[_HSEED]), rec.job_names[j], int(rec.rec_step[r]), m[_HPARAMS], method))
    # select()'s order: the config (then, per draw, the hparams seed) and the domain
    out.sort(key=(lambda row: (*row[:7], row[10], row[7])) if per_draw else (lambda row: row[:8]))
    return {c: [row[i] for row in out] for i, c in enumerate(OUTPUT)}
