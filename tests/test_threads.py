"""The one place that decides CPU threads (dganalysis.threads): inputs → count, overrides, and results that do
not depend on the count it picks. No timed assertions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dganalysis import threads
from dganalysis.shift.kde import grouped_kde_logpdf, pack_groups


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv(threads.ENV, raising=False)
    monkeypatch.setattr(threads, "_measured", None)
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize("usable, busy, limit, expected", [
    (2, 0, None, 2),  # idle 2-core machine: both cores
    (2, 2, None, 1),  # every core busy elsewhere: one thread, never a team that waits for busy cores
    (2, 1, None, 1),
    (2, 0.4, None, 1),  # a fraction of a busy core still breaks a 2-thread barrier
    (8, 3, None, 5),
    (8, 0, 3, 3),  # limit: e.g. only 3 chunks of work
    (8, 20, None, 1),
    (1, 0, None, 1),
])
def test_decide_threads(usable, busy, limit, expected):
    assert threads.decide_threads(usable, busy, limit=limit) == expected


def test_decide_threads_override_and_errors():
    assert threads.decide_threads(2, 2, override=4) == 4
    with pytest.raises(ValueError, match="usable"):
        threads.decide_threads(0, 0)
    with pytest.raises(ValueError, match="busy"):
        threads.decide_threads(2, -1)
    with pytest.raises(ValueError, match="limit"):
        threads.decide_threads(2, 0, limit=0)


@pytest.mark.parametrize("affinity, quota, expected", [(8, None, 8), (8, 2.5, 3), (8, 0.5, 1), (2, 16.0, 2), (4, 4.0, 4)])
def test_usable_cores(affinity, quota, expected):
    assert threads.usable_cores(affinity=affinity, quota=quota) == expected


def test_usable_cores_default_is_the_affinity_mask():
    import os

    assert threads.usable_cores(quota=None) == len(os.sched_getaffinity(0))


def test_cgroup_cpu_limit(tmp_path):
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("150000 100000\n")
    assert threads.cgroup_cpu_limit(v2) == pytest.approx(1.5)
    (v2 / "cpu.max").write_text("max 100000\n")
    assert threads.cgroup_cpu_limit(v2) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert threads.cgroup_cpu_limit(v1) == pytest.approx(3.0)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert threads.cgroup_cpu_limit(v1) is None
    assert threads.cgroup_cpu_limit(tmp_path / "missing") is None


def test_env_override(monkeypatch):
    assert threads.env_override({}) is None
    assert threads.env_override({threads.ENV: "auto"}) is None
    assert threads.env_override({threads.ENV: " 3 "}) == 3
    for bad in ("0", "-2", "two"):
        with pytest.raises(ValueError, match=threads.ENV):
            threads.env_override({threads.ENV: bad})
    monkeypatch.setenv(threads.ENV, "5")
    assert threads.compute_threads() == 5
    assert threads.compute_threads(limit=2) == 2


def test_compute_threads_uses_affinity_quota_and_load(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda quota=None: 4 if quota is None else min(4, int(quota)))
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: None)
    monkeypatch.setattr(threads, "busy_cores", lambda: 1.0)
    assert threads.compute_threads() == 3
    monkeypatch.setattr(threads, "_measured", None)
    monkeypatch.setattr(threads, "busy_cores", lambda: 4.0)
    assert threads.compute_threads() == 1
    monkeypatch.setattr(threads, "_measured", None)
    monkeypatch.setattr(threads, "busy_cores", lambda: 0.0)
    monkeypatch.setattr(threads, "cgroup_cpu_limit", lambda: 2.0)
    assert threads.compute_threads() == 2  # the quota caps the affinity mask


def test_busy_cores_reads_proc():
    assert threads.busy_cores() >= 0.0


def test_torch_threads_restores_and_explicit_n_wins_over_env(monkeypatch):
    torch.set_num_threads(2)
    monkeypatch.setenv(threads.ENV, "3")
    with threads.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with threads.torch_threads(None) as n:  # automatic: the override
        assert n == 3 and torch.get_num_threads() == 3
    assert torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="n must be"):
        with threads.torch_threads(0):
            pass


def test_governor_caps_at_the_callers_count_and_restores(monkeypatch):
    torch.set_num_threads(1)
    monkeypatch.setattr(threads, "compute_threads", lambda limit=None: min(4, limit or 4))
    with threads.ThreadGovernor(every_s=0.0) as gov:
        assert gov.step() == 1  # never above what the caller had set
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "compute_threads", lambda limit=None: 1)  # the machine got busy
    gov = threads.ThreadGovernor(every_s=0.0)
    assert torch.get_num_threads() == 1
    gov.close()
    assert torch.get_num_threads() == 2


def test_map_chunks_keeps_order_and_uses_one_torch_thread():
    torch.set_num_threads(2)
    seen = []

    def fn(i):
        seen.append(torch.get_num_threads())
        return i * i

    assert threads.map_chunks(fn, range(7), workers=3) == [i * i for i in range(7)]
    assert set(seen) == {1}
    assert torch.get_num_threads() == 2
    assert threads.map_chunks(fn, [], workers=2) == []


def test_blas_threads_limits_and_restores():
    from threadpoolctl import threadpool_info

    def blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    before = blas()
    with threads.blas_threads(1):
        assert all(n == 1 for n in blas())
    assert blas() == before
    with pytest.raises(ValueError):
        with threads.blas_threads(0):
            pass


def test_kde_result_does_not_depend_on_the_worker_count(monkeypatch):
    """The KDE splits its points into chunks over workers, each op on one torch thread: bit-identical results
    for any worker count (torch's own 2-thread split changes float32 sums in the last bits)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 3))
    groups = rng.integers(0, 4, size=3000)
    packed, valid, _ = pack_groups(x, groups, 4)
    chol = np.linalg.cholesky(np.cov(x.T)) * 0.3
    pts = rng.normal(size=(2000, 3)) * 2
    out = {}
    for w in (1, 2, 3):
        monkeypatch.setenv(threads.ENV, str(w))
        out[w] = grouped_kde_logpdf(pts, packed, valid, chol, chunk_elems=2**14, device="cpu")  # ~40 chunks
        out[w, "g"] = grouped_kde_logpdf(pts, packed, valid, np.stack([chol] * 4), chunk_elems=2**14, device="cpu")
    for w in (2, 3):
        assert np.array_equal(out[1], out[w])
        assert np.array_equal(out[1, "g"], out[w, "g"])


def _job_records(job, out, n, monkeypatch):
    import json

    from dganalysis.train import run_job

    monkeypatch.setenv(threads.ENV, str(n))
    d = run_job(job, out, device="cpu")
    assert torch.get_num_threads() == 2  # restored after the job
    return [{k: v for k, v in json.loads(line).items() if k not in ("elapsed", "step_time")}
            for line in (d / "results.jsonl").read_text().splitlines()]


def test_job_records_with_a_pinned_thread_count_are_reproducible(tmp_path, monkeypatch):
    """With $DGANALYSIS_THREADS pinned (or a launcher that gives each worker one thread: n_workers = cores, as the
    quick profile does) a job's records are the same on every run, whatever the machine's load."""
    from _tiny import TINY

    from dganalysis.sweep import Job

    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=6, checkpoint_freq=5,
              hparams_overrides={"featurizer": "cnn", "batch_size": 32})
    torch.set_num_threads(2)
    for n in (1, 2):
        assert _job_records(job, tmp_path / f"{n}a", n, monkeypatch) == _job_records(job, tmp_path / f"{n}b", n,
                                                                                      monkeypatch)


