"""DomainBed's image pipeline, batched on the device.

DomainBed (Gulrajani & Lopez-Paz, 2021, ``datasets.MultipleEnvironmentImageFolder``) transforms every image
of its image benchmarks one at a time with torchvision, on the CPU:

- evaluation: ``Resize((224, 224))``, ``ToTensor``, ``Normalize(ImageNet mean, std)``;
- training (hparam ``data_augmentation``, default on): ``RandomResizedCrop(224, scale=(0.7, 1))``,
  ``RandomHorizontalFlip()``, ``ColorJitter(0.3, 0.3, 0.3, 0.3)``, ``RandomGrayscale()`` (p = 0.1),
  ``ToTensor``, ``Normalize``.

:class:`DomainBedPipeline` does the same on a whole uint8 batch already on the training device, with every
random draw from one ``torch.Generator``. Its inputs are the images decoded at the evaluation size S × S
(DomainBed's ``Resize((S, S))``, aspect not kept) and, per image, the original width and height. Choices:

- the crop box is drawn exactly as torchvision's ``RandomResizedCrop.get_params`` draws it *in the original
  image's pixels* (10 tries of area fraction U(scale) and log-uniform aspect ratio, rounded; a centred
  fallback), then mapped into the S × S frame and resampled bilinearly (``grid_sample``). The distribution
  of crop boxes is DomainBed's; the pixels are interpolated from the S × S image rather than from the
  original, a resolution difference only (at S = 224 and scale ≥ 0.7 the crop is upsampled anyway);
- colour jitter works on float images in [0, 1] (torchvision's tensor path; DomainBed's PIL path rounds to
  uint8 after each of the four operations), in a random order per image, as ``ColorJitter`` does;
- without the original sizes the images are taken as square.

``tests/data/test_pipeline.py`` compares the distributions drawn here with torchvision's per-sample ``v2``
transforms on fixed images (crop geometry, flip rate, colour statistics, grayscale rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
GRAY_WEIGHTS = (0.2989, 0.587, 0.114)  # ITU-R 601-2 luma, as torchvision's rgb_to_grayscale


def _rand(shape, generator, device) -> torch.Tensor:
    return torch.rand(shape, generator=generator, device=device)


def crop_boxes(
    widths: torch.Tensor, heights: torch.Tensor, scale: tuple[float, float] = (0.7, 1.0),
    ratio: tuple[float, float] = (3 / 4, 4 / 3), generator: torch.Generator | None = None, tries: int = 10,
) -> torch.Tensor:
    """Crop boxes ``(x0, y0, w, h)`` in pixels, float[B, 4], drawn per image as torchvision's
    ``RandomResizedCrop.get_params`` draws them for an image of ``widths[b]`` × ``heights[b]`` pixels."""
    dev = widths.device
    W, H = widths.double()[:, None], heights.double()[:, None]
    n = len(widths)
    area = W * H
    target = area * (_rand((n, tries), generator, dev).double() * (scale[1] - scale[0]) + scale[0])
    lo, hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = torch.exp(_rand((n, tries), generator, dev).double() * (hi - lo) + lo)
    w = torch.round(torch.sqrt(target * aspect))
    h = torch.round(torch.sqrt(target / aspect))
    ok = (w > 0) & (w <= W) & (h > 0) & (h <= H)
    first = ok.double().argmax(1, keepdim=True)
    found = ok.any(1)
    w, h = w.gather(1, first)[:, 0], h.gather(1, first)[:, 0]
    u = _rand((n, 2), generator, dev).double()
    y0 = torch.floor(u[:, 0] * (H[:, 0] - h + 1))
    x0 = torch.floor(u[:, 1] * (W[:, 0] - w + 1))
    # fallback (no try fits): the centred crop of the largest allowed aspect ratio
    Wf, Hf = W[:, 0], H[:, 0]
    in_ratio = Wf / Hf
    fw = torch.where(in_ratio < ratio[0], Wf, torch.where(in_ratio > ratio[1], torch.round(Hf * ratio[1]), Wf))
    fh = torch.where(in_ratio < ratio[0], torch.round(Wf / ratio[0]), Hf)
    fx0, fy0 = torch.div(Wf - fw, 2, rounding_mode="floor"), torch.div(Hf - fh, 2, rounding_mode="floor")
    box = torch.stack([torch.where(found, x0, fx0), torch.where(found, y0, fy0),
                       torch.where(found, w, fw), torch.where(found, h, fh)], 1)
    return box.float()


def resized_crop(x: torch.Tensor, boxes: torch.Tensor, frame: torch.Tensor, size: int, flip: torch.Tensor | None = None
                 ) -> torch.Tensor:
    """Crop ``boxes`` (pixels of an original of ``frame`` = (W, H) per image, [B, 2]) out of ``x`` [B, C, S, S]
    (that original resized to S × S), resize to ``size`` × ``size`` bilinearly, mirror where ``flip``."""
    fw, fh = frame[:, 0].to(x.dtype), frame[:, 1].to(x.dtype)
    x0, y0, w, h = (boxes[:, i].to(x.dtype) for i in range(4))
    sx, sy = w / fw, h / fh  # half-extent of the box in normalised [-1, 1] coordinates
    cx, cy = 2 * x0 / fw + sx - 1, 2 * y0 / fh + sy - 1
    if flip is not None:
        sx = torch.where(flip, -sx, sx)
    zero = torch.zeros_like(sx)
    theta = torch.stack([torch.stack([sx, zero, cx], 1), torch.stack([zero, sy, cy], 1)], 1)
    grid = F.affine_grid(theta, [len(x), x.shape[1], size, size], align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def grayscale(x: torch.Tensor) -> torch.Tensor:
    """Luma [B, 1, H, W] of RGB ``x`` [B, 3, H, W]."""
    w = torch.tensor(GRAY_WEIGHTS, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


def rgb_to_hsv(x: torch.Tensor) -> torch.Tensor:
    """RGB in [0, 1] → HSV with hue in [0, 1) (hexcone model)."""
    r, g, b = x.unbind(1)
    maxc = x.amax(1)
    delta = maxc - x.amin(1)
    gray = delta == 0
    s = delta / torch.where(gray, 1.0, maxc)
    d = torch.where(gray, 1.0, delta)
    h = torch.where(maxc == r, (g - b) / d, torch.where(maxc == g, (b - r) / d + 2.0, (r - g) / d + 4.0))
    h = torch.where(gray, 0.0, h)
    return torch.stack([torch.remainder(h.div_(6.0), 1.0), s, maxc], 1)


_HSV_K = (5.0, 3.0, 1.0)


def hsv_to_rgb(x: torch.Tensor) -> torch.Tensor:
    """HSV (hue in [0, 1)) → RGB in [0, 1]: channel n of (r, g, b) is v − v·s·clamp(min(k, 4 − k), 0, 1) with
    k = (n + 6h) mod 6 for n = 5, 3, 1 (the piecewise-linear hexcone, without a per-sector table)."""
    h, s, v = x[:, 0:1], x[:, 1:2], x[:, 2:3]
    k = torch.remainder(torch.tensor(_HSV_K, dtype=x.dtype, device=x.device).view(1, 3, 1, 1) + h * 6.0, 6.0)
    return v - v * s * torch.minimum(k, 4.0 - k).clamp_(0.0, 1.0)


def _blend(x: torch.Tensor, other: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    return (f.view(-1, 1, 1, 1) * x + (1 - f.view(-1, 1, 1, 1)) * other).clamp_(0, 1)


def jitter_params(n: int, brightness: float = 0.3, contrast: float = 0.3, saturation: float = 0.3, hue: float = 0.3,
                  generator: torch.Generator | None = None, device: torch.device | str = "cpu"
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """``ColorJitter``'s draws for ``n`` images: factors [n, 4] (U(1 ± b), U(1 ± c), U(1 ± s), hue shift U(± h))
    and the order of the four operations [n, 4] (a uniform random permutation per image)."""
    u = _rand((n, 4), generator, device)
    lo = torch.tensor([1 - brightness, 1 - contrast, 1 - saturation, -hue], device=device)
    hi = torch.tensor([1 + brightness, 1 + contrast, 1 + saturation, hue], device=device)
    order = torch.argsort(_rand((n, 4), generator, device), 1)
    return lo + (hi - lo) * u, order


def color_jitter(x: torch.Tensor, brightness: float = 0.3, contrast: float = 0.3, saturation: float = 0.3,
                 hue: float = 0.3, generator: torch.Generator | None = None,
                 params: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """torchvision's ``ColorJitter`` per image of ``x`` [B, 3, H, W] in [0, 1]: factors U(1 ± b), U(1 ± c),
    U(1 ± s) and a hue shift U(± h), applied in a random order drawn per image (or ``params`` from
    :func:`jitter_params`)."""
    dev = x.device
    factors, order = params if params is not None else jitter_params(len(x), brightness, contrast, saturation, hue,
                                                                     generator, dev)
    factors, order = factors.to(dev), order.to(dev)
    # images grouped by their permutation (at most 24 groups): one gather in, contiguous slices, one scatter out
    code = (order * torch.tensor([64, 16, 4, 1], device=dev)).sum(1)
    codes, counts = torch.unique(code, return_counts=True)
    perm = torch.argsort(code, stable=True)
    xs, f = x[perm], factors[perm]
    out, start = torch.empty_like(xs), 0
    for c, k in zip(codes.tolist(), counts.tolist()):
        sl = slice(start, start + k)
        y = xs[sl]
        for op in (c // 64, c // 16 % 4, c // 4 % 4, c % 4):
            y = _jitter_op(y, op, f[sl, op])
        out[sl] = y
        start += k
    result = torch.empty_like(out)
    result[perm] = out
    return result


def _jitter_op(x: torch.Tensor, op: int, f: torch.Tensor) -> torch.Tensor:
    """One of ColorJitter's operations (0 brightness, 1 contrast, 2 saturation, 3 hue) with per-image factors."""
    if op == 0:
        return (x * f.view(-1, 1, 1, 1)).clamp_(0, 1)
    if op == 1:
        return _blend(x, grayscale(x).mean((1, 2, 3), keepdim=True), f)
    if op == 2:
        return _blend(x, grayscale(x), f)
    hsv = rgb_to_hsv(x)
    hsv[:, 0] = torch.remainder(hsv[:, 0] + f.view(-1, 1, 1), 1.0)
    return hsv_to_rgb(hsv)


