"""Simulated handwriting (the embedded default of PaHCC's handwritten domain), labelled *simulated*.

The paper's handwritten domain is CASIA-HWDB1.0–1.1 (720 writers' scanned characters, Zhang, Zhang & Liu Sec. 3),
which cannot be downloaded here. We simulate writers from the stroke *medians* (centre lines, in stroke
order) of npm ``hanzi-writer-data`` (a 1024 box with the y axis flipped: image y = 900 − y).

Per writer (seeded, fixed for all of that writer's characters): slant (x-shear), rotation, aspect,
size, stroke width, ink darkness, pressure variability, stroke jitter and drift, elastic warp amplitude,
blur, background level and scan noise. Per sample: stroke-order-consistent jitter (each stroke is
shifted by a random walk over the stroke order, so later strokes drift further, plus small per-point
noise), a smooth elastic warp (sum of random sinusoids), corner rounding (Chaikin), and *uneven ink*:
pressure varies smoothly along each stroke and tapers at its end; width and darkness follow it,
crossings keep the darker ink. Then blur, paper background, noise. Aim (paper Sec. 4, Table 7): the
scanned foreground has uneven gray levels, unlike the uniform ink of printed glyphs.

Relative sizes are kept as in the paper: a character is placed by its position in the 1024 em box scaled
by the writer's size (so 一 stays short and wide), centred on its ink box. Polarity: dark ink on white.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter

from dganalysis.data.pahcc.npm import npm_package_dir
from dganalysis.data.pahcc.render import OVERSAMPLE
from dganalysis.validation import ConfigError, MissingInputError

EM = 1024.0


def hanzi_writer_dir() -> Path:
    """Folder of hanzi-writer-data's per-character JSON files (under the npm prefix of ``install_fonts.sh``)."""
    return npm_package_dir("hanzi-writer-data")


@lru_cache(maxsize=4096)
def load_medians(char: str, root: str | None = None) -> tuple[np.ndarray, ...]:
    """Stroke medians of ``char`` in image coordinates of the 1024 em box (y down), one float array per stroke."""
    folder = Path(root) if root is not None else hanzi_writer_dir()
    path = folder / f"{char}.json"
    if not path.is_file():
        raise MissingInputError(
            f"{path}: no hanzi-writer-data stroke file for {char!r} (install with dganalysis/data/pahcc/install_fonts.sh "
            "or set DGANALYSIS_NPM_DIR)"
        )
    try:
        medians = json.loads(path.read_text(encoding="utf-8"))["medians"]
    except (OSError, json.JSONDecodeError, KeyError) as e:
        raise ConfigError(f"{path}: expected hanzi-writer-data JSON with a 'medians' list ({e})") from e
    out = []
    for m in medians:
        a = np.asarray(m, np.float64).reshape(-1, 2)
        a[:, 1] = 900.0 - a[:, 1]
        out.append(a)
    return tuple(out)


@dataclass(frozen=True)
class WriterStyle:
    """One simulated writer's style (fractions refer to the canvas side unless noted)."""

    slant: float  # x-shear factor
    rotation: float  # degrees
    aspect: float  # x scale relative to y
    size: float  # em box side / canvas side
    width: float  # stroke width / canvas side
    ink: float  # darkness at full pressure, 0..1
    pressure_var: float  # relative pressure variation along a stroke
    jitter: float  # per-stroke offset std, fraction of the em box
    drift: float  # random-walk step over stroke order, fraction of the em box
    warp: float  # elastic warp amplitude, fraction of the em box
    blur: float  # Gaussian blur radius at the target resolution (px)
    background: float  # paper gray level
    noise: float  # scan noise std (gray levels)
    seed: int

    @classmethod
    def sample(cls, rng: np.random.Generator) -> WriterStyle:
        """A random writer (ranges chosen by eye to span neat to sloppy writing)."""
        return cls(
            slant=float(rng.normal(0.0, 0.15)), rotation=float(rng.normal(0.0, 3.0)),
            aspect=float(rng.uniform(0.85, 1.12)), size=float(rng.uniform(0.78, 0.95)),
            width=float(rng.uniform(0.035, 0.075)), ink=float(rng.uniform(0.65, 0.98)),
            pressure_var=float(rng.uniform(0.15, 0.45)), jitter=float(rng.uniform(0.015, 0.045)),
            drift=float(rng.uniform(0.0, 0.02)), warp=float(rng.uniform(0.01, 0.04)),
            blur=float(rng.uniform(0.3, 0.8)), background=float(rng.uniform(238, 255)),
            noise=float(rng.uniform(1.0, 6.0)), seed=int(rng.integers(2**31)),
        )

    def as_dict(self) -> dict:
        return asdict(self)


def _chaikin(p: np.ndarray, iters: int = 2) -> np.ndarray:
    for _ in range(iters):
        if len(p) < 3:
            break
        q = 0.75 * p[:-1] + 0.25 * p[1:]
        r = 0.25 * p[:-1] + 0.75 * p[1:]
        mid = np.empty((2 * len(q), 2))
        mid[0::2], mid[1::2] = q, r
        p = np.concatenate([p[:1], mid, p[-1:]])
    return p


