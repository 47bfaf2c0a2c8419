"""Font discovery, coverage and domain assignment for PaHCC's printed domains.

Paper (Zhang, Zhang & Liu, Sec. 3): printed images come from ~280 fonts (SCUT-SPCCI), split by font type into
standard (d0), distorted (d1) and handwriting-style (d2) printed domains. SCUT-SPCCI cannot be
downloaded here, so we render the fonts a machine has:

- fontconfig (``fc-list :lang=zh``), any ``folders`` given (``*.ttf|otf|ttc|woff|woff2``), and the npm
  ``@fontsource`` packages ``install_fonts.sh`` installs. Fontsource ships a face as many woff2 files, one
  per unicode-range chunk; a :class:`FontFace` keeps all chunk files and :meth:`FontFace.file_for` picks,
  per character, the chunk whose cmap (read with fontTools) covers it.
- Coverage is read from the fonts' cmaps with fontTools (cached per file, size and mtime).
- ``resources/fonts.yaml`` assigns faces to domains by name patterns (data, not code).
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from dganalysis.data.pahcc.classes import all_classes, class_set
from dganalysis.data.pahcc.npm import npm_dir
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)

FONTS_YAML = Path(__file__).with_name("resources") / "fonts.yaml"
FONT_EXTENSIONS = (".ttf", ".otf", ".ttc", ".otc", ".woff", ".woff2")
_PLAIN_STYLES = {"regular", "book", "normal", ""}


@dataclass(frozen=True)
class FontFace:
    """One font face: ``files`` (one file, or the unicode-range chunks of a fontsource face) and a TTC ``index``."""

    name: str
    files: tuple[str, ...]
    index: int = 0
    source: str = "file"

    def coverage(self) -> frozenset[int]:
        """Code points mapped by the face's cmap (union over chunk files)."""
        out: set[int] = set()
        for f in self.files:
            out |= _cmap(f, self.index)
        return frozenset(out)

    def file_for(self, char: str, cache: CoverageCache | None = None) -> str | None:
        """The file (chunk) whose cmap covers ``char``, or None when the face lacks it."""
        for f in self.files:
            if cache is not None:
                if cache.covers(f, self.index, char):
                    return f
            elif ord(char) in _cmap(f, self.index):
                return f
        return None

    def key(self) -> list[Any]:
        """JSON-able identity for cache keys (paths, sizes, mtimes)."""
        st = [(f, os.path.getsize(f), int(os.path.getmtime(f))) for f in self.files]
        return [self.name, self.index, st]


