"""Many runs per GPU: the memory rule, the CUDA MPS daemon (a fake control binary), the ``packing`` record field and
the launcher's wiring (on the CPU: the pool replaced by the inline runner)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from _tiny import FAST_HPARAMS, TINY

from dganalysis.sweep import ExecutionOptions, Sweep, launcher, make_jobs, packing, run_sweep
from dganalysis.validation import ConfigError
from tests.sweep._fake_mps import _calls, install_fake_mps

GiB = 2**30
pytestmark = pytest.mark.usefixtures("one_thread")


# --------------------------------------------------------------------------- the memory rule
def test_runs_per_device_rule():
    # footprint of a 1 GiB peak: 1.25 GiB (allocator slack) + 0.75 GiB (context) = 2 GiB
    assert packing.run_footprint(GiB) == 2 * GiB
    assert packing.runs_per_device(100 * GiB, GiB, cap=64) == 45  # floor(0.9 · 100 / 2)
    assert packing.runs_per_device(100 * GiB, GiB) == packing.MAX_RUNS_PER_DEVICE  # the default cap
    assert packing.runs_per_device(139 * GiB, 0.3 * GiB, cap=8) == 8
    assert packing.runs_per_device(10 * GiB, 4 * GiB, cap=8) == 1  # floor(9 / 5.75)
    assert packing.runs_per_device(GiB, 40 * GiB, cap=8) == 1  # never below one run (what ran before)
    assert packing.runs_per_device(0, 0, cap=3) == 1
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError):
            packing.runs_per_device(GiB, GiB, cap=bad)
    with pytest.raises(ConfigError):
        packing.runs_per_device(-1, GiB)
    with pytest.raises(ConfigError):
        packing.run_footprint(float("nan"))


def test_default_cap_and_parse():
    assert packing.default_cap(16, 1) == 8
    assert packing.default_cap(4, 1) == 4  # a core per run's process
    assert packing.default_cap(16, 4) == 4
    assert packing.default_cap(1, 2) == 1
    assert packing.parse_runs_per_gpu(None) is None
    assert packing.parse_runs_per_gpu("AUTO") == "auto"
    assert packing.parse_runs_per_gpu("3") == 3
    assert packing.parse_runs_per_gpu(2) == 2
    for bad in ("0", "x", 0, -2, True):
        with pytest.raises(ConfigError, match="runs-per-gpu"):
            packing.parse_runs_per_gpu(bad)


def test_peak_from_records(tmp_path):
    assert packing.peak_bytes_of_records([{"mem_gb": 0.0}, {}]) is None  # CPU runs record 0
    assert packing.peak_bytes_of_records([{"mem_gb": 0.5}, {"mem_gb": 1.5}]) == 1.5 * GiB
    done, partial = tmp_path / "a", tmp_path / "b"
    for d, mem in ((done, 2.0), (partial, 9.0)):
        d.mkdir()
        (d / "results.jsonl").write_text(json.dumps({"mem_gb": mem}) + "\n{torn")
    (done / "done").write_text("1\n")
    assert packing.stored_peak_bytes([done, partial, tmp_path / "missing"]) == 2.0 * GiB  # finished jobs only


# --------------------------------------------------------------------------- CUDA MPS with a fake control binary
@pytest.fixture
def fake_mps(tmp_path, monkeypatch):
    return install_fake_mps(tmp_path, monkeypatch)


def test_mps_daemon_started_and_stopped(fake_mps, caplog):
    caplog.set_level(logging.INFO, logger="dganalysis.sweep.packing")
    with packing.mps_daemon() as on:
        assert on
        pipe = os.environ["CUDA_MPS_PIPE_DIRECTORY"]
        assert Path(pipe).is_dir() and Path(os.environ["CUDA_MPS_LOG_DIRECTORY"]).is_dir()
        assert (fake_mps / "running").exists()
    calls = _calls(fake_mps)
    assert [c.split(" pipe=")[0] for c in calls] == ["args=[] stdin=[get_server_list]", "args=[-d] stdin=[]",
                                                     "args=[] stdin=[quit]"]
    assert f"pipe=[{pipe}]" in calls[1] and f"pipe=[{pipe}]" in calls[2]  # started and stopped on its own pipe
    assert "pipe=[]" in calls[0]  # the check asks the default pipe
    assert not (fake_mps / "running").exists()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ and not Path(pipe).exists()  # environment and folder restored
    assert "CUDA MPS: started a daemon" in caplog.text and "daemon stopped" in caplog.text


def test_mps_daemon_stopped_on_error(fake_mps):
    with pytest.raises(RuntimeError, match="boom"), packing.mps_daemon():
        raise RuntimeError("boom")
    assert [c.split(" pipe=")[0] for c in _calls(fake_mps)][-1] == "args=[] stdin=[quit]"
    assert not (fake_mps / "running").exists()
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ


def test_mps_daemon_running_already_is_left_alone(fake_mps):
    (fake_mps / "running").touch()
    with packing.mps_daemon() as on:
        assert on
    assert [c.split(" pipe=")[0] for c in _calls(fake_mps)] == ["args=[] stdin=[get_server_list]"]  # no -d, no quit
    assert (fake_mps / "running").exists()


def test_mps_daemon_absent_or_disabled(fake_mps, monkeypatch, tmp_path):
    with packing.mps_daemon(enabled=False) as on:
        assert not on
    assert _calls(fake_mps) == []
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    with packing.mps_daemon() as on:
        assert not on


# --------------------------------------------------------------------------- the launcher
def _jobs(steps=3):
    return make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=1,
                           n_trials=1, steps=steps, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS))


def _records(store: Path, job) -> list[dict]:
    return [json.loads(x) for x in (store / job.job_id / "results.jsonl").read_text().splitlines()]


def test_inline_sweep_records_packing(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs()[:1]
    status = run_sweep(jobs, store, progress=False, execution=ExecutionOptions(runs_per_gpu=2))  # no CUDA: ignored
    assert list(status["status"]) == ["done"]
    assert [r["packing"] for r in _records(store, jobs[0])] == [{"runs_per_device": 1, "mps": False, "batched": 1}] * 2


@pytest.fixture
def fake_devices(monkeypatch):
    """Two 'CUDA devices' that are the CPU, and a pool that runs inline (recording how it was asked to run)."""
    seen = []

    def fake_pool(units, store, data, options, policy, n_workers, bar, *, n_gpus=None, probe=False):
        seen.append({"workers": n_workers, "n_gpus": n_gpus, "probe": probe, "packing": options["extra_fields"],
                     "mps_env": "CUDA_MPS_PIPE_DIRECTORY" in os.environ})
        return launcher._run_inline(units, store, data, {**options, "device": "cpu"}, policy, bar)

    monkeypatch.setattr(launcher, "_cuda_devices", lambda device: ["cuda:0", "cuda:1"])
    monkeypatch.setattr(launcher, "_run_pool", fake_pool)
    return seen


def test_runs_per_gpu_packs_workers_under_mps(tmp_path, fake_devices, fake_mps):
    store = tmp_path / "store"
    jobs = _jobs()
    status = run_sweep(jobs, store, progress=False, execution=ExecutionOptions(runs_per_gpu=3))
    assert list(status["status"]) == ["done"] * 3
    assert fake_devices == [{"workers": 3, "n_gpus": 2, "probe": False, "mps_env": True,  # min(3 × 2, 3 jobs)
                             "packing": {"packing": {"runs_per_device": 3, "mps": True, "batched": 1}}}]
    assert _records(store, jobs[0])[0]["packing"] == {"runs_per_device": 3, "mps": True, "batched": 1}
    assert [c.split(" pipe=")[0] for c in _calls(fake_mps)][-1] == "args=[] stdin=[quit]"


def test_runs_per_gpu_auto_from_store_peak(tmp_path, fake_devices, monkeypatch):
    store = tmp_path / "store"
    jobs = _jobs()
    old = store / jobs[0].job_id  # a finished job of the sweep: its peak is used, no probe
    old.mkdir(parents=True)
    (old / "results.jsonl").write_text(json.dumps({"mem_gb": 1.0}) + "\n")
    (old / "done").write_text("1\n")
    monkeypatch.setattr(launcher, "_measure_free", lambda devices: [40 * GiB, 30 * GiB])
    monkeypatch.setattr(packing, "default_cap", lambda cpu_cores=None, n_devices=1: 64)
    n, units, probed = launcher._auto_runs_per_device(jobs[1:], store, None, {}, {}, None, ["cuda:0", "cuda:1"], jobs)
    assert (n, units, probed, fake_devices) == (13, jobs[1:], {}, [])  # floor(0.9 · 30 / 2): the smaller device


def test_runs_per_gpu_auto_probes_first(tmp_path, fake_devices, fake_mps, monkeypatch):
    store = tmp_path / "store"
    jobs = _jobs()
    monkeypatch.setattr(launcher, "_measure_free", lambda devices: [40 * GiB, 30 * GiB])
    monkeypatch.setattr(packing, "stored_peak_bytes",
                        lambda dirs: GiB if any((Path(d) / "done").exists() for d in dirs) else None)
    status = run_sweep(jobs, store, progress=False, execution=ExecutionOptions(runs_per_gpu="auto"))
    assert list(status["status"]) == ["done"] * 3
    probe, rest = fake_devices
    assert probe["probe"] and probe["workers"] == 1
    assert probe["packing"] == {"packing": {"runs_per_device": 1, "mps": False, "batched": 1}}
    n = min(packing.runs_per_device(30 * GiB, GiB, packing.default_cap(n_devices=2)), 8)
    assert rest["packing"]["packing"]["runs_per_device"] == n and rest["workers"] == min(2 * n, 2)
    assert _records(store, jobs[0])[0]["packing"]["runs_per_device"] == 1  # the probe ran alone
    assert _records(store, jobs[1])[0]["packing"]["runs_per_device"] == n
