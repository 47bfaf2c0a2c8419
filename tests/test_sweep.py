"""Sweeps: job hashing, the job grid, YAML files, resume, failures, dry runs, launchers, CLI."""

from __future__ import annotations

import argparse
import json
import math

import pytest
from _tiny import DOMAINS, FAST_HPARAMS, TINY, TINY_FILE

from dganalysis.algorithms import register_algorithm
from dganalysis.algorithms.erm import ERM
from dganalysis.algorithms.registry import ALGORITHMS
from dganalysis.sweep import ExecutionOptions, Job, load_sweep_yaml, make_jobs, run_sweep
from dganalysis.sweep.cli import add_sweep_arguments, main_sweep
from dganalysis.validation import ConfigError

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
    return make_jobs(TINY, {}, list(algorithms), kw.pop("splits", "leave_one_out"), kw.pop("n_hparams", 1),
                     kw.pop("n_trials", 1), steps, 2, hparams_overrides=kw.pop("hparams_overrides", FAST_HPARAMS), **kw)


# --------------------------------------------------------------------------- jobs and grids
def test_job_id_is_stable_and_ignores_save_model():
    a = Job(TINY, "ERM", ["d0", "d1"], ["d2"], hparams_overrides={"lr": 1e-3, "batch_size": 8})
    b = Job(TINY, "ERM", ("d0", "d1"), ("d2",), hparams_overrides={"batch_size": 8, "lr": 1e-3}, save_model=True)
    assert a.job_id == b.job_id and len(a.job_id) == 16
    assert Job(TINY, "ERM", ["d0", "d1"], ["d2"], trial_seed=1).job_id != Job(TINY, "ERM", ["d0", "d1"], ["d2"]).job_id
    assert Job(TINY, "ERM", ["d1", "d0"], ["d2"]).job_id != Job(TINY, "ERM", ["d0", "d1"], ["d2"]).job_id
    d = json.loads(json.dumps(b.to_dict()))
    assert Job.from_dict(d) == b and Job.from_dict(d).job_id == b.job_id
    with pytest.raises(ValueError, match="two roles"):
        Job(TINY, "ERM", ["d0"], ["d0"])
    with pytest.raises(KeyError, match="unknown keys"):
        Job.from_dict({**d, "bogus": 1})
    with pytest.raises(ValueError, match="data_dir"):
        Job(TINY, "ERM", ["d0"], ["d1"], dataset_kwargs={"data_dir": "/x"})


def test_grid_sizes_for_every_split_kind():
    doms = ["a", "b", "c", "d"]
    loo = make_jobs(TINY, {}, ["ERM"], "leave_one_out", 2, 3, 10, 5, domains=doms)
    assert len(loo) == 4 * 2 * 3
    assert {j.test_domains for j in loo} == {("a",), ("b",), ("c",), ("d",)}
    logo = make_jobs(TINY, {}, ["ERM"], {"leave_one_group_out": 2}, 1, 1, 10, 5, domains=doms)
    assert len(logo) == math.comb(4, 2) == 6
    assert all(len(j.test_domains) == 2 and len(j.train_domains) == 2 for j in logo)
    assert len({j.job_id for j in logo}) == 6
    assert len(make_jobs(TINY, {}, ["ERM"], {"leave_one_group_out": 3}, 1, 1, 10, 5, domains=doms)) == 4
    explicit = [{"train": ["a", "b"], "test": ["d"]}, {"train": ["a", "b", "c"], "test": ["d"], "val": []}]
    ex = make_jobs(TINY, {}, ["ERM"], explicit, 1, 2, 10, 5, domains=doms)
    assert len(ex) == 4 and ex[0].train_domains == ("a", "b") and ex[2].train_domains == ("a", "b", "c")
    with pytest.raises(ValueError, match="unknown domains"):
        make_jobs(TINY, {}, ["ERM"], [{"train": ["a"], "test": ["zzz"]}], 1, 1, 10, 5, domains=doms)
    with pytest.raises(ValueError, match="leave_one_group_out k"):
        make_jobs(TINY, {}, ["ERM"], {"leave_one_group_out": 4}, 1, 1, 10, 5, domains=doms)
    with pytest.raises(ConfigError, match="algorithms: unknown algorithm"):
        make_jobs(TINY, {}, ["NoSuchAlgorithm"], "leave_one_out", 1, 1, 10, 5, domains=doms)
    # leave_one_out without given domains reads them from the dataset
    assert [j.test_domains[0] for j in _jobs()] == DOMAINS


def test_overrides_flat_and_per_algorithm():
    jobs = make_jobs(TINY, {}, ["ERM"], "leave_one_out", 1, 1, 10, 5, domains=["a", "b"],
                     hparams_overrides={"lr": 1e-4, "ERM": {"batch_size": 16}},
                     search_overrides={"lr": {"log10_uniform": [-4.5, -3]}})
    assert dict(jobs[0].hparams_overrides) == {"lr": 1e-4, "batch_size": 16}
    assert dict(jobs[0].search_overrides) == {"lr": {"log10_uniform": [-4.5, -3]}}
    with pytest.raises(ConfigError, match="belong to none"):
        make_jobs(TINY, {}, ["ERM"], "leave_one_out", 1, 1, 10, 5, domains=["a", "b"], hparams_overrides={"nope": 1})


def test_load_sweep_yaml(tmp_path):
    p = tmp_path / "sweep.yaml"
    p.write_text(
        f"dataset: {TINY}\nalgorithms: [ERM]\nsplits: {{leave_one_group_out: 2}}\nn_hparams: 2\nn_trials: 1\n"
        "steps: 7\ncheckpoint_freq: 3\nhparams_overrides: {featurizer: mlp}\nsave_model: true\n"
    )
    jobs = load_sweep_yaml(p)
    assert len(jobs) == 3 * 2 and all(j.steps == 7 and j.save_model for j in jobs)
    assert load_sweep_yaml(p, steps=9)[0].steps == 9
    bad = tmp_path / "bad.yaml"
    bad.write_text(p.read_text() + "stepz: 3\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*stepz"):
        load_sweep_yaml(bad)


# --------------------------------------------------------------------------- running
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


def test_cli_dry_run_and_run(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    base = ["--dataset", TINY, "--algorithms", "ERM", "--steps", "2", "--checkpoint-freq", "1",
            "--hparams-overrides", json.dumps(FAST_HPARAMS), "--store", str(tmp_path / "s")]
    assert main_sweep(parser.parse_args([*base, "--dry-run", "--splits", '{"leave_one_group_out": 2}'])) == 0
    out = capsys.readouterr().out
    assert "jobs: 3 pending" in out
    assert main_sweep(parser.parse_args([*base, "--splits", '[{"train": ["d0"], "test": ["d1"]}]', "--no-progress"])) == 0
    assert "1 done" in capsys.readouterr().out
