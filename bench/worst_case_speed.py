"""Benchmark: a full worst-case curve (20 ρ) for 10,000 samples, 128-d z, 10 classes (the WC-DG poster, issue target < 10 s on CPU).

Prints the wall time per loss, and as a ratio to one loss+gradient pass over the samples measured in the same
run (the baseline: load-independent to first order), on the CPU (one thread unless ``--threads``) and on a GPU when one is
available, plus the machine load so numbers from a shared machine can be judged. The features and
head are synthetic (a random linear head trained for a few steps on Gaussian class clusters): timing only.

    python bench/worst_case_speed.py [--n 10000] [--d 128] [--classes 10] [--rhos 20] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from dganalysis.dro import inner, worst_case_curve
from dganalysis.dro.losses import cross_entropy


def make_problem(n: int, d: int, c: int, device: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(c, d, generator=g) * 0.15
    y = torch.randint(0, c, (n,), generator=g)
    z = means[y] + torch.randn(n, d, generator=g)
    head = torch.nn.Linear(d, c)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(50):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head(z), y).backward()
        opt.step()
    return z.to(device), y.to(device), head.to(device)


def baseline(z, y, head, repeats: int = 20) -> float:
    """Seconds for one loss+gradient evaluation over all samples (the inner solver's unit of work)."""
    inner.loss_and_grad(head, cross_entropy, z, y)
    t0 = time.perf_counter()
    for _ in range(repeats):
        inner.loss_and_grad(head, cross_entropy, z, y)
    return (time.perf_counter() - t0) / repeats


def run(device: str, args) -> None:
    z, y, head = make_problem(args.n, args.d, args.classes, device)
    rhos = np.linspace(0, 1.0, args.rhos)
    base = baseline(z, y, head)
    print(f"{device:5s} baseline: one loss+gradient pass over {args.n} samples = {base * 1e3:.2f} ms")
    for loss in ("ce", "hinge", "01"):
        worst_case_curve(z[:500], y[:500], head, rhos[:3], loss=loss, scale="std")  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        df = worst_case_curve(z, y, head, rhos, loss=loss, scale="std")
        if device == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        mono = bool(np.all(np.diff(df.worst_case_loss) >= -1e-9))
        print(f"{device:5s} loss={loss:5s} n={args.n} d={args.d} C={args.classes} {len(rhos)} rho: {dt:6.2f} s "
              f"= {dt / base:6.0f} gradient passes  (nominal {df.nominal[0]:.3f}, WC(rho=1) {df.worst_case_loss.iloc[-1]:.3f}, monotone {mono})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--rhos", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"load average {os.getloadavg()}, {os.cpu_count()} CPUs, torch threads {torch.get_num_threads()}")
    run("cpu", args)
    if torch.cuda.is_available():
        run("cuda", args)


if __name__ == "__main__":
    main()
