"""The batched engine: M ERM jobs as one vmapped model give each job's ``run_job`` records (fp32 tolerance), and
jobs that cannot share a batch are refused by name.

Tolerance: losses and saved weights relative 1e-5 (measured ≤ 1e-7 here after 6 steps of the tiny MLP): a vmapped
linear layer is a batched matrix product whose sums are ordered unlike ``torch.mm``'s, so fp32 results differ in
the last bits, which Adam's steps carry forward; accuracies are counts and come out equal (a prediction would have
to sit on a near-tie to flip)."""

from __future__ import annotations

import json

import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis.sweep import ExecutionOptions, run_sweep
from dganalysis.sweep.batched import BatchRefused, batch_key, check_batch, plan_batches, run_batched
from dganalysis.training.job import Job
from dganalysis.training.train import computed_part, run_job

pytestmark = pytest.mark.usefixtures("one_thread")
REL = 1e-5
COMMON = dict(dataset=TINY, algorithm="ERM", steps=6, checkpoint_freq=3)


def _job(train=("d0", "d1"), test=("d2",), **kw) -> Job:
    hp = {**FAST_HPARAMS, **kw.pop("hp", {})}
    return Job(train_domains=list(train), test_domains=list(test), hparams_overrides=hp, **{**COMMON, **kw})


def _three() -> list[Job]:
    # seeds, trials, test domains, lr and weight decay differ; shapes agree
    return [_job(save_model=True),
            _job(trial_seed=1, hp={"lr": 3e-3, "weight_decay": 1e-4}),
            _job(train=("d1", "d2"), test=("d0",), trial_seed=2, hp={"lr": 5e-4})]


def _records(d) -> list[dict]:
    return [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]


def test_batched_records_match_run_job(tmp_path):
    jobs = _three()
    out = run_batched(jobs, [tmp_path / f"b{i}" for i in range(3)], precision="fp32", threads=1)
    assert out == {j.job_id: None for j in jobs}
    for i, job in enumerate(jobs):
        run_job(job, tmp_path / f"a{i}", precision="fp32", threads=1)
        alone, batched = _records(tmp_path / f"a{i}"), _records(tmp_path / f"b{i}")
        assert [r["step"] for r in batched] == [r["step"] for r in alone] == [0, 3, 5]
        for ra, rb in zip(alone, batched):
            assert rb["packing"] == {"runs_per_device": 1, "mps": False, "batched": 3}
            ca, cb = computed_part(ra), computed_part(rb)
            assert cb["loss"] == pytest.approx(ca["loss"], rel=REL)
            assert {k: v for k, v in cb.items() if k != "loss"} == {k: v for k, v in ca.items() if k != "loss"}
        assert (tmp_path / f"b{i}" / "done").exists()
    ma = torch.load(tmp_path / "a0" / "model.pt", weights_only=False)["state_dict"]
    mb = torch.load(tmp_path / "b0" / "model.pt", weights_only=False)["state_dict"]
    assert ma.keys() == mb.keys()
    for k in ma:
        torch.testing.assert_close(mb[k], ma[k], rtol=REL, atol=1e-6)


def test_mismatched_shapes_are_refused(tmp_path):
    base = _job()
    with pytest.raises(BatchRefused, match="differ from job"):
        check_batch([base, _job(hp={"batch_size": 4})])  # another batch size: another input shape
    with pytest.raises(BatchRefused, match="differ from job"):
        check_batch([base, _job(hp={"featurizer": "smallcnn"})])  # another network
    with pytest.raises(BatchRefused, match="algorithm CORAL: the batched engine trains ERM only"):
        check_batch([base, _job(algorithm="CORAL")])
    with pytest.raises(BatchRefused, match="resnet_dropout=0.1: dropout"):
        check_batch([base, _job(hp={"resnet_dropout": 0.1})])
    with pytest.raises(BatchRefused, match="optimizer 'sgd'"):
        check_batch([base, _job(hp={"optimizer": "sgd"})])
    with pytest.raises(BatchRefused, match="batched runs refused"):
        run_batched([base, _job(hp={"batch_size": 4})], [tmp_path / "x", tmp_path / "y"])
    assert not (tmp_path / "x").exists()  # refused before any folder is written


def test_domainbed_exact_never_batched():
    exact = _job(domainbed_exact=True)
    assert batch_key(exact) is None
    with pytest.raises(BatchRefused, match="domainbed_exact .* never batched"):
        check_batch([_job(), exact])


