"""The shared job store: claims, leases, takeovers, held jobs left alone, precision checked (in-process, fast)."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from _tiny import FAST_HPARAMS, TINY

from dganalysis.sweep import ClaimPolicy, ExecutionOptions, Sweep, make_jobs, run_sweep
from dganalysis.sweep.store import ClaimInfo, ClaimLost, job_state, read_claim, try_claim
from dganalysis.training.job import Job
from dganalysis.validation import ConfigError

pytestmark = pytest.mark.usefixtures("one_thread")


def _jobs(steps=3):
    return make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=1,
                           n_trials=1, steps=steps, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS))


def _foreign_claim(job_dir, age_s: float, lease_s: float = 5.0, host: str = "other-node"):
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / "claim").write_text(json.dumps({"host": host, "pid": 4242, "token": "t0", "started": 0.0,
                                               "lease_s": lease_s}))
    t = time.time() - age_s
    os.utime(job_dir / "claim", (t, t))


def test_claim_is_exclusive_renewed_and_released(tmp_path):
    d = tmp_path / "store" / "job"
    a = try_claim(d, lease_s=0.4)
    assert not isinstance(a, ClaimInfo)
    b = try_claim(d, lease_s=0.4)  # same process, other token: the live claim is respected
    assert isinstance(b, ClaimInfo) and b.token == a.token and b.pid == os.getpid()
    time.sleep(1.0)  # > 2 leases: only the heartbeat keeps it fresh
    info = read_claim(d)
    assert info.token == a.token and info.age() < 0.4 and not info.is_stale()
    a.check()
    a.release()
    assert read_claim(d) is None and isinstance(try_claim(d, lease_s=0.4), type(a))


def test_stale_claim_of_a_dead_node_is_taken_over_and_a_live_one_is_not(tmp_path):
    store = tmp_path / "store"
    _foreign_claim(store / "fresh", age_s=1.0)
    held = try_claim(store / "fresh")
    assert isinstance(held, ClaimInfo) and held.host == "other-node"
    _foreign_claim(store / "old", age_s=30.0)
    c = try_claim(store / "old")
    assert not isinstance(c, ClaimInfo)
    assert "takeover" in (store / "old" / "history.log").read_text() and "other-node:4242" in (
        store / "old" / "history.log").read_text()
    c.release()
    # a claim of this host whose process is gone is stale at once, whatever its lease
    _foreign_claim(store / "dead", age_s=0.0, lease_s=1e6, host=__import__("socket").gethostname())
    assert read_claim(store / "dead").is_stale()  # pid 4242 is (almost surely) not running here
    # an unreadable claim file (being written, or damaged) is respected for a default lease, then taken over
    (store / "torn").mkdir()
    (store / "torn" / "claim").write_text('{"host": "x", "pi')
    assert isinstance(try_claim(store / "torn"), ClaimInfo)
    os.utime(store / "torn" / "claim", (time.time() - 1e4, time.time() - 1e4))
    assert not isinstance(try_claim(store / "torn"), ClaimInfo)


def test_lost_claim_stops_the_job_without_writing(tmp_path):
    d = tmp_path / "store" / "job"
    c = try_claim(d, lease_s=60)
    (d / "claim").unlink()  # as if a runner took the job over after our lease ran out
    _foreign_claim(d, age_s=0.0)
    with pytest.raises(ClaimLost):
        c.check()
    c.release()
    assert read_claim(d).host == "other-node"  # release leaves the other runner's claim alone


def test_sweep_leaves_a_job_another_runner_holds(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs()
    held = jobs[1]
    (store / held.job_id).mkdir(parents=True)
    (store / held.job_id / "results.jsonl").write_text('{"step": 0}\n')  # the holder's partial work
    claim = try_claim(store / held.job_id, lease_s=60)
    assert job_state(held, store) == "running"
    assert list(run_sweep(jobs, store, dry_run=True, progress=False)["status"]) == ["pending", "running", "pending"]
    status = run_sweep(jobs, store, progress=False, claims=ClaimPolicy(wait=False))
    assert list(status["status"]) == ["done", "busy", "done"]
    assert (store / held.job_id / "results.jsonl").read_text() == '{"step": 0}\n'  # not cleared, not overwritten
    # with wait=True the sweep comes back to the job once the holder lets go (here: dies without finishing)
    threading.Timer(1.0, claim.release).start()
    t0 = time.time()
    status = run_sweep(jobs, store, progress=False, claims=ClaimPolicy(poll_s=0.2))
    assert list(status["status"]) == ["skipped", "done", "skipped"] and time.time() - t0 >= 0.9
    steps = [json.loads(x)["step"] for x in (store / held.job_id / "results.jsonl").read_text().splitlines()]
    assert steps == [0, 2]
    log = (store / held.job_id / "history.log").read_text()
    assert log.count(" start ") == 1 and log.count(" done ") == 1


def test_a_job_finished_by_another_runner_while_waiting_is_not_redone(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs()[:1]
    d = store / jobs[0].job_id
    claim = try_claim(d, lease_s=60)

    def finish():  # the holder finishes the job (empty records: any retraining here would show)
        (d / "results.jsonl").write_text("")
        (d / "done").write_text("1.0\n")
        claim.release()

    threading.Timer(0.6, finish).start()
    status = run_sweep(jobs, store, progress=False, claims=ClaimPolicy(poll_s=0.2))
    assert list(status["status"]) == ["skipped"] and (d / "results.jsonl").read_text() == ""


def test_precision_is_checked_against_finished_jobs(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs(steps=1)[:1]
    run_sweep(jobs, store, progress=False, execution=ExecutionOptions(precision="fp32"))
    assert run_sweep(jobs, store, progress=False, execution=ExecutionOptions(precision="fp32"))["status"].item() == "skipped"
    assert run_sweep(jobs, store, progress=False)["status"].item() == "skipped"  # auto reuses what is there
    with pytest.raises(ConfigError, match=r"another precision than the bf16.*fp32"):
        run_sweep(jobs, store, progress=False, execution=ExecutionOptions(precision="bf16"))


def test_store_that_is_a_file_is_an_error(tmp_path):
    f = tmp_path / "store"
    f.write_text("x")
    with pytest.raises(ConfigError, match="must be a folder"):
        run_sweep(_jobs()[:1], f, progress=False)
    with pytest.raises(ValueError, match="lease_s"):
        run_sweep(_jobs()[:1], tmp_path / "s", progress=False, claims=ClaimPolicy(lease_s=0))
    with pytest.raises(ConfigError, match="poll_s"):
        run_sweep(_jobs()[:1], tmp_path / "s", progress=False, claims=ClaimPolicy(poll_s=0))
    assert Job(TINY, "ERM", ["d0"], ["d1"]).job_id  # the spec module imports without the sweep package
