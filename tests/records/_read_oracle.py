"""The standard-library reader of records, kept as a test oracle only.

:func:`dganalysis.records.load` reads a store through the index's reader (:mod:`dganalysis.records.index`:
``msgspec``, the standard library's ``json`` where a record needs it, one frame builder shared with
:func:`~dganalysis.records.index.load_indexed`). This module reads the same store the other way, as the package did
before the two readers were made one: every ``results.jsonl`` with ``json`` record by record
(:func:`dganalysis.records.read.read_records`), every record through
:func:`~dganalysis.records.read.read_record_at`, the frame built from Python lists. The differential tests
(``tests/records/test_load_oracle.py``, ``tests/records/test_index.py``) require both to give the same frame —
columns, dtypes, row order, values bit for bit, ``attrs`` — and the same errors and warnings.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dganalysis.records.read import (
    _META,
    _RECORD_META,
    COLUMNS,
    JOB_COUNT_KEYS,
    LOSS_EXPLOSION_FACTOR,
    left_out,
    left_out_words,
    loss_exploded,
    read_record_at,
    read_records,
)
from dganalysis.records.store import check_draw, classify_job, is_our_store, job_folders, read_spec, results_dir
from dganalysis.validation import ConfigError, describe

log = logging.getLogger("dganalysis.records.read")


def load(
    path: str | Path | Iterable[str | Path], include_unfinished: bool | None = None, progress: bool = True,
    strict: bool = True,
) -> pd.DataFrame:
    """Tidy results of every finished job under ``path`` (one folder or a list of folders).

    Works on our job stores and on DomainBed sweep output dirs (see the module docstring for the conventions).
    ``include_unfinished``: ``None`` (default) reads unfinished runs of DomainBed sweep dirs (as DomainBed does) and
    skips those of our stores (:func:`is_our_store` decides, per folder in ``path``); ``True``/``False``: everywhere.
    Returns one row per (job, step, domain, split) with columns :data:`COLUMNS`, in job-folder, record and env order.
    ``strict=False``: a job with an unreadable record is logged, counted and skipped instead of raising.
    Every folder is checked (it exists and is a directory) before any is read.

    Columns: ``job_id``; ``dataset``, ``algorithm``; ``train_domains``, ``test_domains``, ``val_domains`` (domain
    names joined by commas); ``setting`` (JSON of everything else that makes runs different experiments);
    ``hparams_seed``, ``trial_seed``; ``step`` (training step of the checkpoint); ``domain`` and ``split`` (``in``:
    the domain's main part, ``out``: its holdout); ``role`` (``train``, ``test`` or ``val``); ``acc`` (accuracy, a
    fraction in [0, 1]); ``hparams`` (JSON). ``df.attrs["jobs"]`` counts the jobs read and left out.
    """
    if isinstance(path, (str, os.PathLike)):
        paths = [path]
    elif isinstance(path, Iterable):
        paths = list(path)
    else:
        raise ConfigError(f"load: parameter 'path': expected a results folder or a list of them, got {describe(path)}")
    if not paths:
        raise ConfigError("load: parameter 'path': expected at least one results directory, got an empty list")
    paths = [results_dir(p, "load") for p in paths]
    if include_unfinished not in (None, True, False):
        raise ConfigError(f"load: parameter 'include_unfinished': expected None (by writer), True or False, got "
                          f"{describe(include_unfinished)}")
    if not isinstance(strict, bool):
        raise ConfigError(f"load: parameter 'strict': expected True or False, got {describe(strict)}")
    jobs: list[Path] = []
    read_unfinished: dict[Path, bool] = {}
    for p in paths:
        found = job_folders(p)
        jobs += found
        rule = (not is_our_store(found)) if include_unfinished is None else include_unfinished
        read_unfinished.update({j: rule for j in found})
    counts = dict.fromkeys(JOB_COUNT_KEYS, 0)
    counts["folders"] = len(jobs)
    problems: list[str] = []
    exploded: list[str] = []
    meta: dict[str, list] = {c: [] for c in _META}  # one entry per record
    rows: dict[str, list] = {c: [] for c in ("record", "domain", "split", "role", "acc")}  # one entry per row
    seen: set[str] = set()
    for job_dir in tqdm(jobs, desc="reading records", disable=not progress or len(jobs) < 50, leave=False):
        status, has_records = classify_job(job_dir)
        if left_out(job_dir, status, has_records, read_unfinished[job_dir], seen, counts, problems):
            continue
        job_id = job_dir.name
        results = job_dir / "results.jsonl"
        mark_meta, mark_rows = {k: len(v) for k, v in meta.items()}, {k: len(v) for k, v in rows.items()}
        try:
            spec = read_spec(job_dir)
            records = read_records(results)
            check_draw(job_dir, records)
            for n, rec in enumerate(records, start=1):
                where = f"{results}:{n}"
                _append_rows(meta, rows, rec, job_id, where, spec)
        except ValueError as err:
            if strict:
                raise
            for k, v in meta.items():  # drop what this job added before the bad record
                del v[mark_meta[k]:]
            for k, v in rows.items():
                del v[mark_rows[k]:]
            counts["unreadable"] += 1
            problems.append(str(err))
            log.warning("skipped job %s: %s", job_dir, err)
            continue
        seen.add(job_id)
        counts["unfinished_read"] += status == "unfinished"
        if loss_exploded(records):
            exploded.append(job_id)
            log.warning("%s: the loss exploded while staying finite (a checkpoint above %g× the first)", results,
                        LOSS_EXPLOSION_FACTOR)
    counts["read"] = len(seen)
    log.info("read %d of %d job folders under %s; %s", len(seen), len(jobs), ", ".join(map(str, paths)),
             left_out_words(counts) or "none left out")
    job_counts = dict(counts)
    record = np.asarray(rows.pop("record"), dtype=np.int64)
    data = {c: np.asarray(v, dtype=object)[record] if v else [] for c, v in meta.items()}
    df = pd.DataFrame({**data, **rows}, columns=COLUMNS)
    df = df.astype({"hparams_seed": "int64", "trial_seed": "int64", "step": "int64", "acc": "float64"})
    n = len(df)
    # a job resumed after a crash may hold a checkpoint twice: keep the last record of each step
    df = df.drop_duplicates(["job_id", "step", "domain", "split"], keep="last")
    if len(df) < n:
        log.warning("dropped %d rows of checkpoints recorded twice (kept the last record of each step)", n - len(df))
    df = df.reset_index(drop=True)
    df.attrs.update({"jobs": job_counts, "problems": problems, "exploded": exploded})
    return df



def _append_rows(
    meta: dict[str, list], rows: dict[str, list], rec: dict[str, Any], job_id: str, where: str,
    spec: dict[str, Any] | None = None,
) -> None:
    """Append one record's metadata to ``meta`` (one entry per column of :data:`_META`) and its rows to ``rows``."""
    values, layout, accs = read_record_at(rec, where, spec)
    index = len(meta["job_id"])
    meta["job_id"].append(job_id)
    for key, value in zip(_RECORD_META, values):
        meta[key].append(value)
    for (domain, split, role), acc in zip(layout, accs):
        rows["record"].append(index)
        rows["domain"].append(domain)
        rows["split"].append(split)
        rows["role"].append(role)
        rows["acc"].append(acc)




def load_many(paths: Iterable[str | Path], include_unfinished: bool | None = None, progress: bool = True) -> pd.DataFrame:
    """:func:`load` over several folders (e.g. several DomainBed sweep output dirs), concatenated."""
    if isinstance(paths, (str, os.PathLike)) or not isinstance(paths, Iterable):
        raise ConfigError(f"load_many: parameter 'paths': expected a list of results folders, got {describe(paths)}")
    return load(list(paths), include_unfinished=include_unfinished, progress=progress)
