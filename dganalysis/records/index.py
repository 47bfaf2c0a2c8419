"""The one reader of a sweep's records: a columnar index, kept in memory or beside the store (updated incrementally).

:func:`load` parses a store's records into an index in memory and assembles the tidy frame (one row per job, step,
domain and split; the conventions: :mod:`dganalysis.records.read`); it writes nothing. :func:`load_indexed` returns
the same frame (same columns, values, row order and ``attrs``) but reads each job's ``results.jsonl`` once: the parsed
numbers are kept in one file beside the store (where, its format and the job keys:
:mod:`dganalysis.records.index_file`), and a later call re-reads only the job folders whose key changed. The index
also records :data:`dganalysis.training.hparams.DRAW_VERSION` (our jobs are checked against today's drawing rule when read);
a mismatch rebuilds it.

Reading is fast because (i) ``msgspec`` decodes each line of a job into a struct of the first line's keys whose
``args``, ``hparams`` and domain fields stay undecoded text, compared byte for byte with the first line's, and whose
step and accuracies are the numbers ``json.loads`` gives; (ii) a record's
``args``, ``hparams`` and domain names, repeated on every line of a job, are turned into the frame's metadata once per
job (every line is compared with the first, and any difference, or anything unusual, sends the job record by record
through :func:`dganalysis.records.read.read_record_at`, with the standard library's ``json`` where msgspec refuses a
line — ``NaN``, a torn line, invalid UTF-8 — so the values and the error messages are the same); (iii) the
columns are built with numpy from integer codes; the string columns come back as sorted ``category`` columns
(``categorical=True``, the default: the same values, ~10× less memory, and :func:`dganalysis.records.selection.select`
is several times faster on them) or as ``str`` columns exactly as :func:`load` gives them.

Concurrency: a reader never sees a half-written index — the file is written to a temporary name in the same folder
and renamed over the old one (:mod:`dganalysis.io`), and a reader reads the arrays from the file whose job table it
read. Writers serialize on an ``flock`` of the lock file; a writer re-reads the index after taking the lock, so
several processes updating at once each parse at most the jobs still missing, and the last rename leaves an index
that is complete for what it saw (a job added later has a key the index lacks, so the next reader adds it). An index
that cannot be read (truncated, corrupt, another version) is rebuilt, with a warning. Without a lock file (a file
system without ``flock``) the writes stay atomic; they may only repeat work.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import logging
import operator
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from dganalysis import io
from dganalysis.progress import bars, bars_shown
from dganalysis.records import gc_pause, index_file, read, store
from dganalysis.records.index_file import DONE, FAILED, SPEC, IndexHead, index_location, job_path
from dganalysis.records.rules import ranges
from dganalysis.validation import ConfigError, describe

if TYPE_CHECKING:  # imported where a frame is built: checking an unchanged sweep needs no pandas
    import pandas as pd

log = logging.getLogger(__name__)

_STR_COLUMNS = ("job_id", "dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting",
                "domain", "split", "role", "hparams")
_META_FIELDS = ("dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting", "hparams_seed",
                "trial_seed", "hparams")


def _draw_version() -> int:
    from dganalysis.training.hparams import DRAW_VERSION

    return int(DRAW_VERSION)


# ---------------------------------------------------------------- the index in memory


class Index:
    """The parsed records of one store: a job table, string tables and flat numeric columns.

    Records of job ``j`` are ``rec_*[start_j : start_j + count_j]`` in file order; a record's rows (one per
    (domain, split), in :func:`dganalysis.records.load` order) are ``acc[rec_off[r] : rec_off[r] + len(layout)]``
    with the domain/split/role of layout ``rec_layout[r]``.
    """

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []  # key, status, problem, exploded, count
        self.metas: list[list] = []
        self.layouts: list[list[list[str]]] = []
        self.provenances: list[dict[str, Any]] = []  # distinct {algorithm, provenance}; a job's "prov" indexes it
        self._meta_ids: dict[tuple, int] = {}
        self._layout_ids: dict[tuple, int] = {}
        self._prov_ids: dict[str, int] = {}
        self.rec_meta = np.zeros(0, np.int32)
        self.rec_layout = np.zeros(0, np.int32)
        self.rec_step = np.zeros(0, np.int64)
        self.acc = np.zeros(0, np.float64)

    # ---- tables
    def meta_id(self, meta: tuple) -> int:
        i = self._meta_ids.get(meta)
        if i is None:
            i = self._meta_ids[meta] = len(self.metas)
            self.metas.append(list(meta))
        return i

    def layout_id(self, layout: tuple) -> int:
        i = self._layout_ids.get(layout)
        if i is None:
            i = self._layout_ids[layout] = len(self.layouts)
            self.layouts.append([list(r) for r in layout])
        return i

    def prov_id(self, entry: dict[str, Any]) -> int:
        text = json.dumps(entry, sort_keys=True, default=str)
        i = self._prov_ids.get(text)
        if i is None:
            i = self._prov_ids[text] = len(self.provenances)
            self.provenances.append(entry)
        return i

    def _rebuild_maps(self) -> None:
        self._meta_ids = {tuple(m): i for i, m in enumerate(self.metas)}
        self._layout_ids = {tuple(tuple(r) for r in lay): i for i, lay in enumerate(self.layouts)}
        self._prov_ids = {json.dumps(e, sort_keys=True, default=str): i for i, e in enumerate(self.provenances)}

    @property
    def keys(self) -> list[list]:
        """Each job's key (see :mod:`dganalysis.records.index_file`), as :attr:`IndexHead.keys` gives them."""
        return [j["key"] for j in self.jobs]

    # ---- file format (dganalysis.records.index_file)
    def to_bytes(self) -> bytes:
        return index_file.encode(self.jobs, _draw_version(), {"metas": self.metas, "layouts": self.layouts},
                                 dict(zip(_ARRAY_NAMES, (self.rec_meta, self.rec_layout, self.rec_step, self.acc))),
                                 self.provenances)

    @classmethod
    def read(cls, path: Path, lazy: bool = False) -> Index | IndexHead | None:
        """The index at ``path``; None when missing, unreadable or of another version (logged). ``lazy``: its head
        (:class:`~dganalysis.records.index_file.IndexHead`: the job table; :meth:`from_head` reads the rest)."""
        head = IndexHead.read(path)
        if head is not None and head.draw_version != _draw_version():
            log.info("%s: index of another hparams draw version; rebuilding it", path)
            return None
        if head is None or lazy:
            return head
        try:
            return cls.from_head(head)
        except Exception as err:  # noqa: BLE001 - any damage means: rebuild
            log.warning("%s: unreadable index (%s: %s); rebuilding it", path, type(err).__name__, err)
            return None

    @classmethod
    def from_head(cls, head: IndexHead) -> Index:
        """The whole index whose head is ``head`` (read from its open file); ValueError if damaged."""
        tables, arrays = head.arrays()
        if set(arrays) != set(_ARRAY_NAMES):
            raise ValueError(f"arrays {sorted(arrays)}; expected {list(_ARRAY_NAMES)}")
        self = cls()
        self.jobs = head.jobs
        self.metas, self.layouts = tables["metas"], tables["layouts"]
        self.provenances = list(head.provenances)
        self.rec_meta, self.rec_layout, self.rec_step, self.acc = (arrays[k] for k in _ARRAY_NAMES)
        self._meta_ids, self._layout_ids = None, None  # built when the index is merged (_rebuild_maps)
        counts = [j["count"] for j in self.jobs]
        lens = np.array([len(lay) for lay in self.layouts] or [0], dtype=np.int64)
        n_rec = sum(counts)
        if not (len(self.rec_meta) == len(self.rec_layout) == len(self.rec_step) == n_rec) \
                or int(lens[self.rec_layout].sum() if n_rec else 0) != len(self.acc) \
                or (n_rec and (self.rec_meta.max() >= len(self.metas) or self.rec_layout.max() >= len(self.layouts))):
            raise ValueError("array lengths disagree with the job table")
        return self

    def rec_offsets(self) -> np.ndarray:
        lens = np.array([len(lay) for lay in self.layouts] or [0], dtype=np.int64)
        off = np.zeros(len(self.rec_layout) + 1, dtype=np.int64)
        if len(self.rec_layout):
            np.cumsum(lens[self.rec_layout], out=off[1:])
        return off


