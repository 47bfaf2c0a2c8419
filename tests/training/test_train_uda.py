"""Domain adaptation in our default engine (``Job.task``, ``Job.uda_holdout_fraction``): DomainBed's experiment with
our draws. The ``uda`` split is DomainBed's (:func:`dganalysis.training.exact.exact_splits`, which the differential tests in
``tests/reference/test_domainbed_uda.py`` hold to DomainBed's ``train.py``), on both feed paths; the records carry
``env{k}_uda_acc``; an algorithm whose ``update`` takes ``unlabeled`` gets one batch per ``uda`` split each step,
others train as without it."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from _tiny import FAST_HPARAMS, TINY, build_tiny

from dganalysis.algorithms.erm import ERM
from dganalysis.algorithms.registry import ALGORITHMS
from dganalysis.sweep import Job
from dganalysis.training.exact import exact_splits
from dganalysis.training.train import make_splits, run_job, split_indices, uda_splits
from dganalysis.validation import ConfigError

pytestmark = pytest.mark.usefixtures("one_thread")


class _Unlabelled(ERM):
    """ERM that keeps the shapes of the unlabelled batches it is given."""

    seen: list[list[tuple[int, ...]]] = []

    def update(self, minibatches, step, unlabeled=None):
        type(self).seen.append([tuple(x.shape) for x in unlabeled] if unlabeled is not None else None)
        return super().update(minibatches, step)


@pytest.fixture(autouse=True, scope="module")
def _registered():
    ALGORITHMS.register("_EngineUnlabelled")(_Unlabelled)
    try:
        yield
    finally:
        ALGORITHMS._items.pop("_EngineUnlabelled", None)
        ALGORITHMS._tags.pop("_EngineUnlabelled", None)


def _job(**kw) -> Job:
    spec = dict(dataset=TINY, algorithm="ERM", train_domains=["d0", "d1"], test_domains=["d2"], steps=6,
                checkpoint_freq=5, hparams_overrides=FAST_HPARAMS)
    spec.update(kw)
    return Job(**spec)


def _records(job_dir) -> list[dict]:
    return [json.loads(line) for line in (job_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("mode", ["device", "stream"])
def test_uda_split_is_domainbeds_on_both_feed_paths(mode):
    ds = build_tiny()
    feed = make_splits(ds, 0.2, 3, torch.device("cpu"), False, seed=1, mode=mode, uda_domains=[2],
                       uda_holdout_fraction=0.3)
    try:
        assert [len(e) for e in feed] == [2, 2, 3] and uda_splits(feed) == [feed[2][2]]
        for i, entry in enumerate(feed):
            in_idx, out_idx, uda_idx = exact_splits(48, 0.2, 3, i, i == 2, 0.3)
            assert len(uda_idx) == (int(39 * 0.3) if i == 2 else 0)
            for split, idx in zip(entry, (in_idx, out_idx, uda_idx)):
                assert torch.equal(split.labels, torch.from_numpy(ds.domains[i].labels[idx]))
                if mode == "stream":
                    assert np.array_equal(split.index, idx)
                else:
                    assert torch.equal(split.images, torch.from_numpy(ds.domains[i].images[idx]))
    finally:
        feed.close()
    plain = make_splits(ds, 0.2, 3, torch.device("cpu"), False, uda_domains=[2], uda_holdout_fraction=0.0)
    assert [len(e) for e in plain] == [2, 2, 2]  # at 0 the in split keeps its order (records unchanged)
    assert torch.equal(plain[2][0].labels, torch.from_numpy(ds.domains[2].labels[split_indices(48, 0.2,
                                                                                              _seed(3, 2))[0]]))


def _seed(trial_seed: int, i: int) -> int:
    from dganalysis.training.hparams import seed_hash

    return seed_hash(trial_seed, i)


def test_domain_adaptation_feeds_an_algorithm_that_takes_unlabelled_batches(tmp_path):
    _Unlabelled.seen.clear()
    da = _records(run_job(_job(algorithm="_EngineUnlabelled", task="domain_adaptation", uda_holdout_fraction=0.5),
                          tmp_path / "da", device="cpu"))
    assert _Unlabelled.seen == [[(8, 1, 16, 16)]] * 6  # one batch of the one uda split each step
    assert {k for k in da[0] if k.endswith("_acc")} == {f"env{i}_{s}_acc" for i in range(3) for s in ("in", "out")} \
        | {"env0_uda_acc"}  # DomainBed's name: the first uda split, whatever its domain
    assert da[0]["args"]["task"] == "domain_adaptation" and da[0]["args"]["uda_holdout_fraction"] == 0.5
    _Unlabelled.seen.clear()
    dg = _records(run_job(_job(algorithm="_EngineUnlabelled", uda_holdout_fraction=0.5), tmp_path / "dg",
                          device="cpu"))
    assert _Unlabelled.seen == [None] * 6 and "env0_uda_acc" in dg[0] and dg[0]["args"]["task"] == \
        "domain_generalization"


def test_job_fields_keep_old_ids_and_seeds():
    """``task`` and ``uda_holdout_fraction`` at their defaults stay out of the spec (earlier jobs keep their ids);
    they are never part of the torch seed (DomainBed's sweep seeds a run without them)."""
    base = Job(TINY, "ERM", ["d0", "d1"], ["d2"])
    same = Job(TINY, "ERM", ["d0", "d1"], ["d2"], task="domain_generalization", uda_holdout_fraction=0)
    assert base.job_id == same.job_id and "task" not in base.to_dict() and "uda_holdout_fraction" not in base.to_dict()
    da = Job(TINY, "ERM", ["d0", "d1"], ["d2"], task="domain_adaptation", uda_holdout_fraction=0.5)
    assert da.job_id != base.job_id and da.seed_key == base.seed_key and Job.from_dict(da.to_dict()) == da
    with pytest.raises(ValueError, match="Job.task"):
        Job(TINY, "ERM", ["d0", "d1"], ["d2"], task="adaptation")
    with pytest.raises(ValueError, match="Job.uda_holdout_fraction"):
        Job(TINY, "ERM", ["d0", "d1"], ["d2"], uda_holdout_fraction=1.0)


def test_an_algorithm_without_unlabeled_trains_as_in_domain_generalization(tmp_path):
    """ERM ignores the uda batches, so none are drawn: the same numbers under either task (the same seed, the
    uda batches from a generator of their own)."""
    da = _records(run_job(_job(task="domain_adaptation", uda_holdout_fraction=0.5), tmp_path / "da", device="cpu"))
    dg = _records(run_job(_job(uda_holdout_fraction=0.5), tmp_path / "dg", device="cpu"))
    numbers = [k for k in da[0] if k == "loss" or k.endswith("_acc")]
    assert "env0_uda_acc" in numbers
    assert [[r[k] for k in numbers] for r in da] == [[r[k] for k in numbers] for r in dg]


def test_domain_adaptation_without_a_uda_split_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="not enough unlabeled samples"):
        run_job(_job(task="domain_adaptation", uda_holdout_fraction=0.01), tmp_path / "j", device="cpu")


def test_class_balanced_draws_the_uda_batches_balanced_too(tmp_path):
    """DomainBed gives its uda loaders class-balanced weights too (``make_weights_for_balanced_classes(uda)``)."""
    from dganalysis.training.train import build_data, make_runtime

    job = _job(task="domain_adaptation", uda_holdout_fraction=0.5,
               hparams_overrides={**FAST_HPARAMS, "class_balanced": True})
    data = build_data(job, None, make_runtime("cpu", "fp32", None, 1))
    try:
        (uda,) = uda_splits(data.splits)
        assert uda.sample_weights is not None and all(s.sample_weights is not None for s in data.train_splits)
    finally:
        data.splits.close()
