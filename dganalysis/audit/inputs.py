"""Audit inputs: a sweep directory (ours or DomainBed's) or a published table, checked and read before any work
(:func:`read_inputs`).

A sweep is read by the same code as ``dganalysis collect`` (the columnar index of :mod:`dganalysis.records.index`,
:func:`~dganalysis.records.indexed.select_for_tables`) and selected as :func:`dganalysis.records.selection.select`
selects; its selections become per-trial dataset averages, cells and pairs as :mod:`dganalysis.audit.sweep_cells`
describes. A table is read by :mod:`dganalysis.audit.published`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis.audit import published, sweep_cells
from dganalysis.records.selection_methods import DOMAINBED_METHODS, METHODS
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)


@dataclass
class AuditInput:
    """One input: ``kind`` "sweep" or "table"; ``cells`` (:data:`dganalysis.audit.published.CELL_COLUMNS`); for a sweep
    also ``trials`` (:data:`dganalysis.audit.sweep_cells.TRIAL_COLUMNS`, accuracy in points), ``pairs`` (the paired
    differences with the baseline, :func:`dganalysis.audit.sweep_cells.pairs_from_trials`), ``selected`` (``{method: select(records, method)}``
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
    pairs: pd.DataFrame | None = None

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


def is_table(path: str | Path) -> bool:
    """Whether ``path`` is read as a published table (``.tex``/``.csv`` file, or ``shipped:<name>``)."""
    return str(path).startswith(published.SHIPPED_PREFIX) or Path(path).suffix.lower() in published.TABLE_SUFFIXES


def check_input_paths(paths: Sequence[str | Path]) -> None:
    """Every input exists and is a table file or a folder; raise naming the first that is not (a shipped table's
    name is checked where it is read, :func:`dganalysis.audit.published.shipped`)."""
    if not paths:
        raise ConfigError("audit: expected at least one INPUT (a sweep directory or a .tex/.csv table)")
    for p in paths:
        if str(p).startswith(published.SHIPPED_PREFIX):
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
    (:func:`parse_selections` of ``selection``), the inputs read, the notes on optional inputs left out, the reference
    table's cells or None). Each input must have ``baseline``; one listed in ``optional`` that gives no usable cells or
    lacks it is left out with a note. ``trials`` overrides n of the tables' cells; ``indexes``: (path, index brought
    up to date, :func:`dganalysis.records.index.update_index`) of sweep inputs, read as they are.

    First every input is read, in one pass: a table's cells (:func:`dganalysis.audit.published.read_table`; a table
    keeps the cells of the audited selections), a sweep's selections through its columnar index
    (:func:`~dganalysis.records.indexed.select_for_tables`, cached beside it: the audited selections, the oracle and
    training-domain validation, which the raw-sweep analyses compare with, and the per-draw selection of
    :func:`main_selection`, for the expected-max curve, without building the tidy frame) with the folders read and
    left out (:func:`~dganalysis.records.read.summary_line`). Then a sweep's selections become its per-trial dataset
    averages, cells and pairs (:mod:`dganalysis.audit.sweep_cells`), and every input's baseline is checked."""
    from dganalysis.records.index import provenance_differences
    from dganalysis.records.indexed import select_for_tables
    from dganalysis.records.memo import StoreKeys
    from dganalysis.records.read import summary_line

    selections = parse_selections(selection)
    explicit = selection != "all"
    check_input_paths(list(inputs) + ([reference_table] if reference_table else []))
    table = {str(p): is_table(p) for p in [*inputs, *([reference_table] if reference_table else [])]}
    if trials is not None and not any(table[str(p)] for p in inputs):
        raise ConfigError(f"--trials {trials}: sets n of a published table's cells; every INPUT here is a sweep "
                         "directory, whose trials are counted")
    if reference_table is not None and not table[str(reference_table)]:
        raise ConfigError(f"--reference {reference_table}: expected a published table (.tex or .csv)")
    methods = list(dict.fromkeys([*selections, "oracle", "training_domain"]))
    per_draw = [main_selection(selections)]
    optional = {str(p) for p in optional}
    known = {Path(p).resolve(): idx for p, idx in indexes}
    ref_cells = published.read_table(reference_table) if reference_table else None
    read, skipped = [], {}
    for i, path in enumerate(inputs):  # read: a table's cells, a sweep's selections and the runs they are of
        try:
            start = time.perf_counter()
            if table[str(path)]:
                read.append((i, path, published.read_table(path, trials=trials)))
            else:
                index = known.get(Path(path).resolve())
                picks = select_for_tables(path, methods, per_draw=per_draw,
                                          indexes=None if index is None else [(Path(path), index)])
                if not picks.rows:
                    raise ConfigError(f"{path}: no finished runs with records (expected a job store or a DomainBed "
                                     "sweep dir)")
                # a verdict is about the runs that were read: the folders read and left out, as collect prints
                # them, and the runs made under other versions, devices, precisions
                read.append((i, path, (picks, summary_line(picks.selections[selections[0]]),
                                       provenance_differences(picks.indexes))))
            log.info("audit %s: read and selected in %.1f s", path, time.perf_counter() - start)
        except ValueError as e:
            if str(path) not in optional:
                raise
            skipped[i] = f"{path}: not audited ({e})"
    loaded = []
    for i, path, got in read:  # summarise and check
        try:
            if table[str(path)]:  # the audited selections' cells
                have = list(dict.fromkeys(got["selection"]))
                keep = got[got["selection"].isin(selections)]
                if keep.empty or (explicit and set(selections) - set(have)):
                    raise ConfigError(f"{path}: no cells for selection {sorted(set(selections) - set(have))}; "
                                     f"the table has {have}")
                sweep_cells.check_baseline(keep, baseline, str(path))
                inp = AuditInput(str(path), "table", keep)
            else:
                picks, read_line, provenance = got
                tr = sweep_cells.sweep_trials(None, selections, picks.selections)
                if tr.empty:
                    raise ConfigError(f"{path}: no selected results for {list(selections)} (too few runs, or "
                                     "leave-one-out without its helper runs)")
                cells = sweep_cells.cells_from_trials(tr)
                sweep_cells.check_baseline(cells, baseline, str(path))
                notes = [*([read_line] if read_line else []),
                         *(f"{k}: {v}" for k, v in tr.attrs.get("incomplete", {}).items()), *provenance]
                inp = AuditInput(str(path), "sweep", cells, tr, notes, picks.selections, picks.draws, Path(path),
                                 StoreKeys(list(picks.indexes[0][1].keys)),
                                 sweep_cells.pairs_from_trials(tr, baseline))
        except ValueError as e:
            if str(path) not in optional:
                raise
            skipped[i] = f"{path}: not audited ({e})"
            continue
        loaded.append(inp)
    return selections, loaded, [skipped[i] for i in sorted(skipped)], ref_cells
