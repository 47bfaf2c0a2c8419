"""`dganalysis sweep`'s arguments: a dry run lists the jobs, a run trains them."""

from __future__ import annotations

import argparse
import json

import pytest
from _tiny import FAST_HPARAMS, TINY

from dganalysis.sweep.cli import add_sweep_arguments, main_sweep

pytestmark = pytest.mark.usefixtures("one_thread")


def test_cli_dry_run_and_run(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_sweep_arguments(parser)
    base = ["--dataset", TINY, "--algorithms", "ERM", "--steps", "2", "--checkpoint-freq", "1",
            "--hparams-overrides", json.dumps(FAST_HPARAMS), "--store", str(tmp_path / "s")]
    assert main_sweep(parser.parse_args([*base, "--dry-run", "--splits", '{"leave_one_group_out": 2}'])) == 0
    out = capsys.readouterr().out
    assert "jobs: 3 pending" in out
    assert main_sweep(parser.parse_args([*base, "--splits", '[{"train": ["d0"], "test": ["d1"]}]', "--no-progress"])) == 0
    assert "1 done" in capsys.readouterr().out
