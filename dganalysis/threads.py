"""How many CPU threads a computation uses: fixed when it starts, from its configuration, never from the load.

Why a fixed count: a float32 result depends on the number of threads that computed it (oneDNN sums a
convolution's weight gradient from per-thread partial sums; torch's reductions split their input per thread),
and training amplifies last-bit differences into other weights. A count that followed the machine's load made
the same job, run twice, give two records (measured: a 40-step RotatedDigits job, ``env0_in_acc`` 0.8583 vs
0.8604). So every computation whose result feeds a record or a finding runs on a count fixed when it starts:

- :func:`launcher_share`: a sweep worker's count, ``usable cores // workers`` (or ``$DGANALYSIS_THREADS``);
  the job records it (``threads`` in every record, see :mod:`dganalysis.training.train`);
- :func:`fixed_count`: any other computation (``torch_threads(None)``): ``$DGANALYSIS_THREADS``, else the torch
  count in force (what the caller, a launcher or torch's default set);
- pretraining: one thread (:func:`dganalysis.pretrain._loop.fixed_threads`).

Speed under load comes from how waiting threads wait, not from the count: torch's intra-op pool (OpenMP,
libgomp here) meets at a barrier after every parallel op and its waiting threads spin; when another process
holds a core, the thread that lost it holds every barrier while the others burn their slices spinning.
:func:`worker_environment` gives the launcher's worker processes the waiting policy :data:`WAIT_POLICY`, set
before torch is imported there; measured on the project's machine, shorter spinning or passive waiting did not
pay, so it is the runtime's default (``docs/reproducibility.md``).

The load-adaptive decision stays for work whose result does not depend on the count: :func:`map_chunks` (the
KDE's chunks, bit-identical for any worker count) takes :func:`compute_threads` workers. The rule
(:func:`decide_threads`): ``usable`` cores = the CPU affinity mask, capped by a cgroup CPU quota (v2 ``cpu.max``
or v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``, rounded up); ``busy`` cores = processes running elsewhere right
now (``/proc/loadavg``'s runnable count, median of a few samples, minus this process's own running threads);
workers = ``usable - busy``, at least 1, at most ``usable`` and at most the caller's ``limit``.
``$DGANALYSIS_THREADS`` (a positive integer) overrides every count.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from dganalysis.validation import ConfigError

THREADS_ENV = "DGANALYSIS_THREADS"
CGROUP_ROOT = Path("/sys/fs/cgroup")
_lock = threading.Lock()


def env_override(environ: dict | None = None) -> int | None:
    """The thread count ``$DGANALYSIS_THREADS`` pins (None when unset or ``auto``); a bad value is an error."""
    value = (os.environ if environ is None else environ).get(THREADS_ENV, "").strip()
    if value in ("", "auto"):
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"${THREADS_ENV}: expected a positive integer or 'auto', got {value!r}")
    return n


def cgroup_cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs the cgroup quota allows (quota / period), or None without a quota.

    Reads cgroup v2 ``cpu.max`` (``"max 100000"`` = no quota) or v1 ``cpu/cpu.cfs_quota_us`` (``-1`` = none).
    """
    root = Path(root)
    try:
        fields = (root / "cpu.max").read_text().split()
        if fields and fields[0] != "max":
            return int(fields[0]) / int(fields[1])
        return None
    except (OSError, ValueError, IndexError):
        pass
    for sub in ("cpu", "cpu,cpuacct", "cpuacct,cpu"):
        try:
            quota = int((root / sub / "cpu.cfs_quota_us").read_text())
            period = int((root / sub / "cpu.cfs_period_us").read_text())
        except (OSError, ValueError):
            continue
        return quota / period if quota > 0 and period > 0 else None
    return None


def usable_cores(affinity: int | None = None, quota: float | None = None) -> int:
    """Cores this process may run on: its affinity mask, capped by the cgroup quota (rounded up), at least 1."""
    if affinity is None:
        affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    n = max(1, int(affinity))
    if quota is not None and quota > 0:
        n = min(n, max(1, math.ceil(quota - 1e-9)))
    return n


def _own_running_threads() -> int:
    n = 0
    for stat in Path("/proc/self/task").glob("*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if text[text.rfind(")") + 2 :].startswith("R"):
            n += 1
    return max(n, 1)  # the reading thread runs


def busy_cores(samples: int = 3, gap_s: float = 0.0) -> float:
    """Runnable threads of *other* processes right now (``/proc/loadavg`` field 4 minus our own), the median of
    ``samples`` readings ``gap_s`` apart; 0 where ``/proc`` is missing (not Linux). About 0.3 ms."""
    counts = []
    for i in range(samples):
        try:
            running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[0])
        except (OSError, ValueError, IndexError):
            return 0.0
        counts.append(max(0, running - _own_running_threads()))
        if i + 1 < samples:
            time.sleep(gap_s)
    return float(statistics.median(counts))


def decide_threads(usable: int, busy: float, *, limit: int | None = None, override: int | None = None) -> int:
    """Threads for one computation: ``override`` if given, else the cores not busy elsewhere, in [1, usable],
    at most ``limit`` (e.g. the number of independent chunks of work)."""
    if usable < 1:
        raise ValueError(f"decide_threads: usable must be >= 1 core, got {usable}")
    if busy < 0:
        raise ValueError(f"decide_threads: busy must be >= 0, got {busy}")
    if limit is not None and limit < 1:
        raise ValueError(f"decide_threads: limit must be >= 1, got {limit}")
    if override is not None:
        return int(override)
    n = max(1, min(usable, int(math.floor(usable - busy + 1e-9))))
    return n if limit is None else min(n, limit)


