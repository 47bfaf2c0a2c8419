"""Batched on-device augmentations for self-supervised pretraining (SimCLR's views, Chen et al., 2020).

One random affine per image (scale, aspect, small rotation, translation) applied with
``affine_grid``/``grid_sample`` — SimCLR's random resized crop for small glyph images —
then brightness/contrast jitter and Gaussian noise. Parameters are drawn from a CPU
``torch.Generator`` (reproducible on any device) and moved to the images' device. Our choice of
ranges suits 16-64 px digits/glyphs: scale ∈ [0.7, 1.1] (zoom), aspect ∈ [0.85, 1.15],
rotation ±``max_rotate``° (10), shift ±15 % of the image, brightness ±0.2, contrast ×[0.6, 1.4],
noise σ = 0.05. No flips (digits/characters are not mirror-symmetric).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _u(n: int, lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(n, generator=g)


def random_view(x: torch.Tensor, generator: torch.Generator, max_rotate: float = 10.0) -> torch.Tensor:
    """One augmented view of ``x`` (float [B, C, H, W] in [0, 1])."""
    b = x.shape[0]
    scale = _u(b, 0.7, 1.1, generator)
    aspect = _u(b, 0.85, 1.15, generator)
    theta_r = _u(b, -max_rotate, max_rotate, generator) * math.pi / 180
    tx, ty = _u(b, -0.15, 0.15, generator), _u(b, -0.15, 0.15, generator)
    sx, sy = 1 / (scale * aspect.sqrt()), aspect.sqrt() / scale
    cos, sin = torch.cos(theta_r), torch.sin(theta_r)
    theta = torch.stack([torch.stack([sx * cos, -sx * sin, tx], 1), torch.stack([sy * sin, sy * cos, ty], 1)], 1)
    grid = F.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False, padding_mode="zeros")
    bright = _u(b, -0.2, 0.2, generator).to(x.device, x.dtype).view(b, 1, 1, 1)
    contrast = _u(b, 0.6, 1.4, generator).to(x.device, x.dtype).view(b, 1, 1, 1)
    mean = out.mean(dim=(1, 2, 3), keepdim=True)
    out = (out - mean) * contrast + mean + bright
    noise = torch.randn(out.shape, generator=generator).to(x.device, x.dtype) * 0.05
    return (out + noise).clamp(0, 1)


def two_views(x: torch.Tensor, generator: torch.Generator, max_rotate: float = 10.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two independent augmented views of the same batch."""
    return random_view(x, generator, max_rotate), random_view(x, generator, max_rotate)
