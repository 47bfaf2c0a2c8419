"""A real Slurm cluster: a sweep through the submitit launcher as a job array, one array task killed mid-job
(SIGKILL to its process, then ``scancel``), a rerun, and the store checked as in tests/sweep/test_store_concurrency.py.

Needs a running Slurm (``sinfo`` shows an idle node). ``.ci/run`` starts a single-node cluster on localhost
with ``.ci/slurm_local.sh`` (Debian's slurm-wlm 22.05 and munge; needs root); without one the test is skipped
saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from dganalysis.sweep import load_sweep_yaml
from tests.sweep.test_store_concurrency import POLL_S, _command, _env, _sweep_yaml, check_store


def _slurm_idle() -> str | None:
    """None when a Slurm node is idle, else why not."""
    if shutil.which("sinfo") is None or shutil.which("sbatch") is None:
        return "Slurm is not installed (apt-get install -y slurm-wlm munge; then bash .ci/slurm_local.sh)"
    try:
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"sinfo failed ({e})"
    if r.returncode != 0 or not any(s.startswith(("idle", "mix")) for s in r.stdout.split()):
        return f"no idle Slurm node (sinfo: {(r.stdout + r.stderr).strip()[:200]!r}); start one: bash .ci/slurm_local.sh"
    return None


def _running_task(store: Path, timeout: float = 120.0) -> tuple[int, str, str]:
    """(pid, array job id, task id) of an array task that holds a claim and has written a record."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        for claim in store.glob("*/claim"):
            try:
                pid = int(json.loads(claim.read_text())["pid"])
                env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                recs = (claim.parent / "results.jsonl").read_text().splitlines()
            except (OSError, ValueError, KeyError):
                continue
            env_d = dict(e.decode(errors="replace").split("=", 1) for e in env if b"=" in e)
            if recs and "SLURM_ARRAY_JOB_ID" in env_d:
                return pid, env_d["SLURM_ARRAY_JOB_ID"], env_d["SLURM_ARRAY_TASK_ID"]
        time.sleep(0.2)
    raise AssertionError(f"no array task was seen mid-job within {timeout:.0f} s")


@pytest.mark.slow  # Slurm array tasks each import torch: ~30 s
@pytest.mark.skipif(_slurm_idle() is not None, reason=f"needs a running Slurm cluster: {_slurm_idle()}")
def test_slurm_array_task_killed_mid_job_then_rerun(tmp_path):
    cfg, store, ledger = _sweep_yaml(tmp_path, n_trials=1), tmp_path / "store", tmp_path / "ledger.txt"
    env = {**_env(ledger), "DGA_TEST_STEP_SLEEP": "0.25"}
    cmd = _command(cfg, store, ["--launcher", "slurm", "--slurm-cluster", "slurm", "--timeout-min", "5",
                                "--cpus-per-task", "1", "--poll-s", str(POLL_S)])
    first = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pid, array_id, task_id = _running_task(store)
        # SIGKILL the task's Python process (as a dying node would), then cancel the task in Slurm. scancel alone
        # does not reach it on this cgroup-free cluster: submitit ignores SIGTERM and slurmstepd's later SIGKILL
        # misses the process without cgroup tracking ("Timed out waiting for job step to complete").
        os.kill(pid, signal.SIGKILL)
        subprocess.run(["scancel", f"{array_id}_{task_id}"], check=True, timeout=30)
        out, _ = first.communicate(timeout=240)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 1 and "failed" in out, out[-3000:]  # the killed task's job is reported failed
    assert any(p.name.startswith(f"{array_id}_") for p in (store / ".submitit").iterdir())  # it was an array
    # the rerun's job need not last: nothing is killed now
    rerun = subprocess.run(cmd, env={**env, "DGA_TEST_STEP_SLEEP": "0"}, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    assert "1 done" in rerun.stdout and "2 skipped" in rerun.stdout, rerun.stdout
    check_store(store, load_sweep_yaml(cfg), ledger, {pid}, f"slurm array {array_id}, task {task_id} killed")
    assert os.path.exists(ledger)
