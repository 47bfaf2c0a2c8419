"""Featurizers against DomainBed's ``networks``: MNIST-CNN outputs with copied weights; ResNet-18/50 trunks
(``n_outputs``, outputs, ``resnet_dropout`` after the trunk, ``freeze_bn``). DomainBed asks torchvision for
ImageNet weights (``pretrained=True``); the test replaces its constructors by ``weights=None`` ones so nothing is
downloaded (the comparison copies DomainBed's weights into ours anyway)."""

import pytest
import torch

from dganalysis.nets import build_featurizer
from tests.reference._harness import copy_weights, default_key_map, seed_all


def test_mnist_cnn_matches_domainbed(domainbed):
    seed_all(0)
    theirs = domainbed.networks.MNIST_CNN((2, 28, 28)).double()
    ours = build_featurizer((2, 28, 28), {"featurizer": "cnn"}).double()
    assert ours.n_outputs == theirs.n_outputs == 128
    copy_weights(theirs, ours, lambda k: default_key_map("featurizer." + k)[len("featurizer."):])
    x = torch.rand(5, 2, 28, 28, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


@pytest.fixture
def no_download(domainbed, monkeypatch):
    models = domainbed.networks.torchvision.models
    for name in ("resnet18", "resnet50"):
        orig = getattr(models, name)

        def offline(pretrained=False, weights=None, _orig=orig, **kw):
            return _orig(weights=None, **kw)
        monkeypatch.setattr(models, name, offline)


def _db_resnet(domainbed, depth, freeze_bn, dropout, channels=3):
    hp = {"resnet18": depth == 18, "resnet50_augmix": False, "freeze_bn": freeze_bn, "resnet_dropout": dropout}
    return domainbed.networks.ResNet((channels, 32, 32), hp).double()


@pytest.mark.parametrize("depth,n_out", [(18, 512), (50, 2048)])
def test_resnet_shapes(domainbed, no_download, depth, n_out):
    for channels in (3, 1):
        theirs = _db_resnet(domainbed, depth, False, 0.0, channels)
        ours = build_featurizer((channels, 32, 32), {"featurizer": f"resnet{depth}"})
        assert theirs.n_outputs == ours.n_outputs == n_out
        assert ours(torch.rand(2, channels, 32, 32)).shape == (2, n_out)
        assert theirs.network.conv1.weight.shape == ours.network.conv1.weight.shape


@pytest.mark.parametrize("freeze_bn", [False, True])
def test_resnet18_dropout_and_freeze_bn_match_domainbed(domainbed, no_download, freeze_bn):
    seed_all(0)
    theirs = _db_resnet(domainbed, 18, freeze_bn, 0.5)
    ours = build_featurizer((3, 32, 32), {"featurizer": "resnet18", "resnet_dropout": 0.5, "freeze_bn": freeze_bn}).double()
    copy_weights(theirs, ours, lambda k: k)
    theirs.train()
    ours.train()
    x = torch.rand(4, 3, 32, 32, dtype=torch.float64)
    seed_all(1)
    out_t = theirs(x)
    seed_all(1)
    out_o = ours(x)
    torch.testing.assert_close(out_o, out_t, rtol=0, atol=1e-10)  # same dropout mask, same BatchNorm mode
    assert (out_o == 0).float().mean() > 0.3  # dropout p = 0.5 after the trunk is active in training
    bn_t, bn_o = theirs.network.bn1, ours.network.bn1
    assert bn_o.training == bn_t.training == (not freeze_bn)
    torch.testing.assert_close(bn_o.running_mean, bn_t.running_mean, rtol=0, atol=1e-12)
    moved = bool((bn_o.running_mean != 0).any())
    assert moved == (not freeze_bn)  # frozen BatchNorm keeps its statistics
    theirs.eval()
    ours.eval()
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-10)


def test_auto_featurizer_departs_from_domainbed_above_28px(domainbed, no_download):
    """Named departure: ``featurizer: auto`` picks our MNIST-CNN up to 32 px and ResNet-18 above; DomainBed picks
    MNIST-CNN at 28 px, a Wide-ResNet-16-2 at 32 px and ResNet-50 (``resnet18 = False``) at 224 px — by default
    (``resnet50_augmix = True``) timm's AugMix-trained ``resnet50.ram_in1k`` weights, else torchvision's.
    ``featurizer: domainbed`` (the default on DomainBed's datasets) is DomainBed's rule, compared in
    test_domainbed_featurizer.py; ``auto`` stays our default on our own datasets."""
    hp = dict(domainbed.hparams_registry.default_hparams("ERM", "PACS"))
    assert type(domainbed.networks.Featurizer((3, 28, 28), hp)).__name__ == "MNIST_CNN"
    assert type(build_featurizer((3, 28, 28), {"featurizer": "auto"})).__name__ == "MNISTCNN"
    assert type(domainbed.networks.Featurizer((3, 32, 32), hp)).__name__ == "Wide_ResNet"
    assert type(build_featurizer((3, 32, 32), {"featurizer": "auto"})).__name__ == "MNISTCNN"
    hp["resnet50_augmix"] = False  # True by default (a timm model); DomainBed's torchvision ResNet-50 otherwise
    assert domainbed.networks.Featurizer((3, 224, 224), hp).n_outputs == 2048
    assert build_featurizer((3, 224, 224), {"featurizer": "auto"}).n_outputs == 512
