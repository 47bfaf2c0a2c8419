"""Reader for the IDX format of the MNIST raw files (LeCun et al. 1998), also used by Fashion-MNIST (Xiao et al. 2017).

Header: two zero bytes, a type byte (0x08 = uint8), the number of dimensions, then one
big-endian uint32 per dimension; the data follow in C order. ``.gz`` files are read
transparently.
"""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np

from dganalysis.validation import ConfigError, MissingInputError

_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Read one IDX file (optionally gzipped) into a numpy array."""
    path = Path(path)
    if not path.is_file():
        raise MissingInputError(f"{path}: IDX file not found")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if len(data) < 4:
        raise ConfigError(f"{path}: {len(data)} bytes, too short for an IDX header (4 bytes)")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code not in _TYPES:
        raise ConfigError(f"{path}: bad IDX magic at byte 0 (got {data[:4].hex()}, expected 0000 08.. for uint8)")
    head = 4 + 4 * ndim
    if len(data) < head:
        raise ConfigError(f"{path}: truncated header, expected {head} bytes, file has {len(data)}")
    shape = struct.unpack(f">{ndim}I", data[4:head])
    dtype = np.dtype(_TYPES[dtype_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - head != expected:
        raise ConfigError(
            f"{path}: data section has {len(data) - head} bytes at offset {head}, expected {expected} for shape {shape}"
        )
    return np.frombuffer(data, dtype=dtype, offset=head).reshape(shape).astype(dtype.newbyteorder("="))


#: The IDX image sets we read, with how to name them and where they come from.
IDX_SETS: dict[str, str] = {
    "MNIST": "MNIST (LeCun et al. 1998)",
    "Fashion-MNIST": "Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, Zalando Research)",
}


def find_idx_set(root: str | Path, name: str = "MNIST", hint: str = "") -> tuple[np.ndarray, np.ndarray, list[Path]]:
    """Images uint8[N, 28, 28], int64 labels and the files read, train then t10k, of the IDX set ``name``.

    ``name`` is one of :data:`IDX_SETS`; MNIST and Fashion-MNIST share the four file names, so the caller says which
    set it expects and every message names it. Files are looked up as ``root/<split>-<kind>[.gz]`` and
    ``root/raw/...``; a missing file is an error naming ``root``, the file and ``hint`` (how to get the set).
    """
    if name not in IDX_SETS:
        raise ConfigError(f"name={name!r}: expected one of {sorted(IDX_SETS)}")
    root = Path(root)
    parts, files = [], []
    for split in ("train", "t10k"):
        found = []
        for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
            cands = [root / f"{split}-{kind}", root / f"{split}-{kind}.gz", root / "raw" / f"{split}-{kind}",
                     root / "raw" / f"{split}-{kind}.gz"]
            hit = next((c for c in cands if c.is_file()), None)
            if hit is None:
                raise MissingInputError(f"{root}: no {split}-{kind}[.gz] (expected the {name} raw IDX files){hint}")
            found.append(read_idx(hit))
            files.append(hit)
        if len(found[0]) != len(found[1]):
            raise ConfigError(f"{root}: {split} has {len(found[0])} images but {len(found[1])} labels ({name})")
        parts.append(found)
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts]).astype(np.int64)
    return images, labels, files


def find_mnist(root: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Images uint8[N, 28, 28] and labels of MNIST train+test from the raw IDX files in ``root``."""
    images, labels, _ = find_idx_set(root, "MNIST")
    return images, labels
