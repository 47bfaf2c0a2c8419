"""DomainBed's featurizer rule, ``featurizer: domainbed`` (Gulrajani & Lopez-Paz, 2021, ``networks.Featurizer``).

DomainBed picks its network from the input shape and its base hparams:

- 1-D inputs: its MLP (``mlp_width``, ``mlp_depth``, ``mlp_dropout``; only algorithms that define these, as in
  DomainBed, can use it);
- 28×28: the MNIST-CNN (ours, :class:`dganalysis.nets.archs.MNISTCNN`, the same layers);
- 32×32: its Wide-ResNet-16-2 (:class:`DomainBedWideResNet`; no DomainBed dataset is 32 px, but its rule has it);
- 224×224: with ``vit`` and ``dinov2``, DINOv2 ViT-B/14 (the class token of the last four blocks and the mean
  patch token of the last, 5·768 features, ``vit_dropout`` after; ``vit_attn_tune`` trains only the attention
  parameters); ``vit`` without ``dinov2`` raises as DomainBed does (its ViT-B/16 is not wired in;
  our ``vit_b_16`` featurizer is the separate, named choice). Otherwise a ResNet: ``resnet50_augmix`` (default
  True) → timm's ``resnet50.ram_in1k``, else ``resnet18`` → torchvision ResNet-18, else torchvision ResNet-50.
  DomainBed's quirk is kept: ``resnet50_augmix`` wins over ``resnet18`` (both True gives the ResNet-50).
  Inputs with C ≠ 3 channels get a new ``conv1`` whose channel i is the pretrained channel i mod 3.
  ``resnet_dropout`` follows the trunk; ``freeze_bn`` keeps every BatchNorm in eval mode, also after ``train()``;
- any other shape: DomainBed raises ``NotImplementedError``; we raise a ``ValueError`` naming the shape.

Weights (``pretrained`` hparam): ``domainbed`` (the default on DomainBed's datasets) loads the ImageNet weights
DomainBed downloads, from local files (:mod:`dganalysis.nets.domainbed_weights`); ``null`` keeps the random
initialisation (a departure, e.g. for tests); a path loads that checkpoint through :mod:`dganalysis.nets.pretrained`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.nets import domainbed_weights as W
from dganalysis.nets.archs import MNISTCNN, ResNet
from dganalysis.nets.registry import DOMAINBED_WEIGHTS, register_featurizer
from dganalysis.training.hparams import HParams


def _timm():
    from dganalysis.compat import install

    install()  # torchvision (which timm imports) needs the CPU shim first
    import timm

    return timm


def _want_weights(hparams: Mapping[str, Any]) -> bool:
    return hparams["pretrained"] == DOMAINBED_WEIGHTS


class DomainBedMLP(nn.Module):
    """DomainBed's ``networks.MLP``: input layer, ``mlp_depth - 2`` hidden layers of ``mlp_width`` (each
    followed by dropout and ReLU), output layer of ``n_outputs``."""

    def __init__(self, n_inputs: int, n_outputs: int, hparams: Mapping[str, Any]) -> None:
        super().__init__()
        missing = [k for k in ("mlp_width", "mlp_depth", "mlp_dropout") if k not in hparams]
        if missing:
            raise ValueError(f"featurizer 'domainbed' on 1-D inputs builds DomainBed's MLP, which needs hparams "
                             f"{missing} (DomainBed's DANN/CDANN/ADRMX define them)")
        width = int(hparams["mlp_width"])
        self.input = nn.Linear(n_inputs, width)
        self.dropout = nn.Dropout(float(hparams["mlp_dropout"]))
        self.hiddens = nn.ModuleList([nn.Linear(width, width) for _ in range(int(hparams["mlp_depth"]) - 2)])
        self.output = nn.Linear(width, n_outputs)
        self.n_outputs = n_outputs
        self.activation = nn.Identity()  # DomainBed's hook for URM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.dropout(self.input(x)))
        for layer in self.hiddens:
            x = F.relu(self.dropout(layer(x)))
        return self.activation(self.output(x))


class DomainBedResNet(ResNet):
    """DomainBed's ``networks.ResNet``: a timm or torchvision ResNet with ``fc`` replaced by identity, dropout
    after the trunk, optionally frozen BatchNorm. A :class:`ResNet` (``network``, ``dropout``, ``freeze_bn``,
    ``arch``), so freezing and checkpoint loading treat it like ours."""

    def __init__(self, input_shape: tuple[int, ...], hparams: Mapping[str, Any], weights: bool) -> None:
        nn.Module.__init__(self)
        if hparams["resnet50_augmix"]:
            net = _timm().create_model(W.AUGMIX_TIMM_NAME, pretrained=False)
            self.arch, path = "resnet50", (W.augmix_weights() if weights else None)
        else:
            from dganalysis.compat import torchvision

            depth = 18 if domainbed_arch(input_shape, hparams) == "resnet18" else 50
            net = getattr(torchvision().models, f"resnet{depth}")(weights=None)
            self.arch, path = f"resnet{depth}", (W.torchvision_resnet_weights(depth) if weights else None)
        if path is not None:
            net.load_state_dict(W.read_state(path), strict=True)
        self.n_outputs = net.fc.in_features
        nc = input_shape[0]
        if nc != 3:
            old = net.conv1.weight.data.clone()
            net.conv1 = nn.Conv2d(nc, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
            for i in range(nc):
                net.conv1.weight.data[:, i] = old[:, i % 3]
        net.fc = nn.Identity()
        self.network = net
        self.dropout = nn.Dropout(float(hparams["resnet_dropout"]))
        self.freeze_bn = bool(hparams["freeze_bn"])
        self.weights_file = str(path) if path is not None else None
        self.train()


class _WideBlock(nn.Module):
    """Pre-activation wide residual block: BN → ReLU → 3×3 conv → dropout → BN → ReLU → 3×3 conv (stride), plus the
    input (through a 1×1 conv when the shape changes). Convs carry biases, as DomainBed's."""

    def __init__(self, c_in: int, c_out: int, dropout: float, stride: int) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, padding=1, bias=True)
        self.dropout = nn.Dropout(dropout)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=stride, padding=1, bias=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.dropout(self.conv1(F.relu(self.bn1(x))))
        return self.conv2(F.relu(self.bn2(h))) + self.shortcut(x)


