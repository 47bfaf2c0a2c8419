"""How many CPU threads a computation uses: the one place that decides it, from the cores it can really use.

Why (issue 22, measured on the project's shared 2-core CPU): torch's intra-op pool (OpenMP, libgomp) and
numpy's OpenBLAS pool each start one thread per core and meet at a barrier after every parallel op; waiting
threads spin. When other processes keep the cores busy, a thread that lost its core holds every barrier
until the scheduler gives it a slice again, and the team's other thread burns its own slice spinning.
``estimate_shift`` at d=16, 20,000 points per environment took 0.36 s idle with 2 torch threads and 15–24 s
(4.7–8.3 CPU-s) with two busy processes beside it; with 1 thread 0.45 s idle and 0.9–3.2 s loaded
(the rest of the loss: numpy's OpenBLAS pool, still two spinning threads). Passive waiting
(``OMP_WAIT_POLICY=passive``, ``GOMP_SPINCOUNT=0``) removes the spinning but costs 2–3x on an idle
machine for the many short ops of a KDE (d=2: 0.029 s → 0.065–0.088 s) and must be set before torch is
imported, so we keep the runtimes' defaults and choose the thread count instead.

The rule (:func:`decide_threads`): ``usable`` cores = the CPU affinity mask, capped by a cgroup CPU quota
(v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``, rounded up); ``busy`` cores = processes
running elsewhere right now (``/proc/loadavg``'s runnable count, median of a few samples, minus this
process's own running threads); threads = ``usable - busy``, at least 1, at most ``usable`` and at most the
caller's ``limit``. ``$DGANALYSIS_THREADS`` (a positive integer) overrides the decision everywhere.
Each computation decides when it starts (the load of a 1-minute average lags by a minute, the runnable
count does not); long ones (training) decide again every few seconds (:class:`ThreadGovernor`).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import torch

ENV = "DGANALYSIS_THREADS"
CGROUP_ROOT = Path("/sys/fs/cgroup")
_lock = threading.Lock()


def env_override(environ: dict | None = None) -> int | None:
    """The thread count ``$DGANALYSIS_THREADS`` pins (None when unset or ``auto``); a bad value is an error."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip()
    if value in ("", "auto"):
        return None
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"${ENV}: expected a positive integer or 'auto', got {value!r}")
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


def capped_threads() -> int:
    """:func:`compute_threads` capped by the torch thread count in force (what the caller or a launcher set)."""
    return compute_threads(limit=torch.get_num_threads())


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[int]:
    """Run the block with ``n`` torch intra-op threads (None: :func:`compute_threads`), restoring the count after.

    Yields the count in force. ``$DGANALYSIS_THREADS`` replaces the automatic decision, not an explicit ``n``.
    """
    if n is None:
        n = compute_threads()
    if n < 1:
        raise ValueError(f"torch_threads: n must be >= 1, got {n}")
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


class ThreadGovernor:
    """Re-decides the torch thread count of a long computation at most every ``every_s`` seconds.

    Call :meth:`step` once per step (it reads the clock; the decision itself costs well under 1 ms). The
    automatic count never exceeds ``limit`` (default: the torch count in force when it starts, i.e. what the
    caller or launcher set); :meth:`close` (or leaving the ``with`` block) restores that count. A fixed ``n``
    (or ``$DGANALYSIS_THREADS``) pins it.
    """

    def __init__(self, n: int | None = None, every_s: float = 2.0, limit: int | None = None) -> None:
        if n is not None and n < 1:
            raise ValueError(f"ThreadGovernor: n must be >= 1, got {n}")
        override = env_override()
        self.fixed = override if override is not None else n
        self.every_s = float(every_s)
        self.old = torch.get_num_threads()
        self.limit = self.old if limit is None else limit  # never more threads than the caller had set
        self.current = self.old
        self.changes = 0
        self._next = 0.0
        self.step(force=True)

    def step(self, force: bool = False) -> int:
        now = time.monotonic()
        if force or now >= self._next:
            self._next = now + self.every_s
            n = self.fixed if self.fixed is not None else compute_threads(limit=self.limit)
            if n != self.current:
                torch.set_num_threads(n)
                self.changes += 0 if force else 1
                self.current = n
        return self.current

    def close(self) -> None:
        if torch.get_num_threads() != self.old:
            torch.set_num_threads(self.old)

    def __enter__(self) -> ThreadGovernor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def map_chunks(fn, items: list, workers: int | None = None) -> list:
    """``[fn(x) for x in items]`` on up to ``workers`` Python threads (None: :func:`compute_threads`), each op
    with ONE torch intra-op thread; results in the order of ``items``.

    Chunks of independent work (a KDE's evaluation points) then meet at no barrier but the last, a worker
    that loses its core delays only its own chunk while the others take the remaining ones, and every chunk
    runs the same single-threaded kernels whatever the worker count, so results do not depend on it (torch's
    own intra-op split does change float32 sums and MKL products in the last bits). Torch ops release the
    GIL; the Python between them is short next to a chunk of ~1M kernel values.
    """
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
