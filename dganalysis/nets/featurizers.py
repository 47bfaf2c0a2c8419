"""Featurizers g: x → z, built from hyperparameters by name (the architectures live in :mod:`dganalysis.nets.archs`).

The ``featurizer`` hparam names a builder of the registry :data:`dganalysis.nets.registry.FEATURIZERS`
(``featurizer_names()`` lists them; an unknown name fails listing them):

- ``domainbed``: DomainBed's own rule (Gulrajani & Lopez-Paz, 2021, ``networks.Featurizer``): the network chosen
  from the input shape and DomainBed's hparams (``resnet18``, ``resnet50_augmix``, ``vit``, ``dinov2``, ...), with
  DomainBed's ImageNet weights from local files (:mod:`dganalysis.nets.domainbed`). The default on every dataset
  DomainBed has.
- ``auto`` (our named departure, the default on our own datasets): ``cnn`` for images up to 32 px, ``resnet18``
  above (randomly initialised unless ``pretrained`` is set). DomainBed picks a Wide-ResNet at 32 px and a
  (pretrained) ResNet-50 at 224 px; ``auto`` is a lighter default for the small synthetic datasets of this project.
- ``cnn``: DomainBed's MNIST-CNN shape (4 conv layers, GroupNorm, global average pool, 128-d).
- ``resnet18`` / ``resnet50``: torchvision ResNets without the fc layer; ``conv1_3x3``
  replaces the 7×7/2 stem and max-pool by a 3×3/1 conv, as the PaHCC paper (Zhang, Zhang & Liu,
  Sec. 4) does for 64×64 glyphs.
- ``smallcnn`` / ``smallcnn_bn``: a light 4-conv GroupNorm (BatchNorm) CNN (32, 64, 64, 128 channels; the first
  and third convs with stride 2), ~10× cheaper than ``cnn``: the CPU quick profile's network.
- ``mlp``: a 3-layer MLP on flattened pixels, for toy data.
- ``vit_b_16`` / ``vit_tiny_16``: torchvision ViTs (:mod:`dganalysis.nets.vit`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from dganalysis.nets.archs import MLP, MNISTCNN, ResNet, SmallCNN, backbone_of
from dganalysis.nets.pretrained import apply_init_hparams
from dganalysis.nets.registry import DOMAINBED_WEIGHTS, get_featurizer_builder, register_featurizer
from dganalysis.nets.vit import ARCHS as VIT_ARCHS
from dganalysis.nets.vit import ViT
from dganalysis.training.hparams import HParams

__all__ = ["MLP", "MNISTCNN", "ResNet", "SmallCNN", "ViT", "auto_arch", "backbone_of", "build_classifier", "build_featurizer",
           "resolve_featurizer_name"]


def build_featurizer(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    """The featurizer named by ``hparams['featurizer']`` (default ``auto``) for inputs of ``input_shape`` (C, H, W),
    with ``pretrained`` weights loaded and ``linear_probe``/``freeze_stages`` applied
    (:func:`dganalysis.nets.pretrained.apply_init_hparams`).

    ``pretrained: domainbed`` (the default on DomainBed's datasets) asks for the weights DomainBed loads: the
    ``domainbed`` featurizer loads them itself; any other featurizer has no DomainBed weights and starts from its
    random initialisation (as it did before this value existed)."""
    hparams = HParams.of(hparams)
    builder = get_featurizer_builder(str(hparams["featurizer"]))
    net = builder(tuple(input_shape), hparams)
    if hparams["pretrained"] == DOMAINBED_WEIGHTS:
        hparams = {**hparams, "pretrained": None}
    return apply_init_hparams(net, hparams)


def auto_arch(input_shape: tuple[int, ...]) -> str:
    """What ``featurizer: auto`` builds: ``cnn`` up to 32 px, ``resnet18`` above (our departure, see the module doc)."""
    return "cnn" if input_shape[-1] <= 32 else "resnet18"


def resolve_featurizer_name(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> str:
    """The network a job builds for inputs of ``input_shape`` (C, H, W) under ``hparams['featurizer']`` (default
    ``auto``): ``auto`` and ``domainbed`` resolved by their rules (:func:`auto_arch`,
    :func:`dganalysis.nets.domainbed.domainbed_arch`), any other name as it is. Training builds by these rules and the
    dry run estimates by this function, so the two cannot disagree."""
    from dganalysis.nets.domainbed import domainbed_arch

    hparams = HParams.of(hparams)
    name = str(hparams["featurizer"])
    if name == "auto":
        return auto_arch(input_shape)
    if name == "domainbed":
        return domainbed_arch(input_shape, hparams)
    return name


@register_featurizer("auto")
def _auto(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    """Our departure from DomainBed's rule: ``cnn`` up to 32 px, ``resnet18`` above (see the module doc)."""
    return get_featurizer_builder(auto_arch(input_shape))(input_shape, hparams)


@register_featurizer("cnn")
def _cnn(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    return MNISTCNN(input_shape[0])


@register_featurizer("smallcnn")
def _smallcnn(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    return SmallCNN(input_shape[0])


@register_featurizer("smallcnn_bn")
def _smallcnn_bn(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    return SmallCNN(input_shape[0], batchnorm=True)


@register_featurizer("mlp")
def _mlp(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    n = 1
    for s in input_shape:
        n *= s
    return MLP(n)


def _resnet(depth: int):
    def build(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
        hparams = HParams.of(hparams)
        return ResNet(depth, input_shape[0], bool(hparams["conv1_3x3"]),
                      float(hparams["resnet_dropout"]), freeze_bn=bool(hparams["freeze_bn"]))
    build.__doc__ = f"torchvision ResNet-{depth} trunk (see :class:`dganalysis.nets.archs.ResNet`)."
    return build


for _depth in (18, 50):
    register_featurizer(f"resnet{_depth}")(_resnet(_depth))


def _vit(arch: str):
    def build(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
        return ViT(arch, input_shape[0], input_shape[-1], float(hparams["resnet_dropout"]))
    build.__doc__ = f"torchvision ViT {arch} trunk (see :class:`dganalysis.nets.vit.ViT`)."
    return build


for _arch in VIT_ARCHS:
    register_featurizer(_arch)(_vit(_arch))


def build_classifier(n_features: int, n_classes: int, nonlinear: bool = False) -> nn.Module:
    """Linear head, or a 2-hidden-layer MLP head when ``nonlinear`` — DomainBed's ``networks.Classifier``
    (Gulrajani & Lopez-Paz, 2021; hparam ``nonlinear_classifier``): widths n/2 and n/4 with ReLUs."""
    if not nonlinear:
        return nn.Linear(n_features, n_classes)
    return nn.Sequential(
        nn.Linear(n_features, n_features // 2), nn.ReLU(),
        nn.Linear(n_features // 2, n_features // 4), nn.ReLU(),
        nn.Linear(n_features // 4, n_classes),
    )


import dganalysis.nets.domainbed  # noqa: E402,F401  (registers ``domainbed``)
