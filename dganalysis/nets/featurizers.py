"""Featurizers g: x → z, built from hyperparameters (the architectures live in :mod:`dganalysis.nets.archs`).

- ``cnn``: DomainBed's MNIST-CNN shape (4 conv layers, GroupNorm, global average pool, 128-d).
- ``resnet18`` / ``resnet50``: torchvision ResNets without the fc layer; ``conv1_3x3``
  replaces the 7×7/2 stem and max-pool by a 3×3/1 conv, as the PaHCC paper (Zhang, Zhang & Liu,
  Sec. 4) does for 64×64 glyphs.
- ``smallcnn``: a light 4-conv GroupNorm CNN (32, 64, 64, 128 channels; the first and third
  convs with stride 2), ~10× cheaper than ``cnn``: the CPU quick profile's network (the
  DESIGN feasibility probe used this shape on 32×32 glyphs).
- ``mlp``: a 3-layer MLP on flattened pixels (DomainBed's MLP), for toy data.
``auto`` picks ``cnn`` for images up to 32 px and ``resnet18`` above.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from dganalysis.nets.archs import MLP, MNISTCNN, ResNet, SmallCNN, backbone_of
from dganalysis.nets.pretrained import apply_init_hparams
from dganalysis.nets.vit import ViT

__all__ = ["MLP", "MNISTCNN", "ResNet", "SmallCNN", "ViT", "backbone_of", "build_classifier", "build_featurizer"]


def build_featurizer(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    """The featurizer named by ``hparams['featurizer']`` for inputs of ``input_shape`` (C, H, W),
    with ``pretrained`` weights loaded and ``linear_probe``/``freeze_stages`` applied
    (:func:`dganalysis.nets.pretrained.apply_init_hparams`)."""
    return apply_init_hparams(_build(input_shape, hparams), hparams)


def _build(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    kind = hparams.get("featurizer", "auto")
    c, h = input_shape[0], input_shape[-1]
    if kind == "auto":
        kind = "cnn" if h <= 32 else "resnet18"
    if kind == "cnn":
        return MNISTCNN(c)
    if kind in ("smallcnn", "smallcnn_bn"):
        return SmallCNN(c, batchnorm=kind == "smallcnn_bn")
    if kind == "mlp":
        n = 1
        for s in input_shape:
            n *= s
        return MLP(n)
    if kind in ("resnet18", "resnet50"):
        return ResNet(int(kind[6:]), c, bool(hparams.get("conv1_3x3", False)), float(hparams.get("resnet_dropout", 0.0)),
                      freeze_bn=bool(hparams.get("freeze_bn", False)))
    if kind.startswith("vit_"):
        return ViT(kind, c, h, float(hparams.get("resnet_dropout", 0.0)))
    raise ValueError(f"hparam 'featurizer': unknown {kind!r}; expected auto, cnn, smallcnn, smallcnn_bn, mlp, resnet18, resnet50, "
                     "vit_b_16 or vit_tiny_16")


def build_classifier(n_features: int, n_classes: int, nonlinear: bool = False) -> nn.Module:
    """Linear head, or a 2-hidden-layer MLP head when ``nonlinear``."""
    if not nonlinear:
        return nn.Linear(n_features, n_classes)
    return nn.Sequential(
        nn.Linear(n_features, n_features // 2), nn.ReLU(),
        nn.Linear(n_features // 2, n_features // 4), nn.ReLU(),
        nn.Linear(n_features // 4, n_classes),
    )
