"""Read checkpoint records into one tidy DataFrame: our job stores and DomainBed sweep directories.

Job folders and their states are :mod:`dganalysis.records.store`'s (a job holds ``results.jsonl``, one JSON record
per checkpoint, and ``done`` once finished, or ``failed``). Records carry
DomainBed's keys (``step``, ``env{i}_in_acc``, ``env{i}_out_acc``, ``hparams``, ``args`` with ``dataset``,
``algorithm``, ``test_envs``, ``hparams_seed``, ``trial_seed``); ours add ``domains``, ``train_domains``,
``test_domains`` and ``val_domains`` (names). Records written by DomainBed itself (Gulrajani & Lopez-Paz 2021,
``domainbed/scripts/train.py``) have no names: we use the dataset's ``ENVIRONMENTS`` for DomainBed's standard
datasets (:data:`DOMAINBED_ENVIRONMENTS`) and ``env0, env1, ...`` otherwise; every non-test environment is a
training domain, except ``args['val_envs']`` (OoD-Bench's fork of DomainBed, Ye et al. 2022), which are validation.

Output (:func:`~dganalysis.records.load`): one row per (job, step, domain, split) with the columns of :data:`COLUMNS`; accuracies are
fractions in [0, 1] as in the records. ``setting`` is the canonical JSON of everything else that makes two runs
different experiments: the record's ``args`` minus :data:`SETTING_IGNORED_ARGS` (so ``steps``, ``checkpoint_freq``,
``holdout_fraction``, ``dataset_kwargs``, DomainBed's ``--hparams`` overrides, ``task``, ...) plus, for our jobs,
the ``hparams_overrides``/``search_overrides`` of ``spec.json``. Model selection lets only runs with equal setting
compete (:mod:`dganalysis.records.selection`). Choices: failed jobs are always skipped; unfinished ones (no ``done``) follow
the writer of the folder (``include_unfinished=None``, the default; see :func:`~dganalysis.records.store.is_our_store`): in a DomainBed sweep
dir they are read, as DomainBed's ``collect_results``/``reporting.load_records`` read every ``results.jsonl`` whether
or not ``done`` exists, so its tables come out; in our job stores they are skipped (a job still running or killed
is not a result), with a logged count. ``True``/``False`` read/skip them everywhere. A torn *last* line
(a job killed mid-write) is skipped with a warning, any other unreadable line (bad JSON, invalid UTF-8, a missing
key, an accuracy that is not a number) is an error naming file and line — or, with ``strict=False``, that
job is reported and skipped. Every job folder counts, records or not (:func:`~dganalysis.records.store.job_folders`: a folder holding any of
:data:`~dganalysis.records.store.JOB_FILES`, so a run that crashed before its first checkpoint is seen): ``df.attrs["jobs"]`` counts them
(:data:`JOB_COUNT_KEYS`: read, failed with or without records, without records, unfinished, unreadable,
duplicates) and the unfinished ones read (``unfinished_read``); ``df.attrs["problems"]`` lists
the skipped jobs' errors and ``df.attrs["exploded"]``
the runs whose loss exploded while staying finite (a checkpoint's loss above :data:`LOSS_EXPLOSION_FACTOR` times
the first one's); :func:`summary_line` puts them in one line for under a table.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dganalysis.validation import ConfigError, check_frame, check_path, describe

if TYPE_CHECKING:  # pandas only for type hints: checking an index's job table needs none
    import pandas as pd

log = logging.getLogger(__name__)

COLUMNS = [
    "job_id", "dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting",
    "hparams_seed", "trial_seed", "step", "domain", "split", "role", "acc", "hparams",
]

#: Record ``args`` that do not make two runs different experiments, left out of ``setting``: where the run lives
#: (``output_dir``, ``data_dir``, ``job_id``), what is saved (``skip_model_save``, ``save_model_every_checkpoint``,
#: ``save_model``), the seed DomainBed's sweep derives from (dataset, algorithm, test_envs, hparams_seed, trial_seed)
#: (``seed``), and the fields that have their own columns.
SETTING_IGNORED_ARGS = frozenset({
    "output_dir", "data_dir", "job_id", "skip_model_save", "save_model_every_checkpoint", "save_model", "seed",
    "dataset", "algorithm", "test_envs", "train_envs", "val_envs", "hparams_seed", "trial_seed",
})

#: Environment names of DomainBed's datasets (``ENVIRONMENTS`` in ``domainbed/datasets.py``), in env-index order.
DOMAINBED_ENVIRONMENTS: dict[str, list[str]] = {
    "Debug28": ["0", "1", "2"],
    "Debug224": ["0", "1", "2"],
    "ColoredMNIST": ["+90%", "+80%", "-90%"],
    "RotatedMNIST": ["0", "15", "30", "45", "60", "75"],
    "VLCS": ["C", "L", "S", "V"],
    "PACS": ["A", "C", "P", "S"],
    "OfficeHome": ["A", "C", "P", "R"],
    "TerraIncognita": ["L100", "L38", "L43", "L46"],
    "DomainNet": ["clip", "info", "paint", "quick", "real", "sketch"],
    "SVIRO": ["aclass", "escape", "hilux", "i3", "lexus", "tesla", "tiguan", "tucson", "x5", "zoe"],
    "WILDSCamelyon": [f"hospital_{i}" for i in range(5)],
    "WILDSFMoW": [f"region_{i}" for i in range(6)],
    **{f"Spawrious{kind}_{level}": ["Test", "SC_group_1", "SC_group_2"]
       for kind in ("O2O", "M2M") for level in ("easy", "medium", "hard")},
}

#: the keys of ``load(...).attrs["jobs"]``: ``folders`` (every job folder, :func:`job_folders`) = ``read`` +
#: ``failed`` (``failed_no_records`` of them without records) + ``no_records`` (no records, not failed: crashed
#: before the first checkpoint or still starting) + ``unfinished`` (skipped) + ``unreadable`` + ``duplicate``;
#: ``unfinished_read``: the unfinished runs among those read
JOB_COUNT_KEYS = ("folders", "read", "failed", "failed_no_records", "no_records", "unfinished", "unreadable",
                  "duplicate", "unfinished_read")

#: a run is flagged when a checkpoint's mean loss exceeds this factor times its first checkpoint's loss
LOSS_EXPLOSION_FACTOR = 10.0

_ENV_KEY = re.compile(r"^env(\d+)_(in|out)_acc$")
_META = [c for c in COLUMNS if c not in ("domain", "split", "role", "acc")]
_REQUIRED_ARGS = ("dataset", "algorithm", "test_envs", "hparams_seed", "trial_seed")


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Read one ``results.jsonl``; a torn last line is skipped, any other bad line raises naming file and line.
    Returns the records (dicts) in file order."""
    path = check_path(path, "path", func="read_records", kind="file")
    try:
        data = path.read_bytes()
    except OSError as err:  # e.g. no read permission: an unreadable job, counted as such by load
        raise ConfigError(f"{path}: cannot be read ({err.strerror or err}); expected JSON records") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not valid UTF-8 (byte {err.start}); expected JSON records in UTF-8") from None
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    records = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            if n == len(lines):
                log.warning("%s:%d: torn last record skipped (%s)", path, n, err.msg)
                break
            raise ConfigError(f"{path}:{n}: unreadable JSON record ({err.msg}); expected one JSON object per line") from err
        if not isinstance(rec, dict):
            raise ConfigError(f"{path}:{n}: expected a JSON object, got {type(rec).__name__}")
        records.append(rec)
    return records


