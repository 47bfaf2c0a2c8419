"""DomainBed's ``class_balanced`` hparam: its per-example weights, class-balanced draws on both feed paths, and
the trainer switching it on for the training splits only."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis.data import balanced
from dganalysis.data.feed import DeviceSplit
from dganalysis.data.pipeline import PlainPipeline
from dganalysis.training.job import Job
from dganalysis.training.train import run_job

pytestmark = pytest.mark.usefixtures("one_thread")

LABELS = np.array([0] * 90 + [1] * 10 + [2] * 20)


def test_weights_are_domainbeds_formula():
    w = balanced.class_balanced_weights(LABELS)
    assert torch.allclose(w[:90], torch.full((90,), 1 / (90 * 3), dtype=torch.float64))
    assert torch.allclose(w[90:100], torch.full((10,), 1 / (10 * 3), dtype=torch.float64))
    assert abs(float(w.sum()) - 1.0) < 1e-12  # each present class carries 1/n_classes
    with pytest.raises(ValueError, match="class_balanced: expected a non-empty 1-D label vector"):
        balanced.class_balanced_weights(np.zeros((0,), np.int64))


def _split() -> DeviceSplit:
    images = np.zeros((len(LABELS), 1, 2, 2), np.uint8)
    return DeviceSplit(images, LABELS, torch.device("cpu"), False, PlainPipeline())


def _class_shares(split: DeviceSplit, n: int = 6000) -> np.ndarray:
    g = torch.Generator().manual_seed(0)
    y = torch.cat([split.sample(200, g)[1] for _ in range(n // 200)]).numpy()
    return np.bincount(y, minlength=3) / len(y)


def test_device_split_draws_balanced_classes():
    split = _split()
    uniform = _class_shares(split)
    assert abs(uniform[0] - 0.75) < 0.03  # uniform over examples: 90 of 120 are class 0
    balanced.use_class_balanced([split])
    shares = _class_shares(split)
    assert np.all(np.abs(shares - 1 / 3) < 0.03), shares


def test_trainer_balances_training_splits_only(tmp_path, monkeypatch):
    seen = []
    orig = balanced.use_class_balanced

    def spy(splits):
        splits = list(splits)
        seen.append(len(splits))
        orig(splits)
    monkeypatch.setattr(balanced, "use_class_balanced", spy)
    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=2, checkpoint_freq=2,
              hparams_overrides={**FAST_HPARAMS, "class_balanced": True})
    run_job(job, tmp_path / "on", device="cpu", precision="fp32")
    assert seen == [2]  # the two training domains' in-splits
    off = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=2, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS)
    run_job(off, tmp_path / "off", device="cpu", precision="fp32")
    assert seen == [2]


def test_stream_split_draws_balanced_classes():
    from dganalysis.data import Domain, DomainDataset
    from dganalysis.training.train import make_splits

    ds = DomainDataset("imbalanced", ["a", "b", "c"],
                       [Domain("d0", np.zeros((len(LABELS), 1, 2, 2), np.uint8), LABELS.astype(np.int64))], {})
    feed = make_splits(ds, 0.0, 0, torch.device("cpu"), False, mode="stream")
    try:
        split = feed[0][0]
        assert feed.mode == "stream"
        balanced.use_class_balanced([split])
        y = torch.cat([split.sample(200)[1] for _ in range(30)]).numpy()
        shares = np.bincount(y, minlength=3) / len(y)
        assert np.all(np.abs(shares - 1 / 3) < 0.03), shares
    finally:
        feed.close()


def test_float32_callers_get_the_float32_quotient():
    """The one rule is computed in float64; rounded to float32 it equals the quotient computed in float32 (what
    CDANN_GRL computed before the rule was shared), so float32 training is unchanged."""
    g = torch.Generator().manual_seed(0)
    for n_classes in (2, 7, 65, 345):
        y = torch.randint(0, n_classes, (512,), generator=g)
        counts = torch.bincount(y, minlength=n_classes).float()
        float32_quotient = 1.0 / (counts[y] * (counts > 0).sum())
        assert torch.equal(balanced.class_balanced_weights(y).float(), float32_quotient)


def test_domainbed_cdann_weights_count_classes_up_to_the_largest_label():
    y = torch.tensor([0, 0, 2, 2, 2])  # class 1 absent: DomainBed divides by 3 classes, the rule by 2
    torch.testing.assert_close(balanced.domainbed_cdann_weights(y).double(),
                               torch.tensor([1 / 6, 1 / 6, 1 / 9, 1 / 9, 1 / 9], dtype=torch.float64))
    assert float(balanced.class_balanced_weights(y).sum()) == pytest.approx(1.0)
