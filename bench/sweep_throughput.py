"""Sweep throughput in one command: runs per hour of a slice of DomainBed's RotatedMNIST sweep, and of a 224-px slice.

Slices (same jobs on every side, one fresh store or output folder per side and round):

- ``mnist``: DomainBed's RotatedMNIST sweep for ERM (its MNIST CNN), ``--runs`` runs of ``--steps`` steps (default
  24 × 1,000, checkpoint every 100 steps as DomainBed's RotatedMNIST): every test environment × trial seeds at
  hparams seed 0 (DomainBed's defaults, batch 64 per domain; other hparams draws batch in groups of equal batch size).
  MNIST's raw IDX files are written by the bench (random digits, simulated; as tests/reference/test_domainbed_train_e2e.py
  writes them), ``--mnist-images`` of them.
- ``224``: ERM with ResNet-50 (``featurizer: domainbed``, DomainBed's 224-px network, random init: no weights are
  downloaded) on a PACS-layout folder of simulated images the bench writes (:mod:`dganalysis.studies.smoke.trees`),
  ``--runs`` runs of ``--steps`` steps; ours only (DomainBed's train.py would fetch ImageNet weights).

Sides:

- ``domainbed``: DomainBed's own ``train.py`` (``$DOMAINBED_SRC``), one command per run under its ``local`` launcher
  (``domainbed.command_launchers.local_launcher``: one after the other), its ``N_WORKERS`` data-loader processes per
  loader as given by ``--domainbed-workers`` (its default 8; 0 for a quick check: 8 × 17 loaders take minutes to start);
  skipped, and said so, without a checkout;
- ``alone``: ``dganalysis`` sweep, one run at a time (``run_sweep``, one worker);
- ``packed``: ``--runs-per-gpu auto`` (several processes per GPU under CUDA MPS when present); CUDA only;
- ``batched``: ``--batch-runs M`` (``--batch`` runs as one vmapped model, :mod:`dganalysis.sweep.batched`), one worker
  per device (``--runs-per-gpu`` 1 on CUDA).

``--rounds`` alternating rounds (the order of the sides reversed every other round); per side the median runs/hour,
the ratio to DomainBed's (else to ``alone``) and the share of the device's peak: training FLOPs (forward + backward of
one step, counted by ``FlopCounterMode`` on the slice's network and batch, × steps × runs; evaluation not counted)
over the wall time, against :func:`bench._network_peak.cuda_peak` (bf16 peak on CUDA, where the runs use bf16
autocast) or :func:`bench._network_peak.cpu_peak` (fp32). Times include each side's start-up (processes, data).

Run: ``python bench/sweep_throughput.py`` (the full slices, on a GPU); a quick check:
``python bench/sweep_throughput.py --runs 2 --steps 5 --slices mnist --domainbed-workers 0 --mnist-images 600``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import dganalysis  # noqa: E402,F401 - installs the torchvision shim before torchvision is imported

MNIST_ENVS = ["0", "15", "30", "45", "60", "75"]
from tests.reference._harness import SCRIPT_PRELUDE  # noqa: E402 - the CPU-torch shim, DomainBed's optional imports

#: Python for DomainBed's train.py in a subprocess (the tests' prelude), with its N_WORKERS set from argv[1]
RUNNER = SCRIPT_PRELUDE + textwrap.dedent('''
    import domainbed.datasets as _d
    _d.MultipleDomainDataset.N_WORKERS = int(sys.argv.pop(1))
    sys.argv = ["train.py"] + sys.argv[1:]
    runpy.run_module("domainbed.scripts.train", run_name="__main__")
''')


def write_mnist(root: Path, n_images: int, seed: int = 0) -> Path:
    """``root/MNIST/raw``: MNIST's four raw IDX files (uncompressed, where torchvision finds them without
    downloading), ``n_images`` simulated digits split 6:1 into train and test (class-dependent brightness + noise)."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(seed)
    n_test = max(10, n_images // 7)
    for split, n in (("train", n_images - n_test), ("t10k", n_test)):
        y = rng.randint(0, 10, n)
        x = 25 * y[:, None, None] + rng.randint(0, 20, (n, 28, 28))
        for name, arr in ((f"{split}-images-idx3-ubyte", x), (f"{split}-labels-idx1-ubyte", y)):
            arr = np.asarray(arr)
            (raw / name).write_bytes(struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
                                     + arr.astype(np.uint8).tobytes())
    return root


def mnist_jobs(root: Path, runs: int, steps: int, freq: int, batch: int | None):
    """The slice: test environment × trial seed at hparams seed 0, the first ``runs``."""
    from dganalysis.training.job import Job

    hp = {} if batch is None else {"batch_size": batch}
    jobs = []
    trial = 0
    while len(jobs) < runs:
        for i, env in enumerate(MNIST_ENVS):
            if len(jobs) == runs:
                break
            jobs.append(Job(dataset="RotatedMNIST", algorithm="ERM", train_domains=[e for e in MNIST_ENVS if e != env],
                            test_domains=[env], trial_seed=trial, steps=steps, checkpoint_freq=freq,
                            dataset_kwargs={"mnist_dir": str(root)}, hparams_overrides=hp))
            del i
        trial += 1
    return jobs


def pacs_jobs(root: Path, runs: int, steps: int, freq: int, batch: int | None):
    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.training.job import Job

    envs = list(BENCHMARKS["PACS"].env_names) if hasattr(BENCHMARKS["PACS"], "env_names") else None
    from dganalysis.data.domains import domain_names

    envs = envs or domain_names("PACS", {"root": str(root)}, None)
    hp = {"featurizer": "domainbed", "pretrained": None, "resnet_dropout": 0.0}
    if batch is not None:
        hp["batch_size"] = batch
    jobs, trial = [], 0
    while len(jobs) < runs:
        for env in envs:
            if len(jobs) == runs:
                break
            jobs.append(Job(dataset="PACS", algorithm="ERM", train_domains=[e for e in envs if e != env],
                            test_domains=[env], trial_seed=trial, steps=steps, checkpoint_freq=freq,
                            dataset_kwargs={"root": str(root)}, hparams_overrides=hp))
        trial += 1
    return jobs


def domainbed_commands(jobs, data_root: Path, out: Path, workers: int, runner: Path) -> list[str]:
    """DomainBed's train.py command per job (its flags as its sweep passes them; ``--seed`` the job's DomainBed seed)."""
    cmds = []
    for k, job in enumerate(jobs):
        test_env = MNIST_ENVS.index(job.test_domains[0])
        args = ["--data_dir", str(data_root), "--dataset", job.dataset, "--algorithm", job.algorithm,
                "--test_envs", str(test_env), "--hparams_seed", str(job.hparams_seed), "--trial_seed",
                str(job.trial_seed), "--seed", str(job.domainbed_seed(MNIST_ENVS)), "--steps", str(job.steps),
                "--checkpoint_freq", str(job.checkpoint_freq), "--output_dir", str(out / f"run{k}"),
                "--skip_model_save"]
        if job.hparams_overrides:
            args += ["--hparams", json.dumps(dict(job.hparams_overrides))]
        cmds.append(" ".join([sys.executable, str(runner), str(workers), *(_q(a) for a in args)]))
    return cmds


def _q(s: str) -> str:
    import shlex

    return shlex.quote(s)


def domainbed_source() -> Path | None:
    src = os.environ.get("DOMAINBED_SRC")
    for c in (src, ROOT / "shared" / "reference" / "DomainBed", ROOT.parent / "shared" / "reference" / "DomainBed"):
        if c and (Path(c) / "domainbed" / "scripts" / "train.py").is_file():
            return Path(c)
    return None


def run_domainbed(jobs, data_root: Path, out: Path, workers: int, src: Path) -> float:
    """DomainBed's train.py per job under its local launcher; wall seconds. A failed run is an error."""
    runner = out / "runner.py"
    out.mkdir(parents=True, exist_ok=True)
    runner.write_text(RUNNER)
    cmds = domainbed_commands(jobs, data_root, out, workers, runner)
    env_path = f"{src}{os.pathsep}{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from domainbed.command_launchers import local_launcher; "
            "import json; local_launcher(json.load(open(sys.argv[2])))")
    (out / "commands.json").write_text(json.dumps(cmds))
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(src), str(out / "commands.json")], check=True,
                   env={**os.environ, "PYTHONPATH": env_path}, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    missing = [k for k in range(len(jobs)) if not (out / f"run{k}" / "done").exists()]
    if missing:
        raise RuntimeError(f"DomainBed: runs {missing} did not finish (see {out}/run*/err.txt)")
    return wall


