"""The order a sweep starts its jobs in: the longest first (dganalysis.sweep.order)."""

from __future__ import annotations

import heapq

import pytest
from _tiny import FAST_HPARAMS, TINY

from dganalysis.sweep import Job, run_sweep
from dganalysis.sweep.order import expected_seconds, longest_first

pytestmark = pytest.mark.usefixtures("one_thread")


def _job(train, steps=4, trial=0, data_seed=0, **hp):
    return Job(dataset=TINY, algorithm="ERM", train_domains=tuple(train), test_domains=("d2",), steps=steps,
               checkpoint_freq=2, trial_seed=trial, hparams_overrides={**FAST_HPARAMS, **hp},
               dataset_kwargs={"seed": data_seed} if data_seed else {})


def test_longer_jobs_are_estimated_longer():
    base = expected_seconds(_job(["d0"]))
    assert base > 0
    assert expected_seconds(_job(["d0", "d1"])) == pytest.approx(2 * base)  # twice the training images
    assert expected_seconds(_job(["d0"], steps=8)) == pytest.approx(2 * base)
    assert expected_seconds(_job(["d0"], batch_size=16)) == pytest.approx(2 * base)


def test_longest_first_and_ties_keep_their_order():
    short = [_job(["d0"], trial=t) for t in range(3)]
    long = [_job(["d0", "d1"], trial=t) for t in range(3)]
    listed = [short[0], long[0], short[1], short[2], long[1], long[2]]
    assert longest_first(listed) == [long[0], long[1], long[2], short[0], short[1], short[2]]
    assert longest_first([]) == []


def test_jobs_stay_together_by_the_data_they_load():
    """A worker caches the datasets it loaded: jobs of one dataset are kept together, the groups ordered by their longest
    job, each group longest first (one listed short, long, short per dataset, the datasets interleaved)."""
    a_short, a_long = _job(["d0"], data_seed=1), _job(["d0"], steps=8, data_seed=1)
    b_short, b_long, b_longest = _job(["d0"], data_seed=2), _job(["d0"], steps=8, data_seed=2), _job(["d0"], steps=12,
                                                                                                     data_seed=2)
    listed = [a_short, b_short, a_long, b_long, b_longest]
    assert longest_first(listed) == [b_longest, b_long, b_short, a_long, a_short]


def test_a_network_without_a_measured_rate_counts_at_the_slowest_rate():
    known = expected_seconds(_job(["d0"]))
    assert expected_seconds(_job(["d0"], featurizer="not_in_the_table")) >= known


def _makespan(lengths, workers=2):
    ends = [0.0] * workers
    for t in lengths:
        heapq.heappush(ends, heapq.heappop(ends) + t)
    return max(ends)


def test_longest_first_ends_a_two_length_grid_where_the_work_divides_evenly():
    """Two workers, a grid listed as notebook 02's was (three jobs of each length in turn, the lengths 2 : 3): in that
    order the last long job runs alone for a third of its length; longest first, both workers end together."""
    jobs = [_job(["d0"], steps=steps, trial=t) for block in range(2) for steps in (4, 6) for t in range(3 * block, 3 * block + 3)]
    seconds = [expected_seconds(j) for j in jobs]
    ordered = [expected_seconds(j) for j in longest_first(jobs)]
    assert _makespan(ordered) == pytest.approx(sum(seconds) / 2)
    assert _makespan(seconds) == pytest.approx(sum(seconds) / 2 * 16 / 15)


def test_run_sweep_starts_the_longest_jobs_first_and_reports_in_the_given_order(tmp_path):
    store = tmp_path / "store"
    jobs = [_job(["d0"], trial=0), _job(["d0", "d1"], trial=0), _job(["d0"], trial=1)]
    status = run_sweep(jobs, store, progress=False)
    assert list(status["job_id"]) == [j.job_id for j in jobs] and set(status["status"]) == {"done"}

    def started(job):  # spec.json is the first file a job writes (dganalysis.training.train.run_job)
        return (store / job.job_id / "spec.json").stat().st_mtime_ns

    assert sorted(jobs, key=started) == [jobs[1], jobs[0], jobs[2]]
