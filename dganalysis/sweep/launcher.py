"""Run a list of jobs into a job store: resume, skip finished jobs, record failures.

Store layout (one folder per job, named by :attr:`Job.job_id`)::

    <store>/<job_id>/spec.json  results.jsonl  [model.pt]  done | failed

A job counts as finished when ``done`` exists (and ``model.pt`` too if the job asks for
the model). Anything else — a folder with partial records from a killed sweep, or a
``failed`` job — is cleared and trained again, so a killed sweep loses only the jobs that
were running and never redoes a finished one. An exception inside a job (including a
non-finite loss) writes ``failed`` with the traceback; the sweep goes on.

Launchers:

- ``local``: ``n_workers == 1`` runs jobs in this process; more workers run in a
  ``ProcessPoolExecutor`` with the *spawn* start method, each worker using
  ``cores // n_workers`` torch threads; with GPUs, workers are spread round-robin over
  them (several workers per GPU pack small jobs on one device).
- ``slurm``: one Slurm array job per sweep through ``submitit.AutoExecutor``; pass
  ``slurm={"cluster": "local"}`` or ``"debug"`` to run through submitit without Slurm.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib
import importlib.util
import logging
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis.sweep.job import Job

log = logging.getLogger(__name__)

STATUS_COLUMNS = [
    "job_id", "dataset", "algorithm", "train_domains", "test_domains", "val_domains",
    "hparams_seed", "trial_seed", "steps", "status", "elapsed", "error", "job_dir",
]


# --------------------------------------------------------------------------- job state on disk
def job_state(job: Job, store_dir: str | Path) -> str:
    """``done``, ``failed``, ``partial`` (a folder without done/failed) or ``new``."""
    d = Path(store_dir) / job.job_id
    if (d / "done").exists() and (not job.save_model or (d / "model.pt").exists()):
        return "done"
    if (d / "failed").exists():
        return "failed"
    if d.exists():
        return "partial"
    return "new"


def _row(job: Job, store_dir: Path, status: str, elapsed: float | None = None, error: str = "") -> dict[str, Any]:
    return {
        "job_id": job.job_id,
        "dataset": job.dataset,
        "algorithm": job.algorithm,
        "train_domains": ",".join(job.train_domains),
        "test_domains": ",".join(job.test_domains),
        "val_domains": ",".join(job.val_domains),
        "hparams_seed": job.hparams_seed,
        "trial_seed": job.trial_seed,
        "steps": job.steps,
        "status": status,
        "elapsed": elapsed,
        "error": error,
        "job_dir": str(store_dir / job.job_id),
    }


# --------------------------------------------------------------------------- what a worker runs
def import_plugins(imports: Sequence[str]) -> None:
    """Import modules (``pkg.mod``) or files (``path/to/mod.py``) that register datasets/algorithms."""
    for item in imports:
        if item.endswith(".py"):
            path = Path(item)
            name = path.stem
            if name in sys.modules:
                continue
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"imports: cannot import {item!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            importlib.import_module(item)


def execute_job(
    job_spec: Mapping[str, Any],
    job_dir: str,
    data_dir: str | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Train one job, catching any exception into ``failed``. Returns ``{status, elapsed, error}``."""
    from dganalysis.train import run_job, write_failed

    options = dict(options or {})
    t0 = time.time()
    try:
        import_plugins(options.pop("imports", ()))
        run_job(dict(job_spec), job_dir, data_dir=data_dir, **options)
        return {"status": "done", "elapsed": time.time() - t0, "error": ""}
    except Exception as e:  # noqa: BLE001 - every failure is recorded and the sweep goes on
        log.warning("job %s failed: %s: %s", Path(job_dir).name, type(e).__name__, e)
        try:
            write_failed(job_dir, e)
        except OSError:  # pragma: no cover - the store itself is broken
            log.exception("could not write %s/failed", job_dir)
        return {"status": "failed", "elapsed": time.time() - t0, "error": f"{type(e).__name__}: {e}"}


_WORKER_OPTIONS: dict[str, Any] = {}