def run_ours(side: str, jobs, store: Path, batch_runs: int, cuda: bool) -> float:
    from dganalysis.sweep import ExecutionOptions, run_sweep

    opts = {"alone": ExecutionOptions(),
            "packed": ExecutionOptions(runs_per_gpu="auto"),
            "batched": ExecutionOptions(batch_runs=batch_runs, runs_per_gpu=1 if cuda else None)}[side]
    t0 = time.perf_counter()
    status = run_sweep(jobs, store, progress=False, execution=opts)
    wall = time.perf_counter() - t0
    bad = status[status["status"] != "done"]
    if len(bad):
        raise RuntimeError(f"{side}: {len(bad)} runs not done: {bad['error'].tolist()[:3]}")
    return wall


def train_flops(job, device: torch.device) -> int:
    """Forward + backward FLOPs of one training step of ``job`` (its network and batch, on random inputs)."""
    from bench._network_peak import step_flops
    from dganalysis.algorithms import create
    from dganalysis.data.registry import DATASETS  # noqa: F401
    from dganalysis.training.job_draw import job_hparams
    from dganalysis.training.train import _cached_dataset, dataset_kwargs

    hp = job_hparams(job)
    ds = _cached_dataset(job.dataset, None, dataset_kwargs(job))
    alg = create("ERM", ds.input_shape, ds.n_classes, len(job.train_domains), hp).to(device)
    bs = int(hp["batch_size"])
    mbs = [(torch.rand(bs, *ds.input_shape, device=device), torch.randint(ds.n_classes, (bs,), device=device))
           for _ in job.train_domains]
    return step_flops(alg, mbs)


