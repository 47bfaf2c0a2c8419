"""In-package pretraining: NT-Xent, augmentations, SimCLR/supervised loops, checkpoints the loader reads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dganalysis  # noqa: F401
from dganalysis.algorithms import create, default_hparams
from dganalysis.nets.pretrained import detect_layout, load_pretrained, read_checkpoint
from dganalysis.pretrain import (
    PretrainConfig,
    nt_xent,
    pretrain_simclr,
    pretrain_supervised,
    rotated_digits_source,
    two_views,
)
from dganalysis.pretrain.checkpoint import checkpoint_path, read_meta

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def digits16():
    from dganalysis.data.digits import sklearn_digits

    x, y = sklearn_digits(16)
    return x[:192, None], y[:192]


def test_nt_xent_known_values():
    z = torch.eye(4) * 10
    # views identical and the 4 images orthogonal: each anchor's positive dominates → loss ≈ 0 at small τ
    assert nt_xent(z, z.clone(), temperature=0.05).item() < 1e-6
    # all projections equal: every one of the 2N−1 candidates has the same score → loss = log(2N − 1)
    same = torch.ones(4, 3)
    assert nt_xent(same, same, 0.5).item() == pytest.approx(np.log(7), rel=1e-6)
    # swapping the pairing (wrong positives) costs more than the right pairing
    g = torch.Generator().manual_seed(0)
    a = torch.randn(6, 5, generator=g)
    assert nt_xent(a, a + 0.01) < nt_xent(a, a.roll(1, 0))
    with pytest.raises(ValueError, match="z1 and z2"):
        nt_xent(torch.zeros(3, 2), torch.zeros(4, 2))


def test_two_views_reproducible_and_in_range(digits16):
    x = torch.as_tensor(digits16[0][:8]).float() / 255
    v1, v2 = two_views(x, torch.Generator().manual_seed(3))
    w1, _ = two_views(x, torch.Generator().manual_seed(3))
    assert v1.shape == x.shape and torch.equal(v1, w1) and not torch.equal(v1, v2)
    assert v1.min() >= 0 and v1.max() <= 1


def test_simclr_loss_decreases_and_checkpoint_loads(tmp_path, digits16):
    x, _ = digits16
    path = checkpoint_path(tmp_path, "simclr", {"steps": 40})
    res = pretrain_simclr(x, PretrainConfig(featurizer="smallcnn", steps=40, batch_size=48, lr=2e-3, seed=0),
                          out_path=path, progress=False)
    first, last = np.mean(res.losses[:8]), np.mean(res.losses[-8:])
    assert last < first - 0.2, (first, last)
    assert detect_layout(read_checkpoint(path)) == "simclr"
    assert read_meta(path)["kind"] == "simclr"
    # the pretrained hparam loads it into any algorithm's featurizer
    hp = default_hparams("ERM", overrides={"featurizer": "smallcnn", "pretrained": str(path), "linear_probe": True})
    alg = create("ERM", (1, 16, 16), 10, 2, {**hp, "steps": 1})
    for k, v in res.featurizer.state_dict().items():
        assert torch.equal(alg.featurizer.state_dict()[k], v), k
    # a second call reuses the file instead of retraining
    again = pretrain_simclr(x, PretrainConfig(featurizer="smallcnn", steps=40), out_path=path, progress=False)
    assert again.reused and again.losses == []


def test_supervised_pretraining_learns(tmp_path, digits16):
    x, y = digits16
    res = pretrain_supervised(x, y, PretrainConfig(featurizer="smallcnn", steps=40, batch_size=64, lr=3e-3, seed=0),
                              out_path=tmp_path / "sup.pt", progress=False)
    assert np.mean(res.losses[-8:]) < 0.6 * np.mean(res.losses[:8])
    assert detect_layout(read_checkpoint(tmp_path / "sup.pt")) == "torchvision"
    from dganalysis.nets.featurizers import SmallCNN

    rep = load_pretrained(SmallCNN(1), tmp_path / "sup.pt")
    assert rep.head == ["fc.bias", "fc.weight"] or sorted(rep.head) == ["fc.bias", "fc.weight"]
    with pytest.raises(ValueError, match="labels"):
        pretrain_supervised(x, y[:5], PretrainConfig(steps=1), progress=False)


def test_rotated_digits_source_uses_training_images_only():
    from dganalysis.data.digits import rotated_digits

    ds = rotated_digits(image_size=16)
    imgs, labels = rotated_digits_source(ds, ["0", "15"], (60, 90), seed=0)
    n = sum(len(d) for d in ds.domains if d.name in ("0", "15"))
    assert imgs.shape == (n, 1, 16, 16) and imgs.dtype == np.uint8 and labels.shape == (n,)
    train_labels = np.concatenate([d.labels for d in ds.domains if d.name in ("0", "15")])
    np.testing.assert_array_equal(labels, train_labels)
    with pytest.raises(KeyError, match="'90'"):
        rotated_digits_source(ds, ["90"], (0, 1))


@pytest.mark.parametrize("kind", ["supervised", "simclr"])
def test_pretraining_does_not_depend_on_the_callers_thread_count(digits16, kind):
    """oneDNN's convolution weight gradients differ in the last bits between 1 and 2 threads (checked below on the
    raw ops), and Adam turns that into other weights: the loops run on one CPU thread whatever the caller set."""
    x, y = digits16
    x = np.concatenate([x] * 4)[:256]
    y = np.concatenate([y] * 4)[:256]
    net = torch.nn.Conv2d(1, 8, 3)
    grads = {}
    for n in (1, 2):
        torch.set_num_threads(n)
        net.zero_grad()
        net(torch.as_tensor(x[:128]).float()).square().sum().backward()
        grads[n] = net.weight.grad.clone()
    assert not torch.equal(grads[1], grads[2]), "the raw op no longer differs: this test proves nothing here"
    losses = {}
    for n in (1, 2):
        torch.set_num_threads(n)
        if kind == "supervised":
            res = pretrain_supervised(x, y, PretrainConfig(steps=8, batch_size=128, seed=0), n_classes=10, progress=False)
        else:
            res = pretrain_simclr(x, PretrainConfig(steps=8, batch_size=128, seed=0), progress=False)
        assert torch.get_num_threads() == n  # restored
        losses[n] = (res.losses, [p.detach().clone() for p in res.featurizer.parameters()])
    assert losses[1][0] == losses[2][0]
    assert all(torch.equal(a, b) for a, b in zip(losses[1][1], losses[2][1]))
    torch.set_num_threads(1)


def test_pretrain_config_refuses_bad_settings():
    with pytest.raises(ValueError, match="steps"):
        PretrainConfig(steps=0)
    with pytest.raises(ValueError, match="lr"):
        PretrainConfig(lr=0.0)
