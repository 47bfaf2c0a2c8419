"""Oracle-selection leakage vs the number K of test domains (seed 002, Yu et al., Sec. 2.2, Table 4).

Train on one group of domains, test on the K' domains of another group. *IID* (training-domain validation) selects
by validation accuracy on the training domains; *oracle* selects the candidate with the highest accuracy on the
test domains. With K of the K' test domains used for oracle selection (every K-subset S), domain d's oracle accuracy
at K is the average over all K-subsets S ∋ d of d's accuracy under the candidate chosen for S. Leakage at K is
``Avg_oracle(K) − Avg_IID`` (Avg = mean over the test domains) and its reduction is
``(leak(K) − leak(1)) / leak(1)`` in percent (Table 4: DomainNet −31% at K=2).

Two ways in:

* one run per training group that tests on all K' domains: :func:`oracle_k_select` makes the oracle-K selections
  from the tidy frame (``dganalysis.results.load``);
* separate runs per test-domain subset, oracle-selected by ``dganalysis.selection.select(df, "oracle")``: the frame's
  ``test_domains`` is the subset.

Either goes into :func:`oracle_k_table` with the IID selection (``select(df, "training_domain")``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

GROUP = ["dataset", "algorithm", "train_domains"]


def oracle_k_select(
    tidy: pd.DataFrame,
    ks: Sequence[int] | None = None,
    select_split: str = "out",
    report_split: str = "in",
    last_step: bool = True,
) -> pd.DataFrame:
    """Oracle selection on every K-subset of each run's test domains (seed 002 Sec. 2.2).

    Candidates are the hyperparameter configurations of a (dataset, algorithm, train_domains, test_domains,
    trial_seed) group. As DomainBed's oracle, only the last checkpoint of each is a candidate (``last_step``;
    False = every checkpoint), the score is the mean over S of the ``select_split`` accuracy and the reported
    accuracy is the ``report_split`` one. Ties go to the lowest (hparams_seed, step). Returns the selection contract's
    columns plus ``subset`` (comma-joined S) and ``k``; ``selection = "oracle_k"``.
    """
    need = {"dataset", "algorithm", "train_domains", "test_domains", "trial_seed", "hparams_seed", "step",
            "domain", "split", "role", "acc", "job_id"}
    missing = need - set(tidy.columns)
    if missing:
        raise ValueError(f"tidy frame: missing columns {sorted(missing)} (expected dganalysis.results.load output)")
    test = tidy[tidy["role"] == "test"]
    if test.empty:
        raise ValueError("tidy frame: no rows with role == 'test'")
    keys = GROUP + ["test_domains", "trial_seed"]
    rows = []
    for key, g in test.groupby(keys, sort=False):
        if last_step:
            last = g.groupby("hparams_seed")["step"].transform("max")
            g = g[g["step"] == last]
        wide = g.pivot_table(index=["hparams_seed", "step", "job_id"], columns=["split", "domain"], values="acc",
                             aggfunc="first").sort_index()
        domains = list(dict.fromkeys(g["domain"]))
        for k in ks or range(1, len(domains) + 1):
            if not 1 <= k <= len(domains):
                raise ValueError(f"ks: K={k} outside 1..{len(domains)} test domains of {key}")
            for subset in itertools.combinations(domains, k):
                score = wide[select_split][list(subset)].mean(axis=1)
                if score.isna().all():
                    continue
                best = score.idxmax()
                for d in subset:
                    rows.append(dict(zip(keys, key), domain=d, acc=wide.loc[best, (report_split, d)],
                                     val_acc=score.loc[best], hparams_seed=best[0], step=best[1], job_id=best[2],
                                     subset=",".join(subset), k=k, selection="oracle_k"))
    return pd.DataFrame(rows)


def oracle_k_table(
    iid_selected: pd.DataFrame,
    oracle_selected: pd.DataFrame,
    by: Sequence[str] = tuple(GROUP),
    scale: float = 100.0,
    min_leakage: float = 0.5,
) -> pd.DataFrame:
    """Table 4 of seed 002: per group (``by``) rows ``IID``, ``K=1``, ``K=2``, …; one column per test domain
    (accuracy × ``scale``), ``Avg``, ``leakage`` (Avg − IID Avg) and ``reduction_%`` ((leak_K − leak_1)/leak_1 · 100).

    ``oracle_selected`` needs ``subset`` and ``k`` columns (from :func:`oracle_k_select`), otherwise the subset is
    its ``test_domains``. ``reduction_%`` is left undefined (NaN) when the K=1 leakage is below ``min_leakage``
    (in the units of ``scale``: percentage points by default), where a ratio would be noise. Each domain's accuracy is first averaged over trials per subset, then over the subsets of
    size K that contain it. IID accuracy per domain is averaged over trials (and runs) of ``iid_selected``.
    """
    by = list(by)
    orc = oracle_selected.copy()
    if "subset" not in orc:
        orc["subset"] = orc["test_domains"]
    if "k" not in orc:
        orc["k"] = orc["subset"].map(lambda s: len([x for x in str(s).split(",") if x]))
    for name, frame in (("iid_selected", iid_selected), ("oracle_selected", orc)):
        missing = set(by + ["domain", "acc"]) - set(frame.columns)
        if missing:
            raise ValueError(f"{name}: missing columns {sorted(missing)}")
    out = []
    for key, g in orc.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        domains = list(dict.fromkeys(g["domain"]))
        mask = np.logical_and.reduce([iid_selected[c] == v for c, v in zip(by, key)])
        iid = iid_selected[mask]
        iid = iid[iid["domain"].isin(domains)]
        if iid.empty:
            raise ValueError(f"iid_selected: no rows for {dict(zip(by, key))} on domains {domains}")
        iid_dom = iid.groupby("domain")["acc"].mean().reindex(domains) * scale
        rows = [dict(zip(by, key), row="IID", k=0, **iid_dom.to_dict())]
        per_subset = g.groupby(["k", "subset", "domain"], sort=False)["acc"].mean().reset_index()
        per_k = per_subset.groupby(["k", "domain"])["acc"].mean() * scale
        for k in sorted(per_subset["k"].unique()):
            rows.append(dict(zip(by, key), row=f"K={k}", k=int(k), **per_k.loc[k].reindex(domains).to_dict()))
        t = pd.DataFrame(rows)
        t["Avg"] = t[domains].mean(axis=1)
        t["leakage"] = t["Avg"] - t["Avg"].iloc[0]
        leak1 = t.loc[t["k"] == 1, "leakage"]
        base = leak1.iloc[0] if len(leak1) else np.nan
        if np.isnan(base) or base < min_leakage:
            # no (or negative) leakage at K=1: a relative reduction is undefined, not ±hundreds of %
            t["reduction_%"] = np.nan
        else:
            t["reduction_%"] = ((t["leakage"] - base) / base * 100).where(t["k"] > 0)
        out.append(t)
    return pd.concat(out, ignore_index=True)
