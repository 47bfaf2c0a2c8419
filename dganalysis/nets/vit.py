"""ViT featurizer: a torchvision ``VisionTransformer`` trunk with the classification head removed.

Yu et al. (2024, Sec. 2.1, Table 3) compare supervised and MoCo-v3 pretrained ViT-B/16. We keep
torchvision's module layout (``conv_proj``, ``class_token``, ``encoder.pos_embedding``,
``encoder.layers.encoder_layer_{i}``, ``encoder.ln``) so torchvision state dicts load as they
are and timm/MoCo-v3 ones are remapped by :mod:`dganalysis.nets.pretrained`.
``conv_proj`` takes ``in_channels`` channels (grayscale glyphs have 1); the image size must be a
multiple of the patch size.
"""

from __future__ import annotations

import torch
from torch import nn

ARCHS = {
    # name: (patch_size, num_layers, num_heads, hidden_dim, mlp_dim)
    "vit_b_16": (16, 12, 12, 768, 3072),
    "vit_tiny_16": (16, 4, 3, 192, 768),
}


class ViT(nn.Module):
    """``network`` is a torchvision VisionTransformer with ``heads = Identity``; output = class token."""

    def __init__(self, arch: str, in_channels: int, image_size: int, dropout: float = 0.0) -> None:
        super().__init__()
        from dganalysis.compat import torchvision

        if arch not in ARCHS:
            raise ValueError(f"ViT arch {arch!r} unknown; expected one of {sorted(ARCHS)}")
        patch, layers, heads, dim, mlp = ARCHS[arch]
        if image_size % patch:
            raise ValueError(f"ViT {arch}: image size {image_size} is not a multiple of the patch size {patch}")
        vt = torchvision().models.vision_transformer
        net = vt.VisionTransformer(image_size=image_size, patch_size=patch, num_layers=layers, num_heads=heads,
                                   hidden_dim=dim, mlp_dim=mlp)
        if in_channels != 3:
            net.conv_proj = nn.Conv2d(in_channels, dim, kernel_size=patch, stride=patch)
        net.heads = nn.Identity()
        self.network = net
        self.arch = arch
        self.n_outputs = dim
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.network(x))
