"""Reproducible by default: a CPU job's records depend on its configuration, never on how busy the machine was.

The thread count is fixed when the job starts (the launcher's share of the cores or ``$DGANALYSIS_THREADS``),
recorded as ``threads``, and the store refuses to reuse a finished job recorded on another count unless asked.
Runs with every core busy use real busy-loop processes beside the job. No timed assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _tiny import TINY, TINY_FILE

from dganalysis import threads
from dganalysis.sweep import ExecutionOptions, Job, run_sweep
from dganalysis.sweep.store import stored_threads
from dganalysis.training.train import computed_part, run_job
from dganalysis.validation import ConfigError

CPU = ExecutionOptions(device="cpu")
#: the stated tolerance between records computed on 1 and on 2 threads (a 6-step tiny job; docs/reproducibility.md)
REL, ABS = 1e-4, 1e-6


@pytest.fixture(autouse=True)
def _restore(monkeypatch):
    monkeypatch.delenv(threads.THREADS_ENV, raising=False)
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _job(**kw) -> Job:
    """3 steps of a 16-px smallcnn_bn at batch 32 (records at steps 0 and 2): in fp32 its loss on 1 and on 2 threads
    differs in the last bits on every CPU kind this project runs on (batch norm's backward and the convolutions'
    weight gradients are summed per thread by oneDNN under AVX2, AVX-512 and AMX dispatch alike; the 16-px smallcnn
    without batch norm differs under AVX-512 but not under AVX2), so byte-identity at a fixed count is not an
    accident (:func:`test_thread_counts_change_the_last_bits_of_the_job`)."""
    return Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=3, checkpoint_freq=2,
               hparams_overrides={"featurizer": "smallcnn_bn", "batch_size": 32}, **kw)


#: a job idle, then with one busy-loop process per usable core, in a fresh process with a launcher worker's
#: environment (its OpenMP runtime reads the waiting policy when torch loads); prints both records
_CHILD = """
import json, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from _tiny import TINY
from dganalysis import threads
from dganalysis.sweep import Job
from dganalysis.training.train import computed_part, run_job
job, n, out = Job.from_dict(json.loads(sys.argv[2])), int(sys.argv[3]), Path(sys.argv[4])
run_job(job, out / "idle", device="cpu", precision="fp32", threads=n)
busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(threads.usable_cores())]
try:
    time.sleep(0.3)
    with open("/proc/loadavg") as f:
        print("runnable while busy:", f.read().split()[3])
    run_job(job, out / "busy", device="cpu", precision="fp32", threads=n)
finally:
    for p in busy:
        p.kill()
"""


def _records(job_dir: Path) -> list[str]:
    """The records as written (key order kept), minus the clock, machine and folder fields."""
    return [json.dumps(computed_part(json.loads(line)))
            for line in (Path(job_dir) / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("n", [1, 2])
def test_same_job_idle_and_with_every_core_busy_gives_byte_identical_records(tmp_path, n):
    env = {k: v for k, v in os.environ.items() if k != threads.THREADS_ENV}
    with threads.worker_environment():
        env.update({k: os.environ[k] for k in threads.WAIT_POLICY})
    tests = str(Path(__file__).parent)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tests).parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", _CHILD, tests, json.dumps(_job().to_dict()), str(n), str(tmp_path)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    idle, busy = _records(tmp_path / "idle"), _records(tmp_path / "busy")
    assert len(idle) == 2 and all(json.loads(r)["threads"] == n for r in idle)
    assert idle == busy


def _one_and_two_threads(tmp_path: Path) -> dict[int, list[dict]]:
    job = _job()
    recs = {n: [json.loads(r) for r in _records(run_job(job, tmp_path / str(n), device="cpu", precision="fp32",
                                                        threads=n))]
            for n in (1, 2)}
    assert [r.pop("threads") for r in recs[1]] == [1, 1] and [r.pop("threads") for r in recs[2]] == [2, 2]
    return recs


def test_two_threads_and_one_thread_agree_to_the_stated_tolerance(tmp_path):
    """The job's records on 1 and on 2 threads agree to REL/ABS after a few steps (equal is within it too)."""
    recs = _one_and_two_threads(tmp_path)
    for a, b in zip(recs[1], recs[2]):
        assert a.keys() == b.keys()
        for k, v in a.items():
            if isinstance(v, float):
                assert v == pytest.approx(b[k], rel=REL, abs=ABS), k
            else:
                assert v == b[k], k


#: the kernels' dispatch capped at AVX2, as on a CPU without AVX-512 (AMD Zen 3): oneDNN's and ATen's own switches
AVX2_DISPATCH = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}