_measured: tuple[float, int, float] | None = None  # (monotonic time, usable, busy) of the last measurement
MEASURE_TTL_S = 0.5  # a measurement serves the computations started within this time


def compute_threads(limit: int | None = None) -> int:
    """:func:`decide_threads` on this machine now (affinity, cgroup quota, runnable count, ``$DGANALYSIS_THREADS``);
    the measurement is reused for :data:`MEASURE_TTL_S` seconds (a KDE asks once per group kind)."""
    global _measured
    override = env_override()
    if override is not None:
        return override if limit is None else min(override, limit)
    now = time.monotonic()
    if _measured is None or now - _measured[0] > MEASURE_TTL_S:
        usable = usable_cores(quota=cgroup_cpu_limit())
        _measured = (now, usable, busy_cores() if usable > 1 else 0.0)
    return decide_threads(_measured[1], _measured[2], limit=limit)


def fixed_count(n: int | None = None) -> int:
    """The thread count of a computation whose result depends on it: ``n`` if given, else ``$DGANALYSIS_THREADS``,
    else the torch count in force (what the caller, a launcher or torch's default set). Never the load."""
    import torch  # here, not at the top: the audit and collect commands never start torch

    if n is None:
        n = env_override()
    if n is None:
        n = torch.get_num_threads()
    try:
        count = operator.index(n)  # int, numpy integers; not floats, strings or bools
    except TypeError:
        count = 0
    if isinstance(n, bool) or count < 1:
        raise ConfigError(f"thread count: expected a positive integer, got {n!r}")
    return count


def launcher_share(n_workers: int, usable: int | None = None) -> int:
    """Threads of each of ``n_workers`` processes that share this machine: ``$DGANALYSIS_THREADS``, else
    ``usable // n_workers`` (``usable``: :func:`usable_cores`, the affinity mask capped by the cgroup quota), at
    least 1. A function of the configuration (workers, cores, environment), not of the load."""
    if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
        raise ConfigError(f"launcher_share: n_workers must be an integer >= 1, got {n_workers!r}")
    override = env_override()
    if override is not None:
        return override
    if usable is None:
        usable = usable_cores(quota=cgroup_cpu_limit())
    return max(1, int(usable) // n_workers)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` torch intra-op threads (None: :func:`fixed_count`), restoring the count after.

    Yields the count in force. ``$DGANALYSIS_THREADS`` replaces the default, not an explicit ``n``.
    """
    import torch

    n = fixed_count(n)
    with _lock:
        old = torch.get_num_threads()
        if n != old:
            torch.set_num_threads(n)
    try:
        yield n
    finally:
        with _lock:
            if torch.get_num_threads() != old:
                torch.set_num_threads(old)


#: How the OpenMP threads of a launcher's worker process wait at barriers (set before torch starts there; a
#: variable the user already set is kept). Empty: the runtime's default (libgomp spins), because on the
#: project's shared 2-core machine neither a short spin (``GOMP_SPINCOUNT=10000``) nor passive waiting
#: (``OMP_WAIT_POLICY=PASSIVE``) was faster, idle or loaded: a thread that sleeps at a barrier waits a whole
#: scheduling round to run again when other processes hold the cores (``bench/train_throughput.py
#: --thread-policies``, ``docs/reproducibility.md``). Change it here if a measurement on your machine says so.
WAIT_POLICY: dict[str, str] = {}


@contextlib.contextmanager
def worker_environment(policy: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Within the block, ``os.environ`` also holds the waiting policy (default :data:`WAIT_POLICY`) for the
    processes started in it (spawned workers read it when their OpenMP runtime loads; this process's runtime
    has long read its own). Variables already set are left as they are; yields the ones added."""
    added = {k: v for k, v in (WAIT_POLICY if policy is None else policy).items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield added
    finally:
        for k in added:
            os.environ.pop(k, None)


def map_chunks(fn, items: list, workers: int | None = None) -> list:
    """``[fn(x) for x in items]`` on up to ``workers`` Python threads (None: :func:`compute_threads`), each op
    with ONE torch intra-op thread; results in the order of ``items``.

    Chunks of independent work (a KDE's evaluation points) then meet at no barrier but the last, a worker
    that loses its core delays only its own chunk while the others take the remaining ones, and every chunk
    runs the same single-threaded kernels whatever the worker count, so results do not depend on it (torch's
    own intra-op split does change float32 sums and MKL products in the last bits). Torch ops release the
    GIL; the Python between them is short next to a chunk of ~1M kernel values.
    """
    import torch

    items = list(items)
    if not items:
        return []
    n = compute_threads(limit=len(items)) if workers is None else max(1, min(int(workers), len(items)))
    with torch_threads(1):
        if n == 1:
            return [fn(x) for x in items]
        from concurrent.futures import ThreadPoolExecutor

        # OpenMP's thread count is per thread: a new worker starts at the process default, and MKL's GEMM
        # there would split its work (and its float32 sums) differently; set it to 1 in each worker
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="dganalysis-chunk",
                                initializer=torch.set_num_threads, initargs=(1,)) as pool:
            return list(pool.map(fn, items))


_controller = None


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Run the block with numpy's/scipy's BLAS pools (OpenBLAS, MKL; via threadpoolctl) limited to ``n`` threads.

    Their threads spin at barriers like torch's (see the module docstring); ~0.6 ms per use.
    """
    global _controller
    if n < 1:
        raise ValueError(f"blas_threads: n must be >= 1, got {n}")
    from threadpoolctl import ThreadpoolController

    with _lock:
        if _controller is None:
            _controller = ThreadpoolController()  # libraries loaded by now: numpy, scipy
    with _controller.limit(limits=n, user_api="blas"):
        yield
