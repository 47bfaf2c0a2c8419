"""Image transforms: binarization (arrays) and batched on-device augmentation (tensors).

Augmentation here works on whole minibatches already on the training device (float
``[B, C, H, W]`` in [0, 1]), so the training loop never touches single samples in Python.
Every random draw takes a ``torch.Generator`` so the same seed gives the same batch.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from dganalysis.validation import ConfigError

# --------------------------------------------------------------------------- binarization
# (binarize_otsu / binarize_fixed: owned by the PaHCC engineer, added below this line)


def _check_uint8_nchw(images: np.ndarray, name: str = "images") -> np.ndarray:
    images = np.asarray(images)
    if images.dtype != np.uint8 or images.ndim != 4:
        raise ValueError(f"{name}: expected uint8[N, C, H, W], got {images.dtype}{list(images.shape)}")
    return images


def otsu_thresholds(images: np.ndarray) -> np.ndarray:
    """Per-image Otsu threshold (Otsu, 1979) of uint8[N, C, H, W] images over all channels: int[N].

    Vectorised: one 256-bin histogram per image via a single ``bincount``; the threshold ``t``
    maximises the between-class variance ω0 ω1 (μ0 − μ1)² with class 0 = values ≤ t. A constant
    image gets its value − 1 as threshold (it binarizes to all background).
    """
    images = _check_uint8_nchw(images)
    n = len(images)
    if n == 0:
        return np.zeros(0, np.int64)
    flat = images.reshape(n, -1).astype(np.int64)
    hist = np.bincount((flat + 256 * np.arange(n)[:, None]).ravel(), minlength=256 * n).reshape(n, 256).astype(np.float64)
    levels = np.arange(256, dtype=np.float64)
    w0 = np.cumsum(hist, 1)
    m0 = np.cumsum(hist * levels, 1)
    total, mtot = w0[:, -1:], m0[:, -1:]
    w1 = total - w0
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (m0 * w1 - (mtot - m0) * w0) ** 2 / (w0 * w1)
    between = np.nan_to_num(between, nan=-1.0, posinf=-1.0)
    t = between.argmax(1)
    const = (between.max(1) <= 0)
    t[const] = flat[const, 0] - 1  # constant image: everything is background (> t)
    return t


def binarize_fixed(images: np.ndarray, threshold: int = 128) -> np.ndarray:
    """Binarize uint8[N, C, H, W] at a fixed ``threshold``: values > threshold → 255, else 0 (polarity kept)."""
    images = _check_uint8_nchw(images)
    if not 0 <= int(threshold) <= 255:
        raise ConfigError(f"threshold={threshold}: expected an int in [0, 255]")
    return np.where(images > int(threshold), np.uint8(255), np.uint8(0))


def binarize_otsu(images: np.ndarray) -> np.ndarray:
    """Binarize uint8[N, C, H, W] with a per-image Otsu threshold: > t → 255, else 0 (polarity kept).

    The paper's binarization study (Zhang, Zhang & Liu, Sec. 4, Table 7) binarizes gray images to remove the
    foreground-intensity shortcut; it does not name the method, we use per-image Otsu.
    """
    images = _check_uint8_nchw(images)
    t = otsu_thresholds(images)
    return np.where(images > t[:, None, None, None], np.uint8(255), np.uint8(0))


# --------------------------------------------------------------------------- augmentation
def _uniform(n: int, low: float, high: float, generator: torch.Generator | None, device: torch.device) -> torch.Tensor:
    return torch.rand(n, generator=generator, device=device) * (high - low) + low


def random_affine_matrices(
    n: int,
    degrees: float = 10.0,
    translate: float = 0.1,
    scale: tuple[float, float] = (0.9, 1.1),
    shear: float = 5.0,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> torch.Tensor:
    """``n`` random 2×3 affine matrices in the normalised coordinates of ``F.affine_grid``.

    Rotation U(−degrees, degrees), shear (x) U(−shear, shear) degrees, isotropic scale
    U(scale), translation U(−translate, translate) × image size per axis — the parameters
    of torchvision's ``RandomAffine``, drawn per sample.
    """
    device = torch.device(device)
    rot = _uniform(n, -degrees, degrees, generator, device) * (math.pi / 180)
    shr = _uniform(n, -shear, shear, generator, device) * (math.pi / 180)
    s = _uniform(n, scale[0], scale[1], generator, device)
    tx = _uniform(n, -translate, translate, generator, device) * 2  # normalised coords span [-1, 1]
    ty = _uniform(n, -translate, translate, generator, device) * 2
    cos, sin, tan = torch.cos(rot), torch.sin(rot), torch.tan(shr)
    # A = R(rot) @ Shear_x(shr) / s: affine_grid maps output coords to input coords,
    # so dividing by the scale enlarges the content for s > 1.
    a = torch.stack([cos, cos * tan - sin], 1) / s[:, None]
    b = torch.stack([sin, sin * tan + cos], 1) / s[:, None]
    return torch.stack([torch.cat([a, tx[:, None]], 1), torch.cat([b, ty[:, None]], 1)], 1)


def random_affine(
    x: torch.Tensor,
    generator: torch.Generator | None = None,
    degrees: float = 10.0,
    translate: float = 0.1,
    scale: tuple[float, float] = (0.9, 1.1),
    shear: float = 5.0,
) -> torch.Tensor:
    """Apply an independent random affine warp to every image of the batch ``x`` [B, C, H, W].

    Bilinear sampling; pixels from outside the image repeat the border (padding mode
    ``border``), which keeps the background colour for glyphs on white or on black.
    """
    if x.ndim != 4:
        raise ValueError(f"random_affine: x must be [B, C, H, W], got shape {list(x.shape)}")
    theta = random_affine_matrices(len(x), degrees, translate, scale, shear, generator, x.device).to(x.dtype)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