def _resample(p: np.ndarray, step: float) -> np.ndarray:
    seg = np.linalg.norm(np.diff(p, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    n = max(2, int(np.ceil(s[-1] / max(step, 1e-6))) + 1)
    t = np.linspace(0.0, s[-1], n)
    return np.stack([np.interp(t, s, p[:, 0]), np.interp(t, s, p[:, 1])], 1)


def simulate_char(char: str, style: WriterStyle, image_size: int, rng: np.random.Generator,
                  root: str | None = None) -> np.ndarray:
    """One simulated handwritten sample of ``char`` by ``style``: uint8[S, S], dark ink on a light background."""
    strokes = load_medians(char, root)
    big = image_size * OVERSAMPLE
    wrng = np.random.default_rng(style.seed)  # writer-level warp field (same for all of a writer's samples)
    wf, wp = wrng.uniform(0.5, 1.5, (2, 3)), wrng.uniform(0, 2 * np.pi, (2, 3))
    sf, sp = rng.uniform(0.5, 2.0, (2, 3)), rng.uniform(0, 2 * np.pi, (2, 3))
    # stroke-order-consistent jitter: random walk over strokes + per-stroke offset + per-point noise (em units)
    walk = np.cumsum(rng.normal(0, style.drift * EM, (len(strokes), 2)), axis=0)
    pts = []
    for i, m in enumerate(strokes):
        p = m + walk[i] + rng.normal(0, style.jitter * EM, 2) + rng.normal(0, style.jitter * EM / 4, m.shape)
        pts.append(_chaikin(p))
    allp = np.concatenate(pts)
    lo, hi = allp.min(0), allp.max(0)
    centre = (lo + hi) / 2
    # elastic warp (em units), writer field + sample field, amplitude scaled by the writer's warp
    def warp(p: np.ndarray) -> np.ndarray:
        u = (p - centre) / EM
        d = np.zeros_like(p)
        for ax in range(2):
            d[:, ax] = (np.sin(2 * np.pi * (wf[ax, 0] * u[:, 0] + wf[ax, 1] * u[:, 1]) + wp[ax, 0])
                        + 0.6 * np.sin(2 * np.pi * (sf[ax, 0] * u[:, 1] + sf[ax, 1] * u[:, 0]) + sp[ax, 0]))
        return p + style.warp * EM * d / 1.6

    th = np.deg2rad(style.rotation + rng.normal(0, 1.5))
    rot = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    slant = style.slant + rng.normal(0, 0.04)
    lin = rot @ np.array([[1.0, -slant], [0.0, 1.0]]) @ np.diag([style.aspect, 1.0])
    scale = style.size * big / EM * rng.uniform(0.93, 1.07)
    offset = np.array([big / 2, big / 2]) + rng.normal(0, 0.02 * big, 2)

    def to_canvas(p: np.ndarray) -> np.ndarray:
        return (warp(p) - centre) @ lin.T * scale + offset

    canvas = Image.new("L", (big, big), 0)
    w0 = style.width * big
    # transform all strokes at once, then resample each to about a third of the pen width
    lens = [len(p) for p in pts]
    moved = np.split(to_canvas(allp), np.cumsum(lens)[:-1])
    qs = [_resample(p, max(1.0, w0 / 3)) for p in moved]
    ns = np.array([len(q) for q in qs])
    q_all = np.concatenate(qs)
    t = np.concatenate([np.linspace(0.0, 1.0, n) for n in ns])
    sid = np.repeat(np.arange(len(qs)), ns)
    # pressure: smooth random variation along each stroke (stroke-specific frequencies/phases), end taper
    f = rng.uniform(0.5, 2.5, (len(qs), 3))[sid]
    ph = rng.uniform(0, 2 * np.pi, (len(qs), 3))[sid]
    wave = np.sin(2 * np.pi * f * t[:, None] + ph).mean(1) * np.sqrt(2)
    press = 1.0 + style.pressure_var * wave
    press *= 1.0 - 0.45 * np.clip((t - 0.75) / 0.25, 0, 1) ** 1.5  # end taper (pen lifting)
    press *= 0.8 + 0.2 * np.clip(t / 0.08, 0, 1)  # softer landing
    press = np.clip(press * rng.uniform(0.85, 1.1, len(qs))[sid], 0.2, 1.3)
    rad = np.maximum(0.5, 0.5 * w0 * (0.55 + 0.45 * press))
    level = np.clip(255 * style.ink * np.minimum(1.0, press), 0, 255).astype(int).tolist()
    boxes = np.concatenate([q_all - rad[:, None], q_all + rad[:, None]], 1).tolist()
    start = 0
    for n in ns.tolist():
        # each stroke on its own layer, combined by max: crossings keep the darker ink
        layer = Image.new("L", (big, big), 0)
        draw = ImageDraw.Draw(layer)
        for j in range(start, start + n):
            draw.ellipse(boxes[j], fill=level[j])
        start += n
        canvas = ImageChops.lighter(canvas, layer)
    canvas = canvas.filter(ImageFilter.GaussianBlur(style.blur * OVERSAMPLE))
    ink = np.asarray(canvas.resize((image_size, image_size), Image.BOX), np.float32) / 255.0
    # ink grain: pigment is uneven inside strokes
    ink = ink * (1.0 - 0.25 * rng.random(ink.shape, dtype=np.float32) * (ink > 0.05))
    bg = style.background + rng.normal(0, 2.0)
    img = bg * (1.0 - ink) + rng.normal(0, style.noise, ink.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def simulate_writer(chars: list[str], style: WriterStyle, image_size: int, seed: int, samples: int = 1,
                    root: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` simulated samples of each of ``chars`` by one writer: uint8[K, S, S] and class indices."""
    rng = np.random.default_rng(seed)
    imgs, idx = [], []
    for k, c in enumerate(chars):
        for _ in range(samples):
            imgs.append(simulate_char(c, style, image_size, rng, root))
            idx.append(k)
    return np.stack(imgs), np.asarray(idx, np.int64)
