"""Test-only helper of the packing tests: a fake ``nvidia-cuda-mps-control`` on ``PATH`` that logs its calls."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from dganalysis.sweep import packing

FAKE = """#!/bin/sh
# a fake nvidia-cuda-mps-control: logs each call (arguments, stdin, pipe folder); "running" marks a live daemon
dir="$(dirname "$0")"
input=""
if [ "$#" -eq 0 ]; then input="$(cat)"; fi
echo "args=[$*] stdin=[$input] pipe=[$CUDA_MPS_PIPE_DIRECTORY] log=[$CUDA_MPS_LOG_DIRECTORY]" >> "$dir/calls.log"
if [ "$1" = "-d" ]; then touch "$dir/running"; exit 0; fi
case "$input" in
  get_server_list) [ -e "$dir/running" ] && exit 0 || exit 1 ;;
  quit) rm -f "$dir/running"; exit 0 ;;
esac
exit 0
"""


def install_fake_mps(tmp_path: Path, monkeypatch) -> Path:
    """Put the fake control binary first on ``PATH`` (no MPS folders set); returns its folder (its ``calls.log``)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / packing.MPS_CONTROL
    exe.write_text(FAKE)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    monkeypatch.delenv("CUDA_MPS_LOG_DIRECTORY", raising=False)
    return bin_dir


def _calls(bin_dir: Path) -> list[str]:
    """The fake's calls so far, one line each."""
    f = bin_dir / "calls.log"
    return f.read_text().splitlines() if f.exists() else []
