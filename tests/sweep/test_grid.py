"""Job grids: job ids, the grid for every kind of split, hparams overrides, sweep YAML files."""

from __future__ import annotations

import json
import math

import pytest
from _tiny import DOMAINS, TINY

from dganalysis.sweep import Job, Sweep, load_sweep_yaml, make_jobs
from dganalysis.validation import ConfigError


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
    loo = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=2,
                          n_trials=3, steps=10, checkpoint_freq=5), domains=doms)
    assert len(loo) == 4 * 2 * 3
    assert {j.test_domains for j in loo} == {("a",), ("b",), ("c",), ("d",)}
    logo = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits={"leave_one_group_out": 2},
                           n_hparams=1, n_trials=1, steps=10, checkpoint_freq=5), domains=doms)
    assert len(logo) == math.comb(4, 2) == 6
    assert all(len(j.test_domains) == 2 and len(j.train_domains) == 2 for j in logo)
    assert len({j.job_id for j in logo}) == 6
    assert len(make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits={"leave_one_group_out": 3},
                               n_hparams=1, n_trials=1, steps=10, checkpoint_freq=5), domains=doms)) == 4
    explicit = [{"train": ["a", "b"], "test": ["d"]}, {"train": ["a", "b", "c"], "test": ["d"], "val": []}]
    ex = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits=explicit, n_hparams=1, n_trials=2,
                         steps=10, checkpoint_freq=5), domains=doms)
    assert len(ex) == 4 and ex[0].train_domains == ("a", "b") and ex[2].train_domains == ("a", "b", "c")
    with pytest.raises(ValueError, match="unknown domains"):
        make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits=[{"train": ["a"],
                        "test": ["zzz"]}], n_hparams=1, n_trials=1, steps=10, checkpoint_freq=5), domains=doms)
    with pytest.raises(ValueError, match="leave_one_group_out k"):
        make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits={"leave_one_group_out": 4},
                        n_hparams=1, n_trials=1, steps=10, checkpoint_freq=5), domains=doms)
    with pytest.raises(ConfigError, match="algorithms: unknown algorithm"):
        make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["NoSuchAlgorithm"], splits="leave_one_out",
                        n_hparams=1, n_trials=1, steps=10, checkpoint_freq=5), domains=doms)
    # leave_one_out without given domains reads them from the dataset
    assert [j.test_domains[0] for j in make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"],
                                                       splits="leave_one_out", n_hparams=1, n_trials=1, steps=4,
                                                       checkpoint_freq=2))] == DOMAINS


def test_overrides_flat_and_per_algorithm():
    jobs = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=1,
                           n_trials=1, steps=10, checkpoint_freq=5, hparams_overrides={"lr": 1e-4,
                           "ERM": {"batch_size": 16}}, search_overrides={"lr": {"log10_uniform": [-4.5, -3]}}),
                           domains=["a", "b"])
    assert dict(jobs[0].hparams_overrides) == {"lr": 1e-4, "batch_size": 16}
    assert dict(jobs[0].search_overrides) == {"lr": {"log10_uniform": [-4.5, -3]}}
    with pytest.raises(ConfigError, match="belong to none"):
        make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=1,
                        n_trials=1, steps=10, checkpoint_freq=5, hparams_overrides={"nope": 1}), domains=["a", "b"])


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