_DIFFER_CHILD = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import test_reproducible as t
recs = t._one_and_two_threads(Path(sys.argv[2]))
print(json.dumps(recs[1] != recs[2]))
"""


@pytest.mark.parametrize("dispatch", ["native", "avx2"])
def test_thread_counts_change_the_last_bits_of_the_job(tmp_path, dispatch):
    """The byte-identity tests above prove something only if 1 and 2 threads give other bytes on their job: checked
    with this CPU's own kernels and with the dispatch capped at AVX2 (what a CPU without AVX-512 runs). A CPU whose
    kernels sum in the same order on any count skips, naming itself: there the property cannot be shown."""
    from dganalysis.provenance import cpu_kind

    tests = str(Path(__file__).parent)
    env = {**{k: v for k, v in os.environ.items() if k != threads.THREADS_ENV}, **(AVX2_DISPATCH if dispatch == "avx2" else {})}
    env["PYTHONPATH"] = os.pathsep.join([tests, str(Path(tests).parent), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", _DIFFER_CHILD, tests, str(tmp_path)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    if not json.loads(out.stdout.strip().splitlines()[-1]):
        pytest.skip(f"on {cpu_kind()} ({dispatch} dispatch) 1 and 2 threads give identical records for this job: "
                    "the byte-identity tests are shown to matter on kinds where they differ")


def test_a_sweep_records_its_workers_share_and_the_job_id_ignores_it(tmp_path, monkeypatch):
    job = _job()
    monkeypatch.setattr(threads, "usable_cores", lambda affinity=None, quota=None: 2)
    run_sweep([job], tmp_path / "s", n_workers=2, progress=False,
              execution=ExecutionOptions(device="cpu", imports=[TINY_FILE]))
    assert stored_threads(tmp_path / "s" / job.job_id) == 1  # usable cores // 2 workers (one job: run inline)
    spec = json.loads((tmp_path / "s" / job.job_id / "spec.json").read_text())
    assert "threads" not in spec and Job.from_dict(spec).job_id == job.job_id
    from dganalysis.records import load

    df = load(tmp_path / "s")
    assert "threads" not in df["setting"].iloc[0]  # not part of the setting selection groups by


def test_the_store_refuses_to_reuse_a_job_recorded_on_another_count(tmp_path, monkeypatch):
    job, store = _job(), tmp_path / "s"
    monkeypatch.setenv(threads.THREADS_ENV, "1")
    first = run_sweep([job], store, progress=False, execution=CPU)
    assert list(first["status"]) == ["done"]
    done_before = (store / job.job_id / "done").read_text()
    monkeypatch.setenv(threads.THREADS_ENV, "2")  # as a process that would use two threads
    with pytest.raises(ConfigError, match=r"another number of CPU threads.*2 this sweep.*\(1\)"):
        run_sweep([job], store, progress=False, execution=CPU)
    monkeypatch.delenv(threads.THREADS_ENV)
    monkeypatch.setattr(threads, "usable_cores", lambda affinity=None, quota=None: 2)
    with pytest.raises(ConfigError, match=r"2 usable cores // 1 workers"):  # --workers 1 on 2 cores: 2 threads
        run_sweep([job], store, n_workers=1, progress=False, execution=CPU)
    mixed = ExecutionOptions(device="cpu", mixed_threads=True)  # asked for
    again = run_sweep([job], store, n_workers=1, progress=False, execution=mixed)
    assert list(again["status"]) == ["skipped"]
    same = run_sweep([job], store, n_workers=2, progress=False, execution=CPU)  # 2 // 2 = the recorded count
    assert list(same["status"]) == ["skipped"]
    assert (store / job.job_id / "done").read_text() == done_before  # never retrained


def test_a_job_found_finished_on_another_count_is_not_reused_by_a_runner(tmp_path):
    from dganalysis.sweep.launcher import execute_job

    job = _job()
    d = run_job(job, tmp_path / job.job_id, device="cpu", threads=1)
    res = execute_job(job.to_dict(), str(d), options={"device": "cpu", "threads": 2})
    assert res["status"] == "failed" and "finished with threads=1" in res["error"]
    res = execute_job(job.to_dict(), str(d), options={"device": "cpu", "threads": 2}, policy={"mixed_threads": True})
    assert res["status"] == "skipped"


def test_stored_threads_reads_every_record(tmp_path):
    d = tmp_path / "job"
    d.mkdir()
    assert stored_threads(d) is None  # no records
    (d / "results.jsonl").write_text('{"step": 0, "precision": "fp32"}\n')
    assert stored_threads(d) is None  # written before the count was recorded
    (d / "results.jsonl").write_text('{"step": 0, "threads": 2}\n{"step": 5, "threads": 2}\n{"ste')
    assert stored_threads(d) == 2  # a torn last line is the reader's business
    (d / "results.jsonl").write_text('{"step": 0, "threads": 2}\n{"step": 5, "threads": 1}\n')
    with pytest.raises(ValueError, match=r"different thread counts \[1, 2\]"):
        stored_threads(d)


def test_workers_get_the_waiting_policy_before_torch_starts(tmp_path, monkeypatch):
    """A launcher worker's environment holds the waiting policy (read by its OpenMP runtime when torch loads)."""
    from dganalysis.sweep import launcher

    monkeypatch.setattr(threads, "WAIT_POLICY", {"GOMP_SPINCOUNT": "10000"})  # whatever the measured choice is
    for k in threads.WAIT_POLICY:
        monkeypatch.delenv(k, raising=False)
    seen = {}

    class FakePool:
        def __init__(self, *a, **k):
            seen.update({k: os.environ.get(k) for k in threads.WAIT_POLICY})
            seen["threads"] = k["initargs"][0]

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(launcher.cf, "ProcessPoolExecutor", FakePool)
    monkeypatch.setattr(launcher, "_drive", lambda *a, **k: {})
    launcher._run_pool([], tmp_path, None, {"threads": 3}, {}, 2, None)
    assert seen == {**threads.WAIT_POLICY, "threads": 3}
    assert not any(k in os.environ for k in threads.WAIT_POLICY)  # this process's environment restored
