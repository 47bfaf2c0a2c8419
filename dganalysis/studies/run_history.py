"""The record of notebook executions of a profile: one :class:`NotebookRun` per notebook, in ``<out>/runs.json``.

Written by the runner (:mod:`dganalysis.studies.runner`) after every notebook, read by the index it writes and by the HTML
report (:mod:`dganalysis.studies.report`). Both sides depend on this record, not on each other, so the runner can call the
report and the report can rebuild from disk without the runner.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from dganalysis import io

VARIANTS_DIR = "variants"  #: ``outputs/<profile>/variants/<variant>/``: a variant run's output_dir (dganalysis.studies.runner)


def run_label(name: str, variant: str | None = None) -> str:
    """The name of one run in the index, this history and the executed notebook: ``<notebook>[@<variant>]``."""
    return name if variant is None else f"{name}@{variant}"


def split_label(label: str) -> tuple[str, str | None]:
    """(notebook, variant or None) of a run label (:func:`run_label`)."""
    name, _, variant = label.partition("@")
    return name, variant or None


def run_folder(label: str) -> str:
    """The folder of a run's figures, tables and findings relative to ``outputs/<profile>``: "" for a base run,
    ``variants/<variant>/`` for a variant run."""
    variant = split_label(label)[1]
    return "" if variant is None else f"{VARIANTS_DIR}/{variant}/"


@dataclass
class NotebookRun:
    """The outcome of one notebook execution; ``name`` is its run label (``<notebook>`` or ``<notebook>@<variant>``,
    :func:`run_label`)."""

    name: str
    output: Path
    ok: bool
    seconds: float
    error: str = ""
    figures: list[Path] = field(default_factory=list)
    tables: list[Path] = field(default_factory=list)
    #: its sweeps' totals (:func:`dganalysis.progress.sweep_totals`: sweeps, trained, failed, skipped, minutes); {}
    #: when it ran no sweep
    jobs: dict = field(default_factory=dict)


def record_run(out: Path, run: NotebookRun) -> list[NotebookRun]:
    """Record ``run`` in ``<out>/runs.json`` and return the latest run of every notebook, in reading order
    (so running one notebook keeps the others' entries in the index)."""
    path = Path(out) / "runs.json"
    history = json.loads(path.read_text()) if path.is_file() else {}
    history[run.name] = {"output": str(run.output), "ok": run.ok, "seconds": run.seconds, "error": run.error,
                         "figures": [str(p) for p in run.figures], "tables": [str(p) for p in run.tables],
                         "jobs": run.jobs}
    io.write_json(path, history)
    return read_history(out)


def read_history(out: Path) -> list[NotebookRun]:
    """The latest run of every notebook recorded in ``<out>/runs.json``, in reading order ([] when none)."""
    path = Path(out) / "runs.json"
    if not path.is_file():
        return []
    try:
        history = json.loads(path.read_text())
        return [NotebookRun(name, Path(h["output"]), h["ok"], h["seconds"], h["error"],
                            [Path(p) for p in h["figures"]], [Path(p) for p in h["tables"]], h.get("jobs") or {})
                for name, h in sorted(history.items())]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a run history written by `dganalysis run` ({e})") from e
