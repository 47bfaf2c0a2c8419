"""Model selection over hyperparameters (and checkpoints) on the tidy results of :func:`dganalysis.results.load`.

Definitions follow DomainBed (Gulrajani & Lopez-Paz, *In Search of Lost Domain Generalization*, ICLR 2021, Sec. 3
and ``domainbed/model_selection.py``), extended to runs with several test domains (Yu et al., *Rethinking the
Evaluation Protocol of DG*, Sec. 2.2 and Table 4: leave-one-group-out, oracle over K test domains) and to a held-out
validation domain (Ye et al., *OoD-Bench*, Sec. 5 "OoD validation"). A *config* is one (dataset, algorithm,
train_domains, test_domains, val_domains, trial_seed); within a config the candidates are its jobs (one per
``hparams_seed``) and, where the method allows early stopping, their checkpoints. The reported accuracy is always the
test domain's **'in' split** at the chosen (job, step), as DomainBed reports it.

Methods (``select(df, method)``):

* ``training_domain`` — training-domain validation: argmax over (hparams, step) of the mean 'out'-split accuracy of
  the training domains (DomainBed's ``IIDAccuracySelectionMethod``, which allows early stopping, i.e. every
  checkpoint is a candidate). With several test domains, one choice per config; every test domain is reported.
* ``leave_one_out`` — leave-one-domain-out cross-validation (DomainBed's ``LeaveOneOutSelectionMethod``): for a
  config with training domains T, each d in T needs a *helper* job with the same dataset, algorithm, trial_seed and
  hparams_seed trained on T \\ {d} with d held out (DomainBed: ``test_envs = [test, d]``; ours: d a test or val
  domain). The score of (hparams, step) is the mean over d in T of the helper's 'in'-split accuracy on d at that
  step. Steps where any helper is missing are skipped; configs without any complete candidate give no row (DomainBed
  returns None and prints "X").
* ``oracle`` — test-domain validation (DomainBed's ``OracleSelectionMethod``): last checkpoint only (no early
  stopping), argmax over hparams of the test domain's 'out'-split accuracy, chosen separately for each test domain.
* ``oracle_pooled`` — one oracle choice per config by the mean 'out'-split accuracy over its test domains at the last
  checkpoint (Yu et al. Table 4's oracle with K test domains). The mean runs over the test domains present in
  ``df``, so dropping test-domain rows beforehand selects by a subset of K domains.
* ``ood_validation`` — argmax over (hparams, step) of the mean 'out'-split accuracy of the validation domains
  (``val_domains``; a domain with no 'out' split uses 'in'), as OoD-Bench's ``OODValidationSelectionMethod``.

Ties (choice left open by DomainBed, whose order depends on the file system): highest score, then lowest
``hparams_seed``, then earliest step, then job id.
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

CONFIG = ["dataset", "algorithm", "train_domains", "test_domains", "val_domains", "trial_seed"]
OUTPUT = [*CONFIG, "domain", "acc", "val_acc", "hparams_seed", "job_id", "step", "hparams", "selection"]

#: Method key → the name printed in table headers (DomainBed's names where it has the method).
METHODS: dict[str, str] = {
    "training_domain": "training-domain validation set",
    "leave_one_out": "leave-one-domain-out cross-validation",
    "oracle": "test-domain validation set (oracle)",
    "oracle_pooled": "test-domain validation set, pooled over test domains (oracle)",
    "ood_validation": "OoD validation set",
}


def select(df: pd.DataFrame, method: str) -> pd.DataFrame:
    """Selected test accuracy per (config, test domain) under ``method`` (see the module docstring).

    Returns columns :data:`OUTPUT`: one row per (dataset, algorithm, train_domains, test_domains, val_domains,
    trial_seed, domain) with ``acc`` the chosen job's 'in'-split accuracy on test domain ``domain`` and ``val_acc``
    the selection score of the chosen (job, step).
    """
    if method not in METHODS:
        raise ValueError(f"select: unknown method {method!r}; expected one of {list(METHODS)}")
    missing = [c for c in (*CONFIG, "job_id", "hparams_seed", "step", "domain", "split", "role", "acc") if c not in df]
    if missing:
        raise ValueError(f"select: df lacks columns {missing}; expected the tidy frame of dganalysis.results.load")
    if "hparams" not in df:
        df = df.assign(hparams="{}")
    if df.empty:
        return pd.DataFrame({c: [] for c in OUTPUT})
    test_in = df.loc[(df["role"] == "test") & (df["split"] == "in"), ["job_id", "step", "domain", "acc"]]
    if method == "oracle":
        chosen = _oracle_per_domain(df)
    else:
        scores = {
            "training_domain": _training_domain_scores,
            "leave_one_out": _leave_one_out_scores,
            "oracle_pooled": _oracle_pooled_scores,
            "ood_validation": _ood_validation_scores,
        }[method](df)
        # a candidate checkpoint must hold test-domain records (DomainBed: the single-test-env record of the step)
        scores = scores.merge(test_in[["job_id", "step"]].drop_duplicates(), on=["job_id", "step"])
        best = _argmax(_with_meta(scores, df), CONFIG)
        chosen = best.merge(test_in, on=["job_id", "step"])
    n_configs = df[CONFIG].drop_duplicates().shape[0]
    n_chosen = chosen[CONFIG].drop_duplicates().shape[0]
    if n_chosen < n_configs:
        log.info("%s: %d of %d configs give no result (no test domain, no val domain, or missing leave-one-out "
                 "helper runs; DomainBed's [test, val] runs are such configs themselves)",
                 method, n_configs - n_chosen, n_configs)
    out = chosen.assign(selection=method)[OUTPUT]
    return out.sort_values([*CONFIG, "domain"], kind="stable").reset_index(drop=True)


def summarize(selected: pd.DataFrame, by: Sequence[str] | None = None, ddof: int = 1) -> pd.DataFrame:
    """Mean, standard error and count of ``acc`` over trials, grouped by ``by``.

    ``by`` defaults to every config column except ``trial_seed``, plus ``domain`` and ``selection``.
    SE = std(acc, ddof) / sqrt(n). We default to ``ddof=1`` (sample standard deviation, the unbiased variance
    estimate): DomainBed's ``collect_results.format_mean`` uses ``np.std`` (ddof=0, population), which shrinks the
    error bar by sqrt((n-1)/n) — 18% with its 3 trials. ``ddof=0`` reproduces DomainBed's numbers exactly.
    With n = 1 and ddof = 1 the SE is undefined and returned as NaN (tables print "± —").
    """
    if by is None:
        by = [c for c in ("selection", *CONFIG, "domain") if c != "trial_seed" and c in selected]
    by = list(by)
    missing = [c for c in [*by, "acc"] if c not in selected]
    if missing:
        raise ValueError(f"summarize: selected lacks columns {missing}")
    g = selected.groupby(by, sort=True, dropna=False)["acc"]
    out = g.agg(mean="mean", std=lambda a: a.std(ddof=ddof), n="count").reset_index()
    out["se"] = [s / math.sqrt(n) if n > ddof else np.nan for s, n in zip(out["std"], out["n"])]
    return out[[*by, "mean", "se", "n"]]


# ---------------------------------------------------------------- per-method candidate scores: (job_id, step, val_acc)


def _training_domain_scores(df: pd.DataFrame) -> pd.DataFrame:
    rows = df[(df["role"] == "train") & (df["split"] == "out")]
    return rows.groupby(["job_id", "step"], as_index=False)["acc"].mean().rename(columns={"acc": "val_acc"})


def _ood_validation_scores(df: pd.DataFrame) -> pd.DataFrame:
    rows = df[df["role"] == "val"]
    # 'out' split where present, else 'in' (sort puts 'out' last, so keep="last" prefers it)
    rows = rows.sort_values("split", kind="stable").drop_duplicates(["job_id", "step", "domain"], keep="last")
    return rows.groupby(["job_id", "step"], as_index=False)["acc"].mean().rename(columns={"acc": "val_acc"})


def _last_test_rows(df: pd.DataFrame) -> pd.DataFrame:
    last = df.groupby("job_id")["step"].transform("max")
    rows = df[(df["step"] == last) & (df["role"] == "test")]
    wide = rows.set_index(["job_id", "step", "domain", "split"])["acc"].unstack("split")
    return wide.reindex(columns=["in", "out"]).reset_index()


def _oracle_pooled_scores(df: pd.DataFrame) -> pd.DataFrame:
    wide = _last_test_rows(df)
    return wide.groupby(["job_id", "step"], as_index=False)["out"].mean().rename(columns={"out": "val_acc"})


def _oracle_per_domain(df: pd.DataFrame) -> pd.DataFrame:
    wide = _last_test_rows(df).rename(columns={"out": "val_acc", "in": "acc"})
    best = _argmax(_with_meta(wide, df), [*CONFIG, "domain"])
    return best


def _leave_one_out_scores(df: pd.DataFrame) -> pd.DataFrame:
    jobs = _job_table(df)
    helpers: dict[tuple, list[tuple[str, frozenset]]] = defaultdict(list)
    for j in jobs.itertuples(index=False):
        key = (j.dataset, j.algorithm, j.trial_seed, j.hparams_seed, _split(j.train_domains))
        helpers[key].append((j.job_id, _split(j.test_domains) | _split(j.val_domains)))
    pairs = []
    n_train = {}
    for j in jobs.itertuples(index=False):
        train = _split(j.train_domains)
        if len(train) < 2:
            continue
        n_train[j.job_id] = len(train)
        for d in train:
            for helper, held_out in helpers.get((j.dataset, j.algorithm, j.trial_seed, j.hparams_seed, train - {d}), []):
                if d in held_out:
                    pairs.append((j.job_id, d, helper))
    if not pairs:
        return pd.DataFrame({"job_id": pd.Series(dtype=str), "step": pd.Series(dtype="int64"), "val_acc": []})
    pairs = pd.DataFrame(pairs, columns=["job_id", "domain", "helper"])
    held = df.loc[df["split"] == "in", ["job_id", "step", "domain", "acc"]].rename(columns={"job_id": "helper"})
    m = pairs.merge(held, on=["helper", "domain"])
    # several helpers for the same (job, held-out domain) are equivalent evaluations: average them
    m = m.groupby(["job_id", "step", "domain"], as_index=False)["acc"].mean()
    agg = m.groupby(["job_id", "step"], as_index=False).agg(val_acc=("acc", "mean"), n=("domain", "size"))
    complete = agg["n"].to_numpy() == agg["job_id"].map(n_train).to_numpy()
    return agg.loc[complete, ["job_id", "step", "val_acc"]]


# ---------------------------------------------------------------- helpers


def _split(joined: str) -> frozenset:
    return frozenset(d for d in str(joined).split(",") if d)


def _job_table(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop_duplicates("job_id")[[*CONFIG, "job_id", "hparams_seed", "hparams"]]


def _with_meta(scores: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    return scores.merge(_job_table(df), on="job_id")


def _argmax(cand: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Row with the highest ``val_acc`` per ``keys``; ties → lowest hparams_seed, earliest step, job id."""
    cand = cand[cand["val_acc"].notna()]
    order = cand.sort_values(
        ["val_acc", "hparams_seed", "step", "job_id"], ascending=[False, True, True, True], kind="stable"
    )
    return order.drop_duplicates(keys, keep="first")
