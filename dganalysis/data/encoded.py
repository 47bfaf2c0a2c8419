"""Datasets kept as encoded image files (JPEG/PNG bytes) on the host, decoded in batches when used.

A DomainBed benchmark converted to uint8 arrays at 224 px does not fit on a GPU (DomainNet: ~88 GB).
:class:`EncodedDataset` keeps every domain's files as they are, concatenated into one memory-mapped
byte file (``<domain>.bytes.bin``) with ``offsets`` (int64[N+1]), ``labels`` (int64[N]) and the original
``sizes`` (int32[N, 2], width and height, needed for DomainBed's crop geometry), plus ``manifest.json``
written last. Decoding (:func:`decode_image`) is DomainBed's evaluation resize: Pillow, convert to RGB,
``resize((S, S), BILINEAR)`` (aspect not kept, as ``transforms.Resize((224, 224))``). Pillow releases the GIL
while decoding and resizing, so a thread pool decodes a batch in parallel.

:meth:`EncodedDataset.to_arrays` decodes everything into a :class:`~dganalysis.data.dataset.DomainDataset`
(the on-device uint8 path, for data that fits); :mod:`dganalysis.data.stream` streams batches otherwise.
"""

from __future__ import annotations

import io as _pyio
import json
import logging
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from dganalysis import io
from dganalysis.data.dataset import Domain, DomainDataset, DomainLookup
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)
FORMAT = "encoded-v1"


def decode_image(data: bytes | memoryview | np.ndarray, size: int, where: str = "image") -> np.ndarray:
    """Encoded bytes → uint8[3, size, size]: RGB, bilinear resize to size × size (DomainBed's eval resize)."""
    try:
        with Image.open(_pyio.BytesIO(bytes(data))) as im:
            arr = np.asarray(im.convert("RGB").resize((size, size), Image.BILINEAR), dtype=np.uint8)
    except (UnidentifiedImageError, OSError) as e:
        raise ConfigError(f"{where}: unreadable image ({e})") from e
    return arr.transpose(2, 0, 1)


@dataclass
class EncodedDomain:
    """One domain's encoded files: ``data`` uint8[total bytes], ``offsets`` int64[N+1], ``labels``, ``sizes`` (W, H)."""

    name: str
    data: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    sizes: np.ndarray
    formats: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, np.int64)
        n = len(self.labels)
        if self.offsets.shape != (n + 1,) or self.sizes.shape != (n, 2):
            raise ValueError(f"domain {self.name!r}: {n} labels but offsets {self.offsets.shape}, sizes {self.sizes.shape}")

    def __len__(self) -> int:
        return len(self.labels)

    def raw(self, i: int) -> memoryview:
        """The encoded bytes of sample ``i``."""
        return memoryview(self.data[int(self.offsets[i]):int(self.offsets[i + 1])])

    @property
    def all_jpeg(self) -> bool:
        """Whether every file is a JPEG (the CUDA decoder reads JPEG only)."""
        return bool(self.formats) and set(self.formats) == {"JPEG"}

    def decode(self, index: Sequence[int] | np.ndarray, size: int, pool: Executor | None = None) -> np.ndarray:
        """uint8[len(index), 3, size, size]; in parallel on ``pool`` when given."""
        index = np.asarray(index, np.int64)
        out = np.empty((len(index), 3, size, size), np.uint8)

        def one(j: int) -> None:
            out[j] = decode_image(self.raw(index[j]), size, f"domain {self.name!r} sample {int(index[j])}")

        if pool is None:
            for j in range(len(index)):
                one(j)
        else:
            list(pool.map(one, range(len(index))))
        return out


