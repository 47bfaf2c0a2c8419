"""A sweep's selections as the claims read them: per-trial dataset averages (:func:`sweep_trials`), their cells
(:func:`cells_from_trials`) and the paired differences with the baseline (:func:`pairs_from_trials`); and the check
that an input's cells hold the baseline (:func:`check_baseline`).

Each (selection, dataset, algorithm, trial seed) gets DomainBed's Avg value: the mean over the dataset's test
environments of the selected test accuracy, in points, from the single-test-environment runs (``collect``'s
``--test-domains auto``). A trial missing a test environment gives no value (it is counted in
``trials.attrs["incomplete"]``; DomainBed would average the environments it has). Runs of one dataset under different
*settings* (``dataset_kwargs``, steps, overrides, …; see :mod:`dganalysis.records.read`) are different experiments: the
dataset is then labelled with the setting keys that differ, ``"RotatedDigits (image_size=16)"``; so are runs with
different numbers of training domains (``"… [2 training domains]"``). Several training-domain sets of one size
reaching the same test environment are averaged (and counted in ``attrs["incomplete"]``).
:func:`cells_from_trials` summarises the trials into the cells frame of :mod:`dganalysis.audit.published` (sample SD,
``se_ddof = 1``, no rounding), so sweeps and tables go through the same claims; :func:`pairs_from_trials` pairs each
algorithm's trials with the baseline's over shared trial seeds (:func:`dganalysis.stats.pairing.use_pairs`), what the
claims' paired test reads.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence

import pandas as pd

from dganalysis.audit.published import CELL_COLUMNS
from dganalysis.records.selection import select
from dganalysis.stats import pairing
from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.validation import ConfigError

TRIAL_COLUMNS = ["board", "selection", "dataset", "algorithm", "trial_seed", "acc"]
PAIR_COLUMNS = ["board", "selection", "dataset", "algorithm", "d_mean", "d_se", "n_pair", "dropped_a", "dropped_b"]


def _dataset_labels(sel: pd.DataFrame) -> pd.Series:
    """Dataset name, extended with the setting keys that differ where one dataset has several settings."""
    labels = sel["dataset"].astype(str)
    if "setting" not in sel:
        return labels
    for ds, grp in sel.groupby("dataset"):
        settings = grp["setting"].unique()
        if len(settings) < 2:
            continue
        parsed = {st: (json.loads(st) if st else {}) for st in settings}
        keys = sorted(k for k in set().union(*parsed.values())
                      if len({json.dumps(p.get(k), sort_keys=True) for p in parsed.values()}) > 1)
        text = {st: f"{ds} ({'; '.join(f'{k}={json.dumps(p.get(k), sort_keys=True)}' for k in keys)})"
                for st, p in parsed.items()}
        mask = sel["dataset"] == ds
        labels[mask] = sel.loc[mask, "setting"].map(text)
    return labels


def sweep_trials(df: pd.DataFrame | None, selections: Sequence[str],
                 selected: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Per (selection, dataset, algorithm, trial seed): the mean over the test environments of the selected test
    accuracy, in points (DomainBed's Avg per trial). ``attrs["incomplete"]``: dropped trials per selection.
    ``selected``: ``{method: select(df, method)}`` already made (the others are selected here; ``df`` may be None
    when every method is given)."""
    out, incomplete = [], {}
    for method in selections:
        sel = selected[method] if selected and method in selected else select(df, method)
        if sel.empty:
            continue
        k = sel["test_domains"].str.count(",") + 1
        sel = sel[k == k.groupby(sel["dataset"]).transform("min")]  # single-test-domain runs (collect's auto)
        sel = sel.assign(dataset=_dataset_labels(sel))
        n_train = sel["train_domains"].astype(str).str.split(",").str.len()
        several = n_train.groupby(sel["dataset"]).transform("nunique") > 1
        if several.any():  # e.g. a Domain+ study: runs with 1, 2, 3 training domains are different experiments
            sel.loc[several, "dataset"] = (sel.loc[several, "dataset"] + " [" + n_train[several].astype(str)
                                           + " training domains]")
        dup = sel.duplicated(["dataset", "algorithm", "trial_seed", "domain"])
        if dup.any():
            incomplete[f"{method} (averaged)"] = (f"{int(dup.sum())} selected results share a (dataset, algorithm, "
                                                  "trial, test environment) with another training-domain set; "
                                                  "their mean is used")
        n_dom = sel.groupby("dataset")["domain"].nunique()
        per = sel.groupby(["dataset", "algorithm", "trial_seed"]).agg(acc=("acc", "mean"), k=("domain", "nunique"))
        per = per.reset_index()
        full = per["k"] == per["dataset"].map(n_dom)
        if (~full).any():
            incomplete[method] = (f"{int((~full).sum())} (dataset, algorithm, trial) without every test environment "
                                  "left out")
        per = per[full]
        out.append(per.assign(board="", selection=method, acc=100 * per["acc"])[TRIAL_COLUMNS])
    trials = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=TRIAL_COLUMNS)
    trials.attrs["incomplete"] = incomplete
    return trials


def cells_from_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """Cells (mean, SE with the sample SD, n) of per-trial dataset averages; unrounded (resolution 0)."""
    g = trials.groupby(["board", "selection", "dataset", "algorithm"], sort=False)["acc"]
    cells = g.agg(mean="mean", sd=lambda a: a.std(ddof=1), n="count").reset_index()
    cells["se"] = standard_error_from_sd(cells["sd"], cells["n"])
    cells = cells.assign(env="", se_ddof=1, mean_res=0.0, se_res=0.0, source="sweep")
    return cells[CELL_COLUMNS].reset_index(drop=True)


def pairs_from_trials(trials: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per (board, selection, dataset, algorithm ≠ baseline) of per-trial dataset averages: the pairing with the
    baseline by the one rule of :func:`dganalysis.stats.pairing.use_pairs` (≥ 2 shared trial seeds; the shared ones
    only) — the mean, SE and number of the per-seed differences (NaN and 0 where the rule does not pair), and the
    trials each arm had outside the shared seeds (``dropped_a``, ``dropped_b``); columns :data:`PAIR_COLUMNS`."""
    per = pairing.paired_differences(trials, ["board", "selection", "dataset"], "algorithm", baseline)
    return per[PAIR_COLUMNS]


def check_baseline(cells: pd.DataFrame, baseline: str, where: str) -> None:
    """Raise naming ``where`` when ``baseline`` is not an algorithm of ``cells`` (with a close match)."""
    algs = sorted(map(str, cells["algorithm"].unique()))
    if baseline not in algs:
        close = [a for a in algs if a.lower() == baseline.lower()] or difflib.get_close_matches(baseline, algs, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{where}: baseline {baseline!r} is not among its algorithms {algs}{hint}")
