"""The one place that decides CPU threads (dganalysis.threads): fixed counts from the configuration, the launcher's
share, the workers' waiting policy, the load-adaptive worker count of work whose results do not depend on it.
No timed assertions. Jobs' records under load: tests/test_reproducible.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dganalysis import threads
from dganalysis.shift.kde import grouped_kde_logpdf, pack_groups


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
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
    assert threads.env_override({threads.THREADS_ENV: "auto"}) is None
    assert threads.env_override({threads.THREADS_ENV: " 3 "}) == 3
    for bad in ("0", "-2", "two"):
        with pytest.raises(ValueError, match=threads.THREADS_ENV):
            threads.env_override({threads.THREADS_ENV: bad})
    monkeypatch.setenv(threads.THREADS_ENV, "5")
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
    monkeypatch.setenv(threads.THREADS_ENV, "3")
    with threads.torch_threads(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with threads.torch_threads(None) as n:  # default: the override
        assert n == 3 and torch.get_num_threads() == 3
    assert torch.get_num_threads() == 2
    with pytest.raises(ValueError, match="positive integer"):
        with threads.torch_threads(0):
            pass


def test_fixed_count_is_the_configuration_never_the_load(monkeypatch):
    """A count whose results depend on it comes from the caller, $DGANALYSIS_THREADS or the count in force; the
    machine's load is never read (a busy_cores call would raise here)."""
    def no_load(*a, **k):
        raise AssertionError("the load was read")

    monkeypatch.setattr(threads, "busy_cores", no_load)
    monkeypatch.setattr(threads, "compute_threads", no_load)
    torch.set_num_threads(2)
    assert threads.fixed_count() == 2
    assert threads.fixed_count(1) == 1
    assert threads.fixed_count(np.int64(3)) == 3
    with threads.torch_threads(None) as n:
        assert n == 2
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    assert threads.fixed_count() == 1
    assert threads.fixed_count(2) == 2  # an explicit count wins
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(ValueError, match="positive integer"):
            threads.fixed_count(bad)


@pytest.mark.parametrize("usable, workers, expected", [(2, 1, 2), (2, 2, 1), (2, 3, 1), (16, 4, 4), (16, 3, 5)])
def test_launcher_share(usable, workers, expected, monkeypatch):
    monkeypatch.setattr(threads, "busy_cores", lambda *a, **k: 1 / 0)  # never the load
    assert threads.launcher_share(workers, usable=usable) == expected


def test_launcher_share_env_and_errors(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda affinity=None, quota=None: 6)
    assert threads.launcher_share(2) == 3
    monkeypatch.setenv(threads.THREADS_ENV, "4")
    assert threads.launcher_share(2) == 4
    for bad in (0, 1.0, True):
        with pytest.raises(ValueError, match="n_workers"):
            threads.launcher_share(bad)


def test_worker_environment_adds_the_waiting_policy_and_keeps_the_users(monkeypatch):
    monkeypatch.setattr(threads, "WAIT_POLICY", {"GOMP_SPINCOUNT": "10000", "KMP_BLOCKTIME": "0"})
    for k in threads.WAIT_POLICY:
        monkeypatch.delenv(k, raising=False)
    first = next(iter(threads.WAIT_POLICY))
    monkeypatch.setenv(first, "12345")  # set by the user: kept
    import os

    with threads.worker_environment() as added:
        assert first not in added
        assert os.environ[first] == "12345"
        assert set(added) == set(threads.WAIT_POLICY) - {first}
        for k, v in added.items():
            assert os.environ[k] == v == threads.WAIT_POLICY[k]
    assert os.environ[first] == "12345"
    assert not any(k in os.environ for k in added)


def test_the_training_loop_has_no_load_adaptive_count():
    """The former ThreadGovernor (a count that followed the load) must not come back into the library."""
    import inspect

    from dganalysis.training import train

    assert not hasattr(threads, "ThreadGovernor") and not hasattr(threads, "capped_threads")
    assert "compute_threads" not in inspect.getsource(train)


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
        monkeypatch.setenv(threads.THREADS_ENV, str(w))
        out[w] = grouped_kde_logpdf(pts, packed, valid, chol, chunk_elems=2**14, device="cpu")  # ~40 chunks
        out[w, "g"] = grouped_kde_logpdf(pts, packed, valid, np.stack([chol] * 4), chunk_elems=2**14, device="cpu")
    for w in (2, 3):
        assert np.array_equal(out[1], out[w])
        assert np.array_equal(out[1, "g"], out[w, "g"])


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
        monkeypatch.setenv(threads.THREADS_ENV, str(n))
        out[n] = worst_case_curve(z, y, head, [0.0, 0.2, 0.5], loss="ce", scale="std")
    assert out[1].equals(out[2])
