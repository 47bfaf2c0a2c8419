"""Training throughput per network and image size: the figures behind the dry run's budget.

``dganalysis run --profile paper --dry-run`` turns each job into training images
(steps × batch size × training domains) and divides by an images/s figure for the job's
featurizer and image size, taken from ``dganalysis/sweep/throughput.yaml``. This script measures
those figures on the machine it runs on: ERM's ``update`` (forward, backward, Adam step) on
random uint8 images (simulated data; only the shapes matter), ``--domains`` training
domains of ``--batch`` images each per step, after ``--warmup`` steps, in fp32 unless
``--precision bf16``. It prints one YAML entry per configuration; paste them into
``dganalysis/sweep/throughput.yaml`` with the machine, date, load and threads stated. On a GPU
(``--device cuda``) the same command gives the GPU figures the budget should use.

Run: ``OMP_NUM_THREADS=1 python bench/dryrun_throughput.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import torch

import dganalysis  # noqa: F401 - installs the torchvision shim
from dganalysis.algorithms import create, default_hparams

# (featurizer, extra hparams, channels, image size, classes): the configurations of params/paper and params/quick
CONFIGS = [
    ("cnn", {}, 1, 28, 10),
    ("cnn", {}, 2, 28, 2),
    ("smallcnn", {}, 1, 16, 10),
    ("smallcnn_bn", {}, 1, 32, 30),
    ("mlp", {}, 1, 16, 10),
    ("resnet18", {"conv1_3x3": True}, 1, 32, 100),
]


def measure(featurizer: str, extra: dict, channels: int, size: int, n_classes: int, domains: int, batch: int,
            steps: int, warmup: int, device: str, precision: str) -> float:
    """Training images per second of ERM with ``featurizer`` on ``channels``×``size``² inputs."""
    hp = default_hparams("ERM", 0, overrides={"featurizer": featurizer, "batch_size": batch, **extra})
    alg = create("ERM", (channels, size, size), n_classes, domains, hp).to(device)
    gen = torch.Generator().manual_seed(0)
    mbs = [((torch.randint(0, 256, (batch, channels, size, size), generator=gen, dtype=torch.uint8).float() / 255).to(device),
            torch.randint(0, n_classes, (batch,), generator=gen).to(device)) for _ in range(domains)]
    for s in range(warmup + steps):
        if s == warmup:
            if device == "cuda":
                torch.cuda.synchronize()
            start = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16, enabled=precision == "bf16"):
            alg.update(mbs, s)
    if device == "cuda":
        torch.cuda.synchronize()
    return steps * batch * domains / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu")
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--domains", type=int, default=3)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--only", nargs="*", default=None, help="featurizer names to measure (default: all)")
    args = p.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {platform.processor() or platform.machine()}, {torch.get_num_threads()} torch thread(s), "
          f"device {args.device}, {args.precision}, load average {load:.1f} at start, "
          f"{args.domains} domains x batch {args.batch}, {args.steps} timed steps")
    for featurizer, extra, channels, size, n_classes in CONFIGS:
        if args.only and featurizer not in args.only:
            continue
        ips = measure(featurizer, extra, channels, size, n_classes, args.domains, args.batch, args.steps, args.warmup,
                      args.device, args.precision)
        print(f"- {{featurizer: {featurizer}, channels: {channels}, image_size: {size}, images_per_s: {ips:.0f}}}",
              flush=True)


if __name__ == "__main__":
    main()
