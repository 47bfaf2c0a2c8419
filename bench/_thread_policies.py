"""Thread policies of a CPU training job, idle and with every core busy (``train_throughput.py --thread-policies``).

Each policy runs in a fresh Python process (its OpenMP runtime reads the waiting policy when torch loads), on
the same simulated job, after one warm-up job, in the same bench run as the others, round after round:

- ``fixed``: the default now: the launcher's share of the cores (``usable // 1``), fixed for the job, and the
  launcher workers' waiting policy (:data:`dganalysis.threads.WAIT_POLICY`);
- ``fixed-spin10k``: the same count with a short spin (``GOMP_SPINCOUNT=10000``; libgomp's default ~300,000);
- ``fixed-passive``: the same count with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep at once);
- ``governor``: the policy before: the count re-decided every 2 s from the cores free now (at most the share),
  the runtime's default waiting (:class:`LoadGovernor`, the former ``dganalysis.threads.ThreadGovernor``);
- ``1-thread``: one thread.

Printed: images/s per policy and phase (median over rounds), each against ``fixed`` in the same phase, the
slowdown under load, and whether the records of the idle and the loaded runs are identical (a digest of the
records minus ``elapsed``/``step_time``).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import _busy

#: waiting variables of the OpenMP runtimes, removed from a child's environment before its policy's are added
_WAIT_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "DGANALYSIS_THREADS")
POLICIES = ("fixed", "fixed-spin10k", "fixed-passive", "governor", "1-thread")


def policy_env(name: str) -> dict[str, str]:
    from dganalysis import threads

    env = {k: v for k, v in os.environ.items() if k not in _WAIT_VARS}
    if name in ("fixed", "1-thread"):
        env.update(threads.WAIT_POLICY)
    elif name == "fixed-spin10k":
        env["GOMP_SPINCOUNT"] = "10000"
    elif name == "fixed-passive":
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


class LoadGovernor:
    """The former load-adaptive policy: every ``every_s`` seconds the torch count becomes the cores free now
    (:func:`dganalysis.threads.compute_threads`), at most ``limit``."""

    def __init__(self, limit: int, every_s: float = 2.0) -> None:
        self.limit, self.every_s, self._next, self.changes = limit, every_s, 0.0, 0

    def step(self) -> None:
        import torch

        from dganalysis import threads

        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.every_s
            n = threads.compute_threads(limit=self.limit)
            if n != torch.get_num_threads():
                torch.set_num_threads(n)
                self.changes += 1


def _govern(limit: int) -> LoadGovernor:
    """Make every algorithm created from now on call the governor before each update (as train.py did)."""
    import dganalysis.algorithms as algorithms

    gov, create = LoadGovernor(limit), algorithms.create

    def governed(*args, **kwargs):
        alg = create(*args, **kwargs)
        update = alg.update

        def step_then_update(minibatches, *rest, **kw):
            gov.step()
            return update(minibatches, *rest, **kw)

        alg.update = step_then_update
        return alg

    algorithms.create = governed
    return gov


def records_digest(path: Path) -> str:
    h = hashlib.sha256()
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        for k in ("elapsed", "step_time", "host"):
            rec.pop(k, None)
        h.update(json.dumps(rec, sort_keys=True).encode())
    return h.hexdigest()[:12]


def child(name: str, job_dict: dict, runs: int) -> None:
    """In the policy's process: one warm-up job, then ``runs`` timed ones; one JSON line on stdout."""
    import torch

    from dganalysis import threads
    from dganalysis.sweep import Job
    from dganalysis.training.train import run_job

    job = Job.from_dict(job_dict)
    share = threads.launcher_share(1)
    n = 1 if name == "1-thread" else share
    gov = _govern(share) if name == "governor" else None
    walls, digests = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(runs + 1):
            t0 = time.perf_counter()
            d = run_job(job, Path(tmp) / str(r), device="cpu", threads=n)
            if r:
                walls.append(time.perf_counter() - t0)
                digests.append(records_digest(d / "results.jsonl"))
    print(json.dumps({"walls": walls, "digests": digests, "threads": n, "torch": torch.__version__,
                      "changes": gov.changes if gov else 0}))


def _run_child(name: str, job_dict: dict, runs: int) -> dict:
    cmd = [sys.executable, str(Path(__file__).with_name("train_throughput.py")), "--policy-child", name,
           "--policy-job", json.dumps(job_dict), "--policy-runs", str(runs)]
    env = policy_env(name)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"policy {name} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def policies_bench(job, n_train: int, rounds: int, runs: int, load: int, names=POLICIES) -> None:
    """Every policy idle and with ``load`` busy processes, ``rounds`` rounds (policies alternate within a round)."""
    job_dict = job.to_dict()
    walls: dict[tuple[str, str], list[float]] = {}
    digests: dict[tuple[str, str], set[str]] = {}
    phases = [("idle", 0)] + ([("loaded", load)] if load > 0 else [])
    print(f"thread policies: {', '.join(names)}; {rounds} round(s) x {runs} timed job(s) after a warm-up job, "
          f"each policy in its own process", flush=True)
    for phase, n_busy in phases:
        with _busy.busy_load(n_busy):
            print(f"== {phase}: {n_busy} busy processes started by this script; {_busy.load_line()}"
                  + ("  (shared machine: not idle)" if phase == "idle" else ""), flush=True)
            for r in range(rounds):
                order = list(names) if r % 2 == 0 else list(reversed(names))
                for name in order:
                    res = _run_child(name, job_dict, runs)
                    walls.setdefault((phase, name), []).extend(res["walls"])
                    digests.setdefault((phase, name), set()).update(res["digests"])
                    extra = f", {res['changes']} count changes" if name == "governor" else ""
                    print(f"  round {r + 1} {name:13s} ({res['threads']} threads{extra}): "
                          + " ".join(f"{n_train / w:6.1f}" for w in res["walls"]) + " img/s", flush=True)
    print(f"-- images/s (median) and ratio to 'fixed' in the same phase; {n_train} training images per job")
    for phase, _ in phases:
        base = np.median(walls[phase, "fixed"]) if (phase, "fixed") in walls else None
        for name in names:
            if (phase, name) not in walls:
                continue
            w = np.median(walls[phase, name])
            ratio = f"  {base / w:.2f}x of fixed" if base is not None else ""
            print(f"{phase:7s} {name:13s}: {n_train / w:7.1f} img/s{ratio}")
    if len(phases) > 1:
        for name in names:
            same = digests["idle", name] == digests["loaded", name] and len(digests["idle", name]) == 1
            print(f"{name:13s}: loaded/idle wall {np.median(walls['loaded', name]) / np.median(walls['idle', name]):.2f}x;"
                  f" records idle == loaded: {same} ({len(digests['idle', name] | digests['loaded', name])} distinct)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes on the machine skew wall-clock figures)")
