"""One line per audit in the run index's summary (``outputs/<profile>/index.md``, :func:`dganalysis.studies.runner.write_index`).

The audit notebook writes its audits' summary lines (:attr:`dganalysis.audit.run.AuditResult.summary`) to
``<output_dir>/audits/summary.json`` (atomic write; a rerun replaces them); the runner lists them under the findings.
"""

from __future__ import annotations

import json
from pathlib import Path

from dganalysis import io

SUMMARY_FILE = Path("audits") / "summary.json"


def record_audit_lines(output_dir: str | Path, lines: list[str]) -> Path:
    """Replace the audit lines of ``output_dir``'s index summary."""
    if not all(isinstance(x, str) for x in lines):
        raise ValueError(f"lines: expected strings, got {[type(x).__name__ for x in lines]}")
    return io.write_json(Path(output_dir) / SUMMARY_FILE, {"lines": list(lines)})


def read_audit_lines(output_dir: str | Path) -> list[str]:
    """The recorded audit lines ([] when none; an unreadable file gives one line saying so)."""
    path = Path(output_dir) / SUMMARY_FILE
    if not path.is_file():
        return []
    try:
        return [str(x) for x in json.loads(path.read_text(encoding="utf-8"))["lines"]]
    except (OSError, ValueError, KeyError, TypeError):
        return [f"unreadable audit summary {path}"]