class CoverageCache:
    """Which of the shipped 1,000 class characters each font file covers, cached in a JSON file.

    Reading a CJK cmap with fontTools takes ~0.3 s per face; the cache (keyed by path, TTC index, size
    and mtime) makes repeated builds start at once. Characters outside the shipped list are looked up
    in the cmap directly.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.table: dict[str, str] = {}
        self.dirty = False
        if self.path is not None and self.path.is_file():
            try:
                self.table = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                log.warning("%s: unreadable font coverage cache, rebuilding it", self.path)

    def covers(self, path: str, index: int, char: str) -> bool:
        if char not in class_set():
            return ord(char) in _cmap(path, index)
        key = f"{path}|{index}|{os.path.getsize(path)}|{int(os.path.getmtime(path))}"
        got = self.table.get(key)
        if got is None:
            cmap = _read_cmap(path, index)
            got = "".join(c for c in all_classes() if ord(c) in cmap)
            self.table[key] = got
            self.dirty = True
        return char in got

    def save(self) -> None:
        if self.path is not None and self.dirty:
            from dganalysis import io

            io.write_json(self.path, self.table)
            self.dirty = False


@lru_cache(maxsize=64)
def _cmap(path: str, index: int) -> frozenset[int]:
    return _read_cmap(path, index)


def _read_cmap(path: str, index: int) -> frozenset[int]:
    from fontTools.ttLib import TTCollection, TTFont

    try:
        if path.lower().endswith((".ttc", ".otc")):
            coll = TTCollection(path, lazy=True)
            font = coll.fonts[index]
        else:
            font = TTFont(path, lazy=True, fontNumber=index if index else -1)
        cmap = font["cmap"].getBestCmap() or {}
    except Exception as e:  # fontTools raises many types for broken files
        raise ConfigError(f"{path}: cannot read the font's cmap with fontTools ({e})") from e
    return frozenset(cmap)


def _face_name(family: str, style: str) -> str:
    family = family.replace("\\", "").strip()
    style = style.strip()
    return family if style.lower() in _PLAIN_STYLES else f"{family} {style}"


def _fontconfig_faces() -> list[FontFace]:
    if shutil.which("fc-list") is None:
        log.warning("fc-list not found: no fontconfig font discovery")
        return []
    fmt = "%{file}\t%{index}\t%{family[0]}\t%{style[0]}\n"
    try:
        out = subprocess.run(["fc-list", "--format", fmt, ":lang=zh"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as e:
        log.warning("fc-list failed (%s): no fontconfig font discovery", e)
        return []
    faces = []
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not parts[0].lower().endswith(FONT_EXTENSIONS):
            continue
        faces.append(FontFace(_face_name(parts[2], parts[3]), (parts[0],), int(parts[1] or 0), "fontconfig"))
    return faces


def _names_from_file(path: str) -> list[tuple[int, str]]:
    from fontTools.ttLib import TTCollection, TTFont

    try:
        if path.lower().endswith((".ttc", ".otc")):
            fonts = list(TTCollection(path, lazy=True).fonts)
        else:
            fonts = [TTFont(path, lazy=True)]
    except Exception as e:
        log.warning("%s: unreadable font file, skipped (%s)", path, e)
        return []
    out = []
    for i, f in enumerate(fonts):
        nm = f["name"]
        fam = nm.getDebugName(16) or nm.getDebugName(1) or Path(path).stem
        sty = nm.getDebugName(17) or nm.getDebugName(2) or ""
        out.append((i, _face_name(fam, sty)))
    return out


def _folder_faces(folder: str | Path) -> list[FontFace]:
    folder = Path(folder)
    if not folder.is_dir():
        raise MissingInputError(f"fonts folder {folder}: not a folder (expected font files *{'|'.join(FONT_EXTENSIONS)})")
    faces = []
    for p in sorted(folder.rglob("*")):
        if p.suffix.lower() in FONT_EXTENSIONS and p.is_file() and "@fontsource" not in p.parts:
            faces += [FontFace(n, (str(p),), i, "folder") for i, n in _names_from_file(str(p))]
    return faces


def _fontsource_faces(root: Path) -> list[FontFace]:
    faces = []
    for pkg in sorted((root / "node_modules" / "@fontsource").glob("*")):
        files = sorted(glob.glob(str(pkg / "files" / "*-400-normal.woff2")))
        if not files:
            continue
        family = " ".join(w.capitalize() for w in pkg.name.split("-"))
        faces.append(FontFace(family, tuple(files), 0, "fontsource"))
    return faces


def discover_fonts(
    folders: Sequence[str | Path] | None = None, fontconfig: bool = True, npm: str | Path | bool | None = True
) -> list[FontFace]:
    """Font faces from fontconfig (``fc-list :lang=zh``), ``folders`` and the npm @fontsource packages.

    Faces are deduplicated by (real file path, index) and by name (first found wins), and sorted by name.
    ``npm`` is a node-prefix folder, True (default: :func:`npm_dir`) or False/None (skip).
    """
    faces: list[FontFace] = []
    for folder in folders or []:
        faces += _folder_faces(folder)
    if fontconfig:
        faces += _fontconfig_faces()
    if npm:
        faces += _fontsource_faces(npm_dir() if npm is True else Path(npm))
    seen_files: set[tuple[str, int]] = set()
    seen_names: set[str] = set()
    out = []
    for f in faces:
        fk = (os.path.realpath(f.files[0]), f.index)
        if fk in seen_files or f.name in seen_names:
            continue
        seen_files.add(fk)
        seen_names.add(f.name)
        out.append(f)
    return sorted(out, key=lambda f: f.name)


def load_font_config(path: str | Path | None = None) -> dict[str, Any]:
    """The domain-assignment YAML (default ``resources/fonts.yaml``)."""
    path = Path(path) if path is not None else FONTS_YAML
    try:
        cfg = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read the PaHCC font configuration ({e})") from e
    for key in ("order", "d0", "d1", "d2"):
        if key not in cfg:
            raise ConfigError(f"{path}: missing key {key!r} (expected order, d0, d1, d2)")
    return cfg


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(re.search(p, name, flags=re.IGNORECASE) for p in patterns)


def assign_domains(faces: Sequence[FontFace], config: dict[str, Any] | None = None) -> dict[str, list[FontFace]]:
    """Faces per printed domain ``{"d0": [...], "d2": [...], "unassigned": [...]}`` by the YAML patterns.

    d1 holds no faces of its own: its instances are distorted d0 faces (see ``distort.py``).
    """
    cfg = config if config is not None else load_font_config()
    out: dict[str, list[FontFace]] = {d: [] for d in cfg["order"]}
    out["unassigned"] = []
    for f in faces:
        for d in cfg["order"]:
            spec = cfg[d]
            if _matches(f.name, spec.get("include", [])) and not _matches(f.name, spec.get("exclude", [])):
                out[d].append(f)
                break
        else:
            out["unassigned"].append(f)
    return out
