"""The suite's long files start first (``tests/conftest.py``: ``SLOW_FIRST``); a renamed file must not drop out."""

from __future__ import annotations

from pathlib import Path

from conftest import SLOW_FIRST

ROOT = Path(__file__).resolve().parents[2]


def test_every_slow_first_prefix_names_existing_test_files():
    for prefix in SLOW_FIRST:
        folder, _, stem = prefix.rpartition("/")
        assert sorted((ROOT / folder).glob(f"{stem}*")), f"SLOW_FIRST entry {prefix!r} matches no file"


def test_the_readme_command_keeps_the_order():
    """Without ``--no-loadscope-reorder`` pytest-xdist sorts files by their number of tests, and the two smoke halves
    (one test each) would start last."""
    command = next(line for line in (ROOT / "README.md").read_text().splitlines() if "-m pytest" in line)
    assert "--dist loadfile" in command and "--no-loadscope-reorder" in command
    assert command.split("#")[0].strip() in (ROOT / ".ci" / "run").read_text()
