"""DomainBed's three model selections computed on the sweep index's record arrays, without the tidy frame.

:func:`dganalysis.selection.select` defines the methods (see its module docstring; DomainBed's
``model_selection.py``, Gulrajani & Lopez-Paz 2021, Sec. 3) on the tidy frame of :func:`dganalysis.results.load`. On a
DomainBed-size sweep (570k records, 4.6M rows) building that frame and grouping it costs more than reading the
records, so :func:`dganalysis.audit.sweep_selections.select_indexed` runs the same rules here, on the index's arrays: each
record's accuracies are one row of a matrix per *layout* (the (domain, split, role) list its rows follow), a score is
a column subset of that matrix reduced with the call :mod:`dganalysis.selection` uses (``np.mean`` along the last
axis; leave-one-out's ``np.sum(...) / n`` over the held-out domains in environment order), and the argmax breaks ties
as select() does (highest ``hparams_seed``, then earliest step, then smallest job id; ``tie_tol`` the same). The
output equals select()'s frame row for row and bit for bit (``tests/audit/test_index_selection.py`` compares them on
simulated sweeps with ties, NaN accuracies, missing leave-one-out helpers and several test domains per run).

This is the same rule computed a second way, for speed, in the manner of :mod:`dganalysis.audit.index` being
:func:`~dganalysis.results.load` computed a second way: where the arrays cannot give select()'s answer cheaply,
:func:`select_records` returns None and the caller selects on the frame. Those cases: a (job, step) recorded twice or
a layout naming a (domain, split) twice (``load`` drops such duplicate rows first), a method other than
:data:`METHODS`, and leave-one-out with several helper runs for one held-out domain (select() averages them with
pandas' grouped mean).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: the methods computed here (DomainBed's three)
METHODS = ("training_domain", "leave_one_out", "oracle")
#: select()'s output columns, in order (dganalysis.selection.OUTPUT; a test pins the equality)
OUTPUT = ("dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting", "trial_seed", "domain",
          "acc", "val_acc", "hparams_seed", "job_id", "step", "hparams", "selection")
# positions in a meta tuple (dganalysis.audit.index._META_FIELDS)
_DS, _ALG, _TRAIN, _TEST, _VAL, _SETTING, _HSEED, _TSEED, _HPARAMS = range(9)


@dataclass
class Records:
    """The chosen jobs' records of one or more indexes, with metas and layouts merged into global tables.

    Jobs are in the frame's order and each holds at least one record; records of job ``j`` are
    ``job_start[j]:job_start[j + 1]``; record ``r``'s accuracies are ``acc[rec_off[r] : rec_off[r + 1]]`` in the
    order of ``layouts[rec_layout[r]]``.
    """

    job_names: list[str]
    job_start: np.ndarray
    metas: list[tuple]
    layouts: list[tuple[tuple[str, str, str], ...]]
    rec_meta: np.ndarray
    rec_layout: np.ndarray
    rec_step: np.ndarray
    rec_off: np.ndarray
    acc: np.ndarray

    @property
    def rec_job(self) -> np.ndarray:
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


def _ranges(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(a, b)`` for each pair."""
    lens = stops - starts
    if not len(lens) or int(lens.sum()) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))


def _intern(table: list, ids: dict, value: tuple) -> int:
    i = ids.get(value)
    if i is None:
        i = ids[value] = len(table)
        table.append(value)
    return i


def gather(chunks: Sequence[tuple[Any, Sequence[tuple[int, int, str]]]]) -> Records | None:
    """The records of ``chunks`` — (index, chosen jobs as (first record, end record, job id)) per store, as
    :func:`dganalysis.audit.index._assemble` chooses them — or None when a (job, step) or a layout's (domain, split)
    repeats (load drops duplicate rows before selecting: the frame decides then)."""
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
            recs = _ranges(a, b)
            accs.append(idx.acc[_ranges(off[recs], off[recs + 1])])
        def pick(x: np.ndarray, recs: np.ndarray | None = recs) -> np.ndarray:
            return x if recs is None else x[recs]

        rec_meta.append(mmap[pick(idx.rec_meta)])
        rec_layout.append(lmap[pick(idx.rec_layout)])
        rec_step.append(pick(idx.rec_step).astype(np.int64, copy=False))
        acc_lens.append(pick(np.diff(off)))
    if not names:
        return None
    for lay in layouts:
        if len({(d, s) for d, s, _ in lay}) < len(lay):
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


