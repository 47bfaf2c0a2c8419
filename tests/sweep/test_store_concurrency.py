"""Several OS processes sweep one job store at once and are killed with SIGKILL at random moments of their jobs.

Each process is the real ``dganalysis sweep`` command. Jobs use ``_EngineLedger`` (tests/_ledger.py): it logs
the first and the last update of every training with the job's seed and its pid, independently of the store
code, and sleeps per step so a job lasts about a second without using CPU. Each kill waits until a process is
training a job (a record written) and strikes at a random moment of a job's length, so it mostly leaves a partial
job behind (or lands just after one), never in the interpreter's start-up where it would prove nothing. At the end every job must be finished exactly once
(:func:`check_store`), with its records intact (every line JSON, steps exactly the checkpoints, one spec), no
``failed`` file and no live claim left behind. The random moments come from ``$DGA_STRESS_SEED`` (printed on
failure) or the clock."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _ledger import LEDGER_ALG, LEDGER_FILE
from _tiny import TINY, TINY_FILE

from dganalysis.sweep import ExecutionOptions, load_sweep_yaml, run_sweep
from dganalysis.training.train import job_seed

STEPS, FREQ = 10, 3
STEP_SLEEP_S = 0.08  # a job sleeps STEPS × this, long enough to be killed mid-job
LEASE_S = 30  # a killed holder's claim is stale at once (its pid is gone); a starved live one must not be taken over
POLL_S = 0.2  # the sweeps' --poll-s: how soon a waiting runner looks again at a job another one holds
CHECKPOINTS = [0, 3, 6, 9]
ROOT = Path(__file__).resolve().parents[2]


def _sweep_yaml(tmp_path: Path, n_trials: int = 2) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(
        f"dataset: {TINY}\nalgorithms: [{LEDGER_ALG}]\nsplits: leave_one_out\nn_trials: {n_trials}\n"
        f"steps: {STEPS}\ncheckpoint_freq: {FREQ}\nhparams_overrides: {{featurizer: mlp, batch_size: 8}}\n"
    )
    return p


def _env(ledger: Path) -> dict[str, str]:
    return {**os.environ, "DGA_TEST_LEDGER": str(ledger), "DGA_TEST_STEP_SLEEP": str(STEP_SLEEP_S), "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def _command(cfg: Path, store: Path, extra: list[str] | None = None) -> list[str]:
    return [sys.executable, "-m", "dganalysis.cli", "sweep", "--config", str(cfg), "--store", str(store),
            "--import", TINY_FILE, "--import", LEDGER_FILE, "--lease-s", str(LEASE_S), "--no-progress", *(extra or [])]


def check_store(store: Path, jobs, ledger: Path, killed: set[int], context: str) -> None:
    """Every job finished exactly once, records intact, no live claim left behind.

    From the ledger (written by the algorithm, not by the store code): the process that wrote ``done`` (its pid
    from ``history.log``) trained the job to its last update; no other process that survived trained it to the
    end (so no surviving runner duplicated it); other full trainings can only be by killed processes that died
    before writing ``done``.
    """
    from dganalysis.sweep.store import read_claim

    events = [line.split() for line in ledger.read_text().splitlines()] if ledger.exists() else []
    ends: dict[int, list[int]] = {}
    for event, seed, pid in events:
        if event == "end":
            ends.setdefault(int(seed), []).append(int(pid))
    for job in jobs:
        d = store / job.job_id
        assert (d / "done").is_file(), f"{context}: {job.job_id} not done"
        assert not (d / "failed").exists(), f"{context}: {job.job_id} failed: {(d / 'failed').read_text()[-500:]}"
        claim = read_claim(d)
        assert claim is None or claim.is_stale(), f"{context}: {job.job_id} still claimed by {claim}"
        recs = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]  # every line whole JSON
        assert [r["step"] for r in recs] == CHECKPOINTS, f"{context}: {job.job_id} records {[r['step'] for r in recs]}"
        assert {r["args"]["job_id"] for r in recs} == {job.job_id}
        assert json.loads((d / "spec.json").read_text())["job_id"] == job.job_id
        history = (d / "history.log").read_text().splitlines()
        done_by = [int(ln.split()[2].rsplit(":", 1)[1]) for ln in history if ln.split()[1] == "done"]
        assert len(done_by) <= 1, f"{context}: {job.job_id} finished {len(done_by)} times:\n" + "\n".join(history)
        full = ends.get(job_seed(job), [])
        survivors = [p for p in full if p not in killed]
        if done_by:  # (a process killed right after writing done may have had no time to log it)
            assert done_by[0] in full, f"{context}: {job.job_id} done by {done_by[0]}, trained to the end by {full}"
        assert len(survivors) <= 1 and set(survivors) <= set(done_by), (
            f"{context}: {job.job_id} trained to the end by surviving processes {survivors}, done by {done_by}")
        assert full, f"{context}: {job.job_id} done without a full training in the ledger"
    # the store's own status, whatever thread count its runners (e.g. Slurm tasks with cpus_per_task=1) recorded
    again = run_sweep(jobs, store, dry_run=True, progress=False, execution=ExecutionOptions(mixed_threads=True))
    assert set(again["status"]) == {"done"}


def _descendants(pid: int) -> list[int]:
    """PIDs of the live processes below ``pid`` (from /proc)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":
            parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def _training(store: Path) -> set[int]:
    """PIDs that hold a claim on a job that has written a record already (mid-training, not in its set-up)."""
    pids = set()
    for claim in store.glob("*/claim"):
        try:
            pid = int(json.loads(claim.read_text())["pid"])
            if (claim.parent / "results.jsonl").read_text().strip():
                pids.add(pid)
        except (OSError, ValueError, KeyError):
            continue
    return pids


