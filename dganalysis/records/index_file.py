"""Where a store's index lives, the keys of its job folders, the index file's format, and the results kept beside it.

This part of :mod:`dganalysis.records.index` imports neither numpy nor pandas, so that a command repeated on an
unchanged sweep (:class:`dganalysis.records.memo.SweepMemo`) checks the job folders and reads the index's job
table without them; numpy is imported when the index's record arrays are read (:meth:`IndexHead.arrays`).

**Job keys.** A job's key is its folder (relative path; every folder :func:`dganalysis.records.store.job_folders` counts,
records or not), the size and modification time (ns) of its ``results.jsonl`` (-1 without one), which of ``done``,
``failed`` and ``spec.json`` it holds (:data:`DONE`, :data:`FAILED`, :data:`SPEC` bits), ``spec.json``'s
modification time and the folder's own modification time (a known folder whose mtime is unchanged holds the same
files, so it is not listed again).

**Where it lives.** ``<store>/.dganalysis_index.bin`` (with ``<store>/.dganalysis_index.lock``). When the store
folder is not writable (e.g. someone else's DomainBed sweep), under ``$XDG_CACHE_HOME/dganalysis/index/`` (default
``~/.cache``), named by a hash of the store's resolved path.

**File format** (version :data:`INDEX_VERSION`): the magic bytes :data:`MAGIC`; the head (JSON: format version,
:data:`dganalysis.training.hparams.DRAW_VERSION`, every job's key as six columns, the arrays' names, dtypes and lengths, the distinct provenance stamps
of the jobs' records with their algorithm, :mod:`dganalysis.provenance`), the
rest of the job table (JSON: each job's status, problem, loss explosion, record count, index of its provenance
stamp) and the tables (JSON:
metadata and layouts), each preceded by its length (8 bytes, little-endian); then each array's raw bytes, in the
head's order. Checking an unchanged sweep decodes the head alone (the job keys); :attr:`IndexHead.jobs` decodes the
job table when records are used, and :meth:`IndexHead.arrays` reads the rest later, from the same version of the
file (a writer renames a new index over the old one: a changed inode, size or mtime is refused).

**Results kept beside it.** What is computed from the stores' records and kept for an unchanged sweep (the
selections of :mod:`dganalysis.records.indexed`, a command's output: :class:`dganalysis.records.memo.SweepMemo`) goes
in ``<index>.select/`` (:func:`cache_folder`) as JSON under :func:`sweep_key`: a digest of every job folder's key, the
package's version (:data:`dganalysis.__version__`) and the caller's arguments, read back by :func:`read_payload`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import operator
import os
import stat
import struct
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from dganalysis import __version__
from dganalysis.records.store import is_job_folder
from dganalysis.validation import ConfigError, MissingInputError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("dganalysis.records.index")

INDEX_NAME = ".dganalysis_index.bin"
LOCK_NAME = ".dganalysis_index.lock"
#: names earlier versions gave the index; removed (with their ``.select`` folder) when a new index is written
OLD_NAMES = (".dganalysis_index.npz",)
#: format of the index file; another value rebuilds it
INDEX_VERSION = 7
MAGIC = b"DGAINDEX"
#: a folder modified less than this long ago is listed again next time (file system clocks tick coarsely: a ``done``
#: made in the same tick as the listing leaves the folder's mtime unchanged)
MTIME_MARGIN_NS = 5_000_000_000
#: flags of a job key
DONE, FAILED, SPEC = 1, 2, 4
_LENGTH = struct.Struct("<Q")


def dumps(obj: Any) -> bytes:
    """JSON of the index's tables and kept outputs: msgspec's, or the standard library's where msgspec refuses them —
    a string holding a lone surrogate (a problem message naming a path that is not valid UTF-8, which Python decodes
    with ``surrogateescape``: UTF-8 cannot encode it, ``json`` writes it as an escape), or a value msgspec does not
    encode (a numpy float, a ``None`` or ``bool`` dict key). msgspec writes a float that is not finite as ``null``."""
    try:
        return msgspec.json.encode(obj)
    except (TypeError, UnicodeEncodeError):
        return json.dumps(obj).encode()


def read_json(data: bytes) -> Any:
    """The index's tables from their JSON: by msgspec, else (a lone surrogate's escape, which msgspec refuses, as
    :func:`dumps` may write it) by the standard library's ``json``."""
    try:
        return msgspec.json.decode(data)
    except ValueError:  # msgspec.DecodeError
        return json.loads(data)


