"""The order in which a sweep hands its jobs to the workers: the longest first, one dataset at a time.

A sweep on several workers ends when its last job ends. Handed out in the order they are listed, the jobs of a
grid often come shortest first (a grid lists two training domains before three), and the last long job then runs
alone while the other workers have nothing left to do: on two workers, one core idles for the length of a job.
Handing out the longest job first (list scheduling, Graham 1969, "Bounds on multiprocessing timing anomalies",
SIAM J. Appl. Math. 17(2), Theorem 3) ends within 4/3 − 1/(3m) of the shortest possible time on m workers, and
when the grid's jobs come in a few lengths it ends where the work divides evenly.

A worker keeps the last few datasets it loaded (:func:`dganalysis.training.train._cached_dataset`), so jobs are kept
together by the data they load (the dataset, its keywords and, for a dataset DomainBed splits per run, the run's seed):
the groups go longest job first, and within each group its jobs longest first. A worker then loads each dataset about
as often as in the listed order, while the sweep still ends on the shortest jobs of its last group.

A job's length is the dry run's estimate of it (:func:`dganalysis.sweep.cost.job_cost`: the images it trains on,
steps × batch size × training domains, at its network's measured images per second). Jobs whose network the
estimate does not know count by their training images at the slowest listed rate, so they go early rather than last.
The order decides nothing but the start times: each job trains on its own seeds and the thread count the sweep
fixes, and the sweep's status table keeps the order of the jobs as given.
"""

from __future__ import annotations

import json
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


def data_key(job: Job) -> str:
    """What a worker loads for ``job``: the dataset and its builder's keywords, the run seed included for a dataset
    DomainBed splits per run (:func:`dganalysis.training.train.dataset_kwargs`)."""
    from dganalysis.training.train import dataset_kwargs

    return json.dumps([job.dataset, dataset_kwargs(job)], sort_keys=True, default=str)


def longest_first(jobs: Sequence[Job]) -> list[Job]:
    """``jobs`` grouped by :func:`data_key`, the groups ordered by their longest job and each group's jobs by
    :func:`expected_seconds`, longest first; ties keep the listed order."""
    groups: dict[str, list[tuple[float, Job]]] = {}
    for job in jobs:
        groups.setdefault(data_key(job), []).append((expected_seconds(job), job))
    ordered = [sorted(g, key=lambda sj: sj[0], reverse=True) for g in groups.values()]
    ordered.sort(key=lambda g: g[0][0], reverse=True)
    return [job for g in ordered for _, job in g]
