"""Forward multiply-accumulates (MACs) per image of the dry run's networks, and the GPU throughput *derived* from a
published figure by the MAC ratio — for the networks no one publishes a GPU training figure for.

``dganalysis/sweep/throughput.yaml``'s ``gpu`` entries are published training throughputs (timm's
``results/benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv``) where one exists; for the small networks of the
quick and digit studies (MNIST-CNN, SmallCNN, MLP, ResNet-18 at 32 px) this script gives
``images/s = published ResNet-18 images/s × MACs(ResNet-18, 224 px) / MACs(network)``, labelled *derived*. Small
networks are bound by per-step overhead on a GPU, so derived figures are optimistic (an upper bound on speed).

MACs are counted with forward hooks on Conv2d and Linear layers (output elements × kernel volume / groups, plus
in × out for linear layers); BatchNorm, activations and pooling are not counted. Random weights (simulated:
only the shapes matter). Run: ``python bench/gpu_flops_derive.py``.
"""

from __future__ import annotations

import torch
from torch import nn

import dganalysis  # noqa: F401 - installs the torchvision shim
from dganalysis.nets import build_featurizer

#: the published reference (timm, RTX 3090, AMP, batch 512, 224 px): see dganalysis/sweep/throughput.yaml
REFERENCE = ("resnet18", {}, 3, 224, 2764.22)
CONFIGS = [("cnn", {}, 1, 28), ("smallcnn", {}, 1, 16), ("smallcnn_bn", {}, 1, 32), ("mlp", {}, 1, 16),
           ("resnet18", {"conv1_3x3": True}, 1, 32)]


def macs(featurizer: str, extra: dict, channels: int, size: int) -> int:
    net = build_featurizer((channels, size, size), {"featurizer": featurizer, **extra}).eval()
    total = 0

    def hook(module, inputs, output):
        nonlocal total
        if isinstance(module, nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            total += output.numel() * k
        elif isinstance(module, nn.Linear):
            total += module.in_features * module.out_features * (output.numel() // module.out_features)

    handles = [m.register_forward_hook(hook) for m in net.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        net(torch.zeros(1, channels, size, size))
    for h in handles:
        h.remove()
    return total


def main() -> None:
    ref_name, ref_extra, ref_c, ref_size, ref_ips = REFERENCE
    ref = macs(ref_name, ref_extra, ref_c, ref_size)
    print(f"# reference {ref_name} at {ref_size} px: {ref / 1e6:.1f} M MACs, {ref_ips} images/s (published)")
    for name, extra, c, size in CONFIGS:
        m = macs(name, extra, c, size)
        print(f"- {{featurizer: {name}, image_size: {size}, macs_m: {m / 1e6:.2f}, "
              f"images_per_s: {ref_ips * ref / m:.0f}}}")


if __name__ == "__main__":
    main()
