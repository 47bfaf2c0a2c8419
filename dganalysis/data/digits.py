"""Colored and Rotated digits: DomainBed's Colored MNIST and Rotated MNIST recipes.

The real, offline default uses scikit-learn's 8×8 handwritten digits (1,797 real images,
UCI optdigits); the same recipes run on MNIST when the user has its raw IDX files.

- Rotated (Ghifary et al., 2015; DomainBed): the images are shuffled with a fixed seed and
  split into six disjoint parts, rotated by 0°, 15°, …, 75°; 10 classes, 1 channel.
- Colored (Arjovsky et al., 2019; DomainBed): shuffled and split into three disjoint parts;
  binary label (digit < 5 → 0) flipped with probability 0.25; colour = label flipped with
  probability 0.1, 0.2, 0.9 per environment (DomainBed's "+90%", "+80%", "-90%"); 2 channels
  (red, green), the digit drawn in the channel of its colour.

The 8×8 digits (values 0–16) are scaled to 0–255 and resized (bilinear) into a 20×20 box
centred on a ``image_size``² canvas (default 28), as MNIST centres its 20×20 digits.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.idx import find_mnist
from dganalysis.data.registry import register_dataset

ROTATIONS = (0, 15, 30, 45, 60, 75)
COLOR_FLIP = {"+90%": 0.1, "+80%": 0.2, "-90%": 0.9}


def sklearn_digits(image_size: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's real 8×8 digits as uint8[N, S, S] (centred 20/28 box) and labels."""
    from sklearn.datasets import load_digits

    d = load_digits()
    raw = (d.images * (255.0 / 16.0)).clip(0, 255).astype(np.uint8)
    box = max(2, round(image_size * 20 / 28))
    off = (image_size - box) // 2
    out = np.zeros((len(raw), image_size, image_size), np.uint8)
    for i, im in enumerate(raw):
        out[i, off:off + box, off:off + box] = np.asarray(Image.fromarray(im).resize((box, box), Image.BILINEAR))
    return out, d.target.astype(np.int64)


def _source(mnist_dir: str | Path | None, image_size: int) -> tuple[np.ndarray, np.ndarray, str]:
    if mnist_dir is None:
        x, y = sklearn_digits(image_size)
        return x, y, "scikit-learn digits (UCI optdigits, 1,797 real handwritten digits, 8x8 upsampled)"
    x, y = find_mnist(mnist_dir)
    if image_size != 28:
        x = np.stack([np.asarray(Image.fromarray(im).resize((image_size, image_size), Image.BILINEAR)) for im in x])
    return x, y, f"MNIST raw IDX files in {mnist_dir}"


def rotated_digits(
    image_size: int = 28, angles: tuple[int, ...] = ROTATIONS, seed: int = 0, mnist_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> DomainDataset:
    """Rotated digits: one domain per angle (named ``"0"``, ``"15"``, …), disjoint image subsets."""
    x, y, source = _source(mnist_dir, image_size)
    perm = np.random.RandomState(seed).permutation(len(x))
    domains = []
    for angle, idx in zip(angles, np.array_split(perm, len(angles))):
        imgs = np.stack([np.asarray(Image.fromarray(im).rotate(angle, resample=Image.BILINEAR)) for im in x[idx]])
        domains.append(Domain(str(angle), imgs[:, None], y[idx], {"source_index": idx.astype(np.int64)}))
    name = "RotatedMNIST" if mnist_dir else "RotatedDigits"
    return DomainDataset(name, [str(c) for c in range(10)], domains,
                         {"source": source, "recipe": "DomainBed RotatedMNIST", "angles": list(angles)})


def colored_digits(
    image_size: int = 28, flips: dict[str, float] | None = None, label_noise: float = 0.25, seed: int = 0,
    mnist_dir: str | Path | None = None, data_dir: str | Path | None = None,
) -> DomainDataset:
    """Colored digits: environments named by DomainBed's labels ("+90%", "+80%", "-90%")."""
    flips = dict(flips or COLOR_FLIP)
    x, digit, source = _source(mnist_dir, image_size)
    rng = np.random.RandomState(seed)
    perm = rng.permutation(len(x))
    domains = []
    for (name, p_flip), idx in zip(flips.items(), np.array_split(perm, len(flips))):
        label = (digit[idx] >= 5).astype(np.int64)
        label = label ^ (rng.rand(len(idx)) < label_noise)
        color = label ^ (rng.rand(len(idx)) < p_flip)
        imgs = np.zeros((len(idx), 2, image_size, image_size), np.uint8)
        imgs[np.arange(len(idx)), color] = x[idx]
        domains.append(Domain(name, imgs, label.astype(np.int64),
                              {"color": color.astype(np.int64), "digit": digit[idx], "source_index": idx.astype(np.int64)}))
    dname = "ColoredMNIST" if mnist_dir else "ColoredDigits"
    return DomainDataset(dname, ["0", "1"], domains, {"source": source, "recipe": "DomainBed ColoredMNIST",
                                                      "label_noise": label_noise, "color_flip": flips})


@register_dataset("RotatedDigits")
def _rotated_digits(**kw) -> DomainDataset:
    if kw.get("mnist_dir"):
        raise ValueError("RotatedDigits uses scikit-learn's digits; use dataset 'RotatedMNIST' with mnist_dir")
    return rotated_digits(**kw)


@register_dataset("ColoredDigits")
def _colored_digits(**kw) -> DomainDataset:
    if kw.get("mnist_dir"):
        raise ValueError("ColoredDigits uses scikit-learn's digits; use dataset 'ColoredMNIST' with mnist_dir")
    return colored_digits(**kw)


@register_dataset("RotatedMNIST")
def _rotated_mnist(mnist_dir: str | Path | None = None, **kw) -> DomainDataset:
    if not mnist_dir:
        raise ValueError("RotatedMNIST needs mnist_dir= a folder with MNIST's raw IDX files")
    return rotated_digits(mnist_dir=mnist_dir, **kw)


@register_dataset("ColoredMNIST")
def _colored_mnist(mnist_dir: str | Path | None = None, **kw) -> DomainDataset:
    if not mnist_dir:
        raise ValueError("ColoredMNIST needs mnist_dir= a folder with MNIST's raw IDX files")
    return colored_digits(mnist_dir=mnist_dir, **kw)