# ---------------------------------------------------------------- parsing one job


class _Parsed:
    """One job's records: its status, problem (load's error message), whether its loss exploded, and per
    record its metadata and layout ids, step and accuracies (one flat list of every row's; None for NaN)."""

    __slots__ = ("status", "problem", "exploded", "meta", "layout", "step", "acc", "prov")

    def __init__(self, status: str) -> None:
        self.status, self.problem, self.exploded = status, None, False
        self.meta: list[int] = []
        self.layout: list[int] = []
        self.step: list[int] = []
        self.acc: list[float | int | None] = []
        self.prov: dict[str, Any] | None = None  # the first record's {algorithm, provenance} (_job_provenance)

    @property
    def count(self) -> int:
        """The number of records."""
        return len(self.step)


@functools.lru_cache(maxsize=8)
def _status(flags: int) -> str:
    """load's rule (:func:`dganalysis.records.read.state_from_files`) on the names a job key's flags record."""
    return store.state_from_files(name for name, bit in (("done", DONE), ("failed", FAILED)) if flags & bit)


def _read(path: str, size: int) -> bytes:
    """The bytes of the file ``path``, which had ``size`` bytes when scanned (one read call of that size, cheaper
    than ``open().read()``; a file grown meanwhile is read whole)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _parse_job(idx: Index, folder: str, job_id: str, flags: int, size: int = 0) -> _Parsed:
    """Parse one job into ``idx``'s tables; errors are kept as the job's ``problem`` (load's message).
    ``size``: its ``results.jsonl``'s size when scanned (a hint)."""
    out = _Parsed(_status(flags))
    if out.status == "failed":
        return out
    results_path = job_path(folder, "results.jsonl")
    data = None
    try:
        data = _read(results_path, max(size, 0))
    except (FileNotFoundError, IsADirectoryError):  # no records (load: not a file)
        return out
    except OSError:  # unreadable: read.read_records words the error
        pass
    try:
        spec = store.read_spec(Path(folder)) if flags & SPEC else {}
        if data is not None and _add_bulk(idx, out, data, folder, job_id, results_path, spec, flags):
            return out
        records = _fast_records(data) if data is not None else None
        if records is None:
            records = read.read_records(results_path)
        if flags & SPEC:
            store.check_draw(Path(folder), records)
        _add_records(idx, out, records, job_id, results_path, spec)
        out.exploded = read.loss_exploded(records)
    except ValueError as err:
        out.problem = str(err)
        out.meta, out.layout, out.step, out.acc = [], [], [], []
    return out


def _add_bulk(idx: Index, out: _Parsed, data: bytes, folder: str, job_id: str, results_path: str,
              spec: dict[str, Any], flags: int) -> bool:
    """The records of a job whose lines all repeat the first one's keys and the text of its ``args``, ``hparams``
    and domain fields, with numeric accuracies and integer steps (:func:`_uniform_structs`), added to ``out``: the
    first record through load's code (the job's metadata, layout and error messages), every record's numbers
    in bulk. False (nothing added) otherwise: then the job is read record by record."""
    bulk = _uniform_structs(data)
    if bulk is None:
        return False
    first, steps, accs, losses = bulk
    if flags & SPEC:
        store.check_draw(Path(folder), [first])
    meta, layout = _record_ids(idx, first, job_id, f"{results_path}:1", spec)[:2]
    out.prov = _job_provenance(first)
    n = len(steps)
    out.meta += [meta] * n
    out.layout += [layout] * n
    out.step += steps
    out.acc += accs
    out.exploded = read.losses_exploded(losses)
    return True


_Bulk = tuple[dict[str, Any], list[int], list[float | int | None], list[Any]]


def _in_int64(steps: list[int]) -> bool:
    """Whether the (integer) steps fit the index's int64 column (else the exact path decides)."""
    return not steps or (-(2**63) <= min(steps) and max(steps) < 2**63)


def _usual_pairs(keys: tuple[str, ...]) -> list[tuple[tuple[int, str], str]] | None:
    """The ((env index, split), key) of each accuracy among a first line's ``keys`` when the records are the usual
    kind the bulk readers take: ``args``, ``step`` and an accuracy, every accuracy key canonical (not
    ``env01_in_acc``); None otherwise (load's code reads them)."""
    pairs = []
    for key in keys:
        pair = read.env_pair(key)
        if pair is not None:
            if key != f"env{pair[0]}_{pair[1]}_acc":
                return None
            pairs.append((pair, key))
    return pairs if pairs and "args" in keys and "step" in keys else None


# ---- with msgspec: each line decoded into a struct of its first line's keys


@functools.lru_cache(maxsize=256)
def _line_format(keys: tuple[str, ...]) -> tuple[Any, Callable, Callable, Callable[[list], list],
                                                 Callable | None] | None:
    """How the lines of a job whose first record has ``keys`` are decoded: (msgspec decoder, getter of the fields
    every line must repeat byte for byte, of the step, records → their accuracies in load's row order, getter
    of the loss or None). None when the records are not the usual kind (no ``args``, ``step`` or accuracy, an accuracy
    key that is not canonical such as ``env01_in_acc``): load's code reads them.

    The struct has every key as a required field and refuses others, so a line with another set of keys fails to
    decode; ``step`` is an ``int`` (a float or bool fails), the accuracies ``float | None`` (a bool or string fails;
    an integer becomes its float, as ``float()`` does), ``loss`` any JSON value, the rest ``msgspec.Raw`` (kept as
    text: ``args``, ``hparams`` and the domain fields are compared with the first line's text)."""
    pairs = _usual_pairs(keys)
    if pairs is None:
        return None
    name = {key: f"f{i}" for i, key in enumerate(keys)}
    fields = [(name[k], int if k == "step" else float | None if read.env_pair(k) else
               Any if k == "loss" else msgspec.Raw) for k in keys]
    struct = msgspec.defstruct("Record", fields, rename={v: k for k, v in name.items()}, forbid_unknown_fields=True,
                               gc=False)
    same = operator.attrgetter(*(name[k] for k in _REPEATED_FIELDS if k in name))
    loss = operator.attrgetter(name["loss"]) if "loss" in name else None
    accs = _rows_getter([name[key] for _, key in sorted(pairs)])
    return msgspec.json.Decoder(struct), same, operator.attrgetter(name["step"]), accs, loss


def _rows_getter(names: list[str]) -> Callable[[list], list]:
    """records → the values of their fields ``names``, record after record, in one flat list."""
    get = operator.attrgetter(*names)
    if len(names) == 1:  # attrgetter of one name returns the value, not a tuple
        return lambda recs: list(map(get, recs))
    return lambda recs: list(itertools.chain.from_iterable(map(get, recs)))


def _lines(data: bytes) -> list[memoryview]:
    """The lines of ``data`` without their newlines (none after a final newline), as views: ~3× faster than
    ``data.split``, which copies them."""
    view, find = memoryview(data), data.find
    lines, start = [], 0
    while (end := find(b"\n", start)) >= 0:
        lines.append(view[start:end])
        start = end + 1
    if start < len(data):
        lines.append(view[start:])
    return lines


def _uniform_structs(data: bytes) -> _Bulk | None:
    """(first record, steps, every row's accuracy in order, losses) of a ``results.jsonl``'s bytes when every line is
    one JSON object repeating the first one's keys and the text of its ``args``, ``hparams`` and domain fields, with
    an integer step and numbers or nulls as accuracies (see :func:`_line_format`); None otherwise, also for anything
    read.read_records treats specially (a blank or torn line, invalid UTF-8, JSON that the standard library reads
    but msgspec refuses, e.g. ``NaN``)."""
    if not data.isascii():  # msgspec skips a Raw value's text without checking that it is UTF-8
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    lines = _lines(data)  # then one decode per line: faster than msgspec's decode_lines, and one object a line
    try:
        first = msgspec.json.decode(lines[0]) if lines else None
        if type(first) is not dict or type(first.get("args")) is not dict:
            return None
        fmt = _line_format(tuple(first))
        if fmt is None:
            return None
        decoder, same, step, accs, loss = fmt
        recs = list(map(decoder.decode, lines))  # a blank line, or one holding two objects, fails
    except msgspec.MsgspecError:
        return None
    texts = list(map(same, recs))
    steps = list(map(step, recs))
    if texts.count(texts[0]) != len(texts) or not _in_int64(steps):
        return None
    return first, steps, accs(recs), list(map(loss, recs)) if loss is not None else []


_DOMAIN_FIELDS = ("domains", "train_domains", "test_domains", "val_domains")
#: the fields every line of a job read in bulk repeats, byte for byte
_REPEATED_FIELDS = ("args", "hparams", *_DOMAIN_FIELDS)
_NUMBER_TYPES = frozenset({float, int, type(None)})


# ---- record by record: every line decoded, then read by load's code


def _fast_records(data: bytes) -> list[dict[str, Any]] | None:
    """The records of a ``results.jsonl``'s bytes, each line decoded by msgspec (for every line it accepts, the dict
    ``json.loads`` gives: the same numbers, strings, key order, and the last of a repeated key); None where it refuses
    one, and then :func:`dganalysis.records.read.read_records` reads the file with the standard library's ``json`` and words
    any error. msgspec refuses what ``json.loads`` reads specially: ``NaN`` and ``Infinity`` (DomainBed writes a
    diverged loss as ``NaN``), a number beyond the double range (``1e400``, which ``json`` reads as infinity) and an
    escaped lone surrogate (``"\\ud800"``); and what it refuses too: invalid UTF-8, a torn line, a line that is not an
    object."""
    records = []
    decode = msgspec.json.decode
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            rec = decode(line)
        except ValueError:  # msgspec.DecodeError, and UnicodeDecodeError for invalid UTF-8 in a string
            return None
        if type(rec) is not dict:
            return None
        records.append(rec)
    return records


def _add_records(idx: Index, out: _Parsed, records: list[dict[str, Any]], job_id: str, results_path: str,
                 spec: dict[str, Any]) -> None:
    """Add ``records`` to ``out``: each through load's code (:func:`_record_ids`), except that a record
    repeating the last such record's keys, ``args``, ``hparams`` and domain fields, with numeric accuracies and an
    integer step that fits the int64 column, reuses its metadata and layout (another step is load's to refuse)."""
    ref: dict[str, Any] | None = None  # the record whose args/hparams/domains/keys the following ones repeat
    ref_meta = ref_layout = -1
    acc_keys: list[str] = []
    fields: list[str] = []
    for n, rec in enumerate(records, start=1):
        if ref is not None and rec.keys() == ref.keys() and rec["args"] == ref["args"] \
                and rec.get("hparams") == ref.get("hparams") and (not fields or all(rec[f] == ref[f] for f in fields)):
            vals = [rec[k] for k in acc_keys]
            step = rec["step"]
            if set(map(type, vals)) <= _NUMBER_TYPES and type(step) is int and -(2**63) <= step < 2**63:
                out.meta.append(ref_meta)
                out.layout.append(ref_layout)
                out.step.append(step)
                out.acc += vals  # None is NaN, as float('nan') in load
                continue
        ref_meta, ref_layout, step, accs = _record_ids(idx, rec, job_id, f"{results_path}:{n}", spec)
        out.meta.append(ref_meta)
        out.layout.append(ref_layout)
        out.step.append(step)
        out.acc += accs
        ref = rec
        fields = [f for f in _DOMAIN_FIELDS if f in rec]
        # the acc keys in row order: read.read_record_at sorts (env index, split)
        pairs = sorted(pair for k in rec if (pair := read.env_pair(k)) is not None)
        acc_keys = [f"env{i}_{s}_acc" for i, s in pairs]
    out.prov = _job_provenance(records[0]) if records else None


def _job_provenance(rec: dict[str, Any]) -> dict[str, Any] | None:
    """``{"algorithm", "provenance"}`` of a job's first record when it carries a provenance stamp
    (:mod:`dganalysis.provenance`; records written before it, and DomainBed's, carry none: None)."""
    prov = rec.get("provenance")
    if not isinstance(prov, dict):
        return None
    args = rec.get("args")
    return {"algorithm": args.get("algorithm") if isinstance(args, dict) else None, "provenance": prov}


def _record_ids(idx: Index, rec: dict[str, Any], job_id: str, where: str,
                spec: dict[str, Any]) -> tuple[int, int, int, list[float]]:
    """load's own code for one record (:func:`dganalysis.records.read.read_record_at`: its metadata, rows and
    error messages) → (metadata id, layout id, step, accuracies in row order)."""
    values, layout, accs = read.read_record_at(rec, where, spec)
    return idx.meta_id((*values[:8], values[9])), idx.layout_id(layout), values[8], accs


# ---------------------------------------------------------------- building and updating


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    try:
        import fcntl

        fh = open(lock_path, "a+")  # noqa: SIM115 - closed below
    except (ImportError, OSError):
        yield  # no lock: writes stay atomic, work may be repeated
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        yield
    finally:
        fh.close()  # releases the lock


class _Columns:
    """The record arrays of a new index, gathered job by job in order: slices of the old index for unchanged jobs,
    parsed values for the others (kept in lists and turned into arrays once per run of parsed jobs, or per
    :data:`_FLUSH_ROWS` rows: not one array per job)."""

    def __init__(self) -> None:
        self.parts: tuple[list[np.ndarray], ...] = ([], [], [], [])  # rec_meta, rec_layout, rec_step, acc
        self.lists: tuple[list, ...] = ([], [], [], [])

    def add_parsed(self, p: _Parsed) -> None:
        if not p.step:  # no records
            return
        for values, new in zip(self.lists, (p.meta, p.layout, p.step, p.acc)):
            values += new
        if len(self.lists[3]) > _FLUSH_ROWS:
            self._flush()

    def add_old(self, *arrays: np.ndarray) -> None:
        self._flush()
        for part, arr in zip(self.parts, arrays):
            part.append(arr)

    def _flush(self) -> None:
        for part, values, dtype in zip(self.parts, self.lists, _COLUMN_TYPES):
            if values:
                try:
                    part.append(np.fromiter(values, dtype, len(values)))  # ~2× faster than np.array
                except TypeError:  # a None accuracy: np.array makes it NaN, as float('nan') in load
                    part.append(np.array(values, dtype=dtype))
                values.clear()

    def arrays(self) -> tuple[np.ndarray, ...]:
        """rec_meta, rec_layout, rec_step, acc."""
        self._flush()
        return tuple(np.concatenate(part) if part else np.zeros(0, dtype)
                     for part, dtype in zip(self.parts, _COLUMN_TYPES))


_COLUMN_TYPES = (np.int32, np.int32, np.int64, np.float64)
#: the record arrays in the index file, in the order of :data:`_COLUMN_TYPES`
_ARRAY_NAMES = ("rec_meta", "rec_layout", "rec_step", "acc")
#: parsed accuracies kept as Python objects before they become an array (bounds the memory they take)
_FLUSH_ROWS = 1 << 20


def _merge(old: Index | None, keys: list[tuple], root: Path) -> tuple[Index, int]:
    """A new index for the scanned ``keys``: ``old``'s records for unchanged jobs, the rest parsed.
    Returns (index, number of jobs parsed)."""
    new = Index()
    old_by_key: dict[tuple, int] = {}
    if old is not None:
        new.metas, new.layouts, new.provenances = old.metas, old.layouts, list(old.provenances)
        new._rebuild_maps()
        old_by_key = {tuple(j["key"]): i for i, j in enumerate(old.jobs)}
        old_start = np.zeros(len(old.jobs) + 1, dtype=np.int64)
        np.cumsum([j["count"] for j in old.jobs], out=old_start[1:])
        old_off = old.rec_offsets()
    columns = _Columns()
    top = str(root)
    parsed = 0
    bar = _bar(root, sum(tuple(key) not in old_by_key for key in keys)) if bars_shown() else None
    for key in keys:
        i = old_by_key.get(tuple(key))
        if i is not None:
            job = old.jobs[i]
            a, b = old_start[i], old_start[i + 1]
            columns.add_old(old.rec_meta[a:b], old.rec_layout[a:b], old.rec_step[a:b], old.acc[old_off[a]:old_off[b]])
        else:
            job_id = root.name if key[0] == "." else key[0].rpartition("/")[2]  # Path(folder).name
            p = _parse_job(new, job_path(top, key[0]), job_id, key[3], key[1])
            parsed += 1
            job = {"status": p.status, "problem": p.problem, "exploded": p.exploded, "count": p.count,
                   "records": key[1] >= 0}
            if p.prov is not None:
                job["prov"] = new.prov_id(p.prov)
            columns.add_parsed(p)
            if bar is not None and parsed % _BAR_STEP == 0:
                bar.update(_BAR_STEP)
        new.jobs.append({**job, "key": list(key)})
    if bar is not None:
        bar.update(parsed - bar.n)
        bar.close()
    new.rec_meta, new.rec_layout, new.rec_step, new.acc = columns.arrays()
    return new, parsed


#: an index build that parses at least this many jobs shows a progress bar where asked (:func:`~dganalysis.progress.bars`)
PROGRESS_MIN_JOBS = 2000
#: the bar moves once per this many parsed jobs
_BAR_STEP = 250


def _bar(root: Path, to_parse: int) -> Any:
    """A tqdm bar on stderr over the ``to_parse`` jobs of ``root`` to be read, or None below
    :data:`PROGRESS_MIN_JOBS`."""
    if to_parse < PROGRESS_MIN_JOBS:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=to_parse, desc=f"indexing {root}", unit="job", leave=False, mininterval=0.5)


