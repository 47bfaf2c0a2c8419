"""The featurizer registry: every name that existed before it builds the same module, errors list the names,
and a featurizer registered later is accepted by the hparam check."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dganalysis.nets import build_featurizer
from dganalysis.nets.archs import MLP, MNISTCNN, ResNet, SmallCNN
from dganalysis.nets.registry import FEATURIZERS, featurizer_names, register_featurizer
from dganalysis.nets.vit import ViT
from dganalysis.training.hparams import BASE_CHECKS
from dganalysis.validation import ConfigError

pytestmark = pytest.mark.usefixtures("one_thread")

BEFORE = {  # name → (input shape, what the if-chain built)
    "cnn": ((1, 28, 28), lambda: MNISTCNN(1)),
    "smallcnn": ((1, 16, 16), lambda: SmallCNN(1)),
    "smallcnn_bn": ((1, 16, 16), lambda: SmallCNN(1, batchnorm=True)),
    "mlp": ((1, 8, 8), lambda: MLP(64)),
    "resnet18": ((3, 32, 32), lambda: ResNet(18, 3, False, 0.0)),
    "resnet50": ((1, 32, 32), lambda: ResNet(50, 1, False, 0.0)),
    "vit_tiny_16": ((3, 32, 32), lambda: ViT("vit_tiny_16", 3, 32)),
}


def _layout(m: nn.Module) -> list[tuple[str, tuple[int, ...]]]:
    return [(k, tuple(v.shape)) for k, v in m.state_dict().items()]


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_old_names_build_the_same_module(name):
    shape, make = BEFORE[name]
    ours, ref = build_featurizer(shape, {"featurizer": name}), make()
    assert type(ours) is type(ref) and _layout(ours) == _layout(ref)


def test_auto_is_cnn_up_to_32px_and_resnet18_above():
    assert _layout(build_featurizer((1, 32, 32), {"featurizer": "auto"})) == _layout(MNISTCNN(1))
    big = build_featurizer((3, 64, 64), {})
    assert isinstance(big, ResNet) and big.arch == "resnet18"


def test_unknown_name_lists_every_registered_one():
    with pytest.raises(ValueError, match="hparam 'featurizer': unknown 'resnet'; expected one of ") as err:
        build_featurizer((3, 32, 32), {"featurizer": "resnet"})
    for name in featurizer_names():
        assert name in str(err.value)
    assert {"auto", "domainbed", *BEFORE, "vit_b_16"} <= set(featurizer_names())


def test_a_registered_featurizer_is_built_and_accepted():
    class Tiny(nn.Module):
        n_outputs = 3

        def forward(self, x):
            return x.flatten(1)[:, :3]

    register_featurizer("tiny_test")(lambda shape, hp: Tiny())
    try:
        assert BASE_CHECKS["featurizer"]("tiny_test", "hparams_overrides.featurizer") == "tiny_test"
        assert build_featurizer((1, 4, 4), {"featurizer": "tiny_test"})(torch.ones(2, 1, 4, 4)).shape == (2, 3)
    finally:
        FEATURIZERS._items.pop("tiny_test", None)
    with pytest.raises(ConfigError, match="featurizer: expected one of .*'domainbed'"):
        BASE_CHECKS["featurizer"]("tiny_test", "hparams_overrides.featurizer")


# ---------------------------------------------------------------- one featurizer rule: training builds it, the dry run estimates by it

_ARCH_OF = {"cnn": MNISTCNN, "resnet18": ResNet, "resnet50": ResNet}


@pytest.mark.parametrize("size,hp,expected", [
    (28, {"featurizer": "auto"}, "cnn"),
    (32, {"featurizer": "auto"}, "cnn"),
    (64, {"featurizer": "auto"}, "resnet18"),
    (28, {"featurizer": "domainbed"}, "cnn"),
    (32, {"featurizer": "domainbed"}, "wrn16_2"),  # DomainBed's Wide-ResNet-16-2, not a ResNet-50
    (224, {"featurizer": "domainbed", "resnet50_augmix": False, "resnet18": True}, "resnet18"),
    (224, {"featurizer": "domainbed", "resnet50_augmix": False}, "resnet50"),
    (224, {"featurizer": "domainbed", "resnet50_augmix": True, "resnet18": True}, "resnet50"),  # DomainBed's quirk
    (224, {"featurizer": "domainbed", "vit": True, "dinov2": True}, "dinov2_vitb14"),
    (64, {"featurizer": "smallcnn"}, "smallcnn"),
])
def test_resolve_featurizer_name(size, hp, expected):
    from dganalysis.nets import resolve_featurizer_name

    assert resolve_featurizer_name((3, size, size), hp) == expected


@pytest.mark.parametrize("size,hp", [(28, {"featurizer": "auto"}), (64, {"featurizer": "auto"}),
                                     (28, {"featurizer": "domainbed", "pretrained": None}),
                                     (32, {"featurizer": "domainbed", "pretrained": None}),
                                     (224, {"featurizer": "domainbed", "pretrained": None, "resnet50_augmix": False,
                                            "resnet18": True})])
def test_what_is_built_is_what_the_rule_names(size, hp):
    from dganalysis.nets import resolve_featurizer_name
    from dganalysis.nets.domainbed import DomainBedWideResNet

    name = resolve_featurizer_name((3, size, size), hp)
    net = build_featurizer((3, size, size), hp)
    assert isinstance(net, {**_ARCH_OF, "wrn16_2": DomainBedWideResNet}[name]), (name, type(net))
    if isinstance(net, ResNet):
        assert net.arch == name


def test_dry_run_estimates_the_network_training_builds():
    """The dry run resolves the featurizer with the training rule (DomainBed's WRN-16-2 at 32 px, resnet18 honoured)."""
    from dganalysis.sweep.cost import job_cost, load_throughput
    from dganalysis.training.job import Job

    tp = load_throughput()
    at32 = Job("PACS", "ERM", ["A"], ["C"], dataset_kwargs={"image_size": 32},
               hparams_overrides={"featurizer": "domainbed"})
    r18 = Job("PACS", "ERM", ["A"], ["C"], dataset_kwargs={"image_size": 224},
              hparams_overrides={"featurizer": "domainbed", "resnet50_augmix": False, "resnet18": True})
    assert job_cost(at32, tp)["featurizer"] == "wrn16_2"
    assert job_cost(r18, tp)["featurizer"] == "resnet18"


@pytest.mark.parametrize("kind,shape,n", [("cnn", (1, 16, 16), 128), ("smallcnn", (3, 16, 16), 128), ("smallcnn_bn", (1, 16, 16), 128),
                                          ("mlp", (2, 8, 8), 128), ("resnet18", (1, 32, 32), 512)])
def test_featurizers(kind, shape, n):
    f = build_featurizer(shape, {"featurizer": kind, "conv1_3x3": True})
    assert f.n_outputs == n and f(torch.rand(2, *shape)).shape == (2, n)