def loss_exploded(records: list[dict[str, Any]]) -> bool:
    """Whether a run's loss exploded, from its records (dicts with an optional ``loss``): :func:`losses_exploded`."""
    if type(records) is not list:
        raise ConfigError(f"loss_exploded: parameter 'records': expected a job's records (a list of dicts), got "
                          f"{describe(records)}")
    return losses_exploded([r.get("loss") for r in records])


_FLOAT = frozenset({float})


def losses_exploded(values: list[Any]) -> bool:
    """Whether a run's loss exploded, from its records' ``loss`` values in order (anything else than a finite number
    is ignored): the one rule for :func:`~dganalysis.records.load` and the columnar index, which reads the losses without building records.
    """
    if type(values) is not list:
        raise ConfigError(f"losses_exploded: parameter 'values': expected a run's losses (a list), got "
                          f"{describe(values)}")
    if set(map(type, values)) <= _FLOAT:  # the usual case: math.isfinite is np.isfinite on floats, ~20× faster
        losses = list(filter(math.isfinite, values))
    else:
        import numpy as np

        losses = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)]
    if len(losses) < 2:
        return False
    return max(losses[1:]) > LOSS_EXPLOSION_FACTOR * max(abs(losses[0]), 1e-8)


_STATES = ("done", "failed", "unfinished")


