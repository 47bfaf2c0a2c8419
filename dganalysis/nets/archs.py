"""Featurizer architectures g: x → z (leaf module: imports no other ``dganalysis.nets`` module but ``vit``).

Each module has an ``n_outputs`` attribute (the size of z). Building one from hyperparameters,
with pretrained weights and freezing, is :func:`dganalysis.nets.featurizers.build_featurizer`.
Import order in ``dganalysis.nets`` (no cycles): ``vit`` → ``archs`` → ``freeze``, ``pretrained``,
``torchhub`` → ``registry``, ``domainbed_weights`` → ``domainbed`` → ``featurizers``.
"""

from __future__ import annotations

import torch
from torch import nn

from dganalysis.nets.vit import ViT


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
    """A torchvision ResNet trunk with ``fc`` removed; optional 3×3 stem, dropout and frozen BatchNorm.

    ``freeze_bn`` is DomainBed's hparam of that name (Gulrajani & Lopez-Paz, 2021, ``networks.ResNet``):
    every BatchNorm layer stays in eval mode, also after ``train()``, so its running statistics (the
    ImageNet ones of a pretrained trunk) are used and never updated; its affine weights still train.
    """

    def __init__(self, depth: int, in_channels: int, conv1_3x3: bool, dropout: float, freeze_bn: bool = False) -> None:
        super().__init__()
        from dganalysis.compat import torchvision

        models = torchvision().models
        net = {18: models.resnet18, 50: models.resnet50}[depth](weights=None)
        if conv1_3x3:
            net.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
            net.maxpool = nn.Identity()
        elif in_channels != 3:
            net.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
        self.arch = f"resnet{depth}"
        self.n_outputs = net.fc.in_features
        net.fc = nn.Identity()
        self.network = net
        self.dropout = nn.Dropout(dropout)
        self.freeze_bn = bool(freeze_bn)
        self.train()

    def train(self, mode: bool = True) -> ResNet:
        super().train(mode)
        if self.freeze_bn:
            for m in self.network.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm):
                    m.eval()
        return self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.network(x))


def backbone_of(featurizer: nn.Module) -> nn.Module:
    """The module whose state dict a checkpoint describes: ``.network`` for our ResNet/ViT wrappers."""
    return featurizer.network if isinstance(featurizer, (ResNet, ViT)) else featurizer
