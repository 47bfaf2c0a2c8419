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
from dganalysis.validation import BASE_CHECKS, ConfigError

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
