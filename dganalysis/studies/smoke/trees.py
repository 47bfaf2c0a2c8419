"""FAKE dataset trees in the published layouts: DomainBed's benchmark folders, NICO++'s DG track, MNIST's IDX files,
Camelyon17-WILDS (``camelyon17_v1.0``, read through ``wilds``) and OoD-Bench's CelebA (``celeba/``).

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


def write_wilds_camelyon(root: str | Path, per_center: int = 2, size: int = 6, seed: int = 0) -> Path:
    """Camelyon17-WILDS v1.0 as ``wilds`` reads it: ``root/camelyon17_v1.0/{RELEASE_v1.0.txt, metadata.csv,
    patches/patient_<p>_node_<n>/patch_patient_<p>_node_<n>_x_<x>_y_<y>.png}``, ``per_center`` random patches in each
    of the five hospitals (``center`` 0-4), tumour labels alternating; returns ``root``."""
    from PIL import Image

    rng = np.random.RandomState(seed)
    base = Path(root) / "camelyon17_v1.0"
    rows = ["," + ",".join(["patient", "node", "x_coord", "y_coord", "tumor", "slide", "center", "split"])]
    k = 0
    for center in range(5):
        patient, node = f"{center:03d}", 1
        d = base / "patches" / f"patient_{patient}_node_{node}"
        d.mkdir(parents=True, exist_ok=True)
        for i in range(per_center):
            x, y, tumor = 100 + i, 200 + i, (center + i) % 2
            f = d / f"patch_patient_{patient}_node_{node}_x_{x}_y_{y}.png"
            if not f.is_file():
                arr = np.clip(rng.normal(40 * center + 20 * tumor, 30, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(arr).save(f)
            rows.append(f"{k},{patient},{node},{x},{y},{tumor},{center * 10 + node},{center},0")
            k += 1
    (base / "metadata.csv").write_text("\n".join(rows) + "\n")
    (base / "RELEASE_v1.0.txt").write_text("FAKE\n")
    return Path(root)


def write_celeba_blond(root: str | Path, per_env: int = 8, w: int = 12, h: int = 14, seed: int = 0) -> Path:
    """OoD-Bench's CelebA layout: ``root/celeba/img_align_celeba/<6 digits>.jpg`` (random w × h, CelebA's portrait
    aspect) and ``root/celeba/blond_split/{tr_env1,tr_env2,te_env}.csv`` (header ``,0,…,39``, 40 binary attributes
    per image); blond (attribute 9) mostly goes with female (attribute 20 = 0) in the training files, half the
    time in the test file, as in OoD-Bench's; returns ``root``."""
    from PIL import Image

    from dganalysis.data.celeba import BLOND_HAIR, ENVIRONMENTS, MALE, N_ATTRIBUTES

    rng = np.random.RandomState(seed)
    base = Path(root) / "celeba"
    (base / "img_align_celeba").mkdir(parents=True, exist_ok=True)
    (base / "blond_split").mkdir(parents=True, exist_ok=True)
    k = 0
    for env, agree in zip(ENVIRONMENTS, (0.95, 0.9, 0.5)):
        lines = ["," + ",".join(str(a) for a in range(N_ATTRIBUTES))]
        for i in range(per_env):
            attrs = rng.randint(0, 2, N_ATTRIBUTES)
            attrs[BLOND_HAIR] = i % 2
            attrs[MALE] = 1 - attrs[BLOND_HAIR] if rng.rand() < agree else attrs[BLOND_HAIR]
            name = f"{k:06d}.jpg"
            if not (base / "img_align_celeba" / name).is_file():
                arr = np.clip(rng.normal(60 + 80 * attrs[BLOND_HAIR] + 20 * attrs[MALE], 30, (h, w, 3)), 0, 255)
                Image.fromarray(arr.astype(np.uint8)).save(base / "img_align_celeba" / name, quality=90)
            lines.append(name + "," + ",".join(str(int(a)) for a in attrs))
            k += 1
        (base / "blond_split" / f"{env}.csv").write_text("\n".join(lines) + "\n")
    return Path(root)


def write_fake_data(root: str | Path, benchmarks: list[str] | None = None, per_class: int = 1) -> dict[str, Path]:
    """Every benchmark tree (default: all of :data:`BENCHMARKS`), MNIST, Camelyon17-WILDS and OoD-Bench's CelebA
    under ``root`` (the profile's ``${data}``)."""
    # at least ~50 images per domain: the shift estimate's environment classifier trains on batches of 32 (80% split)
    out = {name: write_benchmark_tree(root, name, max(per_class, -(-50 // BENCHMARKS[name].n_classes)), seed=i)
           for i, name in enumerate(benchmarks if benchmarks is not None else sorted(BENCHMARKS))}
    out["MNIST"] = write_mnist_idx(Path(root) / "MNIST" / "raw", n_train=450, n_test=150)
    # the shift map (dganalysis.shift.study.dataset_map) holds both: a KDE per class on each environment's held-out part needs ~100 images per environment
    out["Camelyon17-WILDS"] = write_wilds_camelyon(root, per_center=120) / "camelyon17_v1.0"
    out["CelebA"] = write_celeba_blond(root, per_env=120) / "celeba"
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
