"""Run a list of jobs into a job store: resume, skip finished jobs, record failures, share the store.

Store layout and the claim rules that let any number of processes share one store: :mod:`dganalysis.sweep.store`.
A job counts as finished when ``done`` exists (and ``model.pt`` too if the job asks for the model). A job
folder without ``done`` and without a live claim (a killed sweep's partial records, a ``failed`` job) is
cleared and trained again under a new claim, so a killed sweep loses only the jobs that were running and
never redoes a finished one. A job another live runner holds is left alone: the sweep goes on with other jobs
and comes back to it (``wait=True``, the default) until the holder has finished it or died. An exception
inside a job (including a non-finite loss) writes ``failed`` with the traceback; the sweep goes on.

Launchers:

- ``local``: ``n_workers == 1`` runs jobs in this process; more workers run in a
  ``ProcessPoolExecutor`` with the *spawn* start method, their OpenMP waiting policy set before torch starts
  (:func:`dganalysis.threads.worker_environment`); with GPUs, workers are spread round-robin over
  them (several workers per GPU pack small jobs on one device).
  ``ExecutionOptions.runs_per_gpu`` sets the workers per CUDA device instead (an integer, or ``auto``: sized by
  memory after a probe run), under a CUDA MPS daemon of the sweep's own when more than one shares a device
  (:mod:`dganalysis.sweep.packing`); ``ExecutionOptions.batch_runs`` trains up to that many ERM jobs whose shapes
  agree as one vmapped model in one worker (:mod:`dganalysis.sweep.batched`). Every record says how its run was
  packed (``packing``).
- ``slurm``: one Slurm array job per sweep through ``submitit.AutoExecutor``; pass
  ``slurm={"cluster": "local"}`` or ``"debug"`` to run through submitit without Slurm. An array task
  whose job is held by another runner waits for it inside the task.

Every CPU job of a local sweep runs on ``usable cores // n_workers`` torch threads (``$DGANALYSIS_THREADS``
overrides; :func:`dganalysis.threads.launcher_share`), fixed for the whole job and recorded as ``threads``; a
Slurm task's jobs on its own share (``$DGANALYSIS_THREADS``, else the cores the task may use). Float32 results
depend on the count, and the count is not part of the job hash, so a sweep refuses, before any work, to reuse
finished jobs of its store recorded with another count than the one it would use
(``ExecutionOptions(mixed_threads=True)`` allows it); jobs recorded without a count (older stores, CUDA jobs)
are reused.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import multiprocessing as mp
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis import threads
from dganalysis.plugins import import_plugins  # noqa: F401 - its home was here; callers import it from here
from dganalysis.sweep.order import longest_first
from dganalysis.sweep.store import ClaimInfo, failed_stamp, job_state, stored_precision, stored_threads
from dganalysis.training.job import Job

log = logging.getLogger(__name__)

STATUS_COLUMNS = [
    "job_id", "dataset", "algorithm", "train_domains", "test_domains", "val_domains",
    "hparams_seed", "trial_seed", "steps", "status", "elapsed", "error", "job_dir",
]


# --------------------------------------------------------------------------- status rows
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
def execute_job(
    job_spec: Mapping[str, Any],
    job_dir: str,
    data_dir: str | None = None,
    options: Mapping[str, Any] | None = None,
    policy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Claim and train one job, catching any exception into ``failed``. Returns ``{status, elapsed, error}``.

    ``status``: ``done`` (trained now), ``skipped`` (found finished under the claim), ``failed``, or ``busy``
    (another live runner holds the job; only with ``policy["wait"]`` false). ``policy``: ``wait`` (poll until
    the holder releases; default False), ``poll_s``, ``lease_s``, ``retry_failed`` and ``failed_seen`` (the
    :func:`~dganalysis.sweep.store.failed_stamp` seen when the sweep was planned: only that failure is retried,
    not one another runner wrote since) and ``mixed_threads`` (reuse a job found finished on another thread count
    than ``options["threads"]``; default False: the job is reported ``failed`` with the reason).
    ``options["threads"]`` None: :func:`dganalysis.threads.launcher_share` of one worker (a Slurm task's cores).
    """
    from dganalysis.sweep.store import ClaimLost, append_history, failed_stamp, stored_precision, try_claim
    from dganalysis.training.train import clear_job_dir, run_job, write_failed

    options = dict(options or {})
    policy = dict(policy or {})
    if options.get("threads") is None and options.get("device") in (None, "cpu"):
        options["threads"] = threads.launcher_share(1)  # a Slurm task: its own cores (or $DGANALYSIS_THREADS)
    job = Job.from_dict(job_spec)
    t0 = time.time()
    while True:
        claim = try_claim(job_dir, policy.get("lease_s"))
        if not isinstance(claim, ClaimInfo):
            break
        if not policy.get("wait", False):
            return {"status": "busy", "elapsed": None, "error": f"held by {claim.describe()}"}
        time.sleep(float(policy.get("poll_s", 1.0)))
    try:
        state = job_state(job, Path(job_dir).parent)
        if state == "done":
            wanted, stored = options.get("precision", "auto"), stored_precision(job_dir)
            if wanted != "auto" and stored is not None and stored != wanted:
                return {"status": "failed", "elapsed": None,
                        "error": f"{job_dir}: finished with precision {stored}, this sweep asks for {wanted}"}
            n, recorded = options.get("threads"), stored_threads(job_dir)
            if not policy.get("mixed_threads", False) and n is not None and recorded is not None and recorded != n:
                return {"status": "failed", "elapsed": None,
                        "error": f"{job_dir}: finished with threads={recorded}, this sweep runs jobs with threads={n} "
                                 "(mixed_threads allows reusing it)"}
            return {"status": "skipped", "elapsed": _done_elapsed(Path(job_dir)), "error": ""}
        if (Path(job_dir) / "failed").exists() and not (
            policy.get("retry_failed", True) and failed_stamp(job_dir) == policy.get("failed_seen")
        ):
            return {"status": "failed", "elapsed": None, "error": _failed_summary(Path(job_dir))}
        clear_job_dir(job_dir)
        append_history(job_dir, "start", token=claim.token)
        try:
            import_plugins(options.pop("imports", ()))
            run_job(job, job_dir, data_dir=data_dir, heartbeat=claim.check, **options)
        except ClaimLost as e:
            log.warning("job %s: %s", job.job_id, e)
            return {"status": "failed", "elapsed": time.time() - t0, "error": f"ClaimLost: {e}"}
        except Exception as e:  # noqa: BLE001 - every failure is recorded and the sweep goes on
            log.warning("job %s failed: %s: %s", job.job_id, type(e).__name__, e)
            try:
                claim.check()
                write_failed(job_dir, e)
                append_history(job_dir, "failed", token=claim.token, error=type(e).__name__)
            except (OSError, ClaimLost):  # pragma: no cover - the store itself is broken, or the job was taken over
                log.exception("could not write %s/failed", job_dir)
            return {"status": "failed", "elapsed": time.time() - t0, "error": f"{type(e).__name__}: {e}"}
        append_history(job_dir, "done", token=claim.token, seconds=f"{time.time() - t0:.1f}")
        return {"status": "done", "elapsed": time.time() - t0, "error": ""}
    finally:
        claim.release()


