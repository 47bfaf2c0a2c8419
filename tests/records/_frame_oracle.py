"""The tidy-frame implementation of the selection rules, kept as a test oracle only.

:func:`dganalysis.records.select` runs every built-in method on record arrays (:mod:`dganalysis.records.rules`).
This module computes the same rules the other way, with pandas on the tidy frame, group by group, as the package
did before the two implementations were made one: the differential tests (``tests/records/test_selection.py``,
``tests/records/test_rules.py``) require both to give the same frame, column for column, dtype for dtype and bit
for bit. DomainBed's definitions (Gulrajani & Lopez-Paz 2021, ``domainbed/model_selection.py``) are in the docstring
of :mod:`dganalysis.records.selection`; DomainBed itself is the reference of ``tests/reference/``.
"""

from __future__ import annotations

import functools
from collections import defaultdict

import numpy as np
import pandas as pd

from dganalysis.records.selection_methods import CONFIG, OUTPUT


def select_frame(df: pd.DataFrame, method: str, tie_tol: float = 0.0, per_draw: bool = False) -> pd.DataFrame:
    """What select(df, method, tie_tol, per_draw) gives, computed on the frame."""
    keys = [*CONFIG, "hparams_seed"] if per_draw else CONFIG
    if "hparams" not in df:
        df = df.assign(hparams="{}")
    if "setting" not in df:
        df = df.assign(setting="")
    if df.empty:
        return pd.DataFrame({c: [] for c in OUTPUT})
    scorer, per_test_domain = SCORERS[method]
    test_in = df.loc[(df["role"] == "test") & (df["split"] == "in"), ["job_id", "step", "domain", "acc"]]
    if per_test_domain:
        chosen = argmax(with_meta(scorer(df), df), [*keys, "domain"], tie_tol)
    else:
        scores = scorer(df).merge(test_in[["job_id", "step"]].drop_duplicates(), on=["job_id", "step"])
        best = argmax(with_meta(scores, df), keys, tie_tol)
        chosen = best.merge(test_in, on=["job_id", "step"])
    out = chosen.assign(selection=method)[OUTPUT]
    return out.sort_values([*keys, "domain"], kind="stable").reset_index(drop=True)


def row_means(rows: pd.DataFrame, keys: list[str], reduce: str = "mean") -> pd.DataFrame:
    """``np.mean`` (or ``np.sum(...) / n``) of ``acc`` per ``keys`` over the rows in frame order."""
    if rows.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=rows[k].dtype) for k in keys}, "val_acc": pd.Series(dtype=float)})
    g = rows.groupby(keys, sort=False)
    pos = g.cumcount().to_numpy()
    size = g["acc"].transform("size").to_numpy()
    gid = g.ngroup().to_numpy()
    first = rows.loc[pos == 0, keys].reset_index(drop=True)
    acc = rows["acc"].to_numpy(dtype=np.float64)
    out = np.empty(len(first))
    n_of_group = np.empty(len(first), dtype=np.int64)
    n_of_group[gid] = size
    for n in np.unique(size):
        groups = np.flatnonzero(n_of_group == n)
        sel = size == n
        mat = np.empty((len(groups), n))
        mat[np.searchsorted(groups, gid[sel]), pos[sel]] = acc[sel]
        out[groups] = np.mean(mat, axis=1) if reduce == "mean" else np.sum(mat, axis=1) / n
    return first.assign(val_acc=out)


def training_domain(df: pd.DataFrame) -> pd.DataFrame:
    return row_means(df[(df["role"] == "train") & (df["split"] == "out")], ["job_id", "step"])


def training_domain_last(df: pd.DataFrame) -> pd.DataFrame:
    return training_domain(df[df["step"] == df.groupby("job_id")["step"].transform("max")])


def ood_validation(df: pd.DataFrame) -> pd.DataFrame:
    rows = df[df["role"] == "val"]
    has_out = rows[rows["split"] == "out"][["job_id", "step", "domain"]].drop_duplicates().assign(_out=True)
    rows = rows.merge(has_out, on=["job_id", "step", "domain"], how="left")
    rows = rows[(rows["split"] == "out") | rows["_out"].isna()].drop(columns="_out")
    return row_means(rows, ["job_id", "step"])


