"""A sweep's model selections read through its index (:mod:`dganalysis.records.index`) and kept beside it for an
unchanged sweep (:func:`~dganalysis.records.index_file.cache_folder`): what `dganalysis collect` prints and
`dganalysis audit` reads a sweep with.

Each method's selection is kept in ``<index>.select/<method>.json`` under :func:`~dganalysis.records.index_file.sweep_key`
of the index's job keys, the arguments and the package's version; a repeated call on an unchanged sweep
checks the job folders and reads the kept rows, without building the tidy frame. Any change selects again, with the
selection rules of :mod:`dganalysis.records.rules` (the one implementation :func:`dganalysis.records.select` runs too)
on the index's arrays; the tidy frame is built only where the arrays are not select()'s input as they stand — a job
that records a step twice (``load`` keeps the last record: the frame's records are selected) — or for a method a user
registered with a scoring function on the frame (:func:`dganalysis.records.selection_methods.register_method`).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dganalysis import io
from dganalysis.records import gc_pause, index_file, read
from dganalysis.records.index import Index, assemble, kept_jobs, update_index
from dganalysis.records.index_file import cache_folder, read_payload, sweep_key
from dganalysis.records.selection_methods import BUILT_IN, DOMAINBED_METHODS, METHODS, OUTPUT
from dganalysis.validation import ConfigError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("dganalysis.records.index")


_INT_OUTPUT = ("trial_seed", "hparams_seed", "step")
_FLOAT_OUTPUT = ("acc", "val_acc")


def select_indexed(
    path: str | Path | Iterable[str | Path], methods: Iterable[str] = DOMAINBED_METHODS,
    include_unfinished: bool | None = None, strict: bool = True, tie_tol: float = 0.0,
    cache_dir: str | Path | None = None,
) -> dict[str, pd.DataFrame]:
    """``{method: dganalysis.records.selection.select(load_indexed(path), method)}`` for an audit, cached beside the index.

    The selections are kept in ``<index>.select/<method>.json`` under a key of the index's job keys (every job
    folder's key, see the module docstring), the arguments and the package's version; a repeated
    call on an unchanged sweep checks the folders (:func:`update_index`) and reads the cached rows, without building
    the tidy frame. Any change re-selects on the index's arrays (:mod:`dganalysis.records.rules`; the tidy frame
    where the module docstring says). String columns come back as ``str``; ``attrs`` are load_indexed's.
    """
    return select_for_tables(path, methods, include_unfinished, strict, tie_tol, cache_dir).selections


@dataclass
class IndexedSelections:
    """:func:`select_for_tables`'s result: the selections, each dataset's domains in environment order (their first
    appearance among the records, :func:`dganalysis.records.read.domain_orders` of the tidy frame) and the number of
    rows of the tidy frame (0: no record was read, no table can be made); ``draws``, the per-draw selections asked
    for; ``indexes``, the stores' (path, index) as they were read (their job keys: what the selections are of)."""

    selections: dict[str, pd.DataFrame]
    orders: dict[str, list[str]]
    rows: int
    draws: dict[str, pd.DataFrame] = field(default_factory=dict)
    indexes: list[tuple[Path, Any]] = field(default_factory=list)


def select_for_tables(
    path: str | Path | Iterable[str | Path], methods: Iterable[str] = DOMAINBED_METHODS,
    include_unfinished: bool | None = None, strict: bool = True, tie_tol: float = 0.0,
    cache_dir: str | Path | None = None, indexes: list[tuple[Path, Any]] | None = None, per_draw: Iterable[str] = (),
) -> IndexedSelections:
    """:func:`select_indexed` plus what DomainBed-style tables of the selections need besides them (the domain order,
    whether any record was read), cached with them: `dganalysis collect` without the tidy frame. ``indexes``: the
    stores' (path, :func:`update_index` result) when the caller has scanned them already. ``per_draw``: methods whose
    per-draw selection (``select(..., per_draw=True)``, every hparams draw alone: what the expected-max curve of
    :func:`dganalysis.audit.sweep_analyses.expected_max_curve` needs) is returned too, in ``draws``, and cached alike."""
    methods, paths = _check_selection_args("select_indexed", path, methods)
    per_draw = _check_selection_args("select_for_tables", path, [per_draw] if isinstance(per_draw, str) else per_draw)[0]
    with gc_pause.paused():  # reading and selecting make millions of objects and no cycle
        return _select_for_tables(paths, methods, include_unfinished, strict, tie_tol, cache_dir, indexes, per_draw)