def record_abandoned(job: Job, job_dir: str | Path, error: str) -> None:
    """After a worker or cluster task died: write ``failed`` into a job it had started, if nobody holds it now."""
    from dganalysis.sweep.store import append_history, try_claim
    from dganalysis.training.train import write_failed

    job_dir = Path(job_dir)
    if not (job_dir / "spec.json").exists():
        return  # never started: nothing to record
    claim = try_claim(job_dir)
    if isinstance(claim, ClaimInfo):
        return  # a live runner holds it (e.g. the dying task's claim is still within its lease)
    try:
        if not (job_dir / "done").exists():
            write_failed(job_dir, RuntimeError(error))
            append_history(job_dir, "failed", token=claim.token, error="runner died")
    finally:
        claim.release()


_WORKER_OPTIONS: dict[str, Any] = {}


def _init_worker(n_threads: int, n_gpus: int, counter, imports: Sequence[str]) -> None:
    import torch

    torch.set_num_threads(n_threads)
    if n_gpus > 0:
        with counter.get_lock():
            slot = counter.value
            counter.value += 1
        _WORKER_OPTIONS["device"] = f"cuda:{slot % n_gpus}"
    import_plugins(imports)


def _worker_options(options: Mapping[str, Any]) -> dict[str, Any]:
    options = dict(options)
    if options.get("device") is None and "device" in _WORKER_OPTIONS:
        options["device"] = _WORKER_OPTIONS["device"]
    return options


def _execute_in_worker(job_spec, job_dir, data_dir, options, policy) -> dict[str, Any]:
    return execute_job(job_spec, job_dir, data_dir, _worker_options(options), policy)


