"""Oracle-selection leakage vs the number K of test domains (Yu et al. 2024, Sec. 2.2, Table 4).

Train on one group of domains, test on the K' domains of another group. *IID* (training-domain validation) selects
by validation accuracy on the training domains; *oracle* selects the candidate with the highest accuracy on the
test domains. With K of the K' test domains used for oracle selection (every K-subset S), domain d's oracle accuracy
at K is the average over all K-subsets S ∋ d of d's accuracy under the candidate chosen for S. Leakage at K is
``Avg_oracle(K) − Avg_IID`` (Avg = mean over the test domains) and its reduction is
``(leak(K) − leak(1)) / leak(1)`` in percent (Table 4: DomainNet −31% at K=2).

Two ways in, both giving the oracle selections for :func:`oracle_k_table`:

* one run per training group that tests on all K' domains: :func:`oracle_k_select` makes the oracle-K selections
  from the tidy frame (``dganalysis.records.load``);
* separate runs per test-domain subset S: ``dganalysis.records.selection.select(df, "oracle_pooled")``, which chooses one
  candidate per run by the mean over *its* test domains (the frame's ``test_domains`` is S). Not
  ``select(df, "oracle")``: DomainBed's oracle chooses separately for each test domain, so with it every K would be
  K=1 (:func:`oracle_k_table` refuses such a frame).

Like with like. The oracle uses each run's last checkpoint (DomainBed's ``OracleSelectionMethod``: no early
stopping). DomainBed's training-domain validation (``select(df, "training_domain")``) also chooses the checkpoint
(early stopping), so ``oracle − IID`` then mixes test-data leakage with the value of early stopping and can be
negative; ``select(df, "training_domain_last")`` restricts IID selection to the last checkpoint too, and the
difference is leakage alone. Yu et al. (2024, Sec. 2.2) describe both selections as choosing among hyperparameter
sets ("the hyperparameters with the highest accuracy on validation data"; "the highest test accuracy across all
hyperparameter sets") and say nothing of checkpoints; with the oracle at the last checkpoint, that reading is
``training_domain_last``. The paper otherwise adheres to DomainBed's training-domain validation (Sec. 6), which early
stops — which one their Table 4 used is not stated. Pass either to :func:`oracle_k_table` and say which.

Two oracles, both computed from the same runs (no extra training), named in :data:`ORACLES`:

* ``held_out`` — DomainBed's ``OracleSelectionMethod``: choose on the test domains' ``out`` split (the 20% holdout),
  report the ``in`` split. The chosen candidate is scored on data it was not chosen on, so a positive leakage at
  K=1 is a finding: test-domain information that survives selection on held-out test data.
* ``literal`` — Yu et al. (2024, Sec. 2.2) word for word: "we directly choose the highest test accuracy across all
  hyperparameter sets". It chooses by the very accuracy it reports: the whole test domain (``in`` and ``out`` pooled
  by size, split ``"all"``, see :func:`with_pooled_split`; the IID side is reported on ``"all"`` too, see
  :func:`report_on`). Two consequences hold *by construction*, whatever the data: with the same candidates for IID
  and oracle (last checkpoints), the K=1 leakage is ≥ 0 in every trial (a max over the draws is ≥ any one draw),
  and every domain's K>1 accuracy is ≤ its K=1 accuracy (so leak(K) ≤ leak(1)). What the data decide is the *size*
  of the leakage and of its fall (Table 4: 0.04–1.26 points at K=1, −24% to −53% at K=2, −35% to −79% at K=3) and
  whether it also falls from K=2 to K=3, which no construction guarantees. This is not DomainBed's oracle, hence
  its own name; tests/protocols/test_oracle_literal.py pins both properties.

Ties follow DomainBed's: among candidates with equal score the highest ``hparams_seed``, then the earliest step.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dganalysis.validation import check_choice, check_frame, check_mapping, check_scalar, check_str

GROUP_COLUMNS = ["dataset", "algorithm", "train_domains"]

#: The named oracles: name → (split the oracle selects on, split it reports). See the module docstring.
ORACLES: dict[str, tuple[str, str]] = {"held_out": ("out", "in"), "literal": ("all", "all")}

#: The pooled split of :func:`with_pooled_split`: the whole domain, ``in`` and ``out`` together.
POOLED = "all"


def split_sizes(domain_sizes: Mapping[str, int], holdout_fraction: float = 0.2) -> dict[str, dict[str, int]]:
    """``{domain: {"in": n_in, "out": n_out}}`` as :func:`dganalysis.training.train.split_indices` splits a domain of n
    samples (DomainBed's ``split_dataset``: ``n_out = int(n · holdout_fraction)``). The sizes do not depend on the
    trial seed, only the membership does."""
    check_mapping(domain_sizes, "domain_sizes", func="split_sizes", what="a mapping domain → number of images")
    check_scalar(holdout_fraction, "holdout_fraction", func="split_sizes", low=0.0, high=1.0)
    from dganalysis.training.train import holdout_size

    if not 0.0 <= holdout_fraction < 1.0:
        raise ValueError(f"holdout_fraction: expected a number in [0, 1), got {holdout_fraction!r}")
    out = {}
    for d, n in domain_sizes.items():
        if int(n) < 1:
            raise ValueError(f"domain_sizes[{d!r}]: expected a positive number of samples, got {n!r}")
        n_out = holdout_size(int(n), holdout_fraction)
        out[str(d)] = {"in": int(n) - n_out, "out": n_out}
    return out


def with_pooled_split(tidy: pd.DataFrame, sizes: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """``tidy`` plus rows with split :data:`POOLED` (``"all"``): each (job, step, domain)'s accuracy on the whole
    domain, ``(n_in · acc_in + n_out · acc_out) / (n_in + n_out)`` — exact, since an accuracy is correct/n. ``sizes``
    as :func:`split_sizes`. A (job, step, domain) without an ``in`` row gets no pooled row: a training domain of a run
    that evaluated held-out splits only (:attr:`~dganalysis.training.job.Job.evaluate_splits`), whose whole-domain
    accuracy no selection reads. One with ``in`` but no ``out`` (or a null accuracy), or a domain missing from
    ``sizes``, raises."""
    check_frame(tidy, (), "tidy", func="with_pooled_split")
    check_mapping(sizes, "sizes", func="with_pooled_split", what="split_sizes(...)")
    need = {"job_id", "step", "domain", "split", "acc"}
    if need - set(tidy.columns):
        raise ValueError(f"tidy frame: missing columns {sorted(need - set(tidy.columns))}")
    part = tidy[tidy["split"].isin(["in", "out"])]
    keys = ["job_id", "step", "domain"]
    part = part.merge(part.loc[part["split"] == "in", keys].drop_duplicates(), on=keys)  # those with an 'in' row
    unknown = sorted(set(part["domain"].astype(str)) - set(map(str, sizes)))
    if unknown:
        raise ValueError(f"sizes: no split sizes for domains {unknown}; expected split_sizes(...) of every domain")
    wide = part.pivot_table(index=keys, columns="split", values="acc", aggfunc="first").reindex(columns=["in", "out"])
    if wide.isna().to_numpy().any():
        raise ValueError("tidy frame: every (job_id, step, domain) needs both an 'in' and an 'out' accuracy to pool")
    doms = wide.index.get_level_values("domain").astype(str)
    n_in = np.array([sizes[d]["in"] for d in doms], dtype=np.float64)
    n_out = np.array([sizes[d]["out"] for d in doms], dtype=np.float64)
    pooled = (n_in * wide["in"].to_numpy() + n_out * wide["out"].to_numpy()) / (n_in + n_out)
    meta = part[part["split"] == "in"].drop(columns=["split", "acc"])
    rows = meta.merge(pd.DataFrame({"acc": pooled}, index=wide.index).reset_index(), on=keys).assign(split=POOLED)
    return pd.concat([tidy, rows[tidy.columns]], ignore_index=True)


def report_on(selected: pd.DataFrame, tidy: pd.DataFrame, split: str) -> pd.DataFrame:
    """``selected`` (any :func:`dganalysis.records.selection.select` or :func:`oracle_k_select` output) with ``acc``
    replaced by the chosen (job_id, step)'s accuracy on ``split`` of each domain in ``tidy`` (e.g. the pooled split
    of :func:`with_pooled_split`, to report IID on the same data as the literal oracle). The choice is unchanged."""
    check_frame(selected, (), "selected", func="report_on")
    check_frame(tidy, (), "tidy", func="report_on")
    check_choice(split, ("in", "out", POOLED), "split", func="report_on")
    keys = ["job_id", "step", "domain"]
    acc = tidy.loc[tidy["split"] == split, keys + ["acc"]].drop_duplicates(keys)
    out = selected.drop(columns="acc").merge(acc, on=keys, how="left")
    if out["acc"].isna().any():
        raise ValueError(f"report_on: no {split!r} accuracy in tidy for some chosen (job_id, step, domain)")
    return out[list(selected.columns)]


def oracle_k_select(
    tidy: pd.DataFrame,
    ks: Sequence[int] | None = None,
    oracle: str = "held_out",
    sizes: Mapping[str, Mapping[str, int]] | None = None,
    last_step: bool = True,
    tie_tol: float = 0.0,
) -> pd.DataFrame:
    """Oracle selection on every K-subset of each run's test domains (Yu et al. 2024, Sec. 2.2).

    Candidates are the hyperparameter configurations of a (dataset, algorithm, train_domains, test_domains, setting,
    trial_seed) group. As DomainBed's oracle, only the last checkpoint of each is a candidate (``last_step``;
    False = every checkpoint). ``oracle`` names the splits (:data:`ORACLES`): ``"held_out"`` scores on ``out`` and
    reports ``in`` (DomainBed's); ``"literal"`` scores and reports the whole domain (Yu et al.'s wording), which
    needs ``sizes`` (:func:`split_sizes`) unless ``tidy`` already has the pooled rows (:func:`with_pooled_split`).
    The score is the mean over S of the selection split's accuracy (``np.mean`` in environment order, as
    :func:`dganalysis.records.selection.select`). Ties: highest hparams_seed, then earliest step (DomainBed's); ``tie_tol``
    as in ``select``. With ``"held_out"``, K = 1 gives ``select(tidy, "oracle")`` and K = K' gives
    ``select(tidy, "oracle_pooled")``. Returns the selection contract's columns plus ``subset`` (comma-joined S),
    ``k`` and ``oracle``; ``selection = "oracle_k"``.
    """
    check_frame(tidy, (), "tidy", func="oracle_k_select")
    check_str(oracle, "oracle", func="oracle_k_select")
    check_scalar(tie_tol, "tie_tol", func="oracle_k_select", low=0.0)
    if oracle not in ORACLES:
        raise ValueError(f"oracle: unknown oracle {oracle!r}; expected one of {list(ORACLES)}")
    select_split, report_split = ORACLES[oracle]
    need = {"dataset", "algorithm", "train_domains", "test_domains", "trial_seed", "hparams_seed", "step",
            "domain", "split", "role", "acc", "job_id"}
    missing = need - set(tidy.columns)
    if missing:
        raise ValueError(f"tidy frame: missing columns {sorted(missing)} (expected dganalysis.records.load output)")
    if POOLED in (select_split, report_split) and not (tidy["split"] == POOLED).any():
        if sizes is None:
            raise ValueError(f"oracle={oracle!r} selects/reports the whole test domain: pass sizes=split_sizes(...)")
        tidy = with_pooled_split(tidy, sizes)
    test = tidy[tidy["role"] == "test"]
    if test.empty:
        raise ValueError("tidy frame: no rows with role == 'test'")
    keys = GROUP_COLUMNS + ["test_domains"] + (["setting"] if "setting" in tidy else []) + ["trial_seed"]
    rows = []
    for key, g in test.groupby(keys, sort=False):
        if last_step:
            last = g.groupby("job_id")["step"].transform("max")
            g = g[g["step"] == last]
        wide = g.pivot_table(index=["hparams_seed", "step", "job_id"], columns=["split", "domain"], values="acc",
                             aggfunc="first")
        domains = list(dict.fromkeys(g["domain"]))
        cand = wide.index.to_frame(index=False)
        for k in ks or range(1, len(domains) + 1):
            if not 1 <= k <= len(domains):
                raise ValueError(f"ks: K={k} outside 1..{len(domains)} test domains of {key}")
            for subset in itertools.combinations(domains, k):
                score = np.mean(wide[select_split][list(subset)].to_numpy(dtype=np.float64), axis=1)
                if np.isnan(score).all():
                    continue
                best = np.nanmax(score)
                near = cand[score >= best - tie_tol]
                pick = near.sort_values(["hparams_seed", "step", "job_id"], ascending=[False, True, True]).iloc[0]
                at = (pick["hparams_seed"], pick["step"], pick["job_id"])
                for d in subset:
                    rows.append(dict(zip(keys, key), domain=d, acc=wide.loc[at, (report_split, d)],
                                     val_acc=float(score[wide.index.get_loc(at)]), hparams_seed=int(at[0]),
                                     step=int(at[1]), job_id=at[2], subset=",".join(subset), k=k,
                                     oracle=oracle, selection="oracle_k"))
    return pd.DataFrame(rows)


def oracle_k_table(
    iid_selected: pd.DataFrame,
    oracle_selected: pd.DataFrame,
    by: Sequence[str] = tuple(GROUP_COLUMNS),
    scale: float = 100.0,
    min_leakage: float = 0.5,
) -> pd.DataFrame:
    """Table 4 of Yu et al. (2024): per group (``by``) rows ``IID``, ``K=1``, ``K=2``, …; one column per test domain
    (accuracy × ``scale``), ``Avg``, ``leakage`` (Avg − IID Avg), ``reduction_%`` ((leak_K − leak_1)/leak_1 · 100)
    and ``reduction_reliable``.

    ``oracle_selected`` needs ``subset`` and ``k`` columns (from :func:`oracle_k_select`), otherwise the subset is
    its ``test_domains`` (runs per subset selected with ``select(df, "oracle_pooled")``; per-domain ``"oracle"``
    selections of multi-domain runs are refused, they are K=1 choices). ``reduction_%`` is reported whenever the K=1
    leakage is non-zero; ``reduction_reliable`` is False where that leakage is below ``min_leakage`` (in the units of
    ``scale``: percentage points by default), where the ratio is mostly noise (or its sign meaningless, for a
    negative leakage). Only a K=1 leakage of exactly 0 leaves it undefined (NaN). ``iid_selected``: the output of
    ``select(df, "training_domain")`` (early stopping, DomainBed's) or ``select(df, "training_domain_last")`` (last
    checkpoint, like the oracle) — see the module docstring. Each domain's accuracy is first averaged over trials per
    subset, then over the subsets of size K that contain it. IID accuracy per domain is averaged over trials (and
    runs) of ``iid_selected``.
    """
    check_frame(iid_selected, (), "iid_selected", func="oracle_k_table")
    check_frame(oracle_selected, (), "oracle_selected", func="oracle_k_table")
    check_scalar(scale, "scale", func="oracle_k_table", low=0.0, low_open=True)
    by = list(by)
    orc = oracle_selected.copy()
    if "subset" not in orc:
        multi = orc["test_domains"].astype(str).str.contains(",")
        if "selection" in orc and (multi & (orc["selection"] == "oracle")).any():
            raise ValueError(
                "oracle_selected: per-domain 'oracle' selections of runs with several test domains choose for each "
                "domain alone (every K would be K=1); select those runs with select(df, 'oracle_pooled')")
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
        if np.isnan(base) or base == 0:
            t["reduction_%"] = np.nan  # no leakage at K=1: a relative reduction is undefined
        else:
            t["reduction_%"] = ((t["leakage"] - base) / base * 100).where(t["k"] > 0)
        # a K=1 leakage below min_leakage (or negative) makes the ratio noise: reported, flagged
        t["reduction_reliable"] = bool(np.isfinite(base) and base >= min_leakage)
        out.append(t)
    return pd.concat(out, ignore_index=True)