def _init_worker(n_threads: int, n_gpus: int, counter, imports: Sequence[str]) -> None:
    import torch

    torch.set_num_threads(max(1, n_threads))
    if n_gpus > 0:
        with counter.get_lock():
            slot = counter.value
            counter.value += 1
        _WORKER_OPTIONS["device"] = f"cuda:{slot % n_gpus}"
    import_plugins(imports)


def _execute_in_worker(job_spec, job_dir, data_dir, options) -> dict[str, Any]:
    options = dict(options)
    if options.get("device") is None and "device" in _WORKER_OPTIONS:
        options["device"] = _WORKER_OPTIONS["device"]
    return execute_job(job_spec, job_dir, data_dir, options)


# --------------------------------------------------------------------------- launchers
def _run_inline(todo, store, data_dir, options, bar) -> list[dict[str, Any]]:
    out = []
    for job in todo:
        res = execute_job(job.to_dict(), str(store / job.job_id), data_dir, options)
        out.append(res)
        _tick(bar, res)
    return out


def _run_pool(todo, store, data_dir, options, n_workers, bar) -> list[dict[str, Any]]:
    import torch

    ctx = mp.get_context("spawn")
    n_gpus = torch.cuda.device_count() if options.get("device") is None and torch.cuda.is_available() else 0
    n_threads = max(1, (os.cpu_count() or 1) // n_workers)
    counter = ctx.Value("i", 0)
    imports = list(options.get("imports", ()))
    results: dict[str, dict[str, Any]] = {}
    with cf.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=ctx, initializer=_init_worker, initargs=(n_threads, n_gpus, counter, imports)
    ) as pool:
        futures = {
            pool.submit(_execute_in_worker, job.to_dict(), str(store / job.job_id), data_dir, options): job for job in todo
        }
        for fut in cf.as_completed(futures):
            job = futures[fut]
            try:
                res = fut.result()
            except Exception as e:  # noqa: BLE001 - a worker died (e.g. killed for memory)
                from dganalysis.train import write_failed

                write_failed(store / job.job_id, e)
                res = {"status": "failed", "elapsed": None, "error": f"worker died: {type(e).__name__}: {e}"}
            results[job.job_id] = res
            _tick(bar, res)
    return [results[j.job_id] for j in todo]


def _run_submitit(todo, store, data_dir, options, slurm: Mapping[str, Any], bar) -> list[dict[str, Any]]:
    import submitit

    slurm = dict(slurm or {})
    cluster = slurm.pop("cluster", None)
    folder = slurm.pop("folder", store / ".submitit" / "%j")
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    params = {"timeout_min": 24 * 60, "name": "dganalysis", **slurm}
    executor.update_parameters(**params)
    specs = [j.to_dict() for j in todo]
    dirs = [str(store / j.job_id) for j in todo]
    sub = executor.map_array(execute_job, specs, dirs, [data_dir] * len(todo), [options] * len(todo))
    log.info("submitted %d jobs through submitit (%s)", len(sub), executor.cluster)
    results: dict[int, dict[str, Any]] = {}
    index = {id(s): i for i, s in enumerate(sub)}
    for s in submitit.helpers.as_completed(sub):
        i = index[id(s)]
        try:
            res = s.result()
        except Exception as e:  # noqa: BLE001 - the cluster job itself failed (timeout, preemption)
            from dganalysis.train import write_failed

            write_failed(dirs[i], e)
            res = {"status": "failed", "elapsed": None, "error": f"submitit job failed: {type(e).__name__}: {e}"}
        results[i] = res
        _tick(bar, res)
    return [results[i] for i in range(len(todo))]


def _tick(bar, res: Mapping[str, Any]) -> None:
    if bar is not None:
        bar.update(1)
        if res.get("status") == "failed":
            bar.set_postfix_str("last: failed", refresh=False)


