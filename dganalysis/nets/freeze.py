"""Freezing featurizer stages: linear probing (LP) and partial fine-tuning (Yu et al. 2024, Sec. 2.1, Fig. 1).

Yu et al. (2024) treat ResNet-50 as a 4-stage network and fine-tune it with the first 1, 2 or 3
stages frozen; LP freezes the whole featurizer and trains only the head. Our stages:

- ResNet (ours or torchvision): stage 1 = stem (``conv1``, ``bn1``) + ``layer1``; stages 2-4 = ``layer2..4``.
- ``cnn`` (MNIST-CNN) and ``smallcnn``: their 4 conv blocks (conv, ReLU, GroupNorm).
- ViT: 4 stages of ``num_layers / 4`` encoder blocks; stage 1 also holds the patch embedding,
  class token and position embedding, stage 4 the final LayerNorm.
- ``mlp``: its 3 linear layers.

Frozen means ``requires_grad = False`` for the parameters **and** BatchNorm layers kept in eval
mode (running statistics neither used from the batch nor updated), even when the model is put
in ``train()`` mode: a forward pre-hook switches them back to eval (documented choice; this is
what "features fixed" means for LP). GroupNorm/LayerNorm have no running statistics. Dropout
after the trunk (``resnet_dropout``) stays active: it regularises the head.
"""

from __future__ import annotations

from torch import nn

from dganalysis.nets.archs import MLP, MNISTCNN, SmallCNN, backbone_of

Stage = list[nn.Module | nn.Parameter]


def stages(featurizer: nn.Module) -> list[Stage]:
    """The featurizer's stages in input → output order (see the module doc)."""
    net = backbone_of(featurizer)
    if all(hasattr(net, a) for a in ("conv1", "bn1", "layer1", "layer4")):
        return [[net.conv1, net.bn1, net.layer1], [net.layer2], [net.layer3], [net.layer4]]
    if isinstance(net, (MNISTCNN, SmallCNN)):
        body = list(net.body)
        return [body[i:i + 3] for i in range(0, len(body), 3)]
    if isinstance(net, MLP):
        linears = [m for m in net.net if isinstance(m, nn.Linear)]
        return [[m] for m in linears]
    if hasattr(net, "encoder") and hasattr(net, "conv_proj"):
        layers = list(net.encoder.layers)
        n = len(layers)
        bounds = [round(i * n / 4) for i in range(5)]
        out: list[Stage] = [list(layers[bounds[i]:bounds[i + 1]]) for i in range(4)]
        out[0] = [net.conv_proj, net.class_token, net.encoder.pos_embedding, *out[0]]
        out[3].append(net.encoder.ln)
        return out
    raise TypeError(f"cannot split {type(net).__name__} into stages; supported: ResNet, MNISTCNN, SmallCNN, MLP, ViT")


def n_stages(featurizer: nn.Module) -> int:
    """Number of stages :func:`freeze_stages` can freeze."""
    return len(stages(featurizer))


def _keep_eval(module: nn.Module, args) -> None:
    module.train(False)


def _freeze(items: list[nn.Module | nn.Parameter]) -> None:
    for item in items:
        params = [item] if isinstance(item, nn.Parameter) else list(item.parameters())
        for p in params:
            p.requires_grad_(False)
        if isinstance(item, nn.Module):
            for m in item.modules():
                if isinstance(m, nn.modules.batchnorm._BatchNorm) and not getattr(m, "_dga_frozen", False):
                    m.register_forward_pre_hook(_keep_eval)
                    m._dga_frozen = True
                    m.train(False)


def freeze_stages(featurizer: nn.Module, k: int) -> nn.Module:
    """Freeze the first ``k`` stages (0 = none). ``k`` larger than the number of stages is an error."""
    st = stages(featurizer)
    if not 0 <= k <= len(st):
        raise ValueError(f"hparam 'freeze_stages': {k} not in [0, {len(st)}] for {type(featurizer).__name__}")
    for stage in st[:k]:
        _freeze(stage)
    return featurizer


def freeze_featurizer(featurizer: nn.Module) -> nn.Module:
    """Linear probing: every featurizer parameter frozen, every BatchNorm in eval mode."""
    _freeze([featurizer])
    return featurizer


def trainable_parameters(module: nn.Module) -> list[nn.Parameter]:
    """Parameters with ``requires_grad``."""
    return [p for p in module.parameters() if p.requires_grad]
