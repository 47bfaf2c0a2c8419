"""FAKE dataset trees in the published layouts: DomainBed's benchmark folders, NICO++'s DG track, MNIST's IDX files.

Each image is a few random pixels (JPEG), each class folder holds ``per_class`` of them; the folder and class
names are the real ones (so the strict class-list checks of :mod:`dganalysis.data.benchmarks` pass), or
``class_00``… where a dataset's class names are not pinned (NICO++). The MNIST files are valid IDX (random
digits and labels). Nothing here is real data: the smoke run labels every output FAKE.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

from dganalysis.data.benchmarks import BENCHMARKS


def write_benchmark_tree(root: str | Path, name: str, per_class: int = 1, size: int = 8, seed: int = 0) -> Path:
    """``root/<folder>/<domain folder>/<class>/img_<i>.jpg`` for benchmark ``name``; returns the folder."""
    from PIL import Image

    b = BENCHMARKS[name]
    rng = np.random.RandomState(seed)
    classes = list(b.classes) if b.classes is not None else [f"class_{k:02d}" for k in range(b.n_classes)]
    base = Path(root) / b.folder
    for e, env in enumerate(b.env_folders):
        for k, c in enumerate(classes):
            d = base / env / c
            d.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                if (d / f"img_{i}.jpg").is_file():
                    continue
                arr = np.clip(rng.normal(30 * e + 2 * k, 30, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(arr).save(d / f"img_{i}.jpg", quality=90)
    return base


def _idx(path: Path, arr: np.ndarray) -> None:
    head = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(head + arr.astype(np.uint8).tobytes())


def write_mnist_idx(folder: str | Path, n_train: int = 60, n_test: int = 20, seed: int = 0) -> Path:
    """MNIST's four raw files (gzipped IDX, the names torchvision writes under ``MNIST/raw``) with random digits."""
    rng = np.random.RandomState(seed)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        _idx(folder / f"{split}-images-idx3-ubyte.gz", rng.randint(0, 256, (n, 28, 28)))
        _idx(folder / f"{split}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return folder


def write_fake_data(root: str | Path, benchmarks: list[str] | None = None, per_class: int = 1) -> dict[str, Path]:
    """Every benchmark tree (default: all of :data:`BENCHMARKS`) and MNIST under ``root`` (the profile's ``${data}``)."""
    # at least ~50 images per domain: notebook 06's environment classifier trains on batches of 32 (80% split)
    out = {name: write_benchmark_tree(root, name, max(per_class, -(-50 // BENCHMARKS[name].n_classes)), seed=i)
           for i, name in enumerate(benchmarks if benchmarks is not None else sorted(BENCHMARKS))}
    out["MNIST"] = write_mnist_idx(Path(root) / "MNIST" / "raw", n_train=450, n_test=150)
    return out


def write_reference_images(folder: str | Path, n: int = 8, size: int = 16, seed: int = 0) -> Path:
    """A few random JPEGs standing in for the FID reference images (ImageNet samples)."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(seed)
    for i in range(n):
        Image.fromarray(rng.randint(0, 256, (size, size, 3)).astype(np.uint8)).save(folder / f"ref_{i}.jpg")
    return folder
