"""The layout of a results store: which folders are jobs, what state each is in, and what our engine's ``spec.json``
adds to its records.

A job (a *run* in DomainBed's words) is a folder holding ``results.jsonl`` (one JSON record per checkpoint) and,
once finished, a ``done`` file; our engine writes ``failed`` instead when a job crashed, and ``spec.json`` (the job's
specification) before it starts. DomainBed's ``scripts/train.py`` (Gulrajani & Lopez-Paz 2021) writes
``results.jsonl``, ``out.txt``, ``err.txt`` and ``done``. A *store* is a folder of job folders: one of ours, or a
DomainBed sweep output dir (:func:`is_our_store` tells them apart, and :func:`dganalysis.records.load` reads
unfinished runs by that). These rules are shared by :func:`dganalysis.records.load` and the columnar index
(:mod:`dganalysis.records.index`, :mod:`dganalysis.records.index_file`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dganalysis.training.job_draw import drawn_under_todays_rule, recorded_draw_problem
from dganalysis.validation import ConfigError, describe

#: Fields of our ``spec.json`` that records' ``args`` lack and that change the experiment.
SETTING_SPEC_FIELDS = ("hparams_overrides", "search_overrides")


def results_dir(path: Any, func: str, name: str = "path") -> Path:
    """``path`` as a ``Path`` when it is an existing folder, else a ConfigError naming ``name``, the parameter of
    ``func`` it was given as, and what was expected (a job store or a DomainBed sweep output dir)."""
    where = f"{func}: parameter {name!r}"
    if not isinstance(path, (str, os.PathLike)) or (isinstance(path, str) and not path):
        raise ConfigError(f"{where}: expected a results folder (a job store or DomainBed sweep output dir), got "
                          f"{describe(path)}")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{where}: {str(p)!r} is a file, not a folder (expected a job store or sweep output dir)")
    if not p.is_dir():
        raise ConfigError(f"{where}: results directory {str(p)!r} does not exist (expected a job store or sweep "
                          f"output dir)")
    return p


#: files that make a folder a job folder: records (``results.jsonl``), our engine's ``spec.json``, ``claim``,
#: ``failed`` and ``done``, and the ``out.txt``/``err.txt`` DomainBed's ``scripts/train.py`` opens before its first
#: step (so a DomainBed run that crashed before its first checkpoint still leaves a job folder: ``err.txt`` only)
JOB_FILES = ("results.jsonl", "spec.json", "claim", "failed", "done", "out.txt", "err.txt")


def is_job_folder(files: Iterable[str]) -> bool:
    """Whether a folder whose file names are ``files`` is a job folder: it holds one of :data:`JOB_FILES`."""
    if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
        raise ConfigError(f"is_job_folder: parameter 'files': expected the names of a folder's files, got "
                          f"{describe(files)}")
    return any(f in JOB_FILES for f in files)


def job_folders(path: str | Path) -> list[Path]:
    """Every job folder under ``path``, with records or not: ``path`` itself if it holds one of :data:`JOB_FILES`,
    else every folder below that does (a job folder's sub-folders are not searched), sorted. The one rule by which
    :func:`~dganalysis.records.load`, ``collect`` and the index count jobs; :func:`classify_job` says what each one is."""
    path = results_dir(path, "job_folders")
    with os.scandir(path) as entries:
        if is_job_folder([e.name for e in entries if not e.is_dir()]):
            return [path]
    jobs = []
    for root, dirs, files in os.walk(path):
        if is_job_folder(files):
            jobs.append(Path(root))
            dirs[:] = []  # a job folder's sub-folders are not jobs
        else:
            dirs.sort()
    return sorted(jobs)


def classify_job(job_dir: str | Path) -> tuple[str, bool]:
    """(state, has_records) of one job folder: state ``"done"``, ``"failed"`` or ``"unfinished"``
    (:func:`job_status`), ``has_records`` whether it holds ``results.jsonl``. A folder without records is a job
    that failed (ours write ``failed``) or stopped before its first checkpoint, or one still starting."""
    job_dir = results_dir(job_dir, "classify_job", "job_dir")
    return job_status(job_dir), (job_dir / "results.jsonl").is_file()


def find_jobs(path: str | Path) -> list[Path]:
    """The job folders under ``path`` that hold records (``results.jsonl``); see :func:`job_folders` for all."""
    return [j for j in job_folders(path) if (j / "results.jsonl").is_file()]


#: files only our engine writes in a job folder (``spec.json`` first of all, ``failed`` when a job crashed); DomainBed's
#: ``train.py`` writes ``results.jsonl``, ``out.txt``, ``err.txt``, ``done`` (and ``model.pkl``) but neither of these
OUR_JOB_FILES = ("spec.json", "failed")


def is_our_store(jobs: Iterable[str | Path]) -> bool:
    """Whether job folders (those :func:`find_jobs` found under one directory) were written by our engine: any of
    them holds one of :data:`OUR_JOB_FILES`. Otherwise the directory is taken as a DomainBed sweep output dir, whose
    unfinished runs DomainBed's ``collect_results`` reads. The rule is per directory given to :func:`~dganalysis.records.load`, so a
    DomainBed dir and one of our stores can be collected together, each by its own rule."""
    if isinstance(jobs, (str, os.PathLike)) or not isinstance(jobs, Iterable):
        raise ConfigError(f"is_our_store: parameter 'jobs': expected a list of job folders (find_jobs(path)), got "
                          f"{describe(jobs)}")
    return any((Path(j) / f).exists() for j in jobs for f in OUR_JOB_FILES)


def job_status(job_dir: str | Path) -> str:
    """``"done"``, ``"failed"`` or ``"unfinished"`` from the sentinel files of a job folder."""
    job_dir = results_dir(job_dir, "job_status", "job_dir")
    return state_from_files([name for name in ("done", "failed") if (job_dir / name).exists()])


def state_from_files(files: Iterable[str]) -> str:
    """A job folder's state from the names of its files: ``"done"`` with a ``done`` file (whatever else it holds),
    else ``"failed"`` with a ``failed`` file, else ``"unfinished"``. The one rule for :func:`job_status` and the
    columnar index (:mod:`dganalysis.records.index`), which knows the names from its listing."""
    if isinstance(files, (str, bytes)) or not isinstance(files, Iterable):
        raise ConfigError(f"state_from_files: parameter 'files': expected the names of a folder's files, got "
                          f"{describe(files)}")
    names = set(files)
    return "done" if "done" in names else "failed" if "failed" in names else "unfinished"


def check_draw(job_dir: Path, records: list[dict[str, Any]]) -> None:
    """Refuse our job whose recorded hparams are not what its spec draws today (drawn under an older rule, see
    :data:`dganalysis.training.hparams.DRAW_VERSION`): mixing it with today's runs would compare different searches.
    A job whose ``spec.json`` holds its id under today's rule is read as drawn today, without importing torch
    (:func:`dganalysis.training.job_draw.drawn_under_todays_rule`); another rule's job is drawn again to judge it
    (:func:`dganalysis.training.job_draw.recorded_draw_problem`, which imports torch)."""
    if not isinstance(job_dir, Path) or type(records) is not list:
        raise ConfigError(f"check_draw: parameters 'job_dir' and 'records': expected a job folder (a Path) and its "
                          f"records (a list), got {describe(job_dir)} and {describe(records)}")
    path = job_dir / "spec.json"
    if not records or not path.is_file() or not isinstance(records[0].get("hparams"), dict):
        return  # DomainBed's runs: drawn by DomainBed
    spec = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(spec, dict) or drawn_under_todays_rule(spec):
        return
    problem = recorded_draw_problem(spec, records[0]["hparams"])
    if problem:
        raise ConfigError(f"{job_dir / 'results.jsonl'}:1: {problem}; the job was trained under an older "
                         f"hyperparameter-drawing rule and is not mixed with today's: delete {job_dir} to retrain it")


def read_spec(job_dir: Path) -> dict[str, Any]:
    """Our job's spec fields that records lack (:data:`SETTING_SPEC_FIELDS`); {} for DomainBed runs."""
    if not isinstance(job_dir, Path):
        raise ConfigError(f"read_spec: parameter 'job_dir': expected a job folder (a Path), got {describe(job_dir)}")
    path = job_dir / "spec.json"
    if not path.is_file():
        return {}
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not valid UTF-8 (byte {err.start}); expected the JSON written by dganalysis") from err
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path}: unreadable job spec ({err.msg}); expected the JSON written by dganalysis") from err
    return {k: spec[k] for k in SETTING_SPEC_FIELDS if isinstance(spec, dict) and spec.get(k)}