def _select_for_tables(paths: list[str | Path], methods: list[str], include_unfinished: bool | None, strict: bool,
                       tie_tol: float, cache_dir: str | Path | None, indexes: list[tuple[Path, Any]] | None,
                       per_draw: list[str]) -> IndexedSelections:
    if indexes is None:
        indexes = [(Path(p), update_index(p, cache_dir, lazy=True)) for p in paths]  # the job table decides
    full: list[tuple[Path, Index]] = []

    def loaded() -> list[tuple[Path, Index]]:
        if not full:
            for p, idx in indexes:
                try:
                    full.append((p, idx if isinstance(idx, Index) else Index.from_head(idx)))
                except Exception as err:  # noqa: BLE001 - replaced meanwhile, or damaged past its job table
                    log.info("%s: %s; reading it again", p, err)
                    full.append((p, update_index(p, cache_dir)))  # the current file, rebuilt if damaged
        return full

    got = _cached_selections(indexes, methods, loaded, include_unfinished, strict, tie_tol, cache_dir,
                             per_draw=per_draw)
    got.indexes = indexes
    return got


def _check_selection_args(func: str, path: str | Path | Iterable[str | Path],
                          methods: Iterable[str]) -> tuple[list[str], list[str | Path]]:
    methods = list(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ConfigError(f"{func}: unknown methods {bad}; expected some of {list(METHODS)}")
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    if not paths:
        raise ConfigError(f"{func}: expected at least one results directory, got an empty list")
    return methods, paths


def _cached_selections(indexes: list[tuple[Path, Index]], methods: list[str],
                       loaded: Callable[[], list[tuple[Path, Index]]], include_unfinished: bool | None,
                       strict: bool, tie_tol: float, cache_dir: str | Path | None,
                       chosen: tuple[list, dict[str, Any]] | None = None,
                       frame: pd.DataFrame | None = None, per_draw: Iterable[str] = ()) -> IndexedSelections:
    """Each method's selection (and each of ``per_draw``'s per-draw selection) read from its cache file when the key
    holds, else selected and cached. ``loaded()`` gives the indexes with their records (called only on a cache miss);
    ``chosen`` (:func:`~dganalysis.records.index.kept_jobs` on them) and ``frame`` (the tidy frame) when the caller has them. The key:
    :func:`sweep_key` of the arguments."""
    from dganalysis.records.rules import gather, record_domain_orders, select_records

    key = sweep_key(indexes, include_unfinished, strict, float(tie_tol))
    folder = cache_folder(indexes[0][0], cache_dir)
    out: dict[str, pd.DataFrame] = {}
    extra: dict[str, Any] | None = None  # the domain orders and the record count, stored with every method
    records: Any = False  # not gathered yet
    draws: dict[str, pd.DataFrame] = {}
    for method, draw in [*((m, False) for m in methods), *((m, True) for m in per_draw)]:
        file = folder / f"{method}{'.per_draw' if draw else ''}.json"
        kept = draws if draw else out
        payload = read_payload(file, key)
        if payload is not None:
            kept[method] = _selection_frame(payload)
            extra = extra or {"orders": payload.get("orders", {}), "rows": payload.get("rows", 0)}
            continue
        if chosen is None:
            chosen = kept_jobs(loaded(), include_unfinished, strict)
        if records is False:
            records = gather(chosen[0])
        columns = select_records(records, method, tie_tol, draw) if records is not None and method in BUILT_IN else None
        if columns is None:  # a step recorded twice, or a user's scorer: select() on the tidy frame
            import pandas as pd

            from dganalysis.records.selection import select

            if frame is None:
                frame = assemble(loaded(), include_unfinished, strict, categorical=True, chosen=chosen)
            sel = select(frame, method, tie_tol=tie_tol, per_draw=draw)
            columns = {c: sel[c].astype(str).tolist() if isinstance(sel[c].dtype, pd.CategoricalDtype)
                       else sel[c].tolist() for c in OUTPUT}
        if extra is None:
            if records is not None:
                extra = {"orders": record_domain_orders(records), "rows": int(records.rec_off[-1])}
            else:
                if frame is None:
                    frame = assemble(loaded(), include_unfinished, strict, categorical=True, chosen=chosen)
                extra = {"orders": read.domain_orders(frame), "rows": len(frame)}
        payload = {"key": key, "attrs": chosen[1], "columns": columns, **extra}
        try:
            io.write_bytes(file, index_file.dumps(payload))
        except OSError as err:
            log.warning("could not cache the %s selection in %s (%s)", method, file, err)
        kept[method] = _selection_frame(payload)
    return IndexedSelections(out, (extra or {}).get("orders", {}), (extra or {}).get("rows", 0), draws)


def _selection_frame(payload: dict[str, Any]) -> pd.DataFrame:
    """A cached selection's frame: select()'s columns, ``str`` strings, NaN for null floats, its ``attrs``."""
    import pandas as pd

    cols = payload["columns"]
    data = {}
    for c in OUTPUT:
        if c in _INT_OUTPUT:
            data[c] = np.asarray(cols[c], dtype=np.int64)
        elif c in _FLOAT_OUTPUT:
            data[c] = np.asarray([np.nan if v is None else v for v in cols[c]], dtype=np.float64)
        else:
            data[c] = pd.array(cols[c], dtype="str")
    df = pd.DataFrame(data, columns=OUTPUT)
    df.attrs = copy.deepcopy(payload["attrs"])
    return df