@dataclass
class EncodedDataset(DomainLookup):
    """A DG dataset whose images stay encoded on the host; ``image_size`` is the decoded (evaluation) size."""

    name: str
    classes: list[str]
    domains: list[EncodedDomain]
    image_size: int
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def input_shape(self) -> tuple[int, int, int]:
        return (3, self.image_size, self.image_size)

    def decoded_nbytes(self) -> int:
        """Bytes the whole dataset takes decoded as uint8 at ``image_size``."""
        return sum(len(d) for d in self.domains) * 3 * self.image_size**2

    def encoded_nbytes(self) -> int:
        return sum(int(d.offsets[-1]) for d in self.domains)

    def to_arrays(self, workers: int = 4) -> DomainDataset:
        """Every image decoded to uint8[N, 3, S, S] (in memory): the dataset for the on-device path."""
        with ThreadPoolExecutor(max(1, workers)) as pool:
            doms = [Domain(d.name, d.decode(np.arange(len(d)), self.image_size, pool), d.labels,
                           {"orig_size": np.asarray(d.sizes)}) for d in self.domains]
        return DomainDataset(self.name, list(self.classes), doms, {**self.info, "decoded_from": "encoded"})

    # ------------------------------------------------------------------ storage
    @classmethod
    def load(cls, root: str | Path) -> EncodedDataset:
        """Read a folder written by :func:`pack_files` (byte files memory-mapped)."""
        root = Path(root)
        mpath = root / "manifest.json"
        if not mpath.is_file():
            raise MissingInputError(f"{mpath}: no manifest (expected a folder written by dganalysis.data.encoded.pack_files)")
        m = json.loads(mpath.read_text())
        if m.get("format") != FORMAT:
            raise ConfigError(f"{mpath}: format {m.get('format')!r}, expected {FORMAT!r}")
        doms = []
        for spec in m["domains"]:
            n = spec["name"]
            blob = root / f"{spec['file']}.bytes.bin"
            data = np.memmap(blob, np.uint8, "r") if blob.stat().st_size else np.zeros(0, np.uint8)
            doms.append(EncodedDomain(
                n, data, np.load(root / f"{spec['file']}.offsets.npy"), np.load(root / f"{spec['file']}.labels.npy"),
                np.load(root / f"{spec['file']}.sizes.npy"), list(spec.get("formats", []))))
        return cls(m["name"], m["classes"], doms, int(m["image_size"]), m.get("info", {}))


def _probe(path: Path) -> tuple[int, int, str]:
    """(width, height, format) from the file header; unreadable files raise naming the path."""
    try:
        with Image.open(path) as im:
            return im.size[0], im.size[1], str(im.format)
    except (UnidentifiedImageError, OSError) as e:
        raise ConfigError(f"{path}: unreadable image ({e})") from e


def pack_files(
    out: str | Path, name: str, classes: Sequence[str], listing: dict[str, list[tuple[Path, int]]], image_size: int,
    info: dict[str, Any] | None = None, files_of: dict[str, str] | None = None, square_frame: bool = False,
) -> EncodedDataset:
    """Concatenate each domain's files (``listing``: domain → [(path, label)]) into ``out``; manifest last.

    ``files_of`` maps a domain name to a file-safe stem (default: the name with spaces replaced).
    ``square_frame``: record every size as ``image_size`` × ``image_size`` instead of the file's, for pipelines
    that resize before cropping (DomainBed's WILDS transforms), so the crop is drawn in the resized frame.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    specs = []
    for dname, items in listing.items():
        stem = (files_of or {}).get(dname, dname.replace(" ", "_").replace("/", "_"))
        offsets = np.zeros(len(items) + 1, np.int64)
        sizes = np.zeros((len(items), 2), np.int32)
        formats = set()

        def write(fh, items=items, offsets=offsets, sizes=sizes, formats=formats) -> None:
            for i, (path, _) in enumerate(items):
                w, h, fmt = _probe(path)
                sizes[i] = (image_size, image_size) if square_frame else (w, h)
                formats.add(fmt)
                blob = Path(path).read_bytes()
                fh.write(blob)
                offsets[i + 1] = offsets[i] + len(blob)

        io._atomic(out / f"{stem}.bytes.bin", write, "wb")
        io.write_npy(out / f"{stem}.offsets.npy", offsets)
        io.write_npy(out / f"{stem}.labels.npy", np.array([k for _, k in items], np.int64))
        io.write_npy(out / f"{stem}.sizes.npy", sizes)
        specs.append({"name": dname, "file": stem, "samples": len(items), "formats": sorted(formats)})
    io.write_json(out / "manifest.json", {"format": FORMAT, "name": name, "classes": list(classes), "domains": specs,
                                          "image_size": int(image_size), "info": info or {}})
    return EncodedDataset.load(out)