def test_plan_batches_groups_compatible_jobs():
    a, b, c, d = (_job(trial_seed=t) for t in range(4))
    coral, other_bs = _job(algorithm="CORAL"), _job(hp={"batch_size": 4})
    assert plan_batches([a, coral, b, other_bs, c, d], 3) == [[a, b, c], d, coral, other_bs]  # a group's chunks where it starts
    assert plan_batches([a, b], 1) == [a, b]


def test_sweep_batch_runs(tmp_path):
    store = tmp_path / "store"
    jobs = [*_three()[1:], _job(algorithm="CORAL")]
    opts = ExecutionOptions(precision="fp32", batch_runs=4)
    status = run_sweep(jobs, store, progress=False, execution=opts)
    assert list(status["status"]) == ["done"] * 3
    packs = [_records(store / j.job_id)[0]["packing"]["batched"] for j in jobs]
    assert packs == [2, 2, 1]
    again = run_sweep(jobs, store, progress=False, execution=opts)
    assert list(again["status"]) == ["skipped"] * 3


def test_groupnorm_convnet_batches(tmp_path):
    """A GroupNorm CNN (as DomainBed's MNIST CNN) under vmap: the stacked weights are contiguous (vmap cannot ask
    GroupNorm's channels_last question); the first record's loss is the job's own (later ones drift by Adam's sign
    sensitivity, see the module doc)."""
    jobs = [_job(hp={"featurizer": "smallcnn"}, steps=2, checkpoint_freq=5),
            _job(hp={"featurizer": "smallcnn", "lr": 2e-3}, trial_seed=1, steps=2, checkpoint_freq=5)]
    assert run_batched(jobs, [tmp_path / "b0", tmp_path / "b1"], precision="fp32", threads=1) == {
        j.job_id: None for j in jobs}
    run_job(jobs[1], tmp_path / "a1", precision="fp32", threads=1)
    alone, batched = _records(tmp_path / "a1"), _records(tmp_path / "b1")
    assert [r["step"] for r in batched] == [0, 1]
    assert batched[0]["loss"] == pytest.approx(alone[0]["loss"], rel=REL)


def test_jobs_evaluated_on_held_out_splits_batched_record_what_they_record_alone(tmp_path):
    """Each run of a batch evaluates the splits its own job keeps (``evaluate_splits``): a ``"held_out"`` job and an
    ``"all"`` job batch together, and each one's accuracies are those it records alone."""
    jobs = [_job(evaluate_splits="held_out"), _job(trial_seed=1)]
    assert plan_batches(jobs, 2) == [jobs]
    run_batched(jobs, [tmp_path / "b0", tmp_path / "b1"], precision="fp32", threads=1)
    for i, job in enumerate(jobs):
        alone = _records(run_job(job, tmp_path / f"a{i}", precision="fp32", threads=1))
        batched = _records(tmp_path / f"b{i}")
        accs = [[k for k in r if k.endswith("_acc")] for r in (*alone, *batched)]
        assert all(a == accs[0] for a in accs) and len(accs[0]) == (4 if i == 0 else 6), accs[0]
        for a, b in zip(alone, batched, strict=True):
            assert {k: b[k] for k in accs[0]} == {k: a[k] for k in accs[0]}


def test_jobs_evaluated_at_their_last_step_batch_apart_and_record_it_alone(tmp_path):
    last = [_job(evaluate_at="last"), _job(evaluate_at="last", trial_seed=1)]
    with pytest.raises(BatchRefused, match="differ from job"):
        check_batch([_job(), last[0]])
    assert plan_batches([_job(), *last], 3) == [_job(), last]
    run_batched(last, [tmp_path / "b0", tmp_path / "b1"], precision="fp32", threads=1)
    for i, job in enumerate(last):
        alone = _records(run_job(job, tmp_path / f"a{i}", precision="fp32", threads=1))
        batched = _records(tmp_path / f"b{i}")
        assert [r["step"] for r in batched] == [r["step"] for r in alone] == [5]
        ca, cb = computed_part(alone[0]), computed_part(batched[0])
        assert cb["loss"] == pytest.approx(ca["loss"], rel=REL)
        assert {k: v for k, v in cb.items() if k != "loss"} == {k: v for k, v in ca.items() if k != "loss"}
