"""A command's whole output computed from unchanged sweeps, kept beside their index (:class:`SweepMemo`):
`dganalysis collect`'s printed tables, `dganalysis audit`'s report.

It is kept, like the selections of :mod:`dganalysis.records.indexed`, under
:func:`~dganalysis.records.index_file.sweep_key`: a digest of every job folder's key (the index's job table), of the
package's version (:data:`dganalysis.__version__`) and of the caller's arguments. Code changed without a new version
(a working copy being edited) can meet a result kept by the code before it: ``--fresh`` computes again. Like
:mod:`~dganalysis.records.index_file`, this module imports neither numpy nor pandas: `dganalysis collect` or
`dganalysis audit` repeated on an unchanged sweep checks the job folders, reads the index's job table and prints what
it kept without them (``tests/records/test_memo.py`` pins it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from dganalysis import io
from dganalysis.records import index_file
from dganalysis.records.index_file import cache_folder, read_payload, sweep_key

log = logging.getLogger("dganalysis.records.index")


class StoreKeys(NamedTuple):
    """A store's job keys as a computation read them: what :func:`~dganalysis.records.index_file.sweep_key` needs of
    its index (kept instead of the index, whose record arrays take tens of MB on a large sweep)."""

    keys: list


class SweepMemo:
    """A command's output computed from unchanged sweeps — `dganalysis collect`'s printed tables, `dganalysis audit`'s
    report — kept beside the first store's index (``<index>.select/<name>-<digest of parts>.json``, plus copies of the
    files it wrote) under :func:`~dganalysis.records.index_file.sweep_key`, so the same command on unchanged sweeps
    scans the job folders and gives the same output again without importing numpy or pandas or reading a record.

    ``parts``: everything else that shapes the output (the command's arguments, digests of other input files;
    JSON-able); the key also holds the package's version. :meth:`get` checks the stores' indexes without updating
    them (:func:`~dganalysis.records.index_file.unchanged_head`); :attr:`indexes` brings them up to date
    (:func:`dganalysis.records.index.update_index`, reusing what :meth:`get` checked), for the computation on a miss,
    and :meth:`put` keeps the value under the key of those."""

    def __init__(self, paths: Iterable[str | Path], name: str, parts: list[Any],
                 cache_dir: str | Path | None = None) -> None:
        self.paths = [Path(p) for p in paths]
        self._parts, self._cache_dir = parts, cache_dir
        self._name = f"{name}-{hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]}"
        self._indexes: list[tuple[Path, Any]] | None = None
        self._checked: dict[Path, index_file.IndexHead] = {}  # heads :meth:`get` found up to date
        self._stale: set[Path] = set()  # stores :meth:`get` found changed

    @functools.cached_property
    def file(self) -> Path:
        """The file the value is kept in: ``<index>.select/<name>-<digest of parts>.json`` beside the first store's
        index."""
        return cache_folder(self.paths[0], self._cache_dir) / f"{self._name}.json"

    @property
    def copies(self) -> Path:
        """The folder of the copies of the files the command wrote."""
        return self.file.with_suffix(".files")

    @property
    def indexes(self) -> list[tuple[Path, Any]]:
        """The stores' (path, index brought up to date, lazily read: :func:`~dganalysis.records.index.update_index`)."""
        if self._indexes is None:
            from dganalysis.records.index import update_index

            self._indexes = [(p, update_index(p, self._cache_dir, lazy=True, checked=self._checked.get(p),
                                              stale=p in self._stale)) for p in self.paths]
        return self._indexes

    def _key(self, indexes: list[tuple[Path, Any]]) -> str:
        return sweep_key(indexes, *self._parts)

    def get(self) -> Any | None:
        """The kept value when every store's index is up to date and the key holds (every file the command wrote is
        then restored where it was written), else None."""
        heads = []
        for p in self.paths:
            head = index_file.unchanged_head(p, self._cache_dir)
            if head is None:
                self._stale.add(p)
                return None
            heads.append((p, head))
            self._checked[p] = head
        payload = read_payload(self.file, self._key(heads))
        if payload is None:
            return None
        try:
            for i, target in enumerate(payload.get("files", [])):
                io.write_bytes(target, (self.copies / f"{i:04d}").read_bytes())
        except OSError:  # a copy is missing or a target cannot be written: compute again
            return None
        return payload.get("value")

    def put(self, value: Any, files: Iterable[str | Path] = (),
            indexes: list[tuple[Path, Any]] | None = None) -> None:
        """Keep ``value`` (JSON-able) and copies of ``files`` (absolute paths restored by :meth:`get`) under the key of
        the stores as the value was computed from them: ``indexes``, each store's (path, index) as the computation read
        it, in the order of :attr:`paths`, where the caller has them (no second scan of the job folders, and a job
        written meanwhile is not taken as computed), else :attr:`indexes`. A memo that cannot be written is logged and
        skipped."""
        if indexes is not None and [Path(p).resolve() for p, _ in indexes] != [p.resolve() for p in self.paths]:
            raise ValueError(f"SweepMemo.put: parameter 'indexes': expected one (path, index) per store of the memo, "
                             f"{[str(p) for p in self.paths]}, in that order")
        targets = [str(Path(f).resolve()) for f in files]
        payload = {"key": self._key(self.indexes if indexes is None else indexes), "value": value, "files": targets}
        try:
            for i, target in enumerate(targets):
                io.write_bytes(self.copies / f"{i:04d}", Path(target).read_bytes())
            io.write_bytes(self.file, index_file.dumps(payload))
        except OSError as err:
            log.warning("could not keep %s (%s)", self.file, err)
