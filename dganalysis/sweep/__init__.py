"""Sweeps: the job grid, job hashing, launchers (local process pool, submitit/Slurm), resume.

``from dganalysis.sweep import Job, make_jobs, run_sweep``.
"""

from dganalysis.job import Job
from dganalysis.sweep.grid import expand_splits, load_sweep_yaml, make_jobs
from dganalysis.sweep.launcher import run_sweep
from dganalysis.sweep.store import job_state

__all__ = ["Job", "expand_splits", "job_state", "load_sweep_yaml", "make_jobs", "run_sweep"]