def last_test_rows(df: pd.DataFrame) -> pd.DataFrame:
    rows = df[(df["step"] == df.groupby("job_id")["step"].transform("max")) & (df["role"] == "test")]
    wide = rows.set_index(["job_id", "step", "domain", "split"])["acc"].unstack("split")
    wide = wide.reindex(columns=["in", "out"]).reset_index()
    order = rows[["job_id", "domain"]].drop_duplicates().reset_index(drop=True).reset_index()
    wide = wide.merge(order, on=["job_id", "domain"]).sort_values("index", kind="stable")
    return wide.drop(columns="index").reset_index(drop=True)


def oracle(df: pd.DataFrame) -> pd.DataFrame:
    return last_test_rows(df).rename(columns={"out": "val_acc", "in": "acc"})


def oracle_pooled(df: pd.DataFrame) -> pd.DataFrame:
    wide = last_test_rows(df)
    return row_means(wide.rename(columns={"out": "acc"})[["job_id", "step", "acc"]], ["job_id", "step"])


@functools.lru_cache(maxsize=4096)
def _split(joined: str) -> frozenset:
    return frozenset(d for d in str(joined).split(",") if d)


def leave_one_out(df: pd.DataFrame) -> pd.DataFrame:
    jobs = job_table(df)
    order = {ds: {d: i for i, d in enumerate(doms)}
             for ds, doms in df.groupby("dataset", sort=False)["domain"].unique().items()}
    helpers: dict[tuple, list[tuple[str, frozenset]]] = defaultdict(list)
    for j in jobs.itertuples(index=False):
        key = (j.dataset, j.algorithm, j.setting, j.trial_seed, j.hparams_seed, _split(j.train_domains))
        helpers[key].append((j.job_id, _split(j.test_domains) | _split(j.val_domains)))
    pairs, n_train = [], {}
    for j in jobs.itertuples(index=False):
        train = _split(j.train_domains)
        if len(train) < 2:
            continue
        n_train[j.job_id] = len(train)
        for d in sorted(train, key=order[j.dataset].__getitem__):
            for helper, held_out in helpers.get((j.dataset, j.algorithm, j.setting, j.trial_seed, j.hparams_seed,
                                                 train - {d}), []):
                if d in held_out:
                    pairs.append((j.job_id, d, helper, order[j.dataset][d]))
    if not pairs:
        return pd.DataFrame({"job_id": pd.Series(dtype=str), "step": pd.Series(dtype="int64"), "val_acc": []})
    pairs = pd.DataFrame(pairs, columns=["job_id", "domain", "helper", "env"])
    held = df.loc[df["split"] == "in", ["job_id", "step", "domain", "acc"]].rename(columns={"job_id": "helper"})
    m = pairs.merge(held, on=["helper", "domain"])
    m = m.groupby(["job_id", "step", "env", "domain"], as_index=False)["acc"].mean()
    m = m.sort_values(["job_id", "step", "env"], kind="stable")
    n = m.groupby(["job_id", "step"], sort=False)["acc"].transform("size")
    m = m[n.to_numpy() == m["job_id"].map(n_train).to_numpy()]
    return row_means(m, ["job_id", "step"], reduce="sum_div")


#: method → (candidate scores on the frame, whether it chooses per test domain)
SCORERS = {"training_domain": (training_domain, False), "training_domain_last": (training_domain_last, False),
           "leave_one_out": (leave_one_out, False), "oracle": (oracle, True), "oracle_pooled": (oracle_pooled, False),
           "ood_validation": (ood_validation, False)}


def job_table(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop_duplicates("job_id")[[*CONFIG, "job_id", "hparams_seed", "hparams"]]


def with_meta(scores: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    return scores.merge(job_table(df), on="job_id")


def argmax(cand: pd.DataFrame, keys: list[str], tie_tol: float = 0.0) -> pd.DataFrame:
    """Row with the highest ``val_acc`` per ``keys``; ties: highest hparams_seed, earliest step, smallest job id."""
    cand = cand[cand["val_acc"].notna()]
    if cand.empty:
        return cand
    best = cand.groupby(keys, sort=False, dropna=False)["val_acc"].transform("max")
    cand = cand[cand["val_acc"].to_numpy() >= best.to_numpy() - tie_tol]
    order = cand.sort_values(["hparams_seed", "step", "job_id"], ascending=[False, True, True], kind="stable")
    return order.drop_duplicates(keys, keep="first")
