"""Records: reading a results store and DomainBed's model selection on it, one way each.

A store is a folder of job folders, each with ``results.jsonl`` (one JSON record per checkpoint, DomainBed's format:
Gulrajani & Lopez-Paz 2021, ``domainbed/scripts/train.py``). The floors, from the files up:

* :mod:`~dganalysis.records.store` — the layout: which folders are jobs, their state (done, failed, unfinished),
  what our ``spec.json`` adds;
* :mod:`~dganalysis.records.read` — a record → rows: the conventions of the tidy frame (one row per job, step,
  domain and split) and the rules every record and job folder is read by;
* :mod:`~dganalysis.records.index_file` and :mod:`~dganalysis.records.index` — the one reader: a store's records
  parsed (``msgspec``, the standard library's ``json`` where a record needs it) into a columnar index and assembled
  into the tidy frame; :func:`load` keeps that index in memory, :func:`~dganalysis.records.index.load_indexed`
  keeps it beside the store, updated incrementally;
* :mod:`~dganalysis.records.rules` — DomainBed's selection rules (and ours) computed on record arrays: the one
  implementation, run on the index's arrays or on a tidy frame's;
* :mod:`~dganalysis.records.selection_methods` — the method registry (DomainBed's three among them) and the columns
  of a selection;
* :mod:`~dganalysis.records.selection` — :func:`select` on the tidy frame (a frame becomes the rules' arrays),
  :func:`summarize` and :func:`picks`;
* :mod:`~dganalysis.records.summaries` — the numbers of DomainBed-style tables of selections (:func:`build_tables`:
  cells of mean and SE over trials in row and column order; every method's, with the line counting the job
  folders, for `dganalysis collect`), which :mod:`dganalysis.tables` lays out;
* :mod:`~dganalysis.records.indexed` — a sweep's selections through its index, kept beside it for an unchanged
  sweep; :mod:`~dganalysis.records.memo` — the key and the files under which such results are kept;
  :mod:`~dganalysis.records.gc_pause` — the garbage collector paused around the bulk work.

``dganalysis collect`` and ``dganalysis audit`` read sweeps through :mod:`~dganalysis.records.indexed`; notebooks
and protocols call :func:`load` and :func:`select`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dganalysis.records.read import domain_orders, summary_line
from dganalysis.records.selection import picks, select, summarize
from dganalysis.records.summaries import build_tables

if TYPE_CHECKING:
    from dganalysis.records.index import load, load_many

__all__ = ["build_tables", "domain_orders", "load", "load_many", "picks", "select", "summarize", "summary_line"]


def __getattr__(name: str) -> Any:
    """:func:`load` and :func:`load_many` (:mod:`dganalysis.records.index`), imported on first use: the index
    module imports numpy, which a command repeated on an unchanged sweep does without
    (:class:`dganalysis.records.memo.SweepMemo`)."""
    if name in ("load", "load_many"):
        from dganalysis.records import index

        return getattr(index, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
