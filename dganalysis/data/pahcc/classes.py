"""PaHCC classes: frequent simplified Chinese characters inside GB2312 level 1.

Paper (seed 000, Sec. 3): "we selected 1000 frequently used Chinese characters in the GB2312-80
standard as our categories"; mini-PaHCC uses 100 of them. The paper's exact list is unpublished;
we ship ``resources/classes_1000.txt`` (most frequent first, provenance in its header) and take
mini = the first 100, ``n`` = the first ``n``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

CLASSES_FILE = Path(__file__).with_name("resources") / "classes_1000.txt"
SIZES = {"mini": 100, "full": 1000}


def is_gb2312_level1(char: str) -> bool:
    """True when ``char`` is one GB2312 level-1 hanzi (first byte 0xB0–0xD7 in Python's gb2312 codec)."""
    if len(char) != 1:
        return False
    try:
        b = char.encode("gb2312")
    except UnicodeEncodeError:
        return False
    return len(b) == 2 and 0xB0 <= b[0] <= 0xD7


@lru_cache(maxsize=1)
def all_classes() -> tuple[str, ...]:
    """All 1,000 shipped characters, most frequent first."""
    chars = [ln.strip() for ln in CLASSES_FILE.read_text(encoding="utf-8").splitlines()]
    chars = [c for c in chars if c and not c.startswith("#")]
    bad = [c for c in chars if not is_gb2312_level1(c)]
    if bad or len(set(chars)) != len(chars):
        raise ValueError(f"{CLASSES_FILE}: expected unique GB2312 level-1 characters; bad entries {bad[:10]}")
    return tuple(chars)


@lru_cache(maxsize=1)
def class_set() -> frozenset[str]:
    """The shipped characters as a set (fast membership tests)."""
    return frozenset(all_classes())


def pahcc_classes(size: str | int = "mini") -> list[str]:
    """The class list for ``size``: ``"mini"`` (100), ``"full"`` (1,000) or an int ``n`` (the ``n`` most frequent)."""
    if isinstance(size, str):
        if size not in SIZES:
            raise ValueError(f"size={size!r}: expected 'mini', 'full' or an int number of classes")
        n = SIZES[size]
    elif isinstance(size, int) and not isinstance(size, bool):
        n = size
    else:
        raise ValueError(f"size={size!r}: expected 'mini', 'full' or an int number of classes")
    chars = all_classes()
    if not 1 <= n <= len(chars):
        raise ValueError(f"size={n}: number of classes must be in [1, {len(chars)}]")
    return list(chars[:n])
