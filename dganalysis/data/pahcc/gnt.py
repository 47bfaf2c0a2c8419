"""CASIA-HWDB ``.gnt`` files: the real handwritten domain of PaHCC (paper, Zhang, Zhang & Liu, Sec. 3).

Format (CASIA-HWDB1.0–1.1, one file per writer), repeated until end of file, per sample:
``uint32 LE total size`` (header 10 bytes + bitmap), ``2-byte GB2312 tag code`` (first byte first),
``uint16 LE width``, ``uint16 LE height``, ``width × height`` uint8 gray bitmap (row-major, 255 = paper).

Relative sizes (paper: "We preserve the original relative sizes of images"): every sample is scaled by
ONE global factor (``fill * image_size / reference``, where ``reference`` is the 95th percentile of the
samples' longer sides unless given) and pasted centred on a white canvas; samples still larger than the
canvas (the top 5 %) are shrunk to fit, aspect kept.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from dganalysis.validation import ConfigError, MissingInputError

HEADER = struct.Struct("<I2sHH")


def iter_gnt(path: str | Path) -> Iterator[tuple[str, np.ndarray, int]]:
    """Yield ``(tag, bitmap uint8[H, W], byte offset)`` per sample; ``tag`` is the GB2312-decoded character.

    A truncated or inconsistent record raises ``ValueError`` naming the file and the record's byte offset.
    Tags that do not decode as GB2312 are yielded as ``"\\x00XXXX"`` (hex of the two bytes).
    """
    path = Path(path)
    data = path.read_bytes()
    off = 0
    while off < len(data):
        if off + HEADER.size > len(data):
            raise ConfigError(f"{path}: truncated sample header at byte offset {off} ({len(data) - off} bytes left, "
                             f"expected {HEADER.size})")
        size, code, w, h = HEADER.unpack_from(data, off)
        if size != HEADER.size + w * h:
            raise ConfigError(f"{path}: corrupt sample at byte offset {off}: total size {size} != 10 + width {w} × "
                             f"height {h}")
        if off + size > len(data):
            raise ConfigError(f"{path}: truncated bitmap at byte offset {off}: sample needs {size} bytes, "
                             f"{len(data) - off} left")
        try:
            tag = code.decode("gb2312")
        except UnicodeDecodeError:
            tag = "\x00" + code.hex()
        bmp = np.frombuffer(data, np.uint8, w * h, off + HEADER.size).reshape(h, w)
        yield tag, bmp, off
        off += size


def write_gnt(path: str | Path, samples: Iterable[tuple[str, np.ndarray]]) -> Path:
    """Write ``(character, uint8[H, W] bitmap)`` samples as a ``.gnt`` file (for tests and exports)."""
    from dganalysis import io

    chunks = []
    for char, bmp in samples:
        bmp = np.ascontiguousarray(bmp, dtype=np.uint8)
        h, w = bmp.shape
        chunks.append(HEADER.pack(HEADER.size + w * h, char.encode("gb2312"), w, h) + bmp.tobytes())
    return io.write_bytes(Path(path), b"".join(chunks))


def paste_global(bitmaps: list[np.ndarray], image_size: int, fill: float = 0.86,
                 reference: float | None = None) -> np.ndarray:
    """Scale all bitmaps by one factor (relative sizes kept) onto white canvases: uint8[N, S, S]."""
    out = np.full((len(bitmaps), image_size, image_size), 255, np.uint8)
    if not bitmaps:
        return out
    if reference is None:
        reference = float(np.percentile([max(b.shape) for b in bitmaps], 95))
    factor = fill * image_size / max(reference, 1.0)
    for i, b in enumerate(bitmaps):
        h, w = b.shape
        s = min(factor, image_size / max(h, w))
        nw, nh = max(1, round(w * s)), max(1, round(h * s))
        small = np.asarray(Image.fromarray(b).resize((nw, nh), Image.BOX if s < 1 else Image.BILINEAR))
        y0, x0 = (image_size - nh) // 2, (image_size - nw) // 2
        out[i, y0:y0 + nh, x0:x0 + nw] = small
    return out


def read_gnt_dir(gnt_dir: str | Path, classes: list[str], image_size: int, fill: float = 0.86,
                 progress: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], int]:
    """All ``*.gnt`` files under ``gnt_dir`` (one writer each, sorted by name) restricted to ``classes``.

    Returns images uint8[N, 1, S, S], labels, writer ids, writer names (file stems) and the number of
    samples skipped because their character is not a class.
    """
    from tqdm.auto import tqdm

    files = sorted(Path(gnt_dir).rglob("*.gnt"))
    if not files:
        raise MissingInputError(f"gnt_dir={gnt_dir}: no *.gnt files found (expected CASIA-HWDB .gnt files)")
    index = {c: k for k, c in enumerate(classes)}
    bitmaps, labels, writers, skipped = [], [], [], 0
    for wid, f in enumerate(tqdm(files, desc="read .gnt", disable=not progress)):
        for tag, bmp, _ in iter_gnt(f):
            k = index.get(tag)
            if k is None:
                skipped += 1
                continue
            bitmaps.append(bmp.copy())
            labels.append(k)
            writers.append(wid)
    imgs = paste_global(bitmaps, image_size, fill)[:, None]
    return imgs, np.asarray(labels, np.int64), np.asarray(writers, np.int64), [f.stem for f in files], skipped
