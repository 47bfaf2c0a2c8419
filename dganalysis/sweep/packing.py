"""Many runs per GPU: how many worker processes share one CUDA device, CUDA MPS, and what each record says of it.

Why: the small networks of DomainBed's sweeps (its MNIST CNN, ResNet-50 at DomainBed's batch) keep an H200 at a few
percent of its arithmetic rate; the device waits on kernel launches and Python, not on arithmetic. DomainBed's
launchers, and ours before this, ran one run per device. Packing runs several runs' processes on one device, so their
launches overlap (and, with CUDA MPS, their kernels run side by side instead of time-sliced).

The rule for ``--runs-per-gpu auto`` (:func:`runs_per_device`): a run's device footprint is its peak
``torch.cuda.max_memory_allocated`` (what every record holds as ``mem_gb``: its data on the device, weights,
optimiser state, activations) times :data:`ALLOCATOR_SLACK` (the caching allocator reserves more than it hands
out) plus :data:`CONTEXT_BYTES` (the process's CUDA context and cuBLAS/cuDNN workspaces, which the allocator does not
count); ``N = floor(HEADROOM · free / footprint)``, at least 1 (one run per device is what ran before) and at most
``cap`` (by default :func:`default_cap`: :data:`MAX_RUNS_PER_DEVICE`, and no more than the CPU cores per device, since
every run's process needs a core to launch its kernels). The peak comes from the store (the largest ``mem_gb`` among
finished jobs of the sweep's dataset) or, when there is none, from a probe: the sweep's first job, trained alone on
one device before the others start (a real job; its records are kept). Heterogeneous sweeps: the probe is one job,
so an algorithm whose step holds much more memory than the probe's can still exhaust a device; give ``N`` then.

CUDA MPS (:func:`mps_daemon`): when more than one run shares a device and the machine has
``nvidia-cuda-mps-control``, the sweep starts a daemon of its own (unless one runs already), with its pipe and log
folders in a temporary folder (``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY``, exported to the workers
it starts), says so in the log, and stops it at the end (``quit``), also after an error.

Every record of a packed sweep holds ``packing`` (:func:`packing_field`): ``{"runs_per_device": N, "mps": bool,
"batched": M}`` (``M`` > 1: trained as one of M runs in one vmapped model, :mod:`dganalysis.sweep.batched`); like the
clock and host fields it is one of :data:`dganalysis.training.train.RUN_FIELDS` (how the run was executed, not what it
computed).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)

#: bytes a CUDA process holds beyond what torch's allocator counts (context, cuBLAS/cuDNN workspaces)
CONTEXT_BYTES = 768 * 2**20
#: the caching allocator's reserved / allocated ratio assumed for a training process
ALLOCATOR_SLACK = 1.25
#: the share of the device's free memory the packed runs may take
HEADROOM = 0.9
#: the most runs ``auto`` puts on one device (the issue's measurement: 8× the batch ran 7.2× faster)
MAX_RUNS_PER_DEVICE = 8
#: the MPS control binary
MPS_CONTROL = "nvidia-cuda-mps-control"
#: the record field
PACKING_KEY = "packing"
#: the environment variable through which a launcher of shell commands (the DomainBed drop-in's ``multi_gpu``) tells
#: each run's ``train`` how it was packed (a JSON :func:`packing_field`)
PACKING_ENV = "DGANALYSIS_PACKING"


def run_footprint(peak_allocated_bytes: float) -> int:
    """The device bytes one run's process takes, from its peak ``max_memory_allocated`` (see the module doc)."""
    if not peak_allocated_bytes >= 0:
        raise ConfigError(f"run_footprint: expected peak bytes ≥ 0, got {peak_allocated_bytes!r}")
    return int(math.ceil(peak_allocated_bytes * ALLOCATOR_SLACK)) + CONTEXT_BYTES


