"""Sweeps: the job grid, job hashing, launchers (local process pool, submitit/Slurm), resume.

``from dganalysis.sweep import Job, make_jobs, run_sweep``.
"""

from dganalysis.job import Job
from dganalysis.sweep.grid import JobOptions, expand_splits, grid_domains, load_sweep_yaml, make_jobs
from dganalysis.sweep.launcher import ClaimPolicy, ExecutionOptions, run_sweep
from dganalysis.sweep.store import job_state

__all__ = ["ClaimPolicy", "ExecutionOptions", "Job", "JobOptions", "expand_splits", "grid_domains", "job_state", "load_sweep_yaml", "make_jobs", "run_sweep"]