def left_out(job_dir: str | Path, status: str, has_records: bool, read_unfinished: bool, seen: set[str],
              counts: dict[str, int], problems: list[str]) -> bool:
    """Whether :func:`~dganalysis.records.load` leaves the job folder out before reading its records, counting it in ``counts`` (and
    ``problems``) when it does (``job_dir`` a Path or a str path, as messages show it): failed; unfinished without records (crashed before its first checkpoint — DomainBed:
    err.txt only — or starting); unfinished when unfinished jobs are not read; done without records; a job id
    already in ``seen``. The one rule for :func:`~dganalysis.records.load` and the columnar index (:mod:`dganalysis.records.index`)."""
    if status not in _STATES:
        raise ConfigError(f"left_out: parameter 'status': expected one of {list(_STATES)}, got {describe(status)}")
    if status == "failed":
        counts["failed"] += 1
        counts["failed_no_records"] += not has_records
        return True
    if status == "unfinished" and not has_records:
        counts["no_records"] += 1
        return True
    if status == "unfinished" and not read_unfinished:
        counts["unfinished"] += 1
        return True
    if not has_records:  # ``done`` without records
        counts["unreadable"] += 1
        problems.append(f"{job_dir}: marked done but holds no results.jsonl")
        log.warning("skipped job %s: marked done but holds no results.jsonl", job_dir)
        return True
    name = os.path.basename(job_dir)  # a str path (the index's) or a Path
    if name in seen:
        log.warning("job %s found twice (%s); keeping the first", name, job_dir)
        counts["duplicate"] += 1
        return True
    return False


def left_out_words(c: dict[str, int]) -> str:
    """What :func:`~dganalysis.records.load` did not read, in words ("" when it read every job folder), from the
    job counts ``c`` (:data:`JOB_COUNT_KEYS`: ``df.attrs["jobs"]``)."""
    if not isinstance(c, dict):
        raise ConfigError(f"left_out_words: parameter 'c': expected job counts (a dict, df.attrs['jobs']), got "
                          f"{describe(c)}")
    parts = []
    if c.get("failed"):
        n = c.get("failed_no_records", 0)
        parts.append(f"{c['failed']} failed" + (f" ({n} before their first record)" if n else ""))
    if c.get("no_records"):
        parts.append(f"{c['no_records']} without records (crashed before the first checkpoint, e.g. DomainBed's "
                     "err.txt only, or still starting)")
    for key, words in (("unfinished", "unfinished"), ("unreadable", "unreadable"),
                       ("duplicate", "duplicate job ids")):
        if c.get(key):
            parts.append(f"{c[key]} {words}")
    return ", ".join(parts)


def domain_orders(df: pd.DataFrame) -> dict[str, list[str]]:
    """Each dataset's domains in environment order: as they first appear in a tidy frame (records list their
    environments in order); the columns of its tables follow it (:mod:`dganalysis.records.summaries`)."""
    check_frame(df, ("dataset", "domain"), "df", func="domain_orders", what="a tidy frame of dganalysis.records.load")
    return {str(ds): [str(d) for d in doms] for ds, doms in df.groupby("dataset", sort=False)["domain"].unique().items()}