def runs_per_device(free_bytes: float, per_run_bytes: float, cap: int = MAX_RUNS_PER_DEVICE) -> int:
    """How many runs one device holds: ``floor(HEADROOM · free_bytes / run_footprint(per_run_bytes))`` clamped to
    ``[1, cap]``. ``per_run_bytes``: a run's peak ``torch.cuda.max_memory_allocated`` (its records' ``mem_gb`` ×
    2**30); ``free_bytes``: the device's free memory with none of the sweep's runs on it."""
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"runs_per_device cap: expected an integer ≥ 1, got {cap!r}")
    if not free_bytes >= 0:
        raise ConfigError(f"runs_per_device free_bytes: expected ≥ 0, got {free_bytes!r}")
    n = int(HEADROOM * free_bytes // run_footprint(per_run_bytes))
    return max(1, min(cap, n))


def default_cap(cpu_cores: int | None = None, n_devices: int = 1, limit: int = MAX_RUNS_PER_DEVICE) -> int:
    """``auto``'s cap: at most ``limit`` runs per device and at most the CPU cores per device (each run's process
    launches its own kernels), at least 1."""
    cores = (os.cpu_count() or 1) if cpu_cores is None else cpu_cores
    return max(1, min(limit, cores // max(1, n_devices)))


def parse_runs_per_gpu(value: Any) -> int | str | None:
    """``--runs-per-gpu``'s value: a positive integer, ``auto``, or None (not given: one worker per ``--workers``)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() == "auto":
            return "auto"
        try:
            value = int(value)
        except ValueError:
            raise ConfigError(f"--runs-per-gpu: expected a positive integer or 'auto', got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"--runs-per-gpu: expected a positive integer or 'auto', got {value!r}")
    return value


def peak_bytes_of_records(records: Iterable[Mapping[str, Any]]) -> float | None:
    """The largest ``mem_gb`` of ``records`` in bytes (None when none holds a positive one: CPU runs record 0)."""
    peaks = [float(r["mem_gb"]) for r in records if isinstance(r.get("mem_gb"), (int, float)) and r["mem_gb"] > 0]
    return max(peaks) * 2**30 if peaks else None


def stored_peak_bytes(job_dirs: Iterable[str | Path]) -> float | None:
    """:func:`peak_bytes_of_records` over the ``results.jsonl`` of the finished ones of ``job_dirs``."""
    import json

    peak = None
    for d in job_dirs:
        d = Path(d)
        if not (d / "done").exists() or not (d / "results.jsonl").exists():
            continue
        recs = []
        for line in (d / "results.jsonl").read_text().splitlines():
            try:
                recs.append(json.loads(line))
            except ValueError:
                continue
        p = peak_bytes_of_records(recs)
        if p is not None:
            peak = p if peak is None else max(peak, p)
    return peak


def packing_field(runs_per_device: int, mps: bool, batched: int = 1) -> dict[str, Any]:
    """The ``packing`` record field."""
    return {"runs_per_device": int(runs_per_device), "mps": bool(mps), "batched": int(batched)}


def packing_from_env(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``{"packing": ...}`` from ``$DGANALYSIS_PACKING`` (a JSON :func:`packing_field`), or ``{}`` when unset."""
    import json

    text = (os.environ if environ is None else environ).get(PACKING_ENV, "").strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise ConfigError(f"${PACKING_ENV}: not JSON: {text!r}") from None
    if not isinstance(value, dict) or set(value) != {"runs_per_device", "mps", "batched"}:
        raise ConfigError(f"${PACKING_ENV}: expected {{runs_per_device, mps, batched}}, got {text!r}")
    return {PACKING_KEY: packing_field(value["runs_per_device"], value["mps"], value["batched"])}


def gpu_slots(gpus: list[str], runs_per_gpu: int) -> list[str]:
    """The device of each worker slot: every GPU ``runs_per_gpu`` times, interleaved (``[0, 1, 0, 1]``), so the first
    commands spread over the GPUs before any doubles up."""
    return [g for _ in range(max(1, int(runs_per_gpu))) for g in gpus]


# --------------------------------------------------------------------------- CUDA MPS
def _control(args: list[str], stdin: str | None, env: Mapping[str, str], binary: str) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, env=dict(env), timeout=30)


def mps_running(binary: str | None = None, env: Mapping[str, str] | None = None) -> bool:
    """Whether an MPS control daemon answers on the pipe folder of ``env`` (``get_server_list`` succeeds)."""
    binary = binary or shutil.which(MPS_CONTROL)
    if binary is None:
        return False
    try:
        r = _control([], "get_server_list\n", os.environ if env is None else env, binary)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


@contextlib.contextmanager
def mps_daemon(enabled: bool = True) -> Iterator[bool]:
    """Run the body under a CUDA MPS daemon; yields whether MPS is on.

    Nothing is started when ``enabled`` is false, when ``nvidia-cuda-mps-control`` is not on ``PATH``, or when a daemon
    answers already (it is used as it is and left running). Otherwise ``nvidia-cuda-mps-control -d`` starts one with
    ``CUDA_MPS_PIPE_DIRECTORY`` / ``CUDA_MPS_LOG_DIRECTORY`` in a temporary folder, exported in ``os.environ`` for
    the body (processes started inside connect through them); at the end, also on error, ``quit`` is sent to it,
    the environment restored and the folder removed.
    """
    if not enabled:
        yield False
        return
    binary = shutil.which(MPS_CONTROL)
    if binary is None:
        log.info("CUDA MPS: %s not found; packed runs share the device by time-slicing", MPS_CONTROL)
        yield False
        return
    if mps_running(binary):
        log.info("CUDA MPS: a daemon is running already; the packed runs use it (left running)")
        yield True
        return
    folder = Path(tempfile.mkdtemp(prefix="dganalysis-mps-"))
    env_keys = {"CUDA_MPS_PIPE_DIRECTORY": str(folder / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(folder / "log")}
    for v in env_keys.values():
        Path(v).mkdir()
    saved = {k: os.environ.get(k) for k in env_keys}
    os.environ.update(env_keys)
    started = False
    try:
        r = _control(["-d"], None, os.environ, binary)
        started = r.returncode == 0
        if started:
            log.info("CUDA MPS: started a daemon for this sweep (pipe %s); stopped at its end", env_keys[
                "CUDA_MPS_PIPE_DIRECTORY"])
        else:
            log.warning("CUDA MPS: %s -d failed (exit %s: %s); packed runs share the device by time-slicing",
                        MPS_CONTROL, r.returncode, (r.stderr or r.stdout).strip()[:200])
            _restore(saved)
        yield started
    finally:
        if started:
            try:
                _control([], "quit\n", os.environ, binary)
                log.info("CUDA MPS: daemon stopped")
            except (OSError, subprocess.TimeoutExpired) as e:  # pragma: no cover - the daemon's own failure
                log.warning("CUDA MPS: could not stop the daemon: %s", e)
        _restore(saved)
        shutil.rmtree(folder, ignore_errors=True)


def _restore(saved: Mapping[str, str | None]) -> None:
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
