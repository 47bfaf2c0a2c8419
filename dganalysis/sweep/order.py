"""The order in which a sweep hands its jobs to the workers: the longest first.

A sweep on several workers ends when its last job ends. Handed out in the order they are listed, the jobs of a
grid often come shortest first (a grid lists two training domains before three), and the last long job then runs
alone while the other workers have nothing left to do: on two workers, one core idles for the length of a job.
Handing out the longest job first (list scheduling, Graham 1969, "Bounds on multiprocessing timing anomalies",
SIAM J. Appl. Math. 17(2), Theorem 3) ends within 4/3 − 1/(3m) of the shortest possible time on m workers, and
when the grid's jobs come in a few lengths it ends where the work divides evenly.

A job's length is the dry run's estimate of it (:func:`dganalysis.sweep.cost.job_cost`: the images it trains on,
steps × batch size × training domains, at its network's measured images per second). Jobs whose network the
estimate does not know count by their training images at the slowest listed rate, so they go early rather than last. The
order decides nothing but the start times: each job trains on its own seeds and the thread count the sweep fixes,
and the sweep's status table keeps the order of the jobs as given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache

from dganalysis.sweep.cost import Throughput, job_cost, load_throughput
from dganalysis.training.job import Job


@cache
def _throughput() -> Throughput:
    return load_throughput()


def expected_seconds(job: Job) -> float:
    """The CPU seconds the dry run estimates ``job`` takes to train (:func:`dganalysis.sweep.cost.job_cost`); a
    job whose network has no measured rate counts at the slowest rate of the table."""
    throughput = _throughput()
    cost = job_cost(job, throughput)
    hours = cost["cpu_hours"]
    if math.isfinite(hours):
        return hours * 3600.0
    return cost["train_images"] / min(throughput.cpu.values())


def longest_first(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` ordered by :func:`expected_seconds`, longest first; jobs of equal estimate keep their order."""
    return sorted(jobs, key=expected_seconds, reverse=True)