class DomainBedWideResNet(nn.Module):
    """DomainBed's 32-px featurizer ``lib/wide_resnet.Wide_ResNet(input_shape, 16, 2, 0.)`` (Zagoruyko & Komodakis,
    2016): a 3×3 conv to 16 channels, three stages of (depth − 4)/6 wide blocks with 16k, 32k, 64k channels (strides
    1, 2, 2), a final BatchNorm with DomainBed's ``momentum=0.9`` (torch's convention: 90% weight on the batch),
    ReLU, an 8×8 average pool read at its top-left cell (the whole map for 32-px inputs): 64k features."""

    def __init__(self, in_channels: int, depth: int = 16, widen: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        if (depth - 4) % 6:
            raise ValueError(f"Wide-ResNet depth must be 6n + 4, got {depth}")
        n = (depth - 4) // 6
        widths = [16, 16 * widen, 32 * widen, 64 * widen]
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, padding=1, bias=True)
        c = widths[0]
        stages = []
        for width, stride in zip(widths[1:], (1, 2, 2)):
            blocks = []
            for s in [stride] + [1] * (n - 1):
                blocks.append(_WideBlock(c, width, dropout, s))
                c = width
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.bn1 = nn.BatchNorm2d(widths[3], momentum=0.9)
        self.n_outputs = widths[3]
        self.activation = nn.Identity()  # DomainBed's hook for URM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.layer3(self.layer2(self.layer1(self.conv1(x))))
        h = F.avg_pool2d(F.relu(self.bn1(h)), 8)
        return self.activation(h[:, :, 0, 0])