# --------------------------------------------------------------------------- public entry
def run_sweep(
    jobs: Sequence[Job],
    store_dir: str | Path,
    data_dir: str | Path | None = None,
    launcher: str = "local",
    n_workers: int = 1,
    progress: bool = True,
    *,
    dry_run: bool = False,
    retry_failed: bool = True,
    device: str | None = None,
    compile: bool = False,
    precision: str = "auto",
    imports: Sequence[str] = (),
    slurm: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Train the jobs of ``jobs`` that are not finished in ``store_dir``; one status row per job.

    ``status``: ``done`` (trained now), ``skipped`` (already done), ``failed`` (this run or,
    with ``retry_failed=False``, an earlier one), or for ``dry_run`` ``pending`` / ``done`` /
    ``failed`` as found on disk (nothing is trained). ``imports``: modules or ``.py`` files
    that register extra datasets/algorithms, imported in every worker. ``slurm``: submitit
    parameters (``cluster``, ``slurm_partition``, ``timeout_min``, ``gpus_per_node``,
    ``cpus_per_task``, ``mem_gb``, ``slurm_array_parallelism`` …).
    """
    if launcher not in ("local", "slurm"):
        raise ValueError(f"run_sweep launcher: expected 'local' or 'slurm', got {launcher!r}")
    if n_workers < 1:
        raise ValueError(f"run_sweep n_workers: expected ≥ 1, got {n_workers}")
    store = Path(store_dir)
    unique: dict[str, Job] = {}
    for j in jobs:
        unique.setdefault(j.job_id, j if isinstance(j, Job) else Job.from_dict(j))
    jobs = list(unique.values())

    rows: dict[str, dict[str, Any]] = {}
    todo: list[Job] = []
    for job in jobs:
        state = job_state(job, store)
        if state == "done":
            rows[job.job_id] = _row(job, store, "done" if dry_run else "skipped", _done_elapsed(store / job.job_id))
        elif state == "failed" and not retry_failed:
            rows[job.job_id] = _row(job, store, "failed", error=_failed_summary(store / job.job_id))
        elif dry_run:
            rows[job.job_id] = _row(job, store, "failed" if state == "failed" else "pending")
        else:
            todo.append(job)
    if dry_run:
        for job in jobs:
            log.info("[%s] %s", rows[job.job_id]["status"], job.describe())
        return pd.DataFrame([rows[j.job_id] for j in jobs], columns=STATUS_COLUMNS)

    log.info("sweep: %d jobs, %d finished, %d to run (%s, %d workers)", len(jobs), len(jobs) - len(todo), len(todo),
             launcher, n_workers)
    store.mkdir(parents=True, exist_ok=True)
    for job in todo:  # a killed run's partial results are cleared before anything else starts
        from dganalysis.train import clear_job_dir

        clear_job_dir(store / job.job_id)

    options = {"device": device, "compile": compile, "precision": precision, "imports": list(imports)}
    data = str(data_dir) if data_dir is not None else None
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="sweep", unit="job")
    try:
        if launcher == "slurm":
            results = _run_submitit(todo, store, data, options, slurm or {}, bar)
        elif n_workers == 1 or len(todo) <= 1:
            import_plugins(imports)
            results = _run_inline(todo, store, data, {**options, "progress": bool(progress)}, bar)
        else:
            results = _run_pool(todo, store, data, options, min(n_workers, len(todo)), bar)
    finally:
        if bar is not None:
            bar.close()
    for job, res in zip(todo, results):
        rows[job.job_id] = _row(job, store, res["status"], res.get("elapsed"), res.get("error", ""))
    n_failed = sum(r["status"] == "failed" for r in rows.values())
    if n_failed:
        log.warning("sweep: %d of %d jobs failed (see <store>/<job_id>/failed)", n_failed, len(jobs))
    return pd.DataFrame([rows[j.job_id] for j in jobs], columns=STATUS_COLUMNS)


def _done_elapsed(job_dir: Path) -> float | None:
    try:
        return float((job_dir / "done").read_text().strip() or "nan")
    except (OSError, ValueError):
        return None


def _failed_summary(job_dir: Path) -> str:
    try:
        lines = [ln for ln in (job_dir / "failed").read_text().splitlines() if ln.strip()]
        return lines[-1] if lines else ""
    except OSError:
        return ""