def summary_line(df: pd.DataFrame) -> str:
    """One line on what a table of ``df`` (from :func:`~dganalysis.records.load`) leaves out: every job folder that was not read —
    failed (with or without records), without records (crashed before the first checkpoint), unfinished,
    unreadable — and runs whose loss exploded, e.g. ``jobs: 12 of 16 job folders read; not in the table:
    2 failed (1 before their first record), 1 unfinished``. "none left out" only when every folder was read."""
    check_frame(df, (), "df", func="summary_line", what="a dganalysis.records.load frame")
    c = df.attrs.get("jobs")
    if not c:
        return ""
    total = c.get("folders", c["read"])
    line = f"jobs: {c['read']} of {total} job folder{'s' if total != 1 else ''} read"
    if c.get("unfinished_read"):
        line += (f" ({c['unfinished_read']} of them unfinished, without 'done', and included"
                 f" as DomainBed's collect_results includes them)")
    left = left_out_words(c)
    line += f"; not in the table: {left}" if left else "; none left out"
    exploded = df.attrs.get("exploded") or []
    if exploded:
        line += (f"; {len(exploded)} run(s) whose loss exploded (>{LOSS_EXPLOSION_FACTOR:g}× the first checkpoint's,"
                 f" still finite): {', '.join(exploded[:5])}{' …' if len(exploded) > 5 else ''}")
    return line


#: the args :func:`_default_arg` may leave out
_DEFAULTED_ARGS = frozenset({"task", "uda_holdout_fraction", "hparams"})


def _default_arg(key: str, value: Any, args: dict[str, Any]) -> bool:
    """DomainBed's ``task``/``uda_holdout_fraction`` at their defaults, and the ``hparams`` JSON string of our own
    records (``job_id`` in ``args``; their overrides are in ``spec.json``, :data:`SETTING_SPEC_FIELDS`): left out of
    the setting, so records written before these keys were added group with those written after."""
    return ((key == "task" and value == "domain_generalization") or (key == "uda_holdout_fraction" and value == 0)
            or (key == "hparams" and "job_id" in args))


def setting_key(args: dict[str, Any], spec: dict[str, Any] | None = None) -> str:
    """The ``setting`` of a record: canonical JSON of ``args`` minus :data:`SETTING_IGNORED_ARGS`, plus ``spec``."""
    if not isinstance(args, dict):
        raise ConfigError(f"setting_key: parameter 'args': expected a record's args (a dict), got {describe(args)}")
    if spec is not None and not isinstance(spec, dict):
        raise ConfigError(f"setting_key: parameter 'spec': expected a dict or None, got {describe(spec)}")
    kept = {k: v for k, v in args.items()
            if k not in SETTING_IGNORED_ARGS and not (k in _DEFAULTED_ARGS and _default_arg(k, v, args))}
    kept.update(spec or {})
    return _SETTING_JSON(kept)


def read_record_at(rec: dict[str, Any], where: str, spec: dict[str, Any] | None = None) -> tuple[list, tuple, list]:
    """:func:`_read_record` with :func:`~dganalysis.records.load`'s error messages: every problem a ``ValueError`` starting with
    ``where`` (``file:line``), a record of the wrong shape "malformed record (…)". The one reader of a record's
    metadata for ``load`` and the columnar index."""
    if type(rec) is not dict or type(where) is not str:
        raise ConfigError(f"read_record_at: parameters 'rec' and 'where': expected a record (a dict) and its place "
                          f"(a str 'file:line'), got {describe(rec)} and {describe(where)}")
    try:
        return _read_record(rec, where, spec)
    except ValueError as err:
        if str(err).startswith(where):
            raise
        raise ConfigError(f"{where}: {err}") from err
    except (TypeError, KeyError, AttributeError) as err:
        raise ConfigError(f"{where}: malformed record ({type(err).__name__}: {err})") from err


#: the metadata :func:`_read_record` returns, in order: the columns of :data:`_META` after ``job_id``
_RECORD_META = _META[1:]


#: the canonical JSON of a setting and of hparams (one encoder each, not one per record)
_SETTING_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode
_HPARAMS_JSON = json.JSONEncoder(sort_keys=True, separators=(", ", ": "), default=str).encode


