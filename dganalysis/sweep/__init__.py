"""Sweeps: the job grid, job hashing, launchers (local process pool, submitit/Slurm), resume.

``from dganalysis.sweep import Job, make_jobs, run_sweep``. The names load on first use (PEP 562), so importing a
submodule (e.g. the CLI's arguments, :mod:`dganalysis.sweep.cli`) does not import the launcher, torch or pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Job": "dganalysis.training.job",
    "Sweep": "dganalysis.sweep.spec", "expand_splits": "dganalysis.sweep.grid",
    "grid_domains": "dganalysis.sweep.grid", "load_sweep_yaml": "dganalysis.sweep.grid",
    "make_jobs": "dganalysis.sweep.grid",
    "ClaimPolicy": "dganalysis.sweep.launcher", "ExecutionOptions": "dganalysis.sweep.launcher",
    "run_sweep": "dganalysis.sweep.launcher",
    "job_state": "dganalysis.sweep.store",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
