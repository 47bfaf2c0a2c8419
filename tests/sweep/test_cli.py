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


def test_a_cache_looking_data_dir_is_judged_by_the_mnist_files(tmp_path):
    """``--data_dir`` holding a cache's folders is refused unless MNIST's raw files are there too (a shared
    ``$DGANALYSIS_DATA`` holds both)."""
    from dganalysis.sweep.cli import check_not_a_cache
    from dganalysis.validation import ConfigError

    (tmp_path / "imported").mkdir()
    with pytest.raises(ConfigError, match="looks like a dganalysis cache folder"):
        check_not_a_cache("RotatedMNIST", str(tmp_path), {"mnist_dir": str(tmp_path)})
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (raw / f).write_bytes(b"")
    check_not_a_cache("RotatedMNIST", str(tmp_path), {"mnist_dir": str(tmp_path)})