def update_index(root: str | Path, cache_dir: str | Path | None = None, lazy: bool = False,
                 checked: IndexHead | None = None, stale: bool = False) -> Index | IndexHead:
    """The index of the store ``root``, brought up to date (only new or changed job folders are parsed) and
    written back atomically when anything changed. See the module docstring for where it lives. ``lazy``: when the
    index on disk is up to date, its head only (:meth:`Index.from_head` reads the records). ``checked``: its head as
    just found up to date (:func:`~dganalysis.records.index_file.unchanged_head`), returned as it is when of the current
    hparams draw version (with ``lazy``: the job folders are not scanned twice). ``stale``: the job folders were just
    found changed (:func:`~dganalysis.records.index_file.unchanged_head` gave None): the scan decides at once, without
    the flat store's check first."""
    if lazy and checked is not None and checked.draw_version == _draw_version():
        return checked
    root = Path(root)
    path = index_location(root, cache_dir)
    old = Index.read(path, lazy=lazy)
    # up_to_date's two ways, with the job folders scanned once: the flat store's check, else (None) the scan compared
    if old is None:
        flat: bool | None = False
    else:
        flat = None if stale else index_file.flat_up_to_date(str(root), old.keys)
    if flat:
        return old
    keys = index_file.scan(root, index_file.known_keys(old.keys if old is not None else None))
    if flat is None and index_file.same_keys(old.keys, keys):
        return old
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock_ctx = _locked(path.parent / (index_file.LOCK_NAME if path.name == index_file.INDEX_NAME
                                          else path.name + ".lock"))
    except OSError:
        lock_ctx = contextlib.nullcontext()
    with lock_ctx:
        seen = old
        old = Index.read(path)  # another writer may have updated it meanwhile (read whole: its records are merged)
        if (old is None) != (seen is None) or (old is not None and old.jobs != seen.jobs):  # it did: scan again
            keys = index_file.scan(root, index_file.known_keys(old.keys if old is not None else None))
            if old is not None and index_file.same_keys(old.keys, keys):
                return old
        with gc_pause.paused():  # parsing, and encoding the new index: millions of objects, no cycle
            new, parsed = _merge(old, keys, root)
            data = new.to_bytes()
        try:
            io.write_bytes(path, data)
            _remove_old_formats(path)
        except OSError as err:
            if cache_dir is not None or path.name != index_file.INDEX_NAME:
                log.warning("could not write the index %s (%s); continuing without it", path, err)
            else:
                fallback = index_location(root, index_file.default_cache_dir())
                log.info("store %s is not writable (%s); keeping its index in %s", root, err, fallback)
                with contextlib.suppress(OSError):
                    io.write_bytes(fallback, data)
        log.info("index %s: %d of %d jobs (re)read", path, parsed, len(keys))
    return new