class DomainBedDinoV2(nn.Module):
    """DomainBed's ``networks.DinoV2``: DINOv2 ViT-B/14 (architecture from the local torch-hub checkout) whose
    output is ``[cls_1, cls_2, cls_3, cls_4, mean patch token of block 4]`` of the last four blocks (normed)."""

    n_outputs = 5 * 768

    def __init__(self, input_shape: tuple[int, ...], hparams: Mapping[str, Any], weights: bool,
                 repo: str | Path | None = None) -> None:
        super().__init__()
        if input_shape[0] != 3:
            raise ValueError(f"featurizer 'domainbed' with dinov2: inputs must have 3 channels, got {input_shape[0]}")
        repo = Path(repo) if repo is not None else W.dinov2_repo()
        self.network = torch.hub.load(str(repo), "dinov2_vitb14", source="local", pretrained=False)
        self.weights_file = None
        if weights:
            path = W.dinov2_weights()
            self.network.load_state_dict(W.read_state(path), strict=True)
            self.weights_file = str(path)
        self.dropout = nn.Dropout(float(hparams["vit_dropout"]))
        if hparams["vit_attn_tune"]:
            for name, p in self.network.named_parameters():
                p.requires_grad = "attn" in name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.network.get_intermediate_layers(x, n=4, return_class_token=True)
        return self.dropout(torch.cat([out[0][1], out[1][1], out[2][1], out[3][1], out[3][0].mean(1)], dim=1))


def domainbed_arch(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> str:
    """The network DomainBed's ``networks.Featurizer`` picks for ``input_shape`` (C, H, W) and ``hparams``: ``mlp``
    (1-D inputs), ``cnn`` (MNIST-CNN, 28×28), ``wrn16_2`` (32×32), ``dinov2_vitb14``, ``resnet18`` or ``resnet50``
    (224×224; ``resnet50_augmix`` wins over ``resnet18``, DomainBed's quirk). The one rule :func:`build_domainbed`
    and the dry run's estimate both follow; a shape DomainBed has no network for is a ValueError."""
    hparams = HParams.of(hparams)
    shape = tuple(input_shape)
    if len(shape) == 1:
        return "mlp"
    hw = shape[1:3]
    if hw == (28, 28):
        return "cnn"
    if hw == (224, 224):
        if hparams["vit"]:
            if hparams["dinov2"]:
                return "dinov2_vitb14"
            raise ValueError("featurizer 'domainbed': vit=True needs dinov2=True (DomainBed raises NotImplementedError "
                             "for any other ViT); for a ViT-B/16 use featurizer 'vit_b_16'")
        if hparams["resnet50_augmix"]:
            return "resnet50"
        return "resnet18" if hparams["resnet18"] else "resnet50"
    if hw == (32, 32):
        return "wrn16_2"
    raise ValueError(f"featurizer 'domainbed': DomainBed has no network for input shape {shape} (it builds one for "
                     "1-D inputs, 28×28, 32×32 and 224×224); choose another featurizer (e.g. 'auto')")


@register_featurizer("domainbed")
def build_domainbed(input_shape: tuple[int, ...], hparams: Mapping[str, Any]) -> nn.Module:
    """DomainBed's ``networks.Featurizer`` choice for ``input_shape`` (see the module doc, :func:`domainbed_arch`)."""
    hparams = HParams.of(hparams)
    shape = tuple(input_shape)
    arch = domainbed_arch(shape, hparams)
    if arch == "mlp":
        return DomainBedMLP(shape[0], int(hparams.get("mlp_width", 0)), hparams)
    if arch == "cnn":
        return MNISTCNN(shape[0])
    if arch == "dinov2_vitb14":
        return DomainBedDinoV2(shape, hparams, _want_weights(hparams))
    if arch == "wrn16_2":
        return DomainBedWideResNet(shape[0], 16, 2, 0.0)
    return DomainBedResNet(shape, hparams, _want_weights(hparams))
