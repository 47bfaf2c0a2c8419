"""Sweep throughput in one command: runs per hour of a slice of DomainBed's RotatedMNIST sweep, and of a 224-px slice.

Slices (same jobs on every side, one fresh store or output folder per side and round):

- ``mnist``: DomainBed's RotatedMNIST sweep for ERM (its MNIST CNN), ``--runs`` runs of ``--steps`` steps (default
  24 × 1,000, checkpoint every 100 steps as DomainBed's RotatedMNIST): every test environment × trial seeds at
  hparams seed 0 (DomainBed's defaults, batch 64 per domain; other hparams draws batch in groups of equal batch size).
  MNIST's raw IDX files are written by the bench (random digits, simulated; as tests/reference/test_domainbed_train_e2e.py
  writes them), ``--mnist-images`` of them.
- ``224``: ERM with DomainBed's torchvision ResNet-50 (``resnet18`` and ``resnet50_augmix`` off; ours
  ``featurizer: domainbed``) at 224 px on a PACS-layout folder of simulated 64-px images the bench writes
  (:mod:`dganalysis.studies.smoke.trees`, ``--pacs-per-class`` per class and domain), ``--runs`` runs of ``--steps``
  steps (DomainBed's batch 32 per domain unless ``--batch-size``). Both sides load the same FAKE ImageNet file (random
  tensors in torchvision's ``resnet50-0676ba61.pth`` layout) from a temporary ``$TORCH_HOME``: DomainBed's
  ``resnet50(pretrained=True)`` reads it without downloading, ours through ``pretrained: domainbed``. DomainBed
  decodes and augments each image with PIL in its data-loader workers; ours runs its device-side image pipeline.

Sides:

- ``domainbed``: DomainBed's own ``train.py`` (``$DOMAINBED_SRC``), one command per run under its ``local`` launcher
  (``domainbed.command_launchers.local_launcher``: one after the other), its ``N_WORKERS`` data-loader processes per
  loader as given by ``--domainbed-workers`` (its default 8; 0 for a quick check: 8 × 17 loaders take minutes to start);
  skipped, and said so, without a checkout; it trains in fp32;
- ``alone``: ``dganalysis`` sweep, one run at a time (``run_sweep``, one worker);
- ``packed``: ``--runs-per-gpu auto`` (several processes per GPU under CUDA MPS when present); CUDA only;
- ``batched``: ``--batch-runs M`` (``--batch`` runs as one vmapped model, :mod:`dganalysis.sweep.batched`), one worker
  per device (``--runs-per-gpu`` 1 on CUDA).

Each of ours runs its sweep in a fresh Python process (imports and dataset build counted in every round, as
DomainBed's per run), at the trainer's ``auto`` precision (bf16 autocast on CUDA and on AMX-bf16 CPUs, else fp32) or
at the one a side names after a colon: ``--sides domainbed,alone,alone:fp32`` compares DomainBed's fp32 with ours in
both; ``domainbed:2`` is DomainBed at 2 loader workers (``domainbed`` at ``--domainbed-workers``). ``--rounds`` alternating rounds (the order of the sides reversed every other round); per side the precision its
records say, the median runs/hour, the ratio to the first DomainBed side's (else to the first side's) and the share of the device's
peak at that precision: training FLOPs (forward + backward of one step, counted by ``FlopCounterMode`` on the slice's
network and batch, × steps × runs; evaluation not counted) over the wall time, against
:func:`bench._network_peak.cuda_peak` or :func:`bench._network_peak.cpu_peak` (the cores of this process's threads).
Times include each side's start-up (processes, data). The load average at the start and end of each slice is
printed: on a shared machine it says what else ran.

Run: ``python bench/sweep_throughput.py`` (the full slices, on a GPU); quick checks:
``python bench/sweep_throughput.py --runs 2 --steps 5 --slices mnist --domainbed-workers 0 --mnist-images 600``;
``python bench/sweep_throughput.py --slices 224 --runs 2 --steps 5 --pacs-per-class 5 --rounds 2
--sides domainbed,alone,alone:fp32`` (a CPU: DomainBed's 8 workers per loader).
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

#: hparams of our jobs that DomainBed has no name for: its network rule and its ImageNet weight file are what it does
OURS_ONLY = ("featurizer", "pretrained")

#: Python for one side of ours in a fresh process (as ``dganalysis run`` starts): argv[1] a JSON file with the jobs,
#: the store and the :class:`~dganalysis.sweep.ExecutionOptions` fields
OURS_RUNNER = textwrap.dedent('''
    import json, sys
    from dganalysis.sweep import ExecutionOptions, run_sweep
    from dganalysis.training.job import Job

    spec = json.load(open(sys.argv[1]))
    status = run_sweep([Job.from_dict(j) for j in spec["jobs"]], spec["store"], progress=False,
                       execution=ExecutionOptions(**spec["execution"]))
    bad = status[status["status"] != "done"]
    if len(bad):
        sys.exit(f"{len(bad)} runs not done: {bad['error'].tolist()[:3]}")
''')

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
    """The slice: test environment × trial seed at hparams seed 0, the first ``runs``; DomainBed's torchvision
    ResNet-50 (``resnet50_augmix`` off) with its ImageNet weight file (``pretrained: domainbed``: the FAKE stand-in
    :func:`fake_torch_home` writes)."""
    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.training.job import Job

    envs = list(BENCHMARKS["PACS"].environments)
    hp = {"featurizer": "domainbed", "pretrained": "domainbed", "resnet50_augmix": False, "resnet_dropout": 0.0}
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


def fake_torch_home(folder: Path) -> Path:
    """``folder/hub/checkpoints/resnet50-0676ba61.pth``: a FAKE stand-in for torchvision's ImageNet ResNet-50 file
    (random tensors under its names and shapes), which DomainBed's ``resnet50(pretrained=True)`` loads from
    ``$TORCH_HOME`` without downloading or checking a hash, as ours does with ``pretrained: domainbed``; returns
    ``folder``, the ``$TORCH_HOME`` for both sides."""
    from dganalysis.studies.smoke.weights import write_fake_weights

    write_fake_weights(folder / "hub" / "checkpoints", ["supervised_resnet50"])
    return folder


def slice_envs(job) -> list[str]:
    """The dataset's domain names in DomainBed's index order (its ``--test_envs`` numbering)."""
    from dganalysis.data.benchmarks import BENCHMARKS

    return MNIST_ENVS if job.dataset == "RotatedMNIST" else list(BENCHMARKS[job.dataset].environments)


def domainbed_commands(jobs, data_root: Path, out: Path, workers: int, runner: Path) -> list[str]:
    """DomainBed's train.py command per job (its flags as its sweep passes them; ``--seed`` the job's DomainBed seed)."""
    cmds = []
    for k, job in enumerate(jobs):
        envs = slice_envs(job)
        test_env = envs.index(job.test_domains[0])
        args = ["--data_dir", str(data_root), "--dataset", job.dataset, "--algorithm", job.algorithm,
                "--test_envs", str(test_env), "--hparams_seed", str(job.hparams_seed), "--trial_seed",
                str(job.trial_seed), "--seed", str(job.domainbed_seed(envs)), "--steps", str(job.steps),
                "--checkpoint_freq", str(job.checkpoint_freq), "--output_dir", str(out / f"run{k}"),
                "--skip_model_save"]
        hp = {k: v for k, v in job.hparams_overrides.items() if k not in OURS_ONLY}
        if hp:
            args += ["--hparams", json.dumps(hp)]
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


def run_ours(side: str, precision: str, jobs, store: Path, batch_runs: int, cuda: bool) -> float:
    """One side of ours in a fresh Python process (its imports and dataset build counted, as DomainBed's per run);
    wall seconds. A run not done is an error."""
    execution = {"alone": {}, "packed": {"runs_per_gpu": "auto"},
                 "batched": {"batch_runs": batch_runs, "runs_per_gpu": 1 if cuda else None}}[side]
    store.mkdir(parents=True, exist_ok=True)
    spec = store.parent / f"{store.name}.json"
    spec.write_text(json.dumps({"jobs": [j.to_dict() for j in jobs], "store": str(store),
                                "execution": {**execution, "precision": precision}}))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", OURS_RUNNER, str(spec)], env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    if done.returncode:
        raise RuntimeError(f"{side}: the sweep failed (exit {done.returncode}; see {store})")
    return wall


def stored_precision(store: Path) -> str:
    """The precision our runs in ``store`` recorded (``fp32`` / ``bf16``; one for all)."""
    found = {json.loads(line)["precision"] for f in store.glob("*/results.jsonl")
             for line in f.read_text().splitlines() if line.strip()}
    if len(found) != 1:
        raise RuntimeError(f"{store}: expected one precision in the records, found {sorted(found)}")
    return found.pop()


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


def device_peak(device: torch.device):
    """The device's :class:`bench._network_peak.Peak` (on CPU, the share of the cores this process's threads use)."""
    from bench._network_peak import cpu_peak, cuda_peak

    return cuda_peak(device) if device.type == "cuda" else cpu_peak().share(torch.get_num_threads())


def parse_side(side: str) -> tuple[str, str]:
    """``alone`` → (``alone``, ``auto``); ``alone:fp32`` → (``alone``, ``fp32``): one of our sides at a precision;
    ``domainbed:2`` → (``domainbed``, ``2``): DomainBed at 2 loader workers (``domainbed``: ``--domainbed-workers``)."""
    kind, _, setting = side.partition(":")
    ok = (setting.isdigit() or not setting) if kind == "domainbed" else \
        kind in ("alone", "packed", "batched") and setting in ("", "auto", "fp32", "bf16")
    if not ok:
        raise SystemExit(f"--sides: unknown side {side!r} (domainbed[:WORKERS], or alone/packed/batched[:auto|fp32|bf16])")
    return kind, setting or ("" if kind == "domainbed" else "auto")


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def bench_slice(name: str, jobs, sides: list[str], a, tmp: Path, data_root: Path, device: torch.device) -> None:
    cuda = device.type == "cuda"
    src = domainbed_source()
    active = []
    for side in sides:
        kind, _ = parse_side(side)
        if kind == "domainbed" and src is None:
            print(f"  {side}: skipped (no DomainBed checkout: set $DOMAINBED_SRC)")
            continue
        if kind == "packed" and not cuda:
            print(f"  {side}: skipped (no CUDA device: runs per GPU applies to GPUs)")
            continue
        active.append(side)
    print(f"  {load()} at the start", flush=True)
    walls: dict[str, list[float]] = {s: [] for s in active}
    precisions = {}
    for r in range(a.rounds):
        for side in (active if r % 2 == 0 else active[::-1]):
            kind, setting = parse_side(side)
            where = tmp / f"{name}_{side.replace(':', '_')}_{r}"
            if kind == "domainbed":
                workers = int(setting or a.domainbed_workers)
                walls[side].append(run_domainbed(jobs, data_root, where, workers, src))
                precisions[side] = "fp32"  # DomainBed trains without autocast
            else:
                walls[side].append(run_ours(kind, setting, jobs, where, a.batch, cuda))
                precisions[side] = stored_precision(where)
            print(f"  round {r}: {side:12s} {walls[side][-1]:8.1f} s", flush=True)
    print(f"  {load()} at the end")
    flops = train_flops(jobs[0], device) * jobs[0].steps * len(jobs)
    peak = device_peak(device)
    ref = next((s for s in walls if s.startswith("domainbed")), next(iter(walls), None))
    workers = f", DomainBed's N_WORKERS {a.domainbed_workers} where not named" if "domainbed" in walls else ""
    print(f"\n  {name}: {len(jobs)} runs × {jobs[0].steps} steps (batch {job_batch(jobs[0])} per domain) on {device} "
          f"({cpu_or_gpu_kind(device)}{workers}); training {flops / 1e12:.3f} TFLOP (forward + backward, evaluation "
          f"not counted); peak: {peak.how}")
    print(f"  {'side':12s} {'precision':>9s} {'runs/hour':>10s} {'ratio vs ' + str(ref):>18s} {'% of peak':>10s}   "
          f"(median of {a.rounds}; % of the precision's peak)")
    ref_wall = statistics.median(walls[ref]) if walls.get(ref) else None
    for side, ws in walls.items():
        w = statistics.median(ws)
        ratio = ref_wall / w if ref_wall else float("nan")
        side_peak = peak.bf16 if precisions[side] == "bf16" else peak.fp32
        pct = f"{100 * flops / w / side_peak:9.3f}%" if side_peak else "        ?"
        per_round = ""
        if ref_wall and len(ws) > 1:
            rs = [wr / wi for wr, wi in zip(walls[ref], ws)]
            per_round = f"  rounds {min(rs):.2f}–{max(rs):.2f}"
        print(f"  {side:12s} {precisions[side]:>9s} {3600 * len(jobs) / w:10.1f} {ratio:18.2f} {pct:>10s}{per_round}")


def job_batch(job) -> int:
    from dganalysis.training.job_draw import job_hparams

    return int(job_hparams(job)["batch_size"])


def cpu_or_gpu_kind(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    from dganalysis.provenance import cpu_kind

    return cpu_kind()


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=24)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--checkpoint-freq", type=int, default=100)
    p.add_argument("--slices", default="mnist,224", help="comma-separated: mnist, 224")
    p.add_argument("--sides", default="domainbed,alone,packed,batched",
                   help="comma-separated: domainbed, alone, packed, batched; ours at a CPU precision as alone:fp32")
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
    for side in sides:
        parse_side(side)
    ctx = tempfile.TemporaryDirectory(prefix="sweep-throughput-") if a.keep is None else None
    tmp = Path(a.keep or ctx.name)
    torch_home = os.environ.get("TORCH_HOME")
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
                os.environ["TORCH_HOME"] = str(fake_torch_home(tmp / "torch"))
                print(f"  weights: FAKE torchvision ResNet-50 file (random tensors) in $TORCH_HOME={tmp / 'torch'}, "
                      "loaded by both sides", flush=True)
            else:
                raise SystemExit(f"--slices: unknown slice {name!r}")
            bench_slice(name, jobs, sides, a, tmp, data_root, device)
    finally:
        if torch_home is None:
            os.environ.pop("TORCH_HOME", None)
        else:
            os.environ["TORCH_HOME"] = torch_home
        if ctx is not None:
            ctx.cleanup()


if __name__ == "__main__":
    main()