def _probe_in_worker(job_spec, job_dir, data_dir, options, policy) -> dict[str, Any]:
    """``--runs-per-gpu auto``'s probe: the device's free bytes before the job, then the job alone, then its peak
    ``max_memory_allocated`` (:mod:`dganalysis.sweep.packing`)."""
    import torch

    options = _worker_options(options)
    device = torch.device(options.get("device") or "cuda")
    free = int(torch.cuda.mem_get_info(device)[0])
    torch.cuda.reset_peak_memory_stats(device)
    res = execute_job(job_spec, job_dir, data_dir, options, policy)
    return {**res, "free_bytes": free, "peak_bytes": int(torch.cuda.max_memory_allocated(device))}


def _free_bytes_in_worker(device: str) -> int:
    import torch

    return int(torch.cuda.mem_get_info(torch.device(device))[0])


def _execute_batch_in_worker(job_specs, job_dirs, data_dir, options, policies) -> dict[str, dict[str, Any]]:
    from dganalysis.sweep.batched import execute_batch

    return execute_batch(job_specs, job_dirs, data_dir, _worker_options(options), policies, run_alone=execute_job)


# --------------------------------------------------------------------------- launchers
class _InlineExecutor(cf.Executor):
    """Runs each submitted call at once in this process (the ``n_workers == 1`` launcher)."""

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        fut: cf.Future = cf.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # noqa: BLE001 - handed to the caller through the future
            fut.set_exception(e)
        return fut


def _drive(todo, store, submit, policy, bar) -> dict[str, dict[str, Any]]:
    """Submit every unit of ``todo`` (a job, or a list of jobs trained together as one batch,
    :mod:`dganalysis.sweep.batched`); a ``busy`` job (held by another live runner) is submitted again, alone,
    ``poll_s`` later. ``submit(unit)`` returns a future of the job's result, or for a list of jobs of a dict of results
    by job id. With ``policy["wait"]`` false a busy job ends as ``busy``. Returns one result per job id.
    """
    poll = float(policy.get("poll_s", 1.0))
    results: dict[str, dict[str, Any]] = {}
    running: dict[cf.Future, Any] = {}
    later: list[tuple[float, Any]] = [(0.0, unit) for unit in todo]

    def _jobs_of(unit) -> list[Job]:
        return list(unit) if isinstance(unit, (list, tuple)) else [unit]

    while running or later:
        now = time.monotonic()
        due = [unit for t, unit in later if t <= now]
        later = [(t, unit) for t, unit in later if t > now]
        for unit in due:
            try:
                running[submit(unit)] = unit
            except Exception as e:  # noqa: BLE001 - e.g. the process pool broke when a worker died
                for job in _jobs_of(unit):
                    results[job.job_id] = {"status": "failed", "elapsed": None,
                                           "error": f"not started: {type(e).__name__}: {e}"}
                    _tick(bar, results[job.job_id])
        if not running:
            time.sleep(max(0.0, min(t for t, _ in later) - time.monotonic()))
            continue
        finished, _ = cf.wait(running, timeout=poll, return_when=cf.FIRST_COMPLETED)
        for fut in finished:
            unit = running.pop(fut)
            jobs = _jobs_of(unit)
            try:
                out = fut.result()
                per_job = {j.job_id: out[j.job_id] for j in jobs} if isinstance(unit, (list, tuple)) else {
                    jobs[0].job_id: out}
            except Exception as e:  # noqa: BLE001 - a worker died (e.g. killed for memory)
                per_job = {}
                for job in jobs:
                    per_job[job.job_id] = {"status": "failed", "elapsed": None,
                                           "error": f"worker died: {type(e).__name__}: {e}"}
                    record_abandoned(job, store / job.job_id, per_job[job.job_id]["error"])
            for job in jobs:
                res = per_job[job.job_id]
                if res["status"] == "busy" and policy.get("wait", True):
                    log.info("job %s is %s; coming back to it", job.job_id, res["error"])
                    later.append((time.monotonic() + poll, job))
                    continue
                results[job.job_id] = res
                _tick(bar, res)
    return results


def _job_policy(policy: Mapping[str, Any], job: Job, **over: Any) -> dict[str, Any]:
    """The policy one job runs under: the sweep's, with the ``failed`` stamp seen when the sweep was planned."""
    out = {k: v for k, v in policy.items() if k != "failed_seen"}
    return {**out, "failed_seen": policy.get("failed_seen", {}).get(job.job_id), **over}


