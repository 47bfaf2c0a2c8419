"""Audit inputs: a sweep directory (ours or DomainBed's) or a published table, checked before any work.

A sweep is read by the same code as ``dganalysis collect`` (:func:`dganalysis.results.load`, or the columnar index
:func:`dganalysis.audit.index.load_indexed` where it exists) and selected by :func:`dganalysis.selection.select`.
Each (selection, dataset, algorithm, trial seed) then gets DomainBed's Avg value: the mean over the dataset's test
environments of the selected test accuracy, in points, from the single-test-environment runs (``collect``'s
``--test-domains auto``). A trial missing a test environment gives no value (it is counted in
``trials.attrs["incomplete"]``; DomainBed would average the environments it has). Runs of one dataset under different
*settings* (``dataset_kwargs``, steps, overrides, …; see :mod:`dganalysis.results`) are different experiments: the
dataset is then labelled with the setting keys that differ, ``"RotatedDigits (image_size=16)"``; so are runs with
different numbers of training domains (``"… [2 training domains]"``). Several training-domain sets of one size
reaching the same test environment are averaged (and counted in ``attrs["incomplete"]``).
:func:`cells_from_trials` summarises the trials into the cells frame of :mod:`dganalysis.audit.tables` (sample SD,
``se_ddof = 1``, no rounding), so sweeps and tables go through the same claims.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dganalysis.audit import tables
from dganalysis.selection import METHODS, select

log = logging.getLogger(__name__)
DOMAINBED_SELECTIONS = ("training_domain", "leave_one_out", "oracle")
TRIAL_COLUMNS = ["board", "selection", "dataset", "algorithm", "trial_seed", "acc"]


@dataclass
class AuditInput:
    """One input: ``kind`` "sweep" or "table"; ``cells`` (:data:`dganalysis.audit.tables.CELL_COLUMNS`); for a sweep
    also ``trials`` (:data:`TRIAL_COLUMNS`, accuracy in points) and ``records`` (the tidy frame of
    :func:`dganalysis.results.load`)."""

    name: str
    kind: str
    cells: pd.DataFrame
    trials: pd.DataFrame | None = None
    records: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    selected: dict[str, pd.DataFrame] = field(default_factory=dict)  # sweep: {method: select(records, method)}


def parse_selections(selection: str | Sequence[str]) -> list[str]:
    """``"all"`` → DomainBed's three methods; a name or list of names → checked against :data:`METHODS`."""
    names = list(DOMAINBED_SELECTIONS) if selection == "all" else (
        [selection] if isinstance(selection, str) else list(selection))
    bad = [s for s in names if s not in METHODS]
    if bad or not names:
        raise ValueError(f"selection {bad or names!r}: expected 'all' or some of {list(METHODS)}")
    return names


def check_inputs(paths: Sequence[str | Path]) -> None:
    """Every input exists and is a table file or a folder; raise naming the first that is not."""
    if not paths:
        raise ValueError("audit: expected at least one INPUT (a sweep directory or a .tex/.csv table)")
    for p in paths:
        if str(p).startswith("shipped:"):
            tables.resolve(p)  # raises on an unknown name
            continue
        path = Path(p)
        if not path.exists():
            raise FileNotFoundError(f"INPUT {p}: no such file or folder (expected a sweep directory or a .tex/.csv "
                                    "table)")
        if path.is_file() and path.suffix.lower() not in tables.TABLE_SUFFIXES:
            raise ValueError(f"INPUT {p}: a {path.suffix or 'suffix-less'} file; expected a sweep directory or a "
                             ".tex/.csv table")


def load_records(path: str | Path, selections: Sequence[str] = ()) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The tidy records of a sweep and ``{method: select(records, method)}`` for ``selections``: through the columnar
    index (:func:`~dganalysis.audit.sweep_selections.load_and_select_indexed`: one scan of the job folders, the selections
    cached beside the index) when installed, else :func:`dganalysis.results.load` and
    :func:`dganalysis.selection.select` (the same frames)."""
    try:
        from dganalysis.audit.sweep_selections import load_and_select_indexed
    except ImportError:
        from dganalysis.results import load

        df = load(path, progress=False)
        return df, {m: select(df, m) for m in selections}
    return load_and_select_indexed(path, selections)


def load_input(path: str | Path, selections: Sequence[str] = DOMAINBED_SELECTIONS,
               trials: int | None = None) -> AuditInput:
    """Read one audit input (see the module docstring); ``trials`` overrides n of a table's cells."""
    check_inputs([path])
    name = str(path)
    if tables.is_table(path):
        cells = tables.read_table(path, trials=trials)
        return AuditInput(name, "table", cells)
    if trials is not None:
        raise ValueError(f"--trials applies to tables; {path} is a sweep directory (its trials are counted)")
    df, selected = load_records(path, selections)
    if df.empty:
        raise ValueError(f"{path}: no finished runs with records (expected a job store or a DomainBed sweep dir)")
    tr = sweep_trials(df, selections, selected)
    notes = [f"{k}: {v}" for k, v in tr.attrs.get("incomplete", {}).items()]
    if tr.empty:
        raise ValueError(f"{path}: no selected results for {list(selections)} (too few runs, or leave-one-out "
                         "without its helper runs)")
    return AuditInput(name, "sweep", cells_from_trials(tr), tr, df, notes, selected)


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


def sweep_trials(df: pd.DataFrame, selections: Sequence[str],
                 selected: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Per (selection, dataset, algorithm, trial seed): the mean over the test environments of the selected test
    accuracy, in points (DomainBed's Avg per trial). ``attrs["incomplete"]``: dropped trials per selection.
    ``selected``: ``{method: select(df, method)}`` already made (the others are selected here)."""
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
    cells["se"] = np.where(cells["n"] >= 2, cells["sd"] / np.sqrt(cells["n"]), np.nan)
    cells = cells.assign(env="", se_ddof=1, mean_res=0.0, se_res=0.0, source="sweep")
    return cells[tables.CELL_COLUMNS].reset_index(drop=True)


def check_baseline(cells: pd.DataFrame, baseline: str, where: str) -> None:
    """Raise naming ``where`` when ``baseline`` is not an algorithm of ``cells`` (with a close match)."""
    algs = sorted(map(str, cells["algorithm"].unique()))
    if baseline not in algs:
        close = [a for a in algs if a.lower() == baseline.lower()] or difflib.get_close_matches(baseline, algs, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{where}: baseline {baseline!r} is not among its algorithms {algs}{hint}")
