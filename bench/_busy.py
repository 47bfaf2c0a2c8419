"""Busy processes for the benchmarks' "loaded" figures: every core kept busy by another process."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator


def default_load() -> int:
    """One busy process per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


@contextlib.contextmanager
def busy_load(n: int) -> Iterator[list[subprocess.Popen]]:
    """Start ``n`` processes that spin a Python loop (no I/O, no threads) and stop them when the block ends."""
    if n < 0:
        raise ValueError(f"--load: expected a number of busy processes >= 0, got {n}")
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.5 if n else 0.0)  # let them start and take their cores
        yield procs
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def load_line() -> str:
    """The 1-minute load average and the runnable count now (both include other users of a shared machine)."""
    with open("/proc/loadavg") as f:
        fields = f.read().split()
    return f"loadavg {os.getloadavg()[0]:.2f} (1 min), runnable now {fields[3]}, {default_load()} usable cores"
