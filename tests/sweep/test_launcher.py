"""Running sweeps: dry runs, resume after a kill, failed jobs, the local process pool, submitit."""

from __future__ import annotations

import json

import pytest
from _tiny import FAST_HPARAMS, TINY, TINY_FILE

from dganalysis.algorithms import register_algorithm
from dganalysis.algorithms.erm import ERM
from dganalysis.algorithms.registry import ALGORITHMS
from dganalysis.sweep import ExecutionOptions, Job, Sweep, make_jobs, run_sweep

if "_EngineRaise" not in ALGORITHMS:

    @register_algorithm("_EngineRaise")
    class _RaisingAlgorithm(ERM):
        """ERM that crashes at its second update."""

        def update(self, minibatches, step):
            if step >= 1:
                raise RuntimeError("simulated crash inside update")
            return super().update(minibatches, step)


pytestmark = pytest.mark.usefixtures("one_thread")


def _jobs(algorithms=("ERM",), steps=4, **kw):
    return make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=list(algorithms), splits=kw.pop("splits",
                           "leave_one_out"), n_hparams=kw.pop("n_hparams", 1), n_trials=kw.pop("n_trials", 1),
                           steps=steps, checkpoint_freq=2, hparams_overrides=kw.pop("hparams_overrides", FAST_HPARAMS),
                           **kw))


def test_dry_run_trains_nothing(tmp_path):
    status = run_sweep(_jobs(), tmp_path / "store", dry_run=True, progress=False)
    assert list(status["status"]) == ["pending"] * 3
    assert not (tmp_path / "store").exists()


def test_resume_skips_done_and_redoes_partial(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs()
    first = run_sweep(jobs, store, progress=False)
    assert list(first["status"]) == ["done"] * 3
    stamps = {j.job_id: (store / j.job_id / "done").stat().st_mtime_ns for j in jobs}
    # simulate a kill: job 1 lost its done file and holds a torn record; job 2 is a bare folder
    killed, bare = jobs[1], jobs[2]
    (store / killed.job_id / "done").unlink()
    with open(store / killed.job_id / "results.jsonl", "a") as fh:
        fh.write('{"step": 3, "torn')
    for f in (store / bare.job_id).iterdir():
        f.unlink()
    assert list(run_sweep(jobs, store, dry_run=True, progress=False)["status"]) == ["done", "pending", "pending"]
    second = run_sweep(jobs, store, progress=False)
    assert list(second["status"]) == ["skipped", "done", "done"]
    assert (store / jobs[0].job_id / "done").stat().st_mtime_ns == stamps[jobs[0].job_id]  # not retrained
    for j in (killed, bare):
        lines = (store / j.job_id / "results.jsonl").read_text().splitlines()
        assert [json.loads(x)["step"] for x in lines] == [0, 2, 3]  # fresh records, torn line gone
    # a job that now asks for its model is redone once, then skipped
    with_model = [Job.from_dict({**jobs[0].to_dict(), "save_model": True})]
    assert list(run_sweep(with_model, store, progress=False)["status"]) == ["done"]
    assert (store / jobs[0].job_id / "model.pt").is_file()
    assert list(run_sweep(with_model, store, progress=False)["status"]) == ["skipped"]


def test_failed_job_is_recorded_and_sweep_goes_on(tmp_path):
    store = tmp_path / "store"
    jobs = _jobs(algorithms=["_EngineRaise", "ERM"])
    status = run_sweep(jobs, store, progress=False)
    by_alg = status.groupby("algorithm")["status"].agg(set).to_dict()
    assert by_alg == {"_EngineRaise": {"failed"}, "ERM": {"done"}}
    bad = jobs[0]
    text = (store / bad.job_id / "failed").read_text()
    assert "Traceback" in text and "simulated crash inside update" in text
    assert not (store / bad.job_id / "done").exists()
    assert "RuntimeError" in status.loc[status.job_id == bad.job_id, "error"].item()
    # without retry, failed jobs stay failed and nothing is run again
    again = run_sweep(jobs, store, progress=False, retry_failed=False)
    assert sorted(set(again["status"])) == ["failed", "skipped"]


@pytest.mark.slow  # spawns two worker processes (each imports torch): ~10 s, more on a loaded machine
def test_local_process_pool(tmp_path):
    jobs = _jobs(steps=2)[:2]
    status = run_sweep(jobs, tmp_path / "store", n_workers=2, execution=ExecutionOptions(imports=[TINY_FILE]),
                        progress=False)
    assert list(status["status"]) == ["done", "done"], status["error"].tolist()
    from dganalysis.sweep.store import stored_threads
    from dganalysis.threads import launcher_share

    for j in jobs:
        assert (tmp_path / "store" / j.job_id / "done").is_file()
        assert stored_threads(tmp_path / "store" / j.job_id) == launcher_share(2)  # each worker's share, recorded


@pytest.mark.parametrize(
    "cluster",
    ["debug", pytest.param("local", marks=pytest.mark.slow)],  # local: a subprocess per job, like a Slurm node
)
def test_submitit_round_trip(tmp_path, cluster):
    pytest.importorskip("submitit")
    jobs = _jobs(steps=2)[:1]
    status = run_sweep(jobs, tmp_path / "store", launcher="slurm", execution=ExecutionOptions(imports=[TINY_FILE]),
                       progress=False,
                       slurm={"cluster": cluster, "timeout_min": 5})
    assert list(status["status"]) == ["done"], status["error"].tolist()
    recs = (tmp_path / "store" / jobs[0].job_id / "results.jsonl").read_text().splitlines()
    assert [json.loads(r)["step"] for r in recs] == [0, 1]
    from dganalysis.threads import launcher_share

    assert {json.loads(r)["threads"] for r in recs} == {launcher_share(1)}  # the task's cores