def _remove_old_formats(path: Path) -> None:
    """Remove the index files (and their cached selections) that earlier versions wrote beside ``path``."""
    if path.name != index_file.INDEX_NAME:  # in the cache folder: named by a hash, the old names are unknown
        return
    for name in index_file.OLD_NAMES:
        with contextlib.suppress(OSError):
            (path.parent / name).unlink(missing_ok=True)
            shutil.rmtree(path.parent / (name + ".select"), ignore_errors=True)


# ---------------------------------------------------------------- the tidy frame


def load(
    path: str | Path | Iterable[str | Path], include_unfinished: bool | None = None, progress: bool = True,
    strict: bool = True,
) -> pd.DataFrame:
    """Tidy results of every finished job under ``path`` (one folder or a list of folders).

    Works on our job stores and on DomainBed sweep output dirs (the conventions: :mod:`dganalysis.records.read`).
    ``include_unfinished``: ``None`` (default) reads unfinished runs of DomainBed sweep dirs (as DomainBed does) and
    skips those of our stores (:func:`~dganalysis.records.store.is_our_store` decides, per folder in ``path``);
    ``True``/``False``: everywhere. Returns one row per (job, step, domain, split) with columns
    :data:`~dganalysis.records.read.COLUMNS`, in job-folder, record and env order. ``strict=False``: a job with an
    unreadable record is logged, counted and skipped instead of raising. Every folder is checked (it exists and is
    a directory) before any is read. ``progress``: a bar over the job folders (from 50 of them).

    Columns: ``job_id``; ``dataset``, ``algorithm``; ``train_domains``, ``test_domains``, ``val_domains`` (domain
    names joined by commas); ``setting`` (JSON of everything else that makes runs different experiments);
    ``hparams_seed``, ``trial_seed``; ``step`` (training step of the checkpoint); ``domain`` and ``split`` (``in``:
    the domain's main part, ``out``: its holdout); ``role`` (``train``, ``test`` or ``val``); ``acc`` (accuracy, a
    fraction in [0, 1]); ``hparams`` (JSON). ``df.attrs["jobs"]`` counts the jobs read and left out
    (:data:`~dganalysis.records.read.JOB_COUNT_KEYS`), ``df.attrs["problems"]`` lists the skipped jobs' errors and
    ``df.attrs["exploded"]`` the runs whose loss exploded.

    The records are read by the index's reader (``msgspec``, the standard library's ``json`` where a record needs
    it, :func:`dganalysis.records.read.read_record_at` for each distinct record layout) into an index kept in memory
    only: ``load`` writes nothing beside a store, which may be someone else's sweep or read-only; a job folder left
    out by the rules (failed, unfinished, a duplicate) is not read, and with ``strict`` nothing after the first
    unreadable job is. :func:`load_indexed` is the same frame through an index kept beside the store, for a sweep
    read again.
    """
    from tqdm.auto import tqdm

    if isinstance(path, (str, os.PathLike)):
        paths = [path]
    elif isinstance(path, Iterable):
        paths = list(path)
    else:
        raise ConfigError(f"load: parameter 'path': expected a results folder or a list of them, got {describe(path)}")
    if not paths:
        raise ConfigError("load: parameter 'path': expected at least one results directory, got an empty list")
    paths = [store.results_dir(p, "load") for p in paths]
    if include_unfinished not in (None, True, False):
        raise ConfigError(f"load: parameter 'include_unfinished': expected None (by writer), True or False, got "
                          f"{describe(include_unfinished)}")
    if not isinstance(strict, bool):
        raise ConfigError(f"load: parameter 'strict': expected True or False, got {describe(strict)}")
    indexes = [(p, _unparsed(p)) for p in paths]
    columns = {id(idx): _Columns() for _, idx in indexes}

    def parse(root: Path, idx: Index, job: dict[str, Any]) -> None:
        rel, size, _, flags = job["key"][:4]
        job_id = root.name if rel == "." else rel.rpartition("/")[2]
        p = _parse_job(idx, job_path(str(root), rel), job_id, flags, size)
        job.update(problem=p.problem, exploded=p.exploded, count=p.count)
        columns[id(idx)].add_parsed(p)

    total = sum(len(idx.jobs) for _, idx in indexes)
    bar = tqdm(total=total, desc="reading records", disable=not progress or total < 50, leave=False)
    try:
        with gc_pause.paused():  # parsing makes many objects and no cycle
            chosen = kept_jobs(indexes, include_unfinished, strict, parse=parse, bar=bar)
    finally:
        bar.close()
    for _, idx in indexes:
        idx.rec_meta, idx.rec_layout, idx.rec_step, idx.acc = columns[id(idx)].arrays()
    counts = chosen[1]["jobs"]
    log.info("read %d of %d job folders under %s; %s", counts["read"], counts["folders"], ", ".join(map(str, paths)),
             read.left_out_words(counts) or "none left out")
    return assemble(indexes, include_unfinished, strict, categorical=False, chosen=chosen)


