"""CPU training speed: keep large freed blocks in glibc's heap instead of returning them to the OS.

glibc's ``malloc`` serves every block above its mmap threshold (at most 32 MiB, adapted at run
time) with a fresh ``mmap`` and gives it back with ``munmap`` on ``free``. A CPU training job
allocates and frees such blocks on every batch (activations of the small CNN at 32 px are
256 KiB per image per layer, so 67 MiB at the evaluation batch of 512), and the kernel zero-fills
every page of each new mapping again: page faults. Measured on the project's 2-core AMD EPYC
(no AMX, fp32): evaluating 3000 images at batch 512 spent ~1.9 of 6.1 CPU-s in the kernel with two
threads and 3.96 CPU-s with one; with the thresholds raised it took ~3.9 and ~3.1 CPU-s. A whole
benchmark job (``bench/train_throughput.py --threads 1 --malloc-default``: 60 steps, 4 evaluations)
took 37–38 instead of 45.5 CPU-s. This is what PyTorch's CPU performance guide gets from
preloading jemalloc or tcmalloc; ``mallopt`` does it from inside the process.

The setting is process-wide and permanent (glibc has no way back to its adaptive threshold):
freed memory up to ``threshold`` stays with the process, so its resident size stays near its peak.
It changes no result. ``$DGANALYSIS_MALLOPT=0`` turns it off; it is a no-op where the C library
is not glibc.
"""

from __future__ import annotations

import ctypes
import os
import platform

#: ``mallopt`` parameter numbers from glibc's ``malloc.h``
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

_applied: int | None = None


def keep_freed_memory(threshold: int = 1 << 30) -> bool:
    """Raise glibc's mmap and trim thresholds to ``threshold`` bytes, once per process.

    Returns whether the thresholds are (now or already) raised: False on other C libraries,
    when ``$DGANALYSIS_MALLOPT`` is ``0``, or when ``mallopt`` refuses the value.
    """
    global _applied
    if threshold <= 0:
        raise ValueError(f"keep_freed_memory threshold: expected a positive number of bytes, got {threshold}")
    if os.environ.get("DGANALYSIS_MALLOPT", "1") == "0":
        return False
    if _applied is not None:
        return True
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    value = min(int(threshold), 2**31 - 1)
    if mallopt(_M_MMAP_THRESHOLD, value) != 1 or mallopt(_M_TRIM_THRESHOLD, value) != 1:
        return False
    _applied = value
    return True
