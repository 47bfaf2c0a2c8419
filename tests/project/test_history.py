"""Docs, params, docstrings and notebooks speak to readers about the package as it is: no development history
(session or issue numbers of the project's own work). That history lives in git and in bench/HISTORY.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: "session 13", "issue 20", "issue #20", "this round": the project's own development, meaningless to a reader
HISTORY = re.compile(r"\b(session|issue)\s+#?\d+|\bthis round\b|\bearlier sessions?\b", re.IGNORECASE)


def _files() -> list[Path]:
    out = [*(ROOT / "docs").rglob("*.md"), *(ROOT / "params").rglob("*.yaml"), *(ROOT / "notebooks").glob("*.py"),
           *(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "dganalysis").rglob("*.py"), ROOT / "docs" / "conf.py"]
    return [p for p in out if "_build" not in p.parts]


def test_pattern_finds_history():
    for text in ("measured in session 13", "see issue 20", "Issue #7 says", "this round of pilots", "earlier sessions"):
        assert HISTORY.search(text), text
    for text in ("DomainBed issues #32, #93", "a session of training", "round(x, 3)", "round-robin"):
        assert not HISTORY.search(text), text


def test_no_development_history_for_readers():
    hits = []
    for path in _files():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if HISTORY.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not hits, "development history in reader-facing text (move it to bench/HISTORY.md):\n" + "\n".join(hits)
