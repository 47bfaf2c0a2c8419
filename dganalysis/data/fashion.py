"""Rotated and Colored Fashion-MNIST: DomainBed's RotatedMNIST / ColoredMNIST recipes on real Fashion-MNIST.

Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, Zalando Research) has 70,000 real 28×28 grey photos of clothing in 10
classes, in MNIST's IDX layout. Debian ships it (package ``dataset-fashion-mnist``, installed by ``quickstart.sh``)
in :data:`DEBIAN_DIR`; a ``fashion_dir`` with the four IDX files (``.gz`` or not) replaces it. Nothing is
downloaded.

- ``RotatedFashionMNIST``: the recipe of :func:`dganalysis.data.digits.rotate_recipe` (Ghifary et al. 2015;
  DomainBed): shuffle, six disjoint parts of ~11,667 images, rotated 0°, 15°, …, 75°; 10 classes.
- ``ColoredFashionMNIST``: :func:`dganalysis.data.digits.color_recipe` (Arjovsky et al. 2019; DomainBed): three
  parts, binary label = class >= 5 (T-shirt/top, Trouser, Pullover, Dress, Coat → 0; Sandal, Shirt, Sneaker, Bag,
  Ankle boot → 1) with 25% label noise, colour flipped at 10%, 20%, 90%. The 10-class label is in
  ``meta["fashion_class"]``.

Partition rule: ours, fixed (:mod:`dganalysis.data.digits`: one numpy shuffle seeded ``seed`` = 0, consecutive
blocks, the same for every run), not DomainBed's per-run ``torch.randperm`` of ``RotatedMNIST`` / ``ColoredMNIST``
(:mod:`dganalysis.data.domainbed_mnist`); ColoredFashionMNIST labels ``class >= 5`` as 1.

Departure, by name: ``n_per_domain`` keeps only the first ``n`` images of each of DomainBed's parts (a budget
subsample; ``None``, the default, keeps DomainBed's full parts). ``info["n_per_domain"]`` records it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dganalysis.data.dataset import DomainDataset
from dganalysis.data.digits import COLOR_FLIP, ROTATIONS, color_recipe, resize, rotate_recipe
from dganalysis.data.idx import IDX_SETS, find_idx_set
from dganalysis.data.registry import register_dataset
from dganalysis.validation import ConfigError, MissingInputError

DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")
DEBIAN_PACKAGE = "dataset-fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
_HINT = (f"; install Debian's package with `sudo apt-get install {DEBIAN_PACKAGE}` (puts them in {DEBIAN_DIR}; "
         "quickstart.sh does this) or pass fashion_dir= a folder holding train-/t10k-images-idx3-ubyte[.gz] and "
         "train-/t10k-labels-idx1-ubyte[.gz]")


def load_fashion_mnist(fashion_dir: str | Path | None = None, image_size: int = 28) -> tuple[np.ndarray, np.ndarray, str]:
    """Fashion-MNIST's 70,000 images (train then test, uint8[N, S, S]), labels and a source line naming the files."""
    root = Path(fashion_dir).expanduser() if fashion_dir else DEBIAN_DIR
    if not root.is_dir():
        raise MissingInputError(f"{root}: Fashion-MNIST folder not found{_HINT}")
    x, y, files = find_idx_set(root, "Fashion-MNIST", hint=_HINT)
    if y.min() < 0 or y.max() >= len(CLASSES):
        raise ConfigError(f"{root}: Fashion-MNIST labels span {y.min()}..{y.max()}, expected 0..9")
    origin = f"Debian package {DEBIAN_PACKAGE}" if root == DEBIAN_DIR else "user-given folder"
    source = f"{IDX_SETS['Fashion-MNIST']}: {len(x):,} real images, IDX files in {root} ({origin})"
    return resize(x, image_size), y, source


def rotated_fashion_mnist(image_size: int = 28, angles: tuple[int, ...] = ROTATIONS, seed: int = 0,
                          n_per_domain: int | None = None, fashion_dir: str | Path | None = None,
                          data_dir: str | Path | None = None) -> DomainDataset:
    """RotatedFashionMNIST: one domain per angle (``"0"``, ``"15"``, …), disjoint real images (``data_dir`` unused)."""
    x, y, source = load_fashion_mnist(fashion_dir, image_size)
    return rotate_recipe(x, y, tuple(angles), seed, "RotatedFashionMNIST", list(CLASSES),
                         {"source": source, "real": True}, n_per_domain=n_per_domain)


def colored_fashion_mnist(image_size: int = 28, flips: dict[str, float] | None = None, label_noise: float = 0.25,
                          seed: int = 0, n_per_domain: int | None = None, fashion_dir: str | Path | None = None,
                          data_dir: str | Path | None = None) -> DomainDataset:
    """ColoredFashionMNIST: environments ``"+90%"``, ``"+80%"``, ``"-90%"`` as DomainBed's ColoredMNIST."""
    x, y, source = load_fashion_mnist(fashion_dir, image_size)
    return color_recipe(x, y, dict(flips or COLOR_FLIP), label_noise, seed, "ColoredFashionMNIST",
                        {"source": source, "real": True}, fine_name="fashion_class", n_per_domain=n_per_domain)


@register_dataset("RotatedFashionMNIST")
def _rotated(**kw) -> DomainDataset:
    return rotated_fashion_mnist(**kw)


@register_dataset("ColoredFashionMNIST")
def _colored(**kw) -> DomainDataset:
    return colored_fashion_mnist(**kw)