def _unparsed(root: Path) -> Index:
    """An index in memory of the store ``root`` whose job table holds every job folder's key and state, and no
    records yet (:func:`load` parses the jobs its rules keep)."""
    idx = Index()
    idx.jobs = [{"key": key, "status": _status(key[3]), "problem": None, "exploded": False, "count": 0}
                for key in index_file.scan(root)]
    return idx


def load_many(paths: Iterable[str | Path], include_unfinished: bool | None = None, progress: bool = True) -> pd.DataFrame:
    """:func:`load` over several folders (e.g. several DomainBed sweep output dirs), concatenated."""
    if isinstance(paths, (str, os.PathLike)) or not isinstance(paths, Iterable):
        raise ConfigError(f"load_many: parameter 'paths': expected a list of results folders, got {describe(paths)}")
    return load(list(paths), include_unfinished=include_unfinished, progress=progress)


def load_indexed(
    path: str | Path | Iterable[str | Path], include_unfinished: bool | None = None, strict: bool = True,
    categorical: bool = True, cache_dir: str | Path | None = None, progress: bool = False,
) -> pd.DataFrame:
    """:func:`dganalysis.records.load` through the index: the same rows, values, order and ``attrs``.

    ``include_unfinished`` and ``strict`` as in :func:`~dganalysis.records.load`. ``categorical=True`` returns the
    string columns as ``category`` (sorted categories); ``False`` as ``str``, equal to ``load``'s frame.
    ``cache_dir``: where indexes of stores that cannot be written go (default :func:`default_cache_dir`).
    ``progress``: a bar on stderr while a large store is indexed (:data:`PROGRESS_MIN_JOBS` jobs to read or more).
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    if not paths:
        raise ConfigError("load_indexed: expected at least one results directory, got an empty list")
    if include_unfinished not in (None, True, False):
        raise ConfigError(f"load_indexed: include_unfinished={include_unfinished!r}, expected None (by writer), "
                         "True or False")
    with bars(progress or bars_shown()):
        indexes = [(Path(p), update_index(p, cache_dir)) for p in paths]
    return assemble(indexes, include_unfinished, strict, categorical)


def assemble(indexes: list[tuple[Path, Index]], include_unfinished: bool | None, strict: bool,
              categorical: bool, chosen: tuple[list, dict[str, Any]] | None = None) -> pd.DataFrame:
    """load's job rules (unfinished, failed, unreadable, duplicates, exploded) over up-to-date indexes → the frame.
    ``chosen``: :func:`kept_jobs`'s result for these indexes, when the caller has it already."""
    chunks, attrs = chosen if chosen is not None else kept_jobs(indexes, include_unfinished, strict)
    df, may_repeat = _frame(chunks, categorical)
    n = len(df)
    if may_repeat:
        df = df.drop_duplicates(["job_id", "step", "domain", "split"], keep="last").reset_index(drop=True)
        if len(df) < n:
            log.warning("dropped %d rows of checkpoints recorded twice (kept the last record of each step)",
                        n - len(df))
    df.attrs.update(attrs)
    return df