# ---------------------------------------------------------------- where the index lives


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dganalysis/index`` (``~/.cache/dganalysis/index`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dganalysis" / "index"


def index_location(root: str | Path, cache_dir: str | Path | None = None) -> Path:
    """Where the index of the store ``root`` lives: beside it when ``root`` is writable, else in the cache folder
    (``cache_dir`` or :func:`default_cache_dir`) under a hash of ``root``'s resolved path. A folder whose mode has no
    write bit for its owner counts as not writable even for root (who may write anywhere): a sweep someone made
    read-only is not written into."""
    root = Path(root)
    if cache_dir is None and os.access(root, os.W_OK) and _owner_writable(root):
        return root / INDEX_NAME
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:24]
    return Path(cache_dir or default_cache_dir()) / f"{digest}.bin"


def _owner_writable(root: Path) -> bool:
    try:
        return bool(os.stat(root).st_mode & 0o200)
    except OSError:
        return False


# ---------------------------------------------------------------- results kept beside the index


def sweep_key(indexes: list[tuple[Path, Any]], *parts: Any) -> str:
    """A key that changes whenever a job folder of the stores changes (their index's job keys: ``indexes`` are
    (store, anything with the index's job ``keys``)), or the package's version, or any of ``parts`` (JSON-able
    arguments)."""
    h = hashlib.sha256(json.dumps([__version__, *parts]).encode())
    for p, idx in indexes:
        h.update(str(p.resolve()).encode())
        h.update(dumps(list(idx.keys)))
    return h.hexdigest()


def cache_folder(store: str | Path, cache_dir: str | Path | None) -> Path:
    """Where results kept for the stores whose first is ``store`` go: ``<its index>.select/``."""
    where = index_location(store, cache_dir)
    return where.parent / (where.name + ".select")


def read_payload(file: Path, key: str) -> dict[str, Any] | None:
    """The kept JSON object in ``file`` when its ``key`` is ``key``; None when missing, unreadable or stale."""
    try:
        payload = read_json(file.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(payload, dict) or payload.get("key") != key:
        return None
    return payload


# ---------------------------------------------------------------- scanning job folders


def scan(root: Path, known: dict[str, list] | None = None) -> list[tuple[str, int, int, int, int, int]]:
    """Job keys under ``root`` in :func:`dganalysis.records.store.find_jobs` order: (relative folder, results.jsonl size,
    its mtime_ns, flags, spec.json mtime_ns or -1, the folder's mtime_ns). The walk finds find_jobs's folders.

    ``known`` (relative folder → key, from the index): a known job folder whose mtime is unchanged has the same
    files (creating or removing ``done``, ``failed`` or ``spec.json`` changes it), so it is not listed again; only
    its ``results.jsonl`` (and ``spec.json``) are stat'ed.
    """
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root}: a file, not a folder (expected a job store or sweep output dir)")
    if not root.is_dir():
        raise MissingInputError(f"results directory {root} does not exist (expected a job store or sweep output dir)")
    top = str(root)
    known = known or {}
    found: list[tuple] = []  # (relative folder, flags, mtime[, its stats]), in find_jobs's (Path) order
    _walk(top, "", found, known)
    recent = time.time_ns() - MTIME_MARGIN_NS
    base = "" if top == "." else top.removesuffix("/") + "/"  # + rel: the job folder (the root "/" stays "/")
    keys = []
    for rel, flags, dir_mtime in found:
        size, mtime, spec_mtime = _job_files(base if rel == "." else f"{base}{rel}/", bool(flags & SPEC))
        if dir_mtime > recent:  # a file made within the same clock tick would not change it: list it next time
            dir_mtime = -1
        keys.append((rel, size, mtime, flags, spec_mtime, dir_mtime))
    return keys


def _flags(names: Iterable[str]) -> int:
    """A job key's flags: which of ``done``, ``failed`` and ``spec.json`` the folder holds."""
    names = set(names)
    return (DONE if "done" in names else 0) | (FAILED if "failed" in names else 0) \
        | (SPEC if "spec.json" in names else 0)


def _walk(top: str, rel: str, found: list, known: dict[str, list]) -> None:
    """``os.walk(top)`` as find_jobs uses it, without its per-folder ``lstat``: a folder holding ``results.jsonl``
    is a job and is not entered; symbolic links to folders are listed but not followed; unreadable folders are
    skipped (``os.walk``'s default). Known job folders with an unchanged mtime are not listed (see :func:`_scan`).
    Sub-folders are visited in name order, so ``found`` comes in find_jobs's (Path) order."""
    here = job_path(top, rel) if rel else top
    try:
        mtime = os.stat(here).st_mtime_ns  # before listing: a file added meanwhile shows as a changed mtime later
        with os.scandir(here) as it:
            entries = list(it)
    except OSError:
        return
    names, dirs = _files_and_folders(entries)
    if is_job_folder(names):  # store.job_folders's rule; the root itself may be a job
        found.append((rel or ".", _flags(names), mtime))
        return
    dirs.sort(key=operator.attrgetter("name"))
    prefix = f"{rel}/" if rel else ""
    for e in dirs:
        sub = prefix + e.name
        key = known.get(sub)
        if key is not None:
            try:
                if e.stat(follow_symlinks=False).st_mtime_ns == key[5]:
                    found.append((sub, key[3], key[5]))
                    continue
            except OSError:
                continue
        _walk(top, sub, found, known)


def _files_and_folders(entries: list[os.DirEntry]) -> tuple[list[str], list[os.DirEntry]]:
    """A listing's file names (anything that is not a folder; a folder that cannot be checked counts as a file) and
    its folders that are not symbolic links (links to folders are not followed)."""
    files, folders = [], []
    for e in entries:
        try:
            is_dir = e.is_dir()
        except OSError:
            is_dir = False
        if not is_dir:
            files.append(e.name)
        elif not e.is_symlink():
            folders.append(e)
    return files, folders


def job_path(top: str, rel: str) -> str:
    """``str(Path(top) / rel)`` without pathlib (``rel`` is a normalized relative path, ``"."`` for ``top``)."""
    if rel == ".":
        return top
    return rel if top == "." else top + rel if top.endswith("/") else f"{top}/{rel}"


def known_keys(keys: Sequence[Sequence] | None) -> dict[str, Sequence]:
    """relative folder → job key, from an index's job keys (None: no index)."""
    return {k[0]: k for k in keys} if keys is not None else {}


def up_to_date(root: str | Path, keys: Sequence[Sequence]) -> bool:
    """Whether the job folders under ``root`` still have the job ``keys`` (an index's): what
    ``same_keys(keys, scan(root, known_keys(keys)))`` says, faster for a flat store (every job a folder of ``root``,
    as in DomainBed's sweeps and our stores; :func:`flat_up_to_date`), else by that scan."""
    root = Path(root)
    flat = flat_up_to_date(str(root), keys)
    return flat if flat is not None else same_keys(keys, scan(root, known_keys(keys)))


def flat_up_to_date(top: str, keys: Sequence[Sequence]) -> bool | None:
    """:func:`up_to_date` for a store whose jobs are all folders of ``top`` itself; None where that does not apply
    (a nested job, the store itself a job, a folder changed within :data:`MTIME_MARGIN_NS` when indexed, or ``top``
    unreadable): then :func:`scan` decides.

    The same rules as :func:`scan` with the same system calls, without building the keys: one listing of ``top``
    (it is not a job itself; its job folders are the known ones; any other folder below it holds no job, walked as
    :func:`_walk` walks it), then per job its folder's mtime (unchanged: it holds the same files, so the flags
    stand), its ``results.jsonl``'s size and mtime and, with ``spec.json``, that file's mtime, each compared as read
    and relative to the open ``top`` (no path resolved from ``/`` again). Keys come in name order from a scan, so
    the same set of folders is the same order."""
    if any(k[5] < 0 or k[0] == "." or "/" in k[0] for k in keys):
        return None
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        try:
            with os.scandir(fd) as it:
                entries = list(it)
        except OSError:
            return None
        files, folders = _files_and_folders(entries)
        names = {e.name for e in folders}
        if is_job_folder(files) or not names.issuperset(k[0] for k in keys):
            return False
        same = _keys_unchanged(fd, keys)
        if not same:
            return same  # False, or None: the scan decides
        for name in sorted(names.difference(k[0] for k in keys)):  # folders that were no job when indexed (e.g. the
            found: list = []  # index's own .select folder): none may hold a job now
            _walk(top, name, found, {})
            if found:
                return False
        return True
    except OSError:
        return None
    finally:
        os.close(fd)


def _keys_unchanged(fd: int, keys: Sequence[Sequence]) -> bool | None:
    """Whether every flat job key (rel, size, mtime, flags, spec_mtime, dir_mtime) still holds under the open folder
    ``fd``: the job folder's own mtime (not following a link; a folder that cannot be stat'ed has changed), its
    ``results.jsonl``'s size and mtime (absent: -1) and, with ``spec.json`` in the flags, that file's mtime (absent:
    -1). False at the first difference; None on another failure (the scan decides)."""
    try:
        for rel, size, mtime, flags, spec_mtime, dir_mtime in keys:
            try:
                if os.stat(rel, dir_fd=fd, follow_symlinks=False).st_mtime_ns != dir_mtime:
                    return False
            except OSError:
                return False
            got = _job_files(rel + "/", bool(flags & SPEC), fd)
            if got[0] != size or (got[0] != -1 and got[1] != mtime) or (flags & SPEC and got[2] != spec_mtime):
                return False
    except (OSError, ValueError, TypeError):
        return None
    return True


def _job_files(where: str, spec: bool, dir_fd: int | None = None) -> tuple[int, int, int]:
    """The stats a job key holds of the job folder ``where`` (a path ending in ``/``, or ``""`` for the current
    folder; relative to ``dir_fd`` when given): ``results.jsonl``'s size and mtime and, with ``spec``,
    ``spec.json``'s mtime; -1 for an absent file (a job without records: crashed before its first checkpoint, or
    starting; also anything but a regular file, as :func:`dganalysis.records.store.classify_job` has it) or one not
    asked for. Other failures raise."""
    try:
        st = os.stat(where + "results.jsonl", dir_fd=dir_fd)
        size, mtime = st.st_size, st.st_mtime_ns
        if not stat.S_ISREG(st.st_mode):  # e.g. a folder of that name: no records (store.classify_job's is_file)
            size = mtime = -1
    except FileNotFoundError:
        size = mtime = -1
    spec_mtime = -1
    if spec:
        with contextlib.suppress(FileNotFoundError):
            spec_mtime = os.stat(where + "spec.json", dir_fd=dir_fd).st_mtime_ns
    return size, mtime, spec_mtime


def same_keys(known: Sequence[Sequence], keys: list[tuple]) -> bool:
    """Whether an index's job keys ``known`` are exactly the scanned ``keys``, in order."""
    return len(known) == len(keys) and all(map(operator.eq, map(tuple, known), keys))


# ---------------------------------------------------------------- the file


def encode(jobs: list[dict[str, Any]], draw_version: int, tables: dict[str, Any],
           arrays: dict[str, np.ndarray], provenances: list[dict[str, Any]] = ()) -> bytes:
    """The bytes of an index file (see the module docstring)."""
    specs = [[name, arr.dtype.str, int(arr.size)] for name, arr in arrays.items()]
    keys = [list(column) for column in zip(*(j["key"] for j in jobs))]  # six columns ([] without jobs)
    head = dumps({"version": INDEX_VERSION, "draw_version": draw_version, "keys": keys, "arrays": specs,
                  "provenances": list(provenances)})
    table = dumps([{k: v for k, v in j.items() if k != "key"} for j in jobs])
    body = dumps(tables)
    parts = [MAGIC, _LENGTH.pack(len(head)), head, _LENGTH.pack(len(table)), table, _LENGTH.pack(len(body)), body]
    parts += [arr.tobytes() for arr in arrays.values()]
    return b"".join(parts)


class IndexHead:
    """The head of an index file (its job keys and job table), read without the record arrays; :meth:`arrays` reads
    those from the same version of the file. ``keys``: each job's key (a tuple); ``jobs``: the job table (key, status,
    problem, exploded, count, records per job), decoded when first used (checking an unchanged sweep needs the keys
    only)."""

    def __init__(self, path: Path, head: dict[str, Any], table: bytes, stamp: tuple[int, ...], offset: int) -> None:
        self.path = path
        self.keys: list[tuple] = list(zip(*head["keys"]))
        self.draw_version = head.get("draw_version")
        #: the distinct {algorithm, provenance} of the jobs' first records; a job's ``prov`` indexes it
        self.provenances: list[dict[str, Any]] = list(head.get("provenances") or [])
        self._specs: list[list] = head["arrays"]
        self._table: bytes | None = table
        self._jobs: list[dict[str, Any]] | None = None
        self._stamp, self._offset = stamp, offset

    @property
    def jobs(self) -> list[dict[str, Any]]:
        """The job table, each job's key included; ValueError if it is damaged."""
        if self._jobs is None:
            jobs = read_json(self._table)
            if not isinstance(jobs, list) or len(jobs) != len(self.keys) or \
                    not all(type(j) is dict for j in jobs):
                raise ValueError(f"{self.path}: the job table disagrees with the job keys")
            for job, key in zip(jobs, self.keys):
                job["key"] = list(key)
            self._jobs, self._table = jobs, None
        return self._jobs

    @classmethod
    def read(cls, path: Path) -> IndexHead | None:
        """The head of the index at ``path``; None when missing, of another format version or unreadable (logged)."""
        try:
            with open(path, "rb") as fh:
                return cls._from(path, fh)
        except FileNotFoundError:
            return None
        except Exception as err:  # noqa: BLE001 - any damage means: rebuild
            log.warning("%s: unreadable index (%s: %s); rebuilding it", path, type(err).__name__, err)
            return None

    @classmethod
    def _from(cls, path: Path, fh: BinaryIO) -> IndexHead | None:
        stamp = _stamp(fh)
        if fh.read(len(MAGIC)) != MAGIC:
            raise ValueError("not an index file")
        head = read_json(_chunk(fh))
        if not isinstance(head, dict) or head.get("version") != INDEX_VERSION:
            log.info("%s: index of another version; rebuilding it", path)
            return None
        keys = head.get("keys")
        if not isinstance(keys, list) or not isinstance(head.get("arrays"), list) or \
                not (keys == [] or (len(keys) == 6 and all(type(c) is list and len(c) == len(keys[0]) for c in keys))):
            raise ValueError("no job keys")
        table = _chunk(fh)
        return cls(path, head, table, stamp, fh.tell())

    def arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(tables, record arrays) of the file whose head this is. ValueError if it is truncated, or if the file at
        :attr:`path` is no longer that version (a writer renamed a newer index over it: the caller reads that one)."""
        import numpy as np

        with open(self.path, "rb") as fh:
            if _stamp(fh) != self._stamp:
                raise ValueError(f"{self.path}: the index changed since its job table was read")
            fh.seek(self._offset)
            tables = read_json(_chunk(fh))
            out = {}
            for name, dtype, size in self._specs:
                dt = np.dtype(dtype)
                buf = bytearray(dt.itemsize * int(size))
                if fh.readinto(buf) != len(buf):
                    raise ValueError(f"{self.path}: truncated index (array {name})")
                out[name] = np.frombuffer(buf, dtype=dt)  # writable: it views the bytearray
        return tables, out


def _stamp(fh: BinaryIO) -> tuple[int, ...]:
    """Which version of an index file ``fh`` is: a new index is renamed over the old one (a new inode)."""
    st = os.fstat(fh.fileno())
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _chunk(fh: BinaryIO) -> bytes:
    raw = fh.read(_LENGTH.size)
    if len(raw) != _LENGTH.size:
        raise ValueError("truncated index")
    (n,) = _LENGTH.unpack(raw)
    data = fh.read(n)
    if len(data) != n:
        raise ValueError("truncated index")
    return data


def unchanged_head(root: str | Path, cache_dir: str | Path | None = None) -> IndexHead | None:
    """The head of the index of the store ``root`` when it is up to date (every job folder's key unchanged), else
    None (then :func:`dganalysis.records.index.update_index` brings it up to date). Its ``draw_version`` is not
    checked here: callers that use the records go through ``update_index``."""
    root = Path(root)
    head = IndexHead.read(index_location(root, cache_dir))
    if head is None:
        return None
    return head if up_to_date(root, head.keys) else None
