"""Audit inputs: a sweep directory (ours or DomainBed's) or a published table, checked before any work.

A sweep is read by the same code as ``dganalysis collect`` (the columnar index of :mod:`dganalysis.records.index`,
:func:`~dganalysis.records.indexed.select_for_tables`) and selected as :func:`dganalysis.records.selection.select`
selects.
Each (selection, dataset, algorithm, trial seed) then gets DomainBed's Avg value: the mean over the dataset's test
environments of the selected test accuracy, in points, from the single-test-environment runs (``collect``'s
``--test-domains auto``). A trial missing a test environment gives no value (it is counted in
``trials.attrs["incomplete"]``; DomainBed would average the environments it has). Runs of one dataset under different
*settings* (``dataset_kwargs``, steps, overrides, …; see :mod:`dganalysis.records.read`) are different experiments: the
dataset is then labelled with the setting keys that differ, ``"RotatedDigits (image_size=16)"``; so are runs with
different numbers of training domains (``"… [2 training domains]"``). Several training-domain sets of one size
reaching the same test environment are averaged (and counted in ``attrs["incomplete"]``).
:func:`cells_from_trials` summarises the trials into the cells frame of :mod:`dganalysis.audit.published` (sample SD,
``se_ddof = 1``, no rounding), so sweeps and tables go through the same claims.
"""

from __future__ import annotations

import difflib
import functools
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis.audit import published
from dganalysis.records.selection import select
from dganalysis.records.selection_methods import DOMAINBED_METHODS, METHODS
from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)
TRIAL_COLUMNS = ["board", "selection", "dataset", "algorithm", "trial_seed", "acc"]


@dataclass
class AuditInput:
    """One input: ``kind`` "sweep" or "table"; ``cells`` (:data:`dganalysis.audit.published.CELL_COLUMNS`); for a sweep
    also ``trials`` (:data:`TRIAL_COLUMNS`, accuracy in points), ``selected`` (``{method: select(records, method)}``
    for the audited methods, the oracle and training-domain validation), ``draws`` (``{method: select(records,
    method, per_draw=True)}`` for :func:`main_selection`), ``path`` and ``index`` (its job keys as read,
    :class:`~dganalysis.records.memo.StoreKeys`: what the selections are of, the key under which
    :class:`~dganalysis.records.memo.SweepMemo` keeps the audit); ``records``, the tidy frame of
    :func:`dganalysis.records.load`, is read from ``path`` on first use (the audit's own analyses need only the
    selections, and the frame of a large sweep takes seconds and hundreds of MB)."""

    name: str
    kind: str
    cells: pd.DataFrame
    trials: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    selected: dict[str, pd.DataFrame] = field(default_factory=dict)
    draws: dict[str, pd.DataFrame] = field(default_factory=dict)
    path: Path | None = None
    index: Any = None

    @functools.cached_property
    def records(self) -> pd.DataFrame | None:
        """A sweep's tidy frame (:func:`dganalysis.records.index.load_indexed` of ``path``, read once); None for a
        table."""
        if self.path is None:
            return None
        from dganalysis.records.index import load_indexed

        return load_indexed(self.path)


def main_selection(selections: Sequence[str]) -> str:
    """The selection of the analyses that take one (expected-max curves, selected hparams): training-domain
    validation where audited (DomainBed's default), else the first audited method."""
    if isinstance(selections, str) or not isinstance(selections, Sequence) or not selections:
        raise ConfigError(f"main_selection: parameter 'selections': expected a non-empty list of method names, got "
                         f"{selections!r}")
    return "training_domain" if "training_domain" in selections else selections[0]


def parse_selections(selection: str | Sequence[str]) -> list[str]:
    """``"all"`` → DomainBed's three methods; a name or list of names → checked against :data:`METHODS`."""
    names = list(DOMAINBED_METHODS) if selection == "all" else (
        [selection] if isinstance(selection, str) else list(selection))
    bad = [s for s in names if s not in METHODS]
    if bad or not names:
        raise ConfigError(f"selection {bad or names!r}: expected 'all' or some of {list(METHODS)}")
    return names


def check_input_paths(paths: Sequence[str | Path]) -> None:
    """Every input exists and is a table file or a folder; raise naming the first that is not."""
    if not paths:
        raise ConfigError("audit: expected at least one INPUT (a sweep directory or a .tex/.csv table)")
    for p in paths:
        if str(p).startswith("shipped:"):
            published.resolve_table(p)  # raises on an unknown name
            continue
        path = Path(p)
        if not path.exists():
            raise MissingInputError(f"INPUT {p}: no such file or folder (expected a sweep directory or a .tex/.csv "
                                    "table)")
        if path.is_file() and path.suffix.lower() not in published.TABLE_SUFFIXES:
            raise ConfigError(f"INPUT {p}: a {path.suffix or 'suffix-less'} file; expected a sweep directory or a "
                             ".tex/.csv table")