# ---------------------------------------------------------------- the argmax with select()'s ties


def _argmax(group: np.ndarray, val: np.ndarray, hseed: np.ndarray, step: np.ndarray, job_rank: np.ndarray,
            tie_tol: float) -> np.ndarray:
    """Positions of the winner of each group: the highest non-NaN ``val``; ties (within ``tie_tol`` of the group's
    best) go to the highest hparams_seed, then the earliest step, then the smallest job id
    (dganalysis.selection._argmax)."""
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
    """Per-layout column lookups and per-job keys shared by the three methods."""

    def __init__(self, rec: Records) -> None:
        self.rec = rec
        self.domains: list[str] = sorted({d for lay in rec.layouts for d, _, _ in lay})
        dcode = {d: i for i, d in enumerate(self.domains)}
        n_lay, n_dom = len(rec.layouts), len(self.domains)
        self.in_col = np.full((n_lay, n_dom), -1, dtype=np.int64)  # the 'in' row of a domain, any role
        self.test_in = []  # per layout: [(domain code, col)] of the test domains' 'in' rows, in row order
        self.test_doms = []  # per layout: [(domain code, in col, out col)] of test domains, first-appearance order
        self.train_out = []  # per layout: cols of the training domains' 'out' rows
        for li, lay in enumerate(rec.layouts):
            seen: dict[str, list[int]] = {}
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
        self.job_rank = np.empty(len(rec.job_names), dtype=np.int64)
        self.job_rank[np.argsort(np.array(rec.job_names), kind="stable")] = np.arange(len(rec.job_names))
        self._scores: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}

    def scores(self, method: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(records, scores) of ``method`` (``training_domain`` or ``leave_one_out``: :func:`_training_domain`,
        :func:`_leave_one_out`), computed once: the selection of each config and of each hparams draw share them."""
        if method not in self._scores:
            self._scores[method] = _training_domain(self) if method == "training_domain" else _leave_one_out(self)
        return self._scores[method]

    def layout_records(self) -> list[tuple[int, np.ndarray]]:
        order = np.argsort(self.rec.rec_layout, kind="stable")
        bounds = np.searchsorted(self.rec.rec_layout[order], np.arange(len(self.rec.layouts) + 1))
        return [(li, order[bounds[li]:bounds[li + 1]]) for li in range(len(self.rec.layouts))
                if bounds[li + 1] > bounds[li]]

    def values(self, recs: np.ndarray, cols: Sequence[int]) -> np.ndarray:
        """The (len(recs), len(cols)) matrix of accuracies (C order, as selection._row_means builds it)."""
        return self.rec.acc[self.rec.rec_off[recs][:, None] + np.asarray(cols, dtype=np.int64)[None, :]]


# ---------------------------------------------------------------- candidate scores per method


def _training_domain(t: _Tables) -> tuple[np.ndarray, np.ndarray]:
    """(records, scores): each record holding test 'in' rows, scored by the mean 'out' accuracy of its training
    domains in row order (selection._training_domain_scores)."""
    recs, vals = [], []
    for li, r in t.layout_records():
        cols = t.train_out[li]
        if not cols or not t.test_in[li]:
            continue
        recs.append(r)
        vals.append(np.mean(t.values(r, cols), axis=1))
    if not recs:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(recs), np.concatenate(vals)


def _env_order(rec: Records) -> dict[str, dict[str, int]]:
    """Domain → environment index per dataset: the order of first appearance among the frame's rows, as
    selection._leave_one_out_scores numbers them (records list their domains in environment order)."""
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


def domain_orders(rec: Records) -> dict[str, list[str]]:
    """Each dataset's domains in environment order: :func:`dganalysis.tables.domain_orders` of the tidy frame."""
    return {ds: list(envs) for ds, envs in _env_order(rec).items()}


def _leave_one_out(t: _Tables) -> tuple[np.ndarray, np.ndarray] | None:
    """(records, scores) of selection._leave_one_out_scores; None when a held-out domain has several helpers (or
    the sweep names more than 30 domains, beyond the bit masks used here)."""
    rec = t.rec
    n_dom = len(t.domains)
    if n_dom > 30 or not len(rec.job_names):
        return None
    order = _env_order(rec)
    dcode = {d: i for i, d in enumerate(t.domains)}
    masks: dict[str, int] = {}

    def mask(joined: str) -> int:
        m = masks.get(joined)
        if m is None:
            m = masks[joined] = sum(1 << dcode[d] for d in {d for d in str(joined).split(",") if d})
        return m

    # per meta: the helper family (dataset, algorithm, setting, trial_seed, hparams_seed), training and held-out sets
    families: list[tuple] = []
    fam_ids: dict[tuple, int] = {}
    datasets = sorted(order)
    env_of = np.full((len(datasets), n_dom), -1, dtype=np.int64)
    for i, ds in enumerate(datasets):
        for d, e in order[ds].items():
            env_of[i, dcode[d]] = e
    ds_index = {ds: i for i, ds in enumerate(datasets)}
    meta_fam = np.array([_intern(families, fam_ids, (m[_DS], m[_ALG], m[_SETTING], m[_TSEED], m[_HSEED]))
                         for m in rec.metas], dtype=np.int64)
    meta_train = np.array([mask(m[_TRAIN]) for m in rec.metas], dtype=np.int64)
    meta_held = np.array([mask(m[_TEST]) | mask(m[_VAL]) for m in rec.metas], dtype=np.int64)
    meta_ds = np.array([ds_index.get(m[_DS], -1) for m in rec.metas], dtype=np.int64)
    job_meta = rec.job_meta
    fam, train, held, ds = (x[job_meta] for x in (meta_fam, meta_train, meta_held, meta_ds))
    n_train = np.zeros(len(job_meta), dtype=np.int64)
    for b in range(n_dom):
        n_train += (train >> b) & 1
    n_train[n_train < 2] = 0
    # queries: (job, held-out domain b) for each training domain b of a job with ≥ 2 of them
    q_job, q_dom = [], []
    for b in range(n_dom):
        j = np.flatnonzero((n_train >= 2) & (((train >> b) & 1) == 1))
        q_job.append(j)
        q_dom.append(np.full(len(j), b, dtype=np.int64))
    q_job, q_dom = np.concatenate(q_job), np.concatenate(q_dom)
    # helpers: jobs of the same family trained on train \ {b} that hold b out
    h_key = fam * (1 << n_dom) + train
    h_order = np.argsort(h_key, kind="stable")
    h_sorted = h_key[h_order]
    q_key = fam[q_job] * (1 << n_dom) + (train[q_job] & ~(np.int64(1) << q_dom))
    lo = np.searchsorted(h_sorted, q_key, side="left")
    hi = np.searchsorted(h_sorted, q_key, side="right")
    cand = _ranges(lo, hi)
    q_of = np.repeat(np.arange(len(q_job)), hi - lo)
    helper = h_order[cand]
    ok = ((held[helper] >> q_dom[q_of]) & 1) == 1
    q_of, helper = q_of[ok], helper[ok]
    if len(q_of) and np.bincount(q_of).max() > 1:
        return None
    if not len(q_of):
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    p_job, p_dom, p_help = q_job[q_of], q_dom[q_of], helper
    p_env = env_of[ds[p_job], p_dom]
    # every record of each pair's helper that holds the held-out domain's 'in' row
    counts = rec.job_start[p_help + 1] - rec.job_start[p_help]
    hrec = _ranges(rec.job_start[p_help], rec.job_start[p_help + 1])
    pj, pd_, pe = (np.repeat(x, counts) for x in (p_job, p_dom, p_env))
    col = t.in_col[rec.rec_layout[hrec], pd_]
    keep = col >= 0
    hrec, pj, pe, col = hrec[keep], pj[keep], pe[keep], col[keep]
    step = rec.rec_step[hrec]
    acc = rec.acc[rec.rec_off[hrec] + col]
    o = np.lexsort((pe, step, pj))
    pj, step, acc = pj[o], step[o], acc[o]
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
    r = _record_at(rec, g_job, g_step)
    ok = r >= 0
    has_test_in = np.array([bool(x) for x in t.test_in], dtype=bool)
    ok[ok] = has_test_in[rec.rec_layout[r[ok]]]
    return r[ok], score[ok]


def _record_at(rec: Records, job: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The record of ``job`` at ``step`` (-1 where it has none); a job's steps do not repeat (gather's rule)."""
    out = np.full(len(job), -1, dtype=np.int64)
    if not len(job):
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


def select_records(rec: Records, method: str, tie_tol: float = 0.0,
                   per_draw: bool = False) -> dict[str, list] | None:
    """select()'s output for ``method`` (and ``per_draw``) as columns (:data:`OUTPUT` → list, rows sorted as select()
    sorts them), or None where the frame must decide (see the module docstring)."""
    if method not in METHODS:
        return None
    t = rec.tables()
    cfg = t.job_draw if per_draw else t.job_cfg
    rows: list[tuple] = []  # (job, record, domain code, acc, val_acc)
    if method == "oracle":
        last = np.maximum.reduceat(rec.rec_step, rec.job_start[:-1])
        r_last = np.flatnonzero(rec.rec_step == last[t.rec_job])  # one per job (steps do not repeat)
        c_job, c_rec, c_dom, c_val, c_acc = [], [], [], [], []
        lay_last = rec.rec_layout[r_last]
        for li in np.unique(lay_last).tolist():
            r = r_last[lay_last == li]
            for dom, cin, cout in t.test_doms[li]:
                c_job.append(t.rec_job[r])
                c_rec.append(r)
                c_dom.append(np.full(len(r), dom, dtype=np.int64))
                c_val.append(rec.acc[rec.rec_off[r] + cout] if cout >= 0 else np.full(len(r), np.nan))
                c_acc.append(rec.acc[rec.rec_off[r] + cin] if cin >= 0 else np.full(len(r), np.nan))
        if not c_job:
            return _columns(rec, t, [], method)
        job, r, dom, val, acc = (np.concatenate(x) for x in (c_job, c_rec, c_dom, c_val, c_acc))
        group = cfg[job] * len(t.domains) + dom
        win = _argmax(group, val, t.job_hseed[job], rec.rec_step[r], t.job_rank[job], tie_tol)
        rows = [(int(job[w]), int(r[w]), int(dom[w]), float(acc[w]), float(val[w])) for w in win]
        return _columns(rec, t, rows, method, per_draw)
    scored = t.scores(method)
    if scored is None:
        return None
    r, val = scored
    job = t.rec_job[r]
    win = _argmax(cfg[job], val, t.job_hseed[job], rec.rec_step[r], t.job_rank[job], tie_tol)
    for w in win:
        rw = int(r[w])
        for dom, k in t.test_in[int(rec.rec_layout[rw])]:
            rows.append((int(job[w]), rw, dom, float(rec.acc[rec.rec_off[rw] + k]), float(val[w])))
    return _columns(rec, t, rows, method, per_draw)


def _columns(rec: Records, t: _Tables, rows: list[tuple], method: str, per_draw: bool = False) -> dict[str, list]:
    job_meta = rec.job_meta
    out = []
    for j, r, dom, acc, val in rows:
        m = rec.metas[int(job_meta[j])]
        out.append((m[_DS], m[_ALG], m[_TRAIN], m[_TEST], m[_VAL], m[_SETTING], int(m[_TSEED]), t.domains[dom],
                    acc, val, int(m[_HSEED]), rec.job_names[j], int(rec.rec_step[r]), m[_HPARAMS], method))
    # select()'s order: the config (then, per draw, the hparams seed) and the domain
    out.sort(key=(lambda row: (*row[:7], row[10], row[7])) if per_draw else (lambda row: row[:8]))
    return {c: [row[i] for row in out] for i, c in enumerate(OUTPUT)}
