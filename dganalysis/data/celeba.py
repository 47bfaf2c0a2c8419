"""OoD-Bench's CelebA (``CelebA_Blond``): blond hair vs not, spuriously correlated with sex in training.

Ye et al. (CVPR 2022, Sec. 3.1 and Table 2) benchmark "a modified version of CelebA" as one of the datasets dominated
by correlation shift, and place it on the shift map (Fig. 3; OoD-Bench's README: diversity 0.0031, correlation 0.1868
in the paper's legacy mode). The environments are OoD-Bench's split files, not the official CelebA partition:

* ``root/celeba/blond_split/{tr_env1,tr_env2,te_env}.csv`` — shipped in the OoD-Bench repository
  (``data/celeba/blond_split/``). A header row (an empty first field, then ``0`` … ``39``), then one row per image:
  the file name in ``img_align_celeba/`` and the 40 binary CelebA attributes in the official order (as in
  ``list_attr_celeba.txt``, with −1 written as 0).
* ``root/celeba/img_align_celeba/<file>`` — the official aligned-and-cropped CelebA images (178 × 218 JPEGs).

The label is attribute 9, ``Blond_Hair`` (classes ``["not blond", "blond"]``), as OoD-Bench's
``CelebA_Blond.TARGET_ATTRIBUTE_ID``. In OoD-Bench's files the spurious attribute 20 (``Male``) is the opposite
of the label (blond ↔ female) for 96.2% of ``tr_env1`` (23,342 of 24,266) and 92.4% of ``tr_env2`` (22,418 of
24,266), and for 50% of ``te_env`` (1,448 images, 362 in each blond × male group); each domain keeps it as
``meta["male"]``.

Preprocessing as OoD-Bench's evaluation transform: a centred square crop of the shorter side (``CenterCrop(178)``
on the 178 × 218 images), then a bilinear resize to ``image_size``². Departures from OoD-Bench: the images are
decoded once into uint8 arrays (cached under ``data_dir`` like the folder imports, :mod:`dganalysis.data.folder`),
so training uses this project's array augmentation rather than OoD-Bench's CelebA-specific one; and
``max_per_env`` may keep only a seeded subset of each environment *before* decoding (the shift map of Ye et al.
(2022, Fig. 3) needs a few thousand images per environment, not all ~50k).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError
from tqdm.auto import tqdm

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.registry import ROOT_HINT, register_dataset
from dganalysis.validation import ConfigError, MissingInputError

ENVIRONMENTS: tuple[str, ...] = ("tr_env1", "tr_env2", "te_env")  #: OoD-Bench's CelebA_Blond.ENVIRONMENTS
BLOND_HAIR = 9  #: index of ``Blond_Hair`` among CelebA's 40 attributes (the label)
MALE = 20  #: index of ``Male`` (the spuriously correlated attribute)
N_ATTRIBUTES = 40
CLASSES = ["not blond", "blond"]
SPLIT_HOWTO = ("the split files ship with OoD-Bench: copy data/celeba/blond_split/ from "
               "https://github.com/m-Just/OoD-Bench into {dir}")
IMAGES_HOWTO = ("download img_align_celeba.zip (the 'Align&Cropped Images') from the official CelebA page "
                "https://mmlab.ie.cuhk.edu.hk/projects/CelebA.html (or torchvision.datasets.CelebA(download=True)) "
                "and unzip it into {dir}")


def celeba_paths(root: str | Path | None) -> tuple[Path, Path]:
    """``(root/celeba/img_align_celeba, root/celeba/blond_split)``; missing ones raise naming them and how to get them."""
    if root is None:
        raise ConfigError("dataset 'CelebA_Blond' needs root= the data folder holding celeba/img_align_celeba/ and "
                         f"celeba/blond_split/ (OoD-Bench's layout; {ROOT_HINT})")
    base = Path(root).expanduser() / "celeba"
    images, splits = base / "img_align_celeba", base / "blond_split"
    problems = []
    absent = [splits / f"{e}.csv" for e in ENVIRONMENTS if not (splits / f"{e}.csv").is_file()]
    if absent:
        problems.append(f"split file(s) {[str(a) for a in absent]} not found; " + SPLIT_HOWTO.format(dir=splits))
    if not images.is_dir():
        problems.append(f"image folder {images} not found; " + IMAGES_HOWTO.format(dir=base))
    if problems:
        raise MissingInputError("dataset 'CelebA_Blond': " + "; and ".join(problems))
    return images, splits


def read_split(path: str | Path) -> tuple[list[str], np.ndarray]:
    """One OoD-Bench split file: (file names, int8[N, 40] attributes in {0, 1}); malformed rows raise naming the row."""
    path = Path(path)
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or len(rows[0]) != N_ATTRIBUTES + 1:
        raise ConfigError(f"{path}: expected a header of {N_ATTRIBUTES + 1} fields (file name, attributes 0-39), "
                         f"got {rows[0] if rows else 'an empty file'}")
    files, attrs = [], np.zeros((len(rows) - 1, N_ATTRIBUTES), np.int8)
    for i, row in enumerate(rows[1:]):
        if len(row) != N_ATTRIBUTES + 1 or any(v not in ("0", "1") for v in row[1:]):
            raise ConfigError(f"{path}, row {i + 2}: expected a file name and {N_ATTRIBUTES} attributes in {{0, 1}}")
        files.append(row[0])
        attrs[i] = [int(v) for v in row[1:]]
    if not files:
        raise ConfigError(f"{path}: no images listed")
    return files, attrs


def load_center_square(path: Path, image_size: int) -> np.ndarray:
    """uint8[3, S, S]: RGB, the centred square of the shorter side (torchvision's ``CenterCrop`` offsets), bilinear
    resize to ``image_size``."""
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            w, h = im.size
            s = min(w, h)
            left, top = int(round((w - s) / 2.0)), int(round((h - s) / 2.0))
            im = im.crop((left, top, left + s, top + s)).resize((image_size, image_size), Image.BILINEAR)
            arr = np.asarray(im, dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as e:
        raise ConfigError(f"{path}: unreadable image ({e})") from e
    return arr.transpose(2, 0, 1)


def celeba_blond(root: str | Path | None = None, image_size: int = 224, max_per_env: int | None = None,
                 subsample_seed: int = 0, environments: Sequence[str] = ENVIRONMENTS,
                 data_dir: str | Path | None = None) -> DomainDataset:
    """OoD-Bench's CelebA_Blond (Ye et al. 2022, Table 2, Fig. 3) as a :class:`DomainDataset` (see the module doc).

    ``max_per_env``: keep at most that many images per environment (a seeded uniform draw, ``subsample_seed``, in
    file order) before decoding. Every kept image file is checked before any is decoded.
    """
    from dganalysis.data.folder import _cached
    from dganalysis.data.wilds_data import cap_index

    if max_per_env is not None and int(max_per_env) < 1:
        raise ConfigError(f"dataset 'CelebA_Blond': max_per_env={max_per_env}, expected >= 1 or None (all images)")
    unknown = [e for e in environments if e not in ENVIRONMENTS]
    if unknown:
        raise ConfigError(f"dataset 'CelebA_Blond': unknown environment(s) {unknown}; OoD-Bench's are {list(ENVIRONMENTS)}")
    images, splits = celeba_paths(root)
    listing: dict[str, tuple[list[Path], np.ndarray]] = {}
    for k, env in enumerate(environments):
        names, attrs = read_split(splits / f"{env}.csv")
        idx = np.arange(len(names))
        if max_per_env is not None:
            idx = cap_index(idx, int(max_per_env), [subsample_seed, k])
        files = [images / names[i] for i in idx.tolist()]
        absent = [f for f in files if not f.is_file()]
        if absent:
            raise MissingInputError(f"dataset 'CelebA_Blond': {len(absent)} image(s) of {splits / f'{env}.csv'} not "
                                    f"found, e.g. {absent[0]}; " + IMAGES_HOWTO.format(dir=images.parent))
        listing[env] = (files, attrs[idx])

    def build() -> DomainDataset:
        doms = []
        for env, (files, attrs) in listing.items():
            x = np.empty((len(files), 3, image_size, image_size), np.uint8)
            for i, f in enumerate(tqdm(files, desc=f"CelebA {env}", leave=False, disable=len(files) < 500)):
                x[i] = load_center_square(f, image_size)
            doms.append(Domain(env, x, attrs[:, BLOND_HAIR].astype(np.int64), {"male": attrs[:, MALE].astype(np.int64)}))
        info = {"source": f"CelebA img_align_celeba with OoD-Bench's blond_split at {images.parent}",
                "target": "Blond_Hair", "spurious": "Male", "preprocess": "center square crop, bilinear resize",
                "max_per_env": max_per_env, "subsample_seed": subsample_seed}
        return DomainDataset("CelebA_Blond", list(CLASSES), doms, info)

    opts = {"dataset": "CelebA_Blond", "image_size": int(image_size), "environments": list(environments),
            "max_per_env": max_per_env, "subsample_seed": int(subsample_seed),
            "splits": [str((splits / f"{e}.csv").resolve()) for e in environments]}
    files = [splits / f"{e}.csv" for e in environments] + [f for fs, _ in listing.values() for f in fs]
    return _cached("CelebA_Blond", files, opts, data_dir, build)


register_dataset("CelebA_Blond")(celeba_blond)
