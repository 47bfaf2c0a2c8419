"""Records: reading a results store and DomainBed's model selection on it, one way each.

A store is a folder of job folders, each with ``results.jsonl`` (one JSON record per checkpoint, DomainBed's format:
Gulrajani & Lopez-Paz 2021, ``domainbed/scripts/train.py``). The floors, from the files up:

* :mod:`~dganalysis.records.store` — the layout: which folders are jobs, their state (done, failed, unfinished),
  what our ``spec.json`` adds;
* :mod:`~dganalysis.records.read` — a record → rows: :func:`load` gives the tidy frame (one row per job, step,
  domain and split);
* :mod:`~dganalysis.records.index_file` and :mod:`~dganalysis.records.index` — the columnar index kept beside a
  store, updated incrementally: the same records as :func:`load` reads, parsed once (``msgspec``), as arrays;
* :mod:`~dganalysis.records.rules` — DomainBed's selection rules (and ours) computed on record arrays: the one
  implementation, run on the index's arrays or on a tidy frame's;
* :mod:`~dganalysis.records.selection` — :func:`select` on the tidy frame (a frame becomes the rules' arrays), the
  method registry, :func:`summarize` and :func:`picks`;
* :mod:`~dganalysis.records.indexed` — a sweep's selections through its index, kept beside it for an unchanged
  sweep; :mod:`~dganalysis.records.memo` — the key and the files under which such results are kept;
  :mod:`~dganalysis.records.collector` — the garbage collector paused around the bulk work.

``dganalysis collect`` and ``dganalysis audit`` read sweeps through :mod:`~dganalysis.records.indexed`; notebooks
and protocols call :func:`load` and :func:`select`.
"""

from dganalysis.records.read import load, summary_line
from dganalysis.records.selection import picks, select, summarize

__all__ = ["load", "picks", "select", "summarize", "summary_line"]