def _read_record(
    rec: dict[str, Any], where: str, spec: dict[str, Any] | None = None,
) -> tuple[tuple, tuple[tuple[str, str, str], ...], list[float]]:
    """One record by :func:`~dganalysis.records.load`'s rules: (its metadata, the values of :data:`_RECORD_META`; its rows' (domain,
    split, role) in (env, split) order; their accuracies, NaN for null). ValueError naming ``where`` for a record
    that breaks them (TypeError, KeyError or AttributeError for some malformed ones: callers word those).
    The one rule for :func:`~dganalysis.records.load` and the columnar index, which calls it once per job whose records repeat the first."""
    args = rec.get("args")
    if not isinstance(args, dict):
        raise ConfigError(f"{where}: record has no 'args' dict (expected DomainBed-style records)")
    if not (args.keys() >= _REQUIRED_ARG_SET and "step" in rec):
        missing = [k for k in _REQUIRED_ARGS if k not in args]
        raise ConfigError(f"{where}: record lacks {missing + ([] if 'step' in rec else ['step'])}")
    plan = _acc_keys(tuple(rec))
    accs = _plain_accs(rec, plan[1]) if plan is not None else None
    if accs is not None:
        pairs = plan[0]
    else:  # a null, a non-number, or two keys naming one pair: every key in record order, the first bad one named
        by_pair = {}
        for key, value in rec.items():
            pair = env_pair(key)
            if pair is not None:
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                    raise ConfigError(f"{where}: {key} = {value!r}; expected an accuracy (a number) or null")
                by_pair[pair] = float("nan") if value is None else float(value)
        pairs = tuple(sorted(by_pair))
        accs = [by_pair[p] for p in pairs]
    if not pairs:
        raise ConfigError(f"{where}: record has no env{{i}}_in_acc / env{{i}}_out_acc keys")
    (train, test, val), layout = _layout(rec, args, pairs, where)
    step = int(rec["step"])
    if not -(2**63) <= step < 2**63:
        raise ConfigError(f"{where}: step = {rec['step']!r} does not fit a 64-bit integer; expected the training "
                         "step of the checkpoint")
    values = (str(args["dataset"]), str(args["algorithm"]), train, test, val, setting_key(args, spec),
              int(args["hparams_seed"]), int(args["trial_seed"]), step,
              _HPARAMS_JSON(rec.get("hparams", {})))
    return values, layout, accs


_REQUIRED_ARG_SET = frozenset(_REQUIRED_ARGS)


@functools.lru_cache(maxsize=1024)
def _acc_keys(keys: tuple[str, ...]) -> tuple[tuple[tuple[int, str], ...], tuple[str, ...]] | None:
    """A record's accuracy (env index, split) pairs in row order and their keys, from its ``keys``; None when two
    keys name one pair (``env1_in_acc`` and ``env01_in_acc``: :func:`_read_record`'s general loop decides)."""
    found = {}
    for key in keys:
        pair = env_pair(key)
        if pair is not None:
            if pair in found:
                return None
            found[pair] = key
    pairs = tuple(sorted(found))
    return pairs, tuple(found[p] for p in pairs)


def _plain_accs(rec: dict[str, Any], keys: tuple[str, ...]) -> list[float] | None:
    """The values of ``keys`` in ``rec`` when all are floats (the usual record), else None."""
    values = [rec[k] for k in keys]
    return values if set(map(type, values)) <= _FLOAT else None


@functools.lru_cache(maxsize=4096)
def env_pair(key: str) -> tuple[int, str] | None:
    """(env index, split) of an accuracy key ``env{i}_{in,out}_acc``; None for other keys."""
    m = _ENV_KEY.match(key)
    return (int(m.group(1)), m.group(2)) if m else None


_DOMAIN_KEYS = ("domains", "train_domains", "test_domains", "val_domains")
_NO_FIELDS = (None,) * len(_DOMAIN_KEYS)


