"""The drop-in sweep's ``slurm`` launcher: DomainBed's commands as one job array through submitit.

Without a cluster, submitit's ``local`` executor runs the array (the plumbing: parameters from ``$DGANALYSIS_SLURM``,
every command run once, a failing command reported). On a machine with an idle Slurm node (``.ci/run`` starts a
single-node cluster with ``.ci/slurm_local.sh``), a three-run sweep of DomainBed's command line goes through Slurm
and every run ends ``done``; otherwise that test is skipped saying how to enable it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from dganalysis.scripts import sweep as drop_in
from dganalysis.validation import ConfigError
from tests.sweep.test_store_slurm import _slurm_idle


def test_slurm_launcher_runs_every_command_through_submitit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DGANALYSIS_SLURM", '{"cluster": "local", "timeout_min": 5}')
    monkeypatch.setenv("DGANALYSIS_SLURM_LOGS", str(tmp_path / "logs"))
    commands = [f"echo {i} > {tmp_path / f'out{i}'}" for i in range(3)]
    drop_in.slurm_launcher(commands)
    assert [(tmp_path / f"out{i}").read_text() for i in range(3)] == ["0\n", "1\n", "2\n"]
    assert "Submitted 3 tasks through submitit (local)" in capsys.readouterr().out


def test_slurm_launcher_reports_a_failing_command(tmp_path, monkeypatch):
    """Each task's exit status comes back (submitit's local executor waits), a failing one among them."""
    monkeypatch.setenv("DGANALYSIS_SLURM", '{"cluster": "local", "timeout_min": 5}')
    monkeypatch.setenv("DGANALYSIS_SLURM_LOGS", str(tmp_path / "logs"))
    assert drop_in.slurm_launcher(["exit 3", "true"]) == [3, 0]


def test_slurm_parameters_must_be_a_json_dict(monkeypatch):
    monkeypatch.setenv("DGANALYSIS_SLURM", "[1, 2]")
    with pytest.raises(ConfigError, match="DGANALYSIS_SLURM"):
        drop_in.slurm_launcher(["true"])


@pytest.mark.slow  # three array tasks, each importing torch
@pytest.mark.skipif(_slurm_idle() is not None, reason=f"needs a running Slurm cluster: {_slurm_idle()}")
def test_drop_in_sweep_through_slurm(tmp_path, monkeypatch):
    import numpy as np

    from tests.reference.test_domainbed_train_e2e import _write_idx  # the MNIST files the e2e tests write

    raw = tmp_path / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.RandomState(0)
    for split, n in (("train", 200), ("t10k", 100)):
        labels = rng.randint(0, 10, n)
        _write_idx(raw / f"{split}-labels-idx1-ubyte", labels)
        _write_idx(raw / f"{split}-images-idx3-ubyte", rng.randint(0, 255, (n, 28, 28)))
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DGANALYSIS_SLURM", '{"timeout_min": 10, "cpus_per_task": 1}')
    argv = ["launch", "--datasets", "ColoredMNIST", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
            "--single_test_envs", "--steps", "3", "--hparams", '{"batch_size": 8}', "--data_dir",
            str(tmp_path / "data"), "--output_dir", str(tmp_path / "sweep"), "--command_launcher", "slurm",
            "--skip_confirmation"]
    assert drop_in.main(argv) == 0  # submits the array and returns, as a cluster launcher does
    import time

    t0 = time.time()
    while time.time() - t0 < 300:
        jobs = drop_in.domainbed_jobs(drop_in.build_parser().parse_args(argv))
        if all(j.state == drop_in.Job.DONE for j in jobs):
            break
        time.sleep(0.5)
    assert len(jobs) == 3 and all(j.state == drop_in.Job.DONE for j in jobs), [str(j) for j in jobs]
