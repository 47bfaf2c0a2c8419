"""Import image folders into a :class:`DomainDataset`, once, with Pillow.

- DomainBed layout: ``root/<domain>/<class>/<image>`` (PACS, VLCS, OfficeHome, DomainNet, …).
- CSV manifest: one row per image with path, label and environment columns, for datasets
  defined by split files. (OoD-Bench's CelebA split files, one per environment with 40 attribute
  columns, have their own loader: ``CelebA_Blond``, :mod:`dganalysis.data.celeba`.)

Images are converted to ``channels`` (1 = grayscale "L", 3 = "RGB") and resized to
``image_size``² (bilinear, aspect not kept, as DomainBed's ``Resize((224, 224))``). The
converted arrays are cached under ``data_dir`` keyed by a hash of the file list (paths,
sizes, mtimes) and the options, so a second call loads the arrays.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError
from tqdm.auto import tqdm

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.registry import ROOT_HINT, register_dataset, resolve_data_dir
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm"}


def load_image(path: Path, image_size: int, channels: int) -> np.ndarray:
    """One image as uint8[C, S, S]; unreadable files raise naming the path."""
    try:
        with Image.open(path) as im:
            im = im.convert("L" if channels == 1 else "RGB").resize((image_size, image_size), Image.BILINEAR)
            arr = np.asarray(im, dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as e:
        raise ConfigError(f"{path}: unreadable image ({e})") from e
    return arr[None] if channels == 1 else arr.transpose(2, 0, 1)


def _fingerprint(files: Sequence[Path], options: dict) -> str:
    h = hashlib.sha1(json.dumps(options, sort_keys=True).encode())
    for f in files:
        st = f.stat()
        h.update(f"{f}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _cached(name: str, files: list[Path], options: dict, data_dir, build) -> DomainDataset:
    key = _fingerprint(files, options)
    cache = resolve_data_dir(data_dir) / "imported" / f"{name}-{key}"
    if (cache / "manifest.json").is_file():
        return DomainDataset.load(cache)
    ds = build()
    ds.save(cache)
    return DomainDataset.load(cache)


def _read_many(files: list[Path], image_size: int, channels: int, desc: str) -> np.ndarray:
    out = np.empty((len(files), channels, image_size, image_size), np.uint8)
    for i, f in enumerate(tqdm(files, desc=desc, leave=False, disable=len(files) < 500)):
        out[i] = load_image(f, image_size, channels)
    return out


def import_folder(
    root: str | Path, image_size: int = 224, channels: int = 3, domains: Sequence[str] | None = None,
    name: str | None = None, data_dir: str | Path | None = None,
) -> DomainDataset:
    """Import a DomainBed-layout folder ``root/<domain>/<class>/<image>``.

    Every domain must have the same class folders and at least one image; ``domains`` picks
    and orders domains (default: all sub-folders, sorted).
    """
    root = Path(root)
    if not root.is_dir():
        raise MissingInputError(f"{root}: not a folder (expected root/<domain>/<class>/<image>)")
    names = list(domains) if domains is not None else sorted(p.name for p in root.iterdir() if p.is_dir())
    if not names:
        raise ConfigError(f"{root}: no domain folders (expected root/<domain>/<class>/<image>)")
    classes: list[str] | None = None
    listing: dict[str, list[tuple[Path, int]]] = {}
    for d in names:
        droot = root / d
        if not droot.is_dir():
            raise MissingInputError(f"{droot}: domain folder not found")
        cls = sorted(p.name for p in droot.iterdir() if p.is_dir())
        if classes is None:
            classes = cls
        elif cls != classes:
            raise ConfigError(
                f"{droot}: class folders {cls} differ from those of {root / names[0]}: {classes} "
                "(every domain must have the same classes)"
            )
        items = [
            (f, k) for k, c in enumerate(cls) for f in sorted((droot / c).iterdir())
            if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS
        ]
        if not items:
            raise ConfigError(f"{droot}: domain has no images (extensions {sorted(IMAGE_EXTENSIONS)})")
        listing[d] = items
    dname = name or root.name
    files = [f for d in names for f, _ in listing[d]]

    def build() -> DomainDataset:
        doms = [
            Domain(d, _read_many([f for f, _ in listing[d]], image_size, channels, f"import {d}"),
                   np.array([k for _, k in listing[d]], np.int64))
            for d in names
        ]
        return DomainDataset(dname, list(classes or []), doms, {"source": f"image folder {root}", "layout": "DomainBed"})

    opts = {"root": str(root.resolve()), "image_size": image_size, "channels": channels, "domains": names}
    return _cached(dname, files, opts, data_dir, build)


def import_csv(
    csv_path: str | Path, image_size: int = 224, channels: int = 3, path_col: str = "path", label_col: str = "label",
    env_col: str = "env", image_root: str | Path | None = None, name: str | None = None,
    data_dir: str | Path | None = None,
) -> DomainDataset:
    """Import images listed in a CSV (path, label, environment columns); paths relative to ``image_root``
    (default: the CSV's folder). Labels may be names or integers; environments are kept in file order."""
    csv_path = Path(csv_path)
    if not csv_path.is_file():
        raise MissingInputError(f"{csv_path}: CSV manifest not found")
    base = Path(image_root) if image_root is not None else csv_path.parent
    with open(csv_path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {path_col, label_col, env_col} - set(reader.fieldnames or [])
        if missing:
            raise ConfigError(f"{csv_path}: missing columns {sorted(missing)} (has {reader.fieldnames})")
        rows = list(reader)
    if not rows:
        raise ConfigError(f"{csv_path}: no rows")
    labels = sorted({r[label_col] for r in rows}, key=lambda s: (not s.lstrip("-").isdigit(), int(s) if s.lstrip("-").isdigit() else 0, s))
    envs = list(dict.fromkeys(r[env_col] for r in rows))
    files = []
    for i, r in enumerate(rows):
        f = base / r[path_col]
        if not f.is_file():
            raise MissingInputError(f"{csv_path}, row {i + 2}: image {f} not found")
        files.append(f)
    dname = name or csv_path.stem

    def build() -> DomainDataset:
        doms = []
        for e in envs:
            idx = [i for i, r in enumerate(rows) if r[env_col] == e]
            doms.append(Domain(str(e), _read_many([files[i] for i in idx], image_size, channels, f"import {e}"),
                               np.array([labels.index(rows[i][label_col]) for i in idx], np.int64)))
        return DomainDataset(dname, labels, doms, {"source": f"CSV manifest {csv_path}"})

    opts = {"csv": str(csv_path.resolve()), "image_size": image_size, "channels": channels, "cols": [path_col, label_col, env_col]}
    return _cached(dname, files, opts, data_dir, build)


@register_dataset("ImageFolder")
def _image_folder(root: str | Path | None = None, **kw) -> DomainDataset:
    if root is None:
        raise ConfigError("dataset 'ImageFolder' needs root= a folder in DomainBed layout root/<domain>/<class>/<image> "
                         f"({ROOT_HINT})")
    return import_folder(root, **kw)


@register_dataset("CSVImages")
def _csv_images(csv_path: str | Path | None = None, **kw) -> DomainDataset:
    if csv_path is None:
        raise ConfigError("dataset 'CSVImages' needs csv_path= a CSV with path, label and env columns")
    return import_csv(csv_path, **kw)
