"""Run part of the paper profile's smoke run (`dganalysis run --profile paper --smoke NAMES`) in a test."""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path
from typing import Any


def run_paper_smoke(folder: Path, names: list[str]) -> tuple[Path, dict[str, Any], set[str]]:
    """Run ``names`` on FAKE inputs in ``folder``; returns (the outputs folder, runs.json, the datasets trained)."""
    from dganalysis.cli import main

    start, before = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    assert main(["run", "--profile", "paper", "--smoke", "--smoke-dir", str(folder), "--no-progress", *names]) == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"paper smoke {names}: {time.time() - start:.0f} s wall, {cpu:.0f} CPU-s in kernels, load {os.getloadavg()}")
    out = folder / "outputs" / "paper"
    runs = json.loads((out / "runs.json").read_text())
    assert (out / "index.md").read_text().startswith("> **FAKE DATA") and (out / "FAKE.md").is_file()
    datasets = {json.loads(p.read_text())["dataset"] for p in (out / "store").glob("*/spec.json")}
    return out, runs, datasets
