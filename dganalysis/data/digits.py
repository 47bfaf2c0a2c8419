"""Colored and Rotated digits: DomainBed's Colored MNIST and Rotated MNIST recipes on a fixed partition.

The real, offline default uses scikit-learn's 8×8 handwritten digits (1,797 real images,
UCI optdigits); the same recipes run on MNIST when the user has its raw IDX files, as ``RotatedMNIST_Fixed`` /
``ColoredMNIST_Fixed``.

Partition rule (ours, fixed): one ``numpy.random.RandomState(seed)`` permutation (``seed`` = 0 unless given) cut into
consecutive blocks, the same for every run, so trial-to-trial variance holds no partition variance. DomainBed instead
partitions per run (``torch.randperm`` after ``manual_seed(args.seed)``, every k-th image): that rule, under
DomainBed's names ``RotatedMNIST`` / ``ColoredMNIST``, is :mod:`dganalysis.data.domainbed_mnist` (two unrelated
partitions share 1/k of each environment: 16.7% for six rotations). ColoredDigits / ColoredMNIST_Fixed label
``digit >= 5`` as 1 (DomainBed: ``digit < 5``).

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
from dganalysis.data.registry import ROOT_HINT, register_dataset
from dganalysis.validation import ConfigError

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
    return resize(x, image_size), y, f"MNIST (LeCun et al. 1998) raw IDX files in {mnist_dir}"


def resize(x: np.ndarray, image_size: int) -> np.ndarray:
    """uint8[N, 28, 28] images resized (bilinear) to ``image_size``² (unchanged at 28)."""
    if image_size == 28:
        return x
    return np.stack([np.asarray(Image.fromarray(im).resize((image_size, image_size), Image.BILINEAR)) for im in x])


def _parts(n: int, n_parts: int, seed: int, n_per_domain: int | None) -> list[np.ndarray]:
    """DomainBed's split: a seeded shuffle cut into ``n_parts`` disjoint parts; ``n_per_domain`` keeps each part's
    first images (our subsampling for small budgets; None keeps all, DomainBed's behaviour)."""
    if n_per_domain is not None and n_per_domain < 1:
        raise ConfigError(f"n_per_domain={n_per_domain}: expected a positive number of images or None (all)")
    parts = np.array_split(np.random.RandomState(seed).permutation(n), n_parts)
    return [p[:n_per_domain] for p in parts] if n_per_domain is not None else parts


def rotate_recipe(x: np.ndarray, y: np.ndarray, angles: tuple[int, ...], seed: int, name: str, classes: list[str],
                  info: dict, n_per_domain: int | None = None) -> DomainDataset:
    """DomainBed's RotatedMNIST recipe on images ``x`` (uint8[N, S, S]) and labels ``y``: one domain per angle."""
    domains = []
    for angle, idx in zip(angles, _parts(len(x), len(angles), seed, n_per_domain)):
        imgs = np.stack([np.asarray(Image.fromarray(im).rotate(angle, resample=Image.BILINEAR)) for im in x[idx]])
        domains.append(Domain(str(angle), imgs[:, None], y[idx], {"source_index": idx.astype(np.int64)}))
    return DomainDataset(name, classes, domains, {**info, "recipe": "DomainBed RotatedMNIST", "angles": list(angles),
                                                  "n_per_domain": n_per_domain})


def color_recipe(x: np.ndarray, fine: np.ndarray, flips: dict[str, float], label_noise: float, seed: int, name: str,
                 info: dict, fine_name: str = "digit", n_per_domain: int | None = None) -> DomainDataset:
    """DomainBed's ColoredMNIST recipe on images ``x`` with 10-class labels ``fine`` (kept in ``meta[fine_name]``).

    Binary label = (fine >= 5), flipped with ``label_noise``; colour = label flipped with each environment's rate.
    The noise draws follow the environments' order from one seeded generator, as in :func:`colored_digits`.
    """
    rng = np.random.RandomState(seed)
    perm = rng.permutation(len(x))
    parts = np.array_split(perm, len(flips))
    if n_per_domain is not None:
        parts = [p[:n_per_domain] for p in parts]
    domains = []
    for (env, p_flip), idx in zip(flips.items(), parts):
        label = (fine[idx] >= 5).astype(np.int64)
        label = label ^ (rng.rand(len(idx)) < label_noise)
        color = label ^ (rng.rand(len(idx)) < p_flip)
        imgs = np.zeros((len(idx), 2) + x.shape[1:], np.uint8)
        imgs[np.arange(len(idx)), color] = x[idx]
        domains.append(Domain(env, imgs, label.astype(np.int64),
                              {"color": color.astype(np.int64), fine_name: fine[idx], "source_index": idx.astype(np.int64)}))
    return DomainDataset(name, ["0", "1"], domains, {**info, "recipe": "DomainBed ColoredMNIST",
                                                     "label_noise": label_noise, "color_flip": flips,
                                                     "n_per_domain": n_per_domain})


def rotated_digits(
    image_size: int = 28, angles: tuple[int, ...] = ROTATIONS, seed: int = 0, mnist_dir: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> DomainDataset:
    """Rotated digits: one domain per angle (named ``"0"``, ``"15"``, …), disjoint image subsets."""
    x, y, source = _source(mnist_dir, image_size)
    name = "RotatedMNIST_Fixed" if mnist_dir else "RotatedDigits"
    return rotate_recipe(x, y, tuple(angles), seed, name, [str(c) for c in range(10)], {"source": source})


def colored_digits(
    image_size: int = 28, flips: dict[str, float] | None = None, label_noise: float = 0.25, seed: int = 0,
    mnist_dir: str | Path | None = None, data_dir: str | Path | None = None,
) -> DomainDataset:
    """Colored digits: environments named by DomainBed's labels ("+90%", "+80%", "-90%")."""
    x, digit, source = _source(mnist_dir, image_size)
    dname = "ColoredMNIST_Fixed" if mnist_dir else "ColoredDigits"
    return color_recipe(x, digit, dict(flips or COLOR_FLIP), label_noise, seed, dname, {"source": source})


@register_dataset("RotatedDigits")
def _rotated_digits(**kw) -> DomainDataset:
    if kw.get("mnist_dir"):
        raise ConfigError("RotatedDigits uses scikit-learn's digits; use dataset 'RotatedMNIST' or 'RotatedMNIST_Fixed' with mnist_dir")
    return rotated_digits(**kw)


@register_dataset("ColoredDigits")
def _colored_digits(**kw) -> DomainDataset:
    if kw.get("mnist_dir"):
        raise ConfigError("ColoredDigits uses scikit-learn's digits; use dataset 'ColoredMNIST' or 'ColoredMNIST_Fixed' with mnist_dir")
    return colored_digits(**kw)


@register_dataset("RotatedMNIST_Fixed")
def _rotated_mnist(mnist_dir: str | Path | None = None, **kw) -> DomainDataset:
    """MNIST under our fixed partition (module doc); DomainBed's per-run partition is ``RotatedMNIST``."""
    if not mnist_dir:
        raise ConfigError(f"RotatedMNIST_Fixed needs mnist_dir= a folder with MNIST's raw IDX files ({ROOT_HINT})")
    return rotated_digits(mnist_dir=mnist_dir, **kw)


@register_dataset("ColoredMNIST_Fixed")
def _colored_mnist(mnist_dir: str | Path | None = None, **kw) -> DomainDataset:
    """MNIST under our fixed partition and label rule (module doc); DomainBed's is ``ColoredMNIST``."""
    if not mnist_dir:
        raise ConfigError(f"ColoredMNIST_Fixed needs mnist_dir= a folder with MNIST's raw IDX files ({ROOT_HINT})")
    return colored_digits(mnist_dir=mnist_dir, **kw)