def test_thread_count_changes_job_records_only_in_the_last_bits(tmp_path, monkeypatch):
    """The documented limit of the load-adaptive governor (README, "Reproducibility on CPU"): oneDNN sums a
    convolution's weight gradient per thread, so records made at 1 and at 2 threads may differ in the last bits
    (they do for a 16-px smallcnn at batch 64, and the difference grows with steps); after a few steps they agree
    to float32 precision."""
    from _tiny import TINY

    from dganalysis.sweep import Job

    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=6, checkpoint_freq=5,
              hparams_overrides={"featurizer": "cnn", "batch_size": 32})
    torch.set_num_threads(2)
    recs = {n: _job_records(job, tmp_path / str(n), n, monkeypatch) for n in (1, 2)}
    assert len(recs[1]) == 2
    for a, b in zip(recs[1], recs[2]):
        assert a.keys() == b.keys()
        for k, v in a.items():
            if isinstance(v, float):
                assert v == pytest.approx(b[k], rel=1e-5, abs=1e-6), k
            else:
                assert v == b[k], k

def test_worst_case_curve_does_not_depend_on_the_thread_count(monkeypatch):
    from dganalysis.dro import worst_case_curve

    g = torch.Generator().manual_seed(0)
    z = torch.randn(400, 16, generator=g)
    y = torch.randint(0, 4, (400,), generator=g)
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 4)
    torch.set_num_threads(2)
    out = {}
    for n in (1, 2):
        monkeypatch.setenv(threads.ENV, str(n))
        out[n] = worst_case_curve(z, y, head, [0.0, 0.2, 0.5], loss="ce", scale="std")
    assert out[1].equals(out[2])