def random_grayscale(x: torch.Tensor, p: float = 0.1, generator: torch.Generator | None = None,
                     pick: torch.Tensor | None = None) -> torch.Tensor:
    """Each image replaced by its luma (repeated over the channels) with probability ``p`` (or where ``pick``)."""
    pick = (_rand(len(x), generator, x.device) < p) if pick is None else pick.to(x.device)
    return torch.where(pick.view(-1, 1, 1, 1), grayscale(x).expand_as(x), x)


def normalize(x: torch.Tensor, mean=IMAGENET_MEAN, std=IMAGENET_STD) -> torch.Tensor:
    """(x − mean) / std per channel (ImageNet statistics by default)."""
    m = torch.tensor(mean, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=x.dtype, device=x.device).view(1, -1, 1, 1)
    return (x - m) / s


def to_float(x: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
    """uint8 → float32 in [0, 1] (keeping channels_last when asked)."""
    fmt = torch.channels_last if channels_last and x.ndim == 4 else torch.contiguous_format
    return x.to(dtype=torch.float32, memory_format=fmt).mul_(1.0 / 255.0)


@dataclass(frozen=True)
class DomainBedPipeline:
    """DomainBed's train/eval transforms on uint8 batches (see the module doc). ``size``: output side."""

    size: int = 224
    augment: bool = True
    normalize: bool = True
    scale: tuple[float, float] = (0.7, 1.0)
    ratio: tuple[float, float] = (3 / 4, 4 / 3)
    jitter: float = 0.3
    grayscale_p: float = 0.1
    flip_p: float = 0.5

    def _frame(self, x: torch.Tensor, orig_size: torch.Tensor | None) -> torch.Tensor:
        if orig_size is None:
            return torch.tensor([[x.shape[-1], x.shape[-2]]], device=x.device).expand(len(x), 2)
        return orig_size.to(x.device)

    def draw(self, frame: torch.Tensor, generator: torch.Generator | None = None) -> dict[str, torch.Tensor]:
        """Every random choice for a batch of images whose crop frames (W, H) are ``frame`` [B, 2]: crop boxes,
        flips, colour-jitter factors and order, grayscale picks (in this order from ``generator``)."""
        dev = frame.device
        boxes = crop_boxes(frame[:, 0], frame[:, 1], self.scale, self.ratio, generator)
        flip = _rand(len(frame), generator, dev) < self.flip_p
        factors, order = jitter_params(len(frame), self.jitter, self.jitter, self.jitter, self.jitter, generator, dev)
        gray = _rand(len(frame), generator, dev) < self.grayscale_p
        return {"boxes": boxes, "flip": flip, "factors": factors, "order": order, "gray": gray}

    def train(self, x: torch.Tensor, orig_size: torch.Tensor | None = None, generator: torch.Generator | None = None,
              channels_last: bool = False) -> torch.Tensor:
        """Augmented, normalised float batch [B, 3, size, size] from uint8 ``x`` [B, 3, S, S], batched on x's device."""
        if not self.augment:
            return self.eval(x, channels_last)
        x = to_float(x)
        frame = self._frame(x, orig_size)
        p = self.draw(frame, generator)
        x = resized_crop(x, p["boxes"], frame, self.size, p["flip"])
        x = color_jitter(x, params=(p["factors"], p["order"]))
        x = random_grayscale(x, pick=p["gray"])
        return self._finish(x, channels_last)

    def augment_pil(self, image, params: dict[str, torch.Tensor], j: int) -> np.ndarray:
        """Image ``j`` of a batch augmented on the host with Pillow (torchvision's PIL functions, DomainBed's
        own per-sample path, including its uint8 rounding between operations) from the batch's ``params``
        (:meth:`draw`, the crop box in ``image``'s pixels): uint8[3, size, size]."""
        from dganalysis.compat import torchvision

        TF = torchvision().transforms.functional
        x0, y0, w, h = (int(v) for v in params["boxes"][j].tolist())
        im = TF.resized_crop(image, y0, x0, h, w, [self.size, self.size])
        if bool(params["flip"][j]):
            im = TF.hflip(im)
        f = params["factors"][j].tolist()
        ops = (TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue)
        for op in params["order"][j].tolist():
            im = ops[op](im, f[op])
        if bool(params["gray"][j]):
            im = TF.rgb_to_grayscale(im, num_output_channels=3)
        return np.asarray(im, dtype=np.uint8).transpose(2, 0, 1)

    def eval(self, x: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
        """Resized (when S ≠ size) and normalised float batch."""
        x = to_float(x)
        if x.shape[-1] != self.size or x.shape[-2] != self.size:
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False, antialias=True)
        return self._finish(x, channels_last)

    def _finish(self, x: torch.Tensor, channels_last: bool) -> torch.Tensor:
        if self.normalize:
            x = normalize(x)
        return x.contiguous(memory_format=torch.channels_last) if channels_last else x


@dataclass(frozen=True)
class PlainPipeline:
    """Our default for arrays at their final size: float/255, and the batched random affine warp of
    :func:`dganalysis.data.transforms.random_affine` when ``augment`` (hparam ``augment``); optional ImageNet
    normalisation (used with torchvision's ImageNet weights)."""

    augment: bool = False
    normalize: bool = False

    def train(self, x: torch.Tensor, orig_size: torch.Tensor | None = None, generator: torch.Generator | None = None,
              channels_last: bool = False) -> torch.Tensor:
        from dganalysis.data.transforms import random_affine

        x = to_float(x, channels_last)
        if self.augment:
            x = random_affine(x, generator=generator)
        return normalize(x) if self.normalize else x

    def eval(self, x: torch.Tensor, channels_last: bool = False) -> torch.Tensor:
        x = to_float(x, channels_last)
        return normalize(x) if self.normalize else x


def make_pipeline(info: dict, hparams: dict, input_shape: tuple[int, ...]) -> DomainBedPipeline | PlainPipeline:
    """The pipeline a dataset asks for (``info['pipeline'] == 'domainbed'``: DomainBed's, augmenting when hparam
    ``data_augmentation``, default True; ``'spawrious'``: the same without the random crop, as DomainBed's
    Spawrious transforms) or :class:`PlainPipeline`. ImageNet normalisation: always for DomainBed's
    pipeline (as DomainBed); otherwise when the featurizer starts from torchvision's ImageNet weights
    (``pretrained: imagenet``) and the images have 3 channels."""
    from dganalysis.nets.torchhub import is_hub_spec

    if info.get("pipeline") == "domainbed":
        return DomainBedPipeline(size=int(input_shape[-1]), augment=bool(hparams.get("data_augmentation", True)))
    if info.get("pipeline") == "spawrious":  # DomainBed's Spawrious transforms: no random crop (the whole image)
        return DomainBedPipeline(size=int(input_shape[-1]), augment=bool(hparams.get("data_augmentation", True)),
                                 scale=(1.0, 1.0), ratio=(1.0, 1.0))
    imagenet = bool(hparams.get("pretrained")) and is_hub_spec(str(hparams["pretrained"])) and input_shape[0] == 3
    return PlainPipeline(augment=bool(hparams.get("augment", False)), normalize=imagenet)