def peak_flops(device: torch.device) -> tuple[float | None, str]:
    from bench._network_peak import cpu_peak, cuda_peak

    if device.type == "cuda":
        p = cuda_peak(device)
        return p.bf16, p.how + " (bf16: the runs train under bf16 autocast)"
    p = cpu_peak().share(torch.get_num_threads())
    return p.fp32, p.how


def bench_slice(name: str, jobs, sides: list[str], a, tmp: Path, data_root: Path, device: torch.device) -> None:
    cuda = device.type == "cuda"
    src = domainbed_source()
    active = []
    for side in sides:
        if side == "domainbed" and (name != "mnist" or src is None):
            print(f"  {side}: skipped ({'no DomainBed checkout: set $DOMAINBED_SRC' if src is None else 'mnist slice only'})")
            continue
        if side == "packed" and not cuda:
            print(f"  {side}: skipped (no CUDA device: runs per GPU applies to GPUs)")
            continue
        active.append(side)
    walls: dict[str, list[float]] = {s: [] for s in active}
    for r in range(a.rounds):
        for side in (active if r % 2 == 0 else active[::-1]):
            where = tmp / f"{name}_{side}_{r}"
            if side == "domainbed":
                walls[side].append(run_domainbed(jobs, data_root, where, a.domainbed_workers, src))
            else:
                walls[side].append(run_ours(side, jobs, where, a.batch, cuda))
            print(f"  round {r}: {side:9s} {walls[side][-1]:8.1f} s", flush=True)
    flops = train_flops(jobs[0], device) * jobs[0].steps * len(jobs)
    peak, how = peak_flops(device)
    ref = "domainbed" if "domainbed" in walls else "alone"
    print(f"\n  {name}: {len(jobs)} runs × {jobs[0].steps} steps on {device}; training {flops / 1e12:.3f} TFLOP "
          f"(forward + backward, evaluation not counted); peak: {how}")
    print(f"  {'side':10s} {'runs/hour':>10s} {'ratio vs ' + ref:>16s} {'% of peak':>10s}   (median of {a.rounds})")
    ref_wall = statistics.median(walls[ref]) if walls.get(ref) else None
    for side, ws in walls.items():
        w = statistics.median(ws)
        ratio = ref_wall / w if ref_wall else float("nan")
        pct = f"{100 * flops / w / peak:9.3f}%" if peak else "        ?"
        per_round = ""
        if ref_wall and len(ws) > 1:
            rs = [wr / wi for wr, wi in zip(walls[ref], ws)]
            per_round = f"  rounds {min(rs):.2f}–{max(rs):.2f}"
        print(f"  {side:10s} {3600 * len(jobs) / w:10.1f} {ratio:16.2f} {pct:>10s}{per_round}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=24)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--checkpoint-freq", type=int, default=100)
    p.add_argument("--slices", default="mnist,224", help="comma-separated: mnist, 224")
    p.add_argument("--sides", default="domainbed,alone,packed,batched")
    p.add_argument("--batch", type=int, default=8, help="runs per batch of the batched side")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--domainbed-workers", type=int, default=8, help="DomainBed's N_WORKERS (its default 8)")
    p.add_argument("--mnist-images", type=int, default=70000, help="simulated MNIST images written (MNIST: 70,000)")
    p.add_argument("--pacs-per-class", type=int, default=20, help="simulated images per PACS class and domain")
    p.add_argument("--batch-size", type=int, default=None, help="override the runs' batch size (quick checks)")
    p.add_argument("--keep", help="folder for the stores and data (default: a temporary folder, removed)")
    a = p.parse_args(argv)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sides = [s for s in a.sides.split(",") if s]
    ctx = tempfile.TemporaryDirectory(prefix="sweep-throughput-") if a.keep is None else None
    tmp = Path(a.keep or ctx.name)
    try:
        for name in [s for s in a.slices.split(",") if s]:
            print(f"slice {name}:", flush=True)
            if name == "mnist":
                data_root = write_mnist(tmp / "data", a.mnist_images)
                jobs = mnist_jobs(data_root, a.runs, a.steps, a.checkpoint_freq, a.batch_size)
            elif name == "224":
                from dganalysis.studies.smoke.trees import write_benchmark_tree

                data_root = tmp / "pacs"
                write_benchmark_tree(data_root, "PACS", per_class=a.pacs_per_class, size=64)
                jobs = pacs_jobs(data_root, a.runs, a.steps, a.checkpoint_freq, a.batch_size)
            else:
                raise SystemExit(f"--slices: unknown slice {name!r}")
            bench_slice(name, jobs, sides, a, tmp, data_root, device)
    finally:
        if ctx is not None:
            ctx.cleanup()


if __name__ == "__main__":
    main()