def read_inputs(inputs: Sequence[str | Path], selection: str | Sequence[str], baseline: str,
                reference_table: str | Path | None = None, trials: int | None = None,
                optional: Sequence[str | Path] = (), indexes: Sequence[tuple[Path, Any]] = (),
                ) -> tuple[list[str], list[AuditInput], list[str], pd.DataFrame | None]:
    """Every input of an audit read and checked, before any statistic: (the audited selections
    (:func:`parse_selections` of ``selection``), the inputs read (:func:`load_input`; a table keeps the cells of those
    selections), the notes on optional inputs left out, the reference table's cells or None). Each input must have
    ``baseline``; one listed in ``optional`` that gives no usable cells or lacks it is left out with a note.
    ``indexes``: (path, index brought up to date) of sweep inputs, read as they are (:func:`load_input`)."""
    selections = parse_selections(selection)
    explicit = selection != "all"
    check_input_paths(list(inputs) + ([reference_table] if reference_table else []))
    if trials is not None and not any(published.is_table(p) for p in inputs):
        raise ConfigError(f"--trials {trials}: sets n of a published table's cells; every INPUT here is a sweep "
                         "directory, whose trials are counted")
    if reference_table is not None and not published.is_table(reference_table):
        raise ConfigError(f"--reference {reference_table}: expected a published table (.tex or .csv)")
    ref_cells = published.read_table(reference_table) if reference_table else None
    loaded, skipped = [], []
    optional = {str(p) for p in optional}
    known = {Path(p).resolve(): idx for p, idx in indexes}
    for path in inputs:
        try:
            start = time.perf_counter()
            inp = load_input(path, selections, trials=trials if published.is_table(path) else None,
                             index=known.get(Path(path).resolve()))
            log.info("audit %s: read and selected in %.1f s", path, time.perf_counter() - start)
            if inp.kind == "table":  # the audited selections' cells
                have = list(dict.fromkeys(inp.cells["selection"]))
                keep = inp.cells[inp.cells["selection"].isin(selections)]
                if keep.empty or (explicit and set(selections) - set(have)):
                    raise ConfigError(f"{inp.name}: no cells for selection {sorted(set(selections) - set(have))}; "
                                     f"the table has {have}")
                inp.cells = keep
            check_baseline(inp.cells, baseline, inp.name)
        except ValueError as e:
            if str(path) not in optional:
                raise
            skipped.append(f"{path}: not audited ({e})")
            continue
        loaded.append(inp)
    return selections, loaded, skipped, ref_cells


def load_input(path: str | Path, selections: Sequence[str] = DOMAINBED_METHODS,
               trials: int | None = None, index: Any = None) -> AuditInput:
    """Read one audit input (see the module docstring); ``trials`` overrides n of a table's cells; ``index``: a
    sweep's index already brought up to date (:func:`dganalysis.records.index.update_index`), else it is here.

    A sweep is read through its columnar index
    (:func:`~dganalysis.records.indexed.select_for_tables`, the selections cached beside it): ``selections``,
    the oracle and training-domain validation (the raw-sweep analyses compare with them), and the per-draw selection
    of :func:`main_selection` (the expected-max curve), without building the tidy frame."""
    from dganalysis.records.index import provenance_differences
    from dganalysis.records.indexed import select_for_tables
    from dganalysis.records.memo import StoreKeys
    from dganalysis.records.read import summary_line

    check_input_paths([path])
    name = str(path)
    if published.is_table(path):
        cells = published.read_table(path, trials=trials)
        return AuditInput(name, "table", cells)
    if trials is not None:
        raise ConfigError(f"--trials applies to tables; {path} is a sweep directory (its trials are counted)")
    methods = list(dict.fromkeys([*selections, "oracle", "training_domain"]))
    picks = select_for_tables(path, methods, per_draw=[main_selection(selections)],
                              indexes=None if index is None else [(Path(path), index)])
    if not picks.rows:
        raise ConfigError(f"{path}: no finished runs with records (expected a job store or a DomainBed sweep dir)")
    tr = sweep_trials(None, selections, picks.selections)
    # a verdict is about the runs that were read: the folders read and left out, as collect prints them
    read = summary_line(picks.selections[selections[0]])
    notes = [*([read] if read else []), *(f"{k}: {v}" for k, v in tr.attrs.get("incomplete", {}).items())]
    notes += provenance_differences(picks.indexes)  # runs made under other versions, devices, precisions
    if tr.empty:
        raise ConfigError(f"{path}: no selected results for {list(selections)} (too few runs, or leave-one-out "
                         "without its helper runs)")
    return AuditInput(name, "sweep", cells_from_trials(tr), tr, notes, picks.selections, picks.draws, Path(path),
                      StoreKeys(list(picks.indexes[0][1].keys)))


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
    return cells[published.CELL_COLUMNS].reset_index(drop=True)


def check_baseline(cells: pd.DataFrame, baseline: str, where: str) -> None:
    """Raise naming ``where`` when ``baseline`` is not an algorithm of ``cells`` (with a close match)."""
    algs = sorted(map(str, cells["algorithm"].unique()))
    if baseline not in algs:
        close = [a for a in algs if a.lower() == baseline.lower()] or difflib.get_close_matches(baseline, algs, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"{where}: baseline {baseline!r} is not among its algorithms {algs}{hint}")