def _layout(rec: dict[str, Any], args: dict[str, Any], pairs: tuple[tuple[int, str], ...],
            where: str) -> tuple[tuple[str, str, str], tuple[tuple[str, str, str], ...]]:
    """A record's (train, test and val domains joined by commas; (domain, split, role) of each of ``pairs``).

    Records of a sweep share a few layouts: computed once per distinct (dataset, ``pairs``, domain fields, test and
    val envs) when those are plain lists of names or indices (typed: ``[1]`` and ``[1.0]`` are different keys), else
    each time."""
    fields = tuple(map(rec.get, _DOMAIN_KEYS))
    if fields != _NO_FIELDS:  # DomainBed's records have none
        fields = tuple(_plain(f, str) for f in fields)
    envs = _plain(args["test_envs"], int), _plain(args.get("val_envs"), int)
    if _UNCACHED in fields or _UNCACHED in envs:  # (None and tuples are never equal to it)
        return _layout_uncached(rec, args, pairs, where)
    key = (str(args["dataset"]), pairs, fields, "test_domains" in rec and "train_domains" in rec, envs)
    try:
        return _layout_cached(key)
    except _LayoutError as err:  # recomputed with the record itself: its own message
        raise ConfigError(f"{where}: {err}") from None


_UNCACHED = object()


def _plain(value: Any, kind: type) -> Any:
    """``value`` as a hashable key when it is None or a list of ``kind`` (exactly); else :data:`_UNCACHED`."""
    if value is None:
        return None
    if type(value) is list and all(type(v) is kind for v in value):
        return tuple(value)
    return _UNCACHED


class _LayoutError(ValueError):
    """A layout refused by :func:`_layout_cached` (its message without the record's place)."""


@functools.lru_cache(maxsize=1024)
def _layout_cached(key: tuple) -> tuple[tuple[str, str, str], tuple[tuple[str, str, str], ...]]:
    dataset, pairs, (domains, train, test, val), named, (test_envs, val_envs) = key
    rec: dict[str, Any] = {"domains": domains, "train_domains": train, "test_domains": test, "val_domains": val}
    if not named:  # the roles come from the envs: which domain fields were there does not matter
        del rec["train_domains"], rec["test_domains"]
    args = {"dataset": dataset, "test_envs": test_envs, "val_envs": val_envs}
    try:
        return _layout_uncached(rec, args, pairs, "")
    except ValueError as err:
        raise _LayoutError(str(err).removeprefix(": ")) from None


def _layout_uncached(rec: dict[str, Any], args: dict[str, Any], pairs: tuple[tuple[int, str], ...],
                     where: str) -> tuple[tuple[str, str, str], tuple[tuple[str, str, str], ...]]:
    names = _domain_names(rec, args, pairs[-1][0] + 1, where)
    order = {name: i for i, name in enumerate(names)}
    roles = _roles(rec, args, names, where)

    def joined(role: str) -> str:
        return ",".join(sorted((d for d, r in roles.items() if r == role), key=order.__getitem__))

    return (joined("train"), joined("test"), joined("val")), tuple((names[i], s, roles[names[i]]) for i, s in pairs)


def _domain_names(rec: dict[str, Any], args: dict[str, Any], n_envs: int, where: str) -> list[str]:
    names = rec.get("domains")
    if names is not None:
        if len(names) < n_envs:
            raise ConfigError(f"{where}: 'domains' names {len(names)} domains but the record has {n_envs} envs")
        return [str(n) for n in names]
    known = DOMAINBED_ENVIRONMENTS.get(str(args["dataset"]))
    if known is not None and len(known) == n_envs:
        return list(known)
    return [f"env{i}" for i in range(n_envs)]


def _roles(rec: dict[str, Any], args: dict[str, Any], names: list[str], where: str) -> dict[str, str]:
    if "test_domains" in rec and "train_domains" in rec:
        roles = dict.fromkeys(names, "unused")
        for role in ("train", "test", "val"):
            for d in rec.get(f"{role}_domains") or []:
                if d not in roles:
                    raise ConfigError(f"{where}: {role}_domains names {d!r}, not one of the domains {names}")
                roles[d] = role
        return roles
    test = set(args["test_envs"])
    val = set(args.get("val_envs") or [])
    bad = [i for i in test | val if not 0 <= int(i) < len(names)]
    if bad:
        raise ConfigError(f"{where}: test_envs/val_envs {sorted(bad)} out of range for {len(names)} envs")
    return {n: "test" if i in test else "val" if i in val else "train" for i, n in enumerate(names)}