def _victim(store: Path, procs: list[subprocess.Popen], tasks: bool, rng: random.Random,
            timeout: float = 600.0) -> int | None:
    """A process training a job (a live sweep, or with ``tasks`` a process below one: submitit's job processes),
    picked at random once one is; None when every sweep has ended first. ``timeout`` only guards against a hang: on
    a starved machine a sweep's start-up alone can take minutes."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        live = [p for p in procs if p.poll() is None]
        if not live:
            return None
        candidates = {k for p in live for k in _descendants(p.pid)} if tasks else {p.pid for p in live}
        busy = sorted(candidates & _training(store))
        if busy:
            return rng.choice(busy)
        time.sleep(0.02)
    raise AssertionError(f"no sweep was training within {timeout:.0f} s")


def _stress(tmp_path: Path, n_procs: int, n_kills: int, extra: list[str] | None = None, tasks: bool = False,
            n_trials: int = 2) -> None:
    """Each of the ``n_kills`` kills waits until a process is training a job (its first record written), then kills
    it at a random moment of a job's length (mid-job, or just after it, between two jobs). ``tasks``: kill the sweeps' child processes
    (submitit's job processes) instead of the sweeps; their sweep then reports the job failed (exit 1), and one more
    sweep afterwards redoes it. Every sweep neither killed nor owning a killed task must exit 0."""
    seed = int(os.environ.get("DGA_STRESS_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    context = f"{n_procs} processes, {n_kills} kills, DGA_STRESS_SEED={seed}"
    cfg, store, ledger = _sweep_yaml(tmp_path, n_trials), tmp_path / "store", tmp_path / "ledger.txt"
    env = _env(ledger)
    extra = ["--poll-s", str(POLL_S), *(extra or [])]
    procs = []
    for _ in range(n_procs):
        procs.append(subprocess.Popen(_command(cfg, store, extra), env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
        time.sleep(rng.uniform(0.0, 0.5))
    killed: set[int] = set()
    owners: set[int] = set()  # with ``tasks``: the sweeps whose task was killed (they may report it failed, exit 1)
    for _ in range(n_kills):  # kill -9 a training process at a random moment, start a replacement
        victim_pid = _victim(store, procs, tasks, rng)
        if victim_pid is None:
            break
        owners |= {p.pid for p in procs if tasks and victim_pid in _descendants(p.pid)}
        time.sleep(rng.uniform(0.0, STEPS * STEP_SLEEP_S))
        try:
            os.kill(victim_pid, signal.SIGKILL)
        except ProcessLookupError:  # a task process that ended meanwhile
            continue
        killed.add(victim_pid)
        if not tasks:
            next(p for p in procs if p.pid == victim_pid).wait()
            procs.append(subprocess.Popen(_command(cfg, store, extra), env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    outputs = []
    for p in procs:
        out, _ = p.communicate(timeout=240)
        outputs.append(out)
        if p.pid not in killed and p.pid not in owners:
            assert p.returncode == 0, f"{context}: a sweep exited {p.returncode}:\n{out[-3000:]}"
    if tasks:  # the rerun after killed tasks
        r = subprocess.run(_command(cfg, store, extra), env=env, capture_output=True, text=True, timeout=240)
        assert r.returncode == 0, f"{context}: the rerun exited {r.returncode}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    check_store(store, load_sweep_yaml(cfg), ledger, killed, context)


@pytest.mark.slow  # 4 to 6 Python processes importing torch: ~15 s on a quiet 2-core machine
def test_two_concurrent_sweeps_with_kills(tmp_path):
    _stress(tmp_path, n_procs=2, n_kills=2)


@pytest.mark.slow  # 6 Python processes on 3 jobs: ~20 s on a quiet 2-core machine
def test_four_concurrent_sweeps_with_kills(tmp_path):
    _stress(tmp_path, n_procs=4, n_kills=2, n_trials=1)


@pytest.mark.slow  # submitit's local executor: one subprocess per job, like Slurm array tasks
def test_concurrent_sweeps_through_submitit_local(tmp_path):
    pytest.importorskip("submitit")
    _stress(tmp_path, n_procs=2, n_kills=1, tasks=True, n_trials=1,
            extra=["--launcher", "slurm", "--slurm-cluster", "local", "--timeout-min", "5"])