def kept_jobs(indexes: list[tuple[Path, Index]], include_unfinished: bool | None, strict: bool,
           parse: Callable[[Path, Index, dict[str, Any]], None] | None = None,
           bar: Any = None) -> tuple[list[tuple[Index, list[tuple[int, int, str]]]], dict[str, Any]]:
    """load's job rules over up-to-date indexes: per store, (index, the jobs read as (first record, end record, job
    id)), and the frame's ``attrs`` (job counts, problems, exploded jobs); the warnings load logs are logged.

    ``parse(root, index, job)``: for an index whose records are not parsed yet (:func:`load`'s, in memory), called
    for each job the rules keep, in order, before its problem is looked at: it parses the job's records, appends them
    to the index's record arrays and sets the job's ``problem``, ``exploded`` and ``count``. So a job left out is
    never read, and with ``strict`` nothing after the first unreadable job is. ``bar``: a progress bar moved once per
    job folder."""
    counts = dict.fromkeys(read.JOB_COUNT_KEYS, 0)
    problems: list[str] = []
    exploded: list[str] = []
    seen: set[str] = set()
    chunks = []  # per store: (index, record start/stop per chosen job, job names)
    for root, idx in indexes:
        counts["folders"] += len(idx.jobs)
        ours = any(j["key"][3] & (SPEC | FAILED) for j in idx.jobs)
        read_unfinished = (not ours) if include_unfinished is None else include_unfinished
        start = 0
        chosen: list[tuple[int, int, str]] = []
        top = str(root)  # str paths: str(root / rel), without a Path per job
        for job in idx.jobs:
            a, start = start, start + job["count"]
            status, rel, has_records = job["status"], job["key"][0], job["key"][1] >= 0
            job_dir = top if rel == "." else f"{top}/{rel}"
            job_id = root.name if rel == "." else rel.rpartition("/")[2]
            if bar is not None:
                bar.update()
            if read.left_out(job_dir, status, has_records, read_unfinished, seen, counts, problems):
                continue
            if parse is not None:  # an index in memory: the job's records are read now that the rules keep it
                parse(root, idx, job)
                start = a + job["count"]
            if job["problem"] is not None:
                if strict:
                    raise ConfigError(job["problem"])
                counts["unreadable"] += 1
                problems.append(job["problem"])
                log.warning("skipped job %s: %s", job_dir, job["problem"])
                continue
            seen.add(job_id)
            counts["unfinished_read"] += status == "unfinished"
            if job["exploded"]:
                exploded.append(job_id)
                log.warning("%s: the loss exploded while staying finite (a checkpoint above %g× the first)",
                            os.path.join(job_dir, "results.jsonl"), read.LOSS_EXPLOSION_FACTOR)
            chosen.append((a, start, job_id))
        chunks.append((idx, chosen))
    counts["read"] = len(seen)
    return chunks, {"jobs": dict(counts), "problems": problems, "exploded": exploded}