def _run_inline(todo, store, data_dir, options, policy, bar) -> dict[str, dict[str, Any]]:
    ex = _InlineExecutor()

    def submit(unit):
        if isinstance(unit, (list, tuple)):
            from dganalysis.sweep.batched import execute_batch

            return ex.submit(execute_batch, [j.to_dict() for j in unit], [str(store / j.job_id) for j in unit],
                             data_dir, options, [_job_policy(policy, j, wait=False) for j in unit],
                             run_alone=execute_job)
        return ex.submit(execute_job, unit.to_dict(), str(store / unit.job_id), data_dir, options,
                         _job_policy(policy, unit, wait=False))

    return _drive(todo, store, submit, policy, bar)


def _run_pool(todo, store, data_dir, options, policy, n_workers, bar, *, n_gpus: int | None = None,
              probe: bool = False) -> dict[str, dict[str, Any]]:
    """``todo`` (jobs, or lists of jobs to train as one batch) on ``n_workers`` spawned worker processes, spread
    round-robin over ``n_gpus`` CUDA devices (default: all visible ones when ``options["device"]`` is None).
    ``probe``: run through :func:`_probe_in_worker` (one job; its result holds ``free_bytes`` and ``peak_bytes``)."""
    import torch

    ctx = mp.get_context("spawn")
    if n_gpus is None:
        n_gpus = torch.cuda.device_count() if options.get("device") is None and torch.cuda.is_available() else 0
    n_threads = options.get("threads") or threads.launcher_share(n_workers)
    counter = ctx.Value("i", 0)
    imports = list(options.get("imports", ()))

    def submit(pool, unit):
        if isinstance(unit, (list, tuple)):
            return pool.submit(_execute_batch_in_worker, [j.to_dict() for j in unit], [str(store / j.job_id) for j in unit],
                               data_dir, options, [_job_policy(policy, j, wait=False) for j in unit])
        fn = _probe_in_worker if probe else _execute_in_worker
        return pool.submit(fn, unit.to_dict(), str(store / unit.job_id), data_dir, options,
                           _job_policy(policy, unit, wait=False))

    with threads.worker_environment(), cf.ProcessPoolExecutor(
        max_workers=n_workers, mp_context=ctx, initializer=_init_worker, initargs=(n_threads, n_gpus, counter, imports)
    ) as pool:
        return _drive(todo, store, lambda u: submit(pool, u), policy, bar)


def _cuda_devices(device: str | None) -> list[str]:
    """The CUDA devices a local sweep's workers use: ``device`` when it is a CUDA device, all visible ones when
    ``device`` is None, none on CPU."""
    import torch

    if device is not None:
        return [str(device)] if str(device).startswith("cuda") else []
    if not torch.cuda.is_available():
        return []
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def _auto_runs_per_device(todo, store, data_dir, options, policy, bar, devices: list[str], jobs: Sequence[Job]
                          ) -> tuple[int, list, dict[str, dict[str, Any]]]:
    """``runs_per_gpu="auto"``: ``(N, the units still to run, results of a probe)``. The peak per run is the
    store's largest ``mem_gb`` among finished jobs of the todo's datasets, else a probe's: the first job trained
    alone (one worker on the first device); the free memory is measured by a fresh worker process (or the probe)
    on each device, the smallest taken (:func:`dganalysis.sweep.packing.runs_per_device`)."""
    from dganalysis.sweep import packing

    datasets = {j.dataset for j in _flat(todo)}
    peak = packing.stored_peak_bytes(store / j.job_id for j in jobs if j.dataset in datasets)
    results: dict[str, dict[str, Any]] = {}
    if peak is None:
        first, todo = _flat(todo[:1])[0], _unbatch_first(todo)
        probe_opts = {**options, "device": devices[0],
                      "extra_fields": {packing.PACKING_KEY: packing.packing_field(1, False, 1)}}
        log.info("runs per GPU auto: probing with job %s alone on %s", first.job_id, devices[0])
        res = _run_pool([first], store, data_dir, probe_opts, policy, 1, bar, n_gpus=0, probe=True)
        results.update(res)
        r = res[first.job_id]
        peak = r.get("peak_bytes") or packing.stored_peak_bytes([store / first.job_id])
    if peak is None:
        log.warning("runs per GPU auto: no peak memory known (the probe failed); one run per device")
        return 1, todo, results
    free = min(_measure_free(devices))
    n = packing.runs_per_device(free, peak, packing.default_cap(n_devices=len(devices)))
    log.info("runs per GPU auto: peak %.2f GB per run, %.1f GB free per device → %d runs per device",
             peak / 2**30, free / 2**30, n)
    return n, todo, results


