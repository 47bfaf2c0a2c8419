"""Featurizers g: x → z. Each module has an ``n_outputs`` attribute (the size of z).

- ``cnn``: DomainBed's MNIST-CNN shape (4 conv layers, GroupNorm, global average pool, 128-d).
- ``resnet18`` / ``resnet50``: torchvision ResNets without the fc layer; ``conv1_3x3``
  replaces the 7×7/2 stem and max-pool by a 3×3/1 conv, as the PaHCC paper (seed 000,
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

import torch
from torch import nn


class MNISTCNN(nn.Module):
    """Four 3×3 conv layers (64, 128, 128, 128 channels; the second with stride 2), GroupNorm(8), GAP."""

    n_outputs = 128

    def __init__(self, in_channels: int) -> None:
        super().__init__()
        chans = [in_channels, 64, 128, 128, 128]
        layers: list[nn.Module] = []
        for i in range(4):
            layers += [
                nn.Conv2d(chans[i], chans[i + 1], 3, stride=2 if i == 1 else 1, padding=1),
                nn.ReLU(inplace=True),
                nn.GroupNorm(8, chans[i + 1]),
            ]
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.body(x)).flatten(1)


class SmallCNN(nn.Module):
    """Four 3×3 convs (32, 64, 64, 128 channels; strides 2, 1, 2, 1), ReLU + GroupNorm(8) (or BatchNorm with
    ``batchnorm=True``: ``smallcnn_bn``, whose running statistics make it sensitive to intensity shifts, as the
    BatchNorm ResNet-18 of the PaHCC paper is), GAP → 128-d."""

    n_outputs = 128

    def __init__(self, in_channels: int, batchnorm: bool = False) -> None:
        super().__init__()
        chans, strides = [in_channels, 32, 64, 64, 128], [2, 1, 2, 1]
        layers: list[nn.Module] = []
        for i in range(4):
            norm = nn.BatchNorm2d(chans[i + 1]) if batchnorm else nn.GroupNorm(8, chans[i + 1])
            layers += [nn.Conv2d(chans[i], chans[i + 1], 3, stride=strides[i], padding=1), nn.ReLU(inplace=True), norm]
        self.body = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.body(x)).flatten(1)


class MLP(nn.Module):
    """Flatten → Linear/ReLU ×2 → Linear (width 256, output 128)."""

    def __init__(self, n_inputs: int, width: int = 256, n_outputs: int = 128) -> None:
        super().__init__()
        self.n_outputs = n_outputs
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(n_inputs, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
            nn.Linear(width, n_outputs),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ResNet(nn.Module):
    """A torchvision ResNet trunk with ``fc`` removed; optional 3×3 stem and dropout.

    ``freeze_bn`` (DomainBed's hparam of that name): every BatchNorm layer of the trunk stays in eval mode, also
    after ``train()`` (running statistics used, never updated; affine parameters still train), as DomainBed's
    ``networks.ResNet``."""

    def __init__(self, depth: int, in_channels: int, conv1_3x3: bool, dropout: float, freeze_bn: bool = False) -> None:
        super().__init__()
        self.freeze_bn = bool(freeze_bn)
        from dganalysis.compat import torchvision

        models = torchvision().models
        net = {18: models.resnet18, 50: models.resnet50}[depth](weights=None)
        if conv1_3x3:
            net.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
            net.maxpool = nn.Identity()
        elif in_channels != 3:
            net.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.n_outputs = net.fc.in_features
        net.fc = nn.Identity()
        self.network = net
        self.dropout = nn.Dropout(dropout)
        self.train()

    def train(self, mode: bool = True) -> ResNet:
        super().train(mode)
        if self.freeze_bn:
            for m in self.network.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.network(x))


def build_featurizer(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    """The featurizer named by ``hparams['featurizer']`` for inputs of ``input_shape`` (C, H, W),
    with ``pretrained`` weights loaded and ``linear_probe``/``freeze_stages`` applied
    (:func:`dganalysis.nets.pretrained.apply_init_hparams`)."""
    from dganalysis.nets.pretrained import apply_init_hparams

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
        from dganalysis.nets.vit import ViT

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
