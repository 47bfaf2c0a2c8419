"""DomainBed's batched image pipeline draws the distributions of torchvision's per-sample transforms.

Each test applies ours (one batched call) and torchvision's ``v2`` transforms (one call per sample) N times to
fixed images and compares the mean and the variance of per-draw statistics with a two-sample z-test whose
tolerance comes from the sampling error (|z| < 4.5: a false alarm about once in 150,000 comparisons; the
seeds are fixed, so the tests are deterministic). A wrong parameter (e.g. scale (0.5, 1), p = 0.2, jitter 0.2)
moves these statistics by many standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dganalysis  # noqa: F401  (torchvision shim)
from dganalysis.compat import torchvision
from dganalysis.data.pipeline import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    DomainBedPipeline,
    color_jitter,
    crop_boxes,
    hsv_to_rgb,
    random_grayscale,
    rgb_to_hsv,
)

torch.set_num_threads(1)
torchvision()
from torchvision.transforms import v2  # noqa: E402

N = 1500
Z = 4.5


def _same_distribution(a, b, name: str) -> None:
    """Means and variances of per-draw statistics ``a`` (ours) and ``b`` (torchvision) agree within Z standard errors."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    se = max(np.sqrt(a.var() / len(a) + b.var() / len(b)), 1e-6)  # floor: float32 rounding
    z = (a.mean() - b.mean()) / se
    assert abs(z) < Z, f"{name}: mean {a.mean():.4f} (ours) vs {b.mean():.4f} (torchvision), z = {z:.1f}"
    da, db = (a - a.mean()) ** 2, (b - b.mean()) ** 2
    se2 = max(np.sqrt(da.var() / len(a) + db.var() / len(b)), 1e-6)
    z2 = (da.mean() - db.mean()) / se2
    assert abs(z2) < Z, f"{name}: variance {a.var():.5f} (ours) vs {b.var():.5f} (torchvision), z = {z2:.1f}"


@pytest.mark.parametrize("wh", [(40, 30), (30, 40), (16, 16), (100, 20)])
def test_crop_boxes_match_random_resized_crop(wh):
    w, h = wh
    g = torch.Generator().manual_seed(0)
    ours = crop_boxes(torch.full((N,), w), torch.full((N,), h), (0.7, 1.0), (3 / 4, 4 / 3), g).numpy()
    torch.manual_seed(1)
    img = torch.zeros(3, h, w)
    tv = np.array([v2.RandomResizedCrop.get_params(img, [0.7, 1.0], [3 / 4, 4 / 3]) for _ in range(N)], np.float64)
    tv = tv[:, [1, 0, 3, 2]]  # (top, left, height, width) → (x0, y0, w, h)
    for name, f in {"area fraction": lambda b: b[:, 2] * b[:, 3] / (w * h),
                    "log aspect": lambda b: np.log(b[:, 2] / b[:, 3]),
                    "centre x": lambda b: (b[:, 0] + b[:, 2] / 2) / w,
                    "centre y": lambda b: (b[:, 1] + b[:, 3] / 2) / h}.items():
        _same_distribution(f(ours), f(tv), f"{wh} {name}")
    assert (ours[:, 0] >= 0).all() and (ours[:, 0] + ours[:, 2] <= w).all()
    assert (ours[:, 1] >= 0).all() and (ours[:, 1] + ours[:, 3] <= h).all()


def test_crop_distribution_differs_for_wrong_scale():
    """The test above has power: scale (0.5, 1) is detected."""
    g = torch.Generator().manual_seed(0)
    ours = crop_boxes(torch.full((N,), 40), torch.full((N,), 30), (0.5, 1.0), generator=g).numpy()
    torch.manual_seed(1)
    tv = np.array([v2.RandomResizedCrop.get_params(torch.zeros(3, 30, 40), [0.7, 1.0], [3 / 4, 4 / 3])
                   for _ in range(N)], np.float64)
    with pytest.raises(AssertionError, match="area fraction"):
        _same_distribution(ours[:, 2] * ours[:, 3] / 1200, tv[:, 2] * tv[:, 3] / 1200, "area fraction")


def _ramp(w: int, h: int) -> torch.Tensor:
    """R = x, G = y (pixel centres in [0, 1]), B = 0.5: a linear image bilinear resampling reproduces."""
    xs = (torch.arange(w) + 0.5) / w
    ys = (torch.arange(h) + 0.5) / h
    return torch.stack([xs.expand(h, w), ys[:, None].expand(h, w), torch.full((h, w), 0.5)])