def _measure_free(devices: Sequence[str]) -> list[int]:
    """Each device's free bytes, measured in a fresh worker process (this one keeps no CUDA context)."""
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return [pool.submit(_free_bytes_in_worker, d).result() for d in devices]


def _flat(units) -> list[Job]:
    out: list[Job] = []
    for u in units:
        out.extend(u if isinstance(u, (list, tuple)) else [u])
    return out


def _unbatch_first(units) -> list:
    """``units`` without their first job (a batch keeps its other jobs)."""
    first, rest = units[0], list(units[1:])
    if isinstance(first, (list, tuple)) and len(first) > 1:
        tail = list(first[1:])
        return [tail if len(tail) > 1 else tail[0], *rest]
    return rest


def _run_submitit(todo, store, data_dir, options, policy, slurm: Mapping[str, Any], bar) -> dict[str, dict[str, Any]]:
    import submitit

    slurm = dict(slurm or {})
    cluster = slurm.pop("cluster", None)
    folder = slurm.pop("folder", store / ".submitit" / "%j")
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    params = {"timeout_min": 24 * 60, "name": "dganalysis", **slurm}
    executor.update_parameters(**params)
    specs = [j.to_dict() for j in todo]
    dirs = [str(store / j.job_id) for j in todo]
    policies = [_job_policy(policy, j) for j in todo]  # tasks wait for held jobs themselves
    sub = executor.map_array(execute_job, specs, dirs, [data_dir] * len(todo), [options] * len(todo), policies)
    log.info("submitted %d jobs through submitit (%s)", len(sub), executor.cluster)
    results: dict[str, dict[str, Any]] = {}
    pending = dict(enumerate(sub))
    gone: dict[int, float] = {}
    poll = float(policy.get("poll_s", 1.0))
    while pending:
        queued = _slurm_queue(sub[0].job_id) if executor.cluster == "slurm" else None
        for i, s in list(pending.items()):
            res, abandoned = None, False
            if s.done():
                try:
                    res = s.result()
                except Exception as e:  # noqa: BLE001 - the cluster job itself failed (timeout, preemption, scancel)
                    res = {"status": "failed", "elapsed": None, "error": f"submitit job failed: {type(e).__name__}: {e}"}
                    abandoned = True
            elif queued is not None and not _in_queue(s.job_id, queued):
                # left the queue without a result (killed); without accounting (sacct) submitit would wait forever
                gone.setdefault(i, time.monotonic())
                if time.monotonic() - gone[i] > 5 * poll:  # a result file is written before the task exits
                    res = {"status": "failed", "elapsed": None,
                           "error": f"Slurm task {s.job_id} ended without a result (killed or cancelled)"}
                    abandoned = True
            if res is None:
                continue
            if abandoned:
                record_abandoned(todo[i], dirs[i], res["error"])
            del pending[i]
            results[todo[i].job_id] = res
            _tick(bar, res)
        if pending:
            time.sleep(poll)
    return results


