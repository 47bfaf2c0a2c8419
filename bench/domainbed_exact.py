"""DomainBed end to end on real images: environment membership, exact-mode records, and the exact mode's speed cost.

Real Fashion-MNIST (Debian's ``dataset-fashion-mnist``) is laid out under MNIST's names as DomainBed's
``--data_dir`` expects (``<dir>/MNIST/raw``, uncompressed), optionally cut to the first ``--n-train`` / ``--n-test``
images. Then:

1. membership: for a few runs (DomainBed sweep seeds of ERM on RotatedMNIST, test env 0..), the share of each
   environment's images that are DomainBed's, for ``RotatedMNIST`` (per-run partition) and ``RotatedMNIST_Fixed``
   (our former fixed partition); DomainBed's partition is its ``torch.randperm`` after ``manual_seed(seed)``, and
   ``--check-domainbed`` also builds DomainBed's own dataset and compares the pixel tensors;
2. with ``DOMAINBED_SRC`` set: DomainBed's ``scripts/train.py`` (unmodified, N_WORKERS 8) and our ``domainbed_exact``
   job on the same arguments, one thread, fp32: the largest absolute difference of any record number;
3. the speed of our default mode (fp32, one thread) and of the exact mode on the same job, in this process
   (ratio exact / default).

    PYTHONPATH=. DOMAINBED_SRC=../shared/reference/DomainBed python bench/domainbed_exact.py --steps 30
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


def layout(src: Path, dest: Path, n_train: int | None, n_test: int | None) -> Path:
    """``dest/MNIST/raw/<name>-ubyte`` from the IDX files in ``src``, cut to ``n_train`` / ``n_test`` images."""
    raw = dest / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("t10k", n_test)):
        for kind, item in (("images-idx3-ubyte", 784), ("labels-idx1-ubyte", 1)):
            data = gzip.open(src / f"{split}-{kind}.gz").read()
            head = 16 if item == 784 else 8
            total = int.from_bytes(data[4:8], "big")
            n_keep = min(total, n or total)
            out = data[:4] + n_keep.to_bytes(4, "big") + data[8:head] + data[head:head + n_keep * item]
            (raw / f"{split}-{kind}").write_bytes(out)
    return dest


def membership(root: Path, seeds: list[int], check_domainbed: bool) -> None:
    from dganalysis.data import load_dataset
    from dganalysis.data.domainbed_mnist import rotated_mnist

    fixed = load_dataset("RotatedMNIST_Fixed", mnist_dir=str(root / "MNIST" / "raw"))
    for seed in seeds:
        ours = rotated_mnist(str(root), run_seed=seed)
        n = sum(len(d) for d in ours.domains)
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).numpy()
        share_new = [np.isin(d.meta["source_index"], perm[i::6]).mean() for i, d in enumerate(ours.domains)]
        share_fixed = [np.isin(d.meta["source_index"], perm[i::6]).mean() for i, d in enumerate(fixed.domains)]
        line = (f"seed {seed}: RotatedMNIST {100 * np.mean(share_new):.1f}% of each environment's images are "
                f"DomainBed's; RotatedMNIST_Fixed {100 * np.mean(share_fixed):.1f}% "
                f"(per env {', '.join(f'{100 * s:.1f}' for s in share_fixed)})")
        if check_domainbed:
            sys.path.insert(0, os.environ["DOMAINBED_SRC"])
            from tests.reference.conftest import import_with_stubs

            dbd = import_with_stubs("domainbed.datasets")
            torch.manual_seed(seed)
            theirs = dbd.RotatedMNIST(str(root), [0], {})
            same = all(torch.equal(e.tensors[0], torch.from_numpy(d.images).float().div(255))
                       and torch.equal(e.tensors[1], torch.from_numpy(d.labels))
                       for e, d in zip(theirs.datasets, ours.domains))
            line += f"; DomainBed's own tensors equal ours: {same}"
        print(line, flush=True)


RUNNER = ROOT / "tests" / "reference" / "test_domainbed_train_e2e.py"


def domainbed_run(root: Path, out: Path, steps: int, freq: int, seed: int) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from tests.reference.test_domainbed_train_e2e import RUNNER as code

    runner = out.parent / "runner.py"
    runner.write_text(code)
    env = {**os.environ, "PYTHONPATH": f"{os.environ['DOMAINBED_SRC']}{os.pathsep}{ROOT}", "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, str(runner), "--data_dir", str(root), "--dataset", "RotatedMNIST", "--algorithm", "ERM",
           "--test_envs", "0", "--steps", str(steps), "--checkpoint_freq", str(freq), "--seed", str(seed),
           "--output_dir", str(out), "--skip_model_save"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"DomainBed train.py: {time.perf_counter() - t0:.1f} s", flush=True)
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def our_run(root: Path, out: Path, steps: int, freq: int, exact: bool,
            precision: str = "fp32") -> tuple[list[dict], float]:
    from dganalysis.training.job import Job
    from dganalysis.training.train import run_job

    names = ["0", "15", "30", "45", "60", "75"]
    job = Job("RotatedMNIST", "ERM", names[1:], names[:1], steps=steps, checkpoint_freq=freq,
              dataset_kwargs={"mnist_dir": str(root)}, domainbed_exact=exact)
    t0 = time.perf_counter()
    run_job(job, out, device="cpu", precision=precision)
    dt = time.perf_counter() - t0
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()], dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fashion-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--checkpoint-freq", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--membership-only", action="store_true")
    ap.add_argument("--check-domainbed", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import dganalysis.compat

    dganalysis.compat.install()
    from dganalysis.training.hparams import seed_hash

    with tempfile.TemporaryDirectory() as tmp:
        root = layout(Path(args.fashion_dir), Path(tmp) / "data", args.n_train, args.n_test)
        seeds = [seed_hash("RotatedMNIST", "ERM", [t], 0, 0) for t in range(3)] + [0]
        membership(root, seeds, args.check_domainbed)
        if args.membership_only:
            return
        # our default mode and the exact mode, same process (speed ratio), then DomainBed's train.py
        # interleaved rounds (a shared machine's load drifts); per mode the median over rounds of the job's wall
        # time and of its mean training-step time (the records' step_time, evaluation excluded)
        modes = {"default fp32": (False, "fp32"), "domainbed_exact": (True, "fp32"),
                 "default auto (bf16 on AMX CPUs)": (False, "auto")}
        wall: dict[str, list[float]] = {m: [] for m in modes}
        step: dict[str, list[float]] = {m: [] for m in modes}
        for r in range(args.repeats):
            for m, (exact, prec) in modes.items():
                recs, dt = our_run(root, Path(tmp) / f"{m.split()[0]}{r}", args.steps, args.checkpoint_freq, exact, prec)
                wall[m].append(dt)
                step[m].append(float(np.mean([x["step_time"] for x in recs])))
                if exact:
                    ours = recs
        med = {m: (float(np.median(wall[m])), float(np.median(step[m]))) for m in modes}
        base = med["default fp32"]
        for m, (w, st) in med.items():
            print(f"{m:32s} job {w:7.1f} s  step {1000 * st:8.1f} ms  ratio to default fp32: job {w / base[0]:.2f}, "
                  f"step {st / base[1]:.2f}  ({args.repeats} interleaved rounds, {args.steps} steps, one thread)",
                  flush=True)
        if os.environ.get("DOMAINBED_SRC"):
            theirs = domainbed_run(root, Path(tmp) / "db", args.steps, args.checkpoint_freq, seeds[0])
            keys = [k for k in theirs[0] if isinstance(theirs[0][k], (int, float)) and k not in
                    ("step_time", "mem_gb")]
            diff = max(abs(o[k] - t[k]) for o, t in zip(ours, theirs) for k in keys)
            print(f"exact mode vs DomainBed: {len(theirs)} records, {len(keys)} numbers each, max |difference| "
                  f"{diff:.3g}", flush=True)


if __name__ == "__main__":
    main()