def _geometry_stats(out: torch.Tensor) -> dict[str, np.ndarray]:
    r, g = out[:, 0], out[:, 1]
    return {"centre x": r.mean((1, 2)).numpy(), "centre y": g.mean((1, 2)).numpy(),
            "width": (r[:, :, 1:-1].amax((1, 2)) - r[:, :, 1:-1].amin((1, 2))).numpy(),
            "flipped": (r[:, :, -1].mean(1) < r[:, :, 0].mean(1)).float().numpy()}


def test_crop_and_flip_pixels_match_torchvision():
    """Crop + flip end to end on pixels: ours samples the S×S resized image with the original's size known."""
    w, h, s, out = 48, 32, 32, 24
    orig = _ramp(w, h)
    small = torch.nn.functional.interpolate(orig[None], size=(s, s), mode="bilinear", align_corners=False)
    x = (small * 255).round().to(torch.uint8).expand(N, -1, -1, -1)
    pipe = DomainBedPipeline(size=out, normalize=False, jitter=0.0, grayscale_p=0.0)
    ours = pipe.train(x, torch.tensor([[w, h]]).expand(N, 2), torch.Generator().manual_seed(0))
    tvt = v2.Compose([v2.RandomResizedCrop(out, scale=(0.7, 1.0), antialias=True), v2.RandomHorizontalFlip()])
    torch.manual_seed(2)
    tv = torch.stack([tvt(orig) for _ in range(N)])
    so, st = _geometry_stats(ours), _geometry_stats(tv)
    for k in so:
        _same_distribution(so[k], st[k], k)
    assert 0.45 < so["flipped"].mean() < 0.55


def _colour_stats(out: torch.Tensor) -> dict[str, np.ndarray]:
    hsv = rgb_to_hsv(out)
    ang = 2 * np.pi * hsv[:, 0]
    return {"mean": out.mean((1, 2, 3)).numpy(), "std": out.std((1, 2, 3)).numpy(),
            "saturation": hsv[:, 1].mean((1, 2)).numpy(), "hue cos": torch.cos(ang).mean((1, 2)).numpy(),
            "hue sin": torch.sin(ang).mean((1, 2)).numpy(),
            "gray": ((out.amax(1) - out.amin(1)).amax((1, 2)) < 1e-6).float().numpy()}


def _colour_image(seed: int = 0, s: int = 12) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(3, 3, 3, generator=g) * 0.8 + 0.1
    return torch.nn.functional.interpolate(base[None], size=(s, s), mode="bilinear", align_corners=False)[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_colour_jitter_and_grayscale_match_torchvision(seed):
    img = _colour_image(seed)
    ours = random_grayscale(color_jitter(img.expand(N, -1, -1, -1), generator=torch.Generator().manual_seed(seed)),
                            0.1, torch.Generator().manual_seed(seed + 10))
    tvt = v2.Compose([v2.ColorJitter(0.3, 0.3, 0.3, 0.3), v2.RandomGrayscale(p=0.1)])
    torch.manual_seed(seed + 3)
    tv = torch.stack([tvt(img) for _ in range(N)])
    so, st = _colour_stats(ours), _colour_stats(tv)
    for k in so:
        _same_distribution(so[k], st[k], k)
    assert 0.07 < so["gray"].mean() < 0.13


def test_colour_jitter_detects_wrong_strength():
    img = _colour_image(0)
    ours = color_jitter(img.expand(N, -1, -1, -1), 0.15, 0.15, 0.15, 0.15, torch.Generator().manual_seed(0))
    tvt = v2.ColorJitter(0.3, 0.3, 0.3, 0.3)
    torch.manual_seed(3)
    tv = torch.stack([tvt(img) for _ in range(N)])
    so, st = _colour_stats(ours), _colour_stats(tv)
    with pytest.raises(AssertionError):
        for k in ("mean", "std", "saturation", "hue cos"):
            _same_distribution(so[k], st[k], k)


def test_hsv_round_trip_and_eval_normalisation():
    x = torch.rand(5, 3, 7, 9, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(hsv_to_rgb(rgb_to_hsv(x)), x, atol=1e-5)
    u8 = (x[..., :7, :7] * 255).round().to(torch.uint8).contiguous()
    ref = v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)(u8.float() / 255)
    assert torch.allclose(DomainBedPipeline(size=7).eval(u8), ref, atol=1e-5)
    assert torch.allclose(DomainBedPipeline(size=7, augment=False).train(u8), ref, atol=1e-5)
    up = DomainBedPipeline(size=14, normalize=False).eval(u8)  # S ≠ size: bilinear resize
    assert up.shape == (5, 3, 14, 14) and torch.allclose(up.mean((2, 3)), u8.float().mean((2, 3)) / 255, atol=0.02)