class _Strings:
    """One string table per column: value → code."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, int]] = {c: {} for c in _STR_COLUMNS}

    def codes(self, column: str, values: Iterable[str]) -> np.ndarray:
        table = self.tables[column]
        return np.array([table.setdefault(v, len(table)) for v in values], dtype=np.int32)

    def column(self, column: str, codes: np.ndarray, rows: np.ndarray | None, categorical: bool) -> Any:
        """The column of ``codes[rows]`` (``rows`` None: every code): ``str`` values, or a categorical whose
        categories are the values used, sorted. Codes are remapped before they are spread to rows."""
        import pandas as pd

        values = np.array(list(self.tables[column]), dtype=object)
        if not categorical:
            out = values[codes] if len(values) else np.zeros(len(codes), dtype=object)
            return out if rows is None else out[rows]
        used = np.flatnonzero(np.bincount(codes, minlength=len(values))) if len(codes) else codes
        order = used[np.argsort(values[used].astype(str), kind="stable")] if len(used) else used
        remap = np.full(len(values), -1, dtype=np.int32)
        remap[order] = np.arange(len(order), dtype=np.int32)
        small = np.int8 if len(order) < 2**7 else np.int16 if len(order) < 2**15 else np.int32
        final = (remap[codes] if len(codes) else codes).astype(small)  # pandas' own code dtype: no copy later
        cats = pd.Index(values[order].astype(str) if len(order) else np.zeros(0, dtype=str), dtype="str")
        return pd.Categorical.from_codes(final if rows is None else final[rows], categories=cats)


_REC_COLUMNS = ("job_id", *_META_FIELDS, "step")  # columns constant within a record
_ROW_COLUMNS = ("domain", "split", "role")  # columns of a record's layout


def _frame(chunks: list[tuple[Index, list[tuple[int, int, str]]]], categorical: bool) -> tuple[pd.DataFrame, bool]:
    """The tidy frame of the chosen jobs' records, and whether a (job, step, domain, split) may repeat (a job
    resumed after a crash records a step twice; a layout may name a domain twice): then load's drop_duplicates runs.

    Columns constant within a record are built per record and spread to the rows at the end (one gather of small
    integer codes per column), which keeps the peak memory near the frame's own size."""
    import pandas as pd

    strings = _Strings()
    may_repeat = False
    rec_parts: dict[str, list[np.ndarray]] = {c: [] for c in _REC_COLUMNS}
    row_parts: dict[str, list[np.ndarray]] = {c: [] for c in (*_ROW_COLUMNS, "acc", "record")}
    n_recs = 0
    for idx, chosen in chunks:
        if not chosen:
            continue
        a = np.array([c[0] for c in chosen], dtype=np.int64)
        b = np.array([c[1] for c in chosen], dtype=np.int64)
        recs = ranges(a, b)
        if not len(recs):
            continue
        rec_job = np.repeat(strings.codes("job_id", [c[2] for c in chosen]), b - a)
        steps = idx.rec_step[recs]
        lay = idx.rec_layout[recs]
        may_repeat = may_repeat or pd.MultiIndex.from_arrays([rec_job, steps]).has_duplicates \
            or any(len({(r[0], r[1]) for r in idx.layouts[i]}) < len(idx.layouts[i]) for i in np.unique(lay))
        rec_parts["job_id"].append(rec_job)
        rec_parts["step"].append(steps)
        meta = idx.rec_meta[recs]
        for k, col in enumerate(_META_FIELDS):
            values = [m[k] for m in idx.metas]
            if col in ("hparams_seed", "trial_seed"):
                rec_parts[col].append(np.asarray(values, dtype=np.int64)[meta])
            else:
                rec_parts[col].append(strings.codes(col, values)[meta])
        off = idx.rec_offsets()
        lens = (off[recs + 1] - off[recs]).astype(np.int32)
        every = len(recs) == len(idx.rec_step)  # every record of the store (the usual case): no gather
        row_parts["acc"].append(idx.acc if every else idx.acc[ranges(off[recs], off[recs + 1])])
        row_rec = np.repeat(np.arange(len(recs), dtype=np.int32), lens)
        # row r of a record with layout l is the flat layout row lay_start[l] + r
        lay_len = np.array([len(x) for x in idx.layouts], dtype=np.int32)
        lay_start = np.concatenate([[0], np.cumsum(lay_len)[:-1]]).astype(np.int32)
        lrow = np.arange(len(row_rec), dtype=np.int32)
        lrow += (lay_start[lay] - (np.cumsum(lens, dtype=np.int32) - lens))[row_rec]
        flat = [r for x in idx.layouts for r in x]
        for k, col in enumerate(_ROW_COLUMNS):
            row_parts[col].append(strings.codes(col, (r[k] for r in flat))[lrow])
        row_parts["record"].append(row_rec + np.int32(n_recs))
        n_recs += len(recs)
    cat = {c: (np.concatenate(v) if v else np.zeros(0, dtype=np.int32)) for c, v in {**rec_parts, **row_parts}.items()}
    record = cat.pop("record")
    data = {}
    for col in read.COLUMNS:
        arr = cat[col]
        if col in _STR_COLUMNS:
            data[col] = strings.column(col, arr, record if col in _REC_COLUMNS else None, categorical)
        elif col == "acc":
            data[col] = arr.astype(np.float64, copy=False)
        else:
            data[col] = arr.astype(np.int64, copy=False)[record]
        cat[col] = None  # free the per-record codes as soon as the column is built
    return pd.DataFrame(data, columns=read.COLUMNS, copy=False), may_repeat


def provenance_runs(indexes: Iterable[tuple[Path, Any]]) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
    """(store, job folder, algorithm, provenance stamp) of every job with records in the stores' indexes (each an
    index or its head, as :func:`update_index` returns them) whose records carry a stamp, for
    :func:`dganalysis.provenance.differences`."""
    for root, idx in indexes:
        table = idx.provenances
        for job in idx.jobs:
            i = job.get("prov")
            if i is not None and job.get("status") != "failed" and job.get("count") and 0 <= i < len(table):
                yield str(root), str(job["key"][0]), table[i].get("algorithm"), table[i].get("provenance")


def provenance_differences(indexes: list) -> list[str]:
    """One line per way in which the runs of the stores (``indexes``: (store, index) as read) were made differently:
    other package, library or Python versions, commits, CPUs, GPUs or devices, or, among one algorithm's runs, other
    precisions (:func:`dganalysis.provenance.differences` of the records' stamps; runs without one are left out)."""
    from dganalysis.provenance import differences

    return differences(provenance_runs(indexes))
