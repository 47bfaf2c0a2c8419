"""Glyph rendering for the printed domains (d0, d2) and the distorted printed domain (d1).

Conventions (paper, Zhang, Zhang & Liu, Sec. 3: 64×64 gray images; Fig. 7):

- **Polarity**: every PaHCC domain is *dark ink on a white background* (255 = paper), like the scanned
  CASIA-HWDB images; printed glyphs have uniform full-black ink, the shortcut the paper's binarization
  study (Table 7) is about. Internally we work with *ink* arrays (0 = none, 255 = full ink) and convert
  with ``255 - ink`` at the end.
- **Placement**: a glyph is rendered at twice the target resolution, cropped to its ink box, scaled so
  the longer side is ``INK_FILL`` of the canvas (aspect kept, area-averaging downsampling) and centred.
- **Distorted fonts (d1)**: SCUT-SPCCI's distorted faces are unavailable, so each d1 *instance* is a d0
  face plus one seeded distortion (shear, rotation, anisotropic scale, smooth elastic warp, erode/dilate)
  drawn once per instance and applied identically to all its characters, so it behaves like one
  distinct distorted font. Ranges come from ``resources/fonts.yaml``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from scipy import ndimage

from dganalysis.data.pahcc.fonts import CoverageCache, FontFace
from dganalysis.validation import ConfigError

INK_FILL = 0.86  # longer side of the ink box, as a fraction of the canvas side
OVERSAMPLE = 2  # render at this multiple of image_size, then area-downsample


@lru_cache(maxsize=512)
def _pil_font(path: str, index: int, size: int) -> ImageFont.FreeTypeFont:
    try:
        return ImageFont.truetype(path, size=size, index=index)
    except OSError as e:
        raise ConfigError(f"{path}: Pillow cannot open this font (index {index}) ({e}); woff2 needs FreeType with brotli") from e


def render_ink(face: FontFace, char: str, px: int, cache: CoverageCache | None = None) -> Image.Image | None:
    """``char`` in ``face`` at font size ``px`` as an "L" ink image cropped to its ink box; None if not covered."""
    path = face.file_for(char, cache)
    if path is None:
        return None
    font = _pil_font(path, face.index, px)
    left, top, right, bottom = font.getbbox(char)
    w, h = max(1, right - left), max(1, bottom - top)
    img = Image.new("L", (w, h), 0)
    ImageDraw.Draw(img).text((-left, -top), char, font=font, fill=255)
    box = img.getbbox()
    return img.crop(box) if box else None


def fit_center(ink: Image.Image | np.ndarray, size: int, fill: float = INK_FILL) -> np.ndarray:
    """Scale an ink image so its ink box's longer side is ``fill * size`` (aspect kept) and centre it.

    Returns uint8[size, size] ink (0 = none). Blank input gives a blank canvas.
    """
    if isinstance(ink, np.ndarray):
        ink = Image.fromarray(np.clip(ink, 0, 255).astype(np.uint8))
    box = ink.getbbox()
    out = np.zeros((size, size), np.uint8)
    if box is None:
        return out
    ink = ink.crop(box)
    w, h = ink.size
    s = fill * size / max(w, h)
    nw, nh = max(1, round(w * s)), max(1, round(h * s))
    small = np.asarray(ink.resize((nw, nh), Image.BOX if s < 1 else Image.BILINEAR))
    y0, x0 = (size - nh) // 2, (size - nw) // 2
    out[y0:y0 + nh, x0:x0 + nw] = small
    return out


def render_face(
    face: FontFace, chars: Sequence[str], image_size: int, cache: CoverageCache | None = None, fill: float = INK_FILL,
    oversample: int = OVERSAMPLE,
) -> tuple[np.ndarray, np.ndarray]:
    """Render ``chars`` in ``face``: ink uint8[K, S, S] for the K covered characters and their indices."""
    px = max(8, round(image_size * oversample * 1.05))
    inks, idx = [], []
    for k, c in enumerate(chars):
        g = render_ink(face, c, px, cache)
        if g is None:
            continue
        inks.append(fit_center(g, image_size, fill))
        idx.append(k)
    if not inks:
        return np.zeros((0, image_size, image_size), np.uint8), np.zeros(0, np.int64)
    return np.stack(inks), np.asarray(idx, np.int64)


# ----------------------------------------------------------------------------- d1 distortions
@dataclass(frozen=True)
class Distortion:
    """One distorted-font instance: geometric and stroke parameters plus the seed of its elastic field."""

    shear: float
    rotation: float
    scale_x: float
    scale_y: float
    stroke: int
    elastic_alpha: float
    elastic_sigma: float
    seed: int

    @classmethod
    def sample(cls, ranges: dict[str, Any], rng: np.random.Generator) -> Distortion:
        """Draw one instance uniformly inside the YAML ``ranges`` (``stroke`` as an integer)."""
        def u(key: str) -> float:
            lo, hi = ranges[key]
            return float(rng.uniform(lo, hi))

        lo, hi = ranges["stroke"]
        return cls(u("shear"), u("rotation"), u("scale_x"), u("scale_y"), int(rng.integers(lo, hi + 1)),
                   u("elastic_alpha"), float(ranges["elastic_sigma"]), int(rng.integers(2**31)))

    def coordinates(self, size: int) -> np.ndarray:
        """Sampling coordinates float32[2, size, size]: output pixel → input pixel (inverse map)."""
        c = (size - 1) / 2
        yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
        y, x = yy - c, xx - c
        # forward map A = R(rot) @ Shear_x @ diag(sx, sy); sample input at A^{-1} (p - c)
        th = np.deg2rad(self.rotation)
        rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
        a = rot @ np.array([[1.0, self.shear], [0.0, 1.0]]) @ np.diag([self.scale_x, self.scale_y])
        inv = np.linalg.inv(a)
        xi = inv[0, 0] * x + inv[0, 1] * y
        yi = inv[1, 0] * x + inv[1, 1] * y
        rng = np.random.default_rng(self.seed)
        sig = max(1.0, self.elastic_sigma * size)
        dx = ndimage.gaussian_filter(rng.standard_normal((size, size)), sig)
        dy = ndimage.gaussian_filter(rng.standard_normal((size, size)), sig)
        norm = max(np.abs(dx).max(), np.abs(dy).max(), 1e-12)
        amp = self.elastic_alpha * size / norm
        return np.stack([yi + c + amp * dy, xi + c + amp * dx]).astype(np.float32)

    def apply(self, ink: np.ndarray, image_size: int) -> np.ndarray:
        """Distort ink uint8[K, R, R] (glyphs rendered small in an R canvas) → refitted uint8[K, S, S]."""
        if len(ink) == 0:
            return np.zeros((0, image_size, image_size), np.uint8)
        size = ink.shape[-1]
        coords = self.coordinates(size)
        warped = np.stack([ndimage.map_coordinates(g.astype(np.float32), coords, order=1, cval=0.0) for g in ink])
        if self.stroke > 0:
            warped = ndimage.grey_dilation(warped, size=(1, 3, 3)) if self.stroke == 1 else \
                ndimage.grey_dilation(warped, size=(1, 2 * self.stroke + 1, 2 * self.stroke + 1))
        elif self.stroke < 0:
            k = -self.stroke
            eroded = ndimage.grey_erosion(warped, size=(1, 2 * k + 1, 2 * k + 1))
            # keep hairlines from vanishing: never erode a glyph to less than a third of its ink
            keep = eroded.reshape(len(eroded), -1).sum(1) > warped.reshape(len(warped), -1).sum(1) / 3
            warped = np.where(keep[:, None, None], eroded, warped)
        return np.stack([fit_center(g, image_size) for g in warped])


def render_distorted(
    face: FontFace, distortion: Distortion, chars: Sequence[str], image_size: int, cache: CoverageCache | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Render ``chars`` in ``face`` under ``distortion``: ink uint8[K, S, S] and the covered indices."""
    big = image_size * OVERSAMPLE
    ink, idx = render_face(face, chars, big, cache, fill=0.7, oversample=1)
    return distortion.apply(ink, image_size), idx