def _slurm_queue(job_id: str) -> str | None:
    """``squeue``'s ids of the array of ``job_id`` (None when squeue cannot tell)."""
    import subprocess

    try:
        r = subprocess.run(["squeue", "-h", "-o", "%i", "-j", str(job_id).split("_")[0]], capture_output=True,
                           text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout if r.returncode == 0 else None


def _in_queue(job_id: str, queued: str) -> bool:
    ids = queued.split()
    array = str(job_id).split("_")[0]
    return str(job_id) in ids or any(i.startswith(f"{array}_[") for i in ids)


class _Ticker:
    """The sweep's progress outlets: the tqdm bar (or None) and the progress file a runner watches
    (:mod:`dganalysis.progress`)."""

    def __init__(self, bar, file_progress) -> None:
        self.bar, self.file_progress = bar, file_progress

    def tick(self, res: Mapping[str, Any]) -> None:
        failed = res.get("status") == "failed"
        if self.bar is not None:
            self.bar.update(1)
            if failed:
                self.bar.set_postfix_str("last: failed", refresh=False)
        self.file_progress.tick(failed)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.file_progress.close()


def _tick(bar, res: Mapping[str, Any]) -> None:
    if bar is not None:
        bar.tick(res)


# --------------------------------------------------------------------------- public entry
@dataclass(frozen=True)
class ExecutionOptions:
    """How every job of a sweep trains (none of it is part of the job hash): the torch ``device`` (None: the
    trainer's choice), ``compile`` (``torch.compile``), the ``precision`` (``auto``, ``fp32`` or ``bf16``) and
    ``imports``, modules or ``.py`` files that register extra datasets/algorithms, imported in every worker;
    ``mixed_threads``: reuse finished jobs recorded on another CPU thread count than this sweep gives its jobs
    (default False: an error before any work; see the module docstring); ``runs_per_gpu``: worker processes per CUDA
    device, an integer or ``"auto"`` (sized by memory; :mod:`dganalysis.sweep.packing`), None: ``n_workers`` spread
    over the devices as before; ``mps``: run packed CUDA workers under a CUDA MPS daemon when the machine has one
    (:func:`dganalysis.sweep.packing.mps_daemon`); ``batch_runs``: train up to this many ERM jobs whose shapes agree as
    one vmapped model (:mod:`dganalysis.sweep.batched`; 1: every job alone)."""

    device: str | None = None
    compile: bool = False
    precision: str = "auto"
    imports: Sequence[str] = ()
    mixed_threads: bool = False
    runs_per_gpu: int | str | None = None
    mps: bool = True
    batch_runs: int = 1


@dataclass(frozen=True)
class ClaimPolicy:
    """How a runner shares a store with other runners (:mod:`dganalysis.sweep.store`): ``wait`` — come back to jobs
    another runner holds until they are finished (True) or leave them (False); ``lease_s`` — the claim lease
    (default ``$DGANALYSIS_LEASE_S`` or 120 s); ``poll_s`` — seconds between looks at a held job."""

    wait: bool = True
    lease_s: float | None = None
    poll_s: float = 1.0


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
    execution: ExecutionOptions | None = None,
    claims: ClaimPolicy | None = None,
    slurm: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Train the jobs of ``jobs`` that are not finished in ``store_dir``; one status row per job.

    ``status``: ``done`` (trained now), ``skipped`` (already done, possibly by another runner meanwhile),
    ``failed`` (this run or, with ``retry_failed=False``, an earlier one), ``busy`` (held by another live
    runner; only with ``claims.wait=False``), or for ``dry_run`` ``pending`` / ``running`` / ``done`` / ``failed``
    as found on disk (nothing is trained). Data and weight files are checked first (:mod:`dganalysis.preflight`):
    any problem raises a :class:`~dganalysis.validation.ConfigError` listing them all before any job folder is
    written; a dry run lists them in ``status.attrs["problems"]`` instead. Any number of processes may run sweeps
    on one store at once (see :mod:`dganalysis.sweep.store`; ``claims``: :class:`ClaimPolicy`). ``execution``
    (:class:`ExecutionOptions`): device, compilation, precision and plug-in imports; a ``precision`` other than
    ``auto`` is checked against
    the finished jobs of the store first: a job finished with another precision is an error before any work.
    CPU jobs run on a thread count fixed by the configuration (local: :func:`dganalysis.threads.launcher_share` of
    ``n_workers``; Slurm: each task's cores or ``slurm["cpus_per_task"]``; ``$DGANALYSIS_THREADS`` overrides both),
    recorded as ``threads``; a finished job recorded on another count is an error before any work unless
    ``execution.mixed_threads`` (the thread count is not part of the job hash, and float32 results depend on it).
    ``slurm``: submitit parameters (``cluster``, ``slurm_partition``, ``timeout_min``, ``gpus_per_node``,
    ``cpus_per_task``, ``mem_gb``, ``slurm_array_parallelism`` …). The local launcher starts the longest jobs first
    (:mod:`dganalysis.sweep.order`), so that a short one ends the sweep; the status table keeps the order of ``jobs``.
    """
    from dganalysis.sweep.store import lease_seconds
    from dganalysis.validation import Check, ConfigError

    execution = ExecutionOptions() if execution is None else execution
    claims = ClaimPolicy() if claims is None else claims
    device, compile, precision, imports = execution.device, execution.compile, execution.precision, execution.imports
    mixed_threads = execution.mixed_threads
    from dganalysis.sweep import packing

    runs_per_gpu = packing.parse_runs_per_gpu(execution.runs_per_gpu)
    batch_runs = execution.batch_runs
    if isinstance(batch_runs, bool) or not isinstance(batch_runs, int) or batch_runs < 1:
        raise ConfigError(f"run_sweep batch_runs: expected an integer ≥ 1, got {batch_runs!r}")
    if batch_runs > 1 and launcher != "local":
        raise ConfigError(f"run_sweep batch_runs={batch_runs}: batched runs train on the local launcher only")
    wait, lease_s, poll_s = claims.wait, claims.lease_s, claims.poll_s

    Check("float", low=0.0, low_open=True)(poll_s, "run_sweep poll_s (seconds)")
    if launcher not in ("local", "slurm"):
        raise ConfigError(f"run_sweep launcher: expected 'local' or 'slurm', got {launcher!r}")
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ConfigError(f"run_sweep n_workers: expected an integer ≥ 1, got {n_workers!r}")
    if precision not in ("auto", "fp32", "bf16"):
        raise ConfigError(f"run_sweep precision: expected auto, fp32 or bf16, got {precision!r}")
    store = Path(store_dir)
    if store.exists() and not store.is_dir():
        raise ConfigError(f"{store}: the job store must be a folder, but a file of that name exists")
    policy = {"wait": bool(wait), "lease_s": lease_seconds(lease_s), "poll_s": float(poll_s),
              "retry_failed": bool(retry_failed), "mixed_threads": bool(mixed_threads)}
    n_threads = _planned_threads(launcher, n_workers, device, slurm)
    unique: dict[str, Job] = {}
    for j in jobs:
        j = j if isinstance(j, Job) else Job.from_dict(j)
        unique.setdefault(j.job_id, j)
    jobs = list(unique.values())
    from dganalysis.sweep.grid import check_grid_hparams

    check_grid_hparams(jobs)  # jobs built by hand are checked too, before any work
    from dganalysis.preflight import format_problems, job_problems

    problems = job_problems(jobs)  # data and weight files: before any job folder is written
    if problems and not dry_run:
        raise ConfigError(format_problems(problems))

    rows: dict[str, dict[str, Any]] = {}
    todo: list[Job] = []
    mismatched, other_threads = [], []
    for job in jobs:
        state = job_state(job, store)
        if state == "done":
            stored = stored_precision(store / job.job_id)
            if precision != "auto" and stored is not None and stored != precision:
                mismatched.append(f"{job.job_id} ({stored})")
            recorded = stored_threads(store / job.job_id)
            if n_threads is not None and recorded is not None and recorded != n_threads:
                other_threads.append(f"{job.job_id} ({recorded})")
            rows[job.job_id] = _row(job, store, "done" if dry_run else "skipped", _done_elapsed(store / job.job_id))
        elif state == "failed" and not retry_failed:
            rows[job.job_id] = _row(job, store, "failed", error=_failed_summary(store / job.job_id))
        elif dry_run:
            rows[job.job_id] = _row(job, store, {"failed": "failed", "running": "running"}.get(state, "pending"))
        else:
            todo.append(job)
    if mismatched:
        raise ConfigError(
            f"{store}: {len(mismatched)} finished job(s) were trained with another precision than the {precision} "
            f"asked for: {', '.join(mismatched[:5])}{' …' if len(mismatched) > 5 else ''}; precision is not part "
            "of the job hash, so use another store, or precision='auto' to reuse them"
        )
    if other_threads and not mixed_threads:
        raise ConfigError(
            f"{store}: {len(other_threads)} finished job(s) were trained on another number of CPU threads than the "
            f"{n_threads} this sweep gives each job ({_threads_origin(launcher, n_workers, slurm)}): "
            f"{', '.join(other_threads[:5])}{' …' if len(other_threads) > 5 else ''}. Float32 results depend on the "
            "thread count and it is not part of the job hash, so mixing them would mix two computations under one "
            f"id: set ${threads.THREADS_ENV} (or the number of workers) to the recorded count, use another store, or pass "
            "ExecutionOptions(mixed_threads=True) (CLI --mixed-threads) to reuse them as they are"
        )
    if dry_run:
        for job in jobs:
            log.info("[%s] %s", rows[job.job_id]["status"], job.describe())
        status = pd.DataFrame([rows[j.job_id] for j in jobs], columns=STATUS_COLUMNS)
        status.attrs["problems"] = problems
        return status

    log.info("sweep: %d jobs, %d finished, %d to run (%s, %d workers)", len(jobs), len(jobs) - len(todo), len(todo),
             launcher, n_workers)
    store.mkdir(parents=True, exist_ok=True)
    policy["failed_seen"] = {j.job_id: failed_stamp(store / j.job_id) for j in todo}  # only these failures are retried
    options = {"device": device, "compile": compile, "precision": precision, "imports": list(imports),
               "threads": n_threads}
    units: list = longest_first(todo)  # the last job to start is a short one (dganalysis.sweep.order)
    if batch_runs > 1:
        from dganalysis.sweep.batched import plan_batches

        units = plan_batches(todo, batch_runs)
    data = str(data_dir) if data_dir is not None else None
    from dganalysis.progress import SweepProgress, progress_file

    tqdm_bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        tqdm_bar = tqdm(total=len(todo), desc="sweep", unit="job")
    bar = _Ticker(tqdm_bar, SweepProgress(progress_file(), len(todo), skipped=len(jobs) - len(todo)))
    try:
        if not todo:
            results = {}
        elif launcher == "slurm":
            results = _run_submitit(todo, store, data, {**options, "extra_fields": _packing_extra(1, False)}, policy,
                                    slurm or {}, bar)
        else:
            results = _run_local(units, jobs, store, data, options, policy, bar, n_workers, runs_per_gpu,
                                 execution.mps, progress)
    finally:
        bar.close()
    for job in todo:
        res = results[job.job_id]
        rows[job.job_id] = _row(job, store, res["status"], res.get("elapsed"), res.get("error", ""))
    n_failed = sum(r["status"] == "failed" for r in rows.values())
    if n_failed:
        log.warning("sweep: %d of %d jobs failed (see <store>/<job_id>/failed)", n_failed, len(jobs))
    return pd.DataFrame([rows[j.job_id] for j in jobs], columns=STATUS_COLUMNS)


def _packing_extra(runs_per_device: int, mps: bool) -> dict[str, Any]:
    from dganalysis.sweep import packing

    return {packing.PACKING_KEY: packing.packing_field(runs_per_device, mps, 1)}


def _run_local(units, jobs, store, data, options, policy, bar, n_workers, runs_per_gpu, use_mps, progress
               ) -> dict[str, dict[str, Any]]:
    """The local launcher: with ``runs_per_gpu`` and CUDA devices, that many workers per device (``auto``: sized by
    memory after a probe, :func:`_auto_runs_per_device`), under CUDA MPS when more than one shares a device and
    ``use_mps``; else ``n_workers`` workers (one: in this process). Every job's records carry ``packing``."""
    from dganalysis.sweep import packing

    n_jobs = len(_flat(units))
    devices = _cuda_devices(options.get("device"))
    if runs_per_gpu is not None and not devices:
        log.warning("runs per GPU %s: no CUDA device; %d worker(s) as --workers says", runs_per_gpu, n_workers)
    if runs_per_gpu is not None and devices:
        results: dict[str, dict[str, Any]] = {}
        if runs_per_gpu == "auto":
            n, units, results = _auto_runs_per_device(units, store, data, options, policy, bar, devices, jobs)
        else:
            n = int(runs_per_gpu)
        if not units:
            return results
        n_gpus = len(devices) if options.get("device") is None else 0
        workers = min(n * len(devices), len(units))
        with packing.mps_daemon(enabled=use_mps and n > 1) as mps_on:
            opts = {**options, "extra_fields": _packing_extra(n, mps_on)}
            log.info("packing: %d runs per device on %d device(s), %d workers, MPS %s", n, len(devices), workers,
                     "on" if mps_on else "off")
            results.update(_run_pool(units, store, data, opts, policy, workers, bar, n_gpus=n_gpus))
        return results
    if n_workers == 1 or n_jobs <= 1:
        import_plugins(options.get("imports", ()))
        opts = {**options, "progress": bool(progress), "extra_fields": _packing_extra(1, False)}
        return _run_inline(units, store, data, opts, policy, bar)
    workers = min(n_workers, len(units))
    per_device = -(-workers // len(devices)) if devices else workers
    return _run_pool(units, store, data, {**options, "extra_fields": _packing_extra(per_device, False)}, policy,
                     workers, bar)


def _planned_threads(launcher: str, n_workers: int, device: str | None,
                     slurm: Mapping[str, Any] | None) -> int | None:
    """The CPU thread count each job of this sweep gets (None: CUDA jobs, or decided by each Slurm task)."""
    if device is not None and not str(device).startswith("cpu"):
        return None
    if device is None:
        import torch

        if torch.cuda.is_available():
            return None
    if launcher == "slurm":
        override = threads.env_override()
        cpus = (slurm or {}).get("cpus_per_task")
        return override if override is not None else (int(cpus) if cpus else None)
    return threads.launcher_share(n_workers)


def _threads_origin(launcher: str, n_workers: int, slurm: Mapping[str, Any] | None) -> str:
    if threads.env_override() is not None:
        return f"${threads.THREADS_ENV}"
    if launcher == "slurm":
        return "the Slurm tasks' cpus_per_task"
    return f"{threads.usable_cores(quota=threads.cgroup_cpu_limit())} usable cores // {n_workers} workers"


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
