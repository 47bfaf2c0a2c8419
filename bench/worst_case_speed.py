"""Benchmark: a full worst-case curve (20 ρ) for 10,000 samples, 128-d z, 10 classes (the WC-DG poster, issue target < 10 s on CPU).

Prints the wall time per loss, and as a ratio to one loss+gradient pass over the samples measured in the same
run on ONE thread (the single-threaded baseline), on the CPU and on a GPU when one is available, first with the
machine as it is ("idle"; a shared machine is not: the load is printed), then with ``--load`` busy processes
(default one per usable core) started and stopped by this script, and how much each path slowed down under
load next to the baseline's slowdown. Ours runs with torch's default thread count (``--threads`` to set
one), which :mod:`dganalysis.threads` lowers to the free cores. The features and head are synthetic (a
random linear head trained for a few steps on Gaussian class clusters, simulated): timing only.

    python bench/worst_case_speed.py [--n 10000] [--d 128] [--classes 10] [--rhos 20] [--load N] [--threads T]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

from dganalysis import threads
from dganalysis.dro import inner, worst_case_curve
from dganalysis.dro.losses import cross_entropy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import _busy  # noqa: E402


def make_problem(n: int, d: int, c: int, device: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(c, d, generator=g) * 0.15
    y = torch.randint(0, c, (n,), generator=g)
    z = means[y] + torch.randn(n, d, generator=g)
    torch.manual_seed(seed)  # the same head in the idle and the loaded run
    head = torch.nn.Linear(d, c)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(50):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(head(z), y).backward()
        opt.step()
    return z.to(device), y.to(device), head.to(device)


def baseline(z, y, head, repeats: int = 20) -> float:
    """Seconds for one loss+gradient evaluation over all samples (the inner solver's unit of work), one thread."""
    with threads.torch_threads(1):
        inner.loss_and_grad(head, cross_entropy, z, y)
        t0 = time.perf_counter()
        for _ in range(repeats):
            inner.loss_and_grad(head, cross_entropy, z, y)
        return (time.perf_counter() - t0) / repeats


def run(device: str, args, label: str) -> dict[str, float]:
    z, y, head = make_problem(args.n, args.d, args.classes, device)
    rhos = np.linspace(0, 1.0, args.rhos)
    base = baseline(z, y, head)
    out = {"baseline": base}
    print(f"{device:5s} {label:6s} baseline: one loss+gradient pass over {args.n} samples, 1 thread = {base * 1e3:.2f} ms")
    for loss in ("ce", "hinge", "01"):
        worst_case_curve(z[:500], y[:500], head, rhos[:3], loss=loss, scale="std")  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        df = worst_case_curve(z, y, head, rhos, loss=loss, scale="std")
        if device == "cuda":
            torch.cuda.synchronize()
        dt = out[loss] = time.perf_counter() - t0
        mono = bool(np.all(np.diff(df.worst_case_loss) >= -1e-9))
        print(f"{device:5s} {label:6s} loss={loss:5s} n={args.n} d={args.d} C={args.classes} {len(rhos)} rho: {dt:6.2f} s "
              f"= {dt / base:6.0f} gradient passes  (nominal {df.nominal[0]:.3f}, WC(rho=1) {df.worst_case_loss.iloc[-1]:.3f}, "
              f"monotone {mono})", flush=True)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000)
    p.add_argument("--d", type=int, default=128)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--rhos", type=int, default=20)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's, one per core)")
    p.add_argument("--load", type=int, default=_busy.default_load(),
                   help="busy processes for the loaded run (default: one per usable core; 0: idle only)")
    args = p.parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print(f"{os.cpu_count()} CPUs, torch threads {torch.get_num_threads()} (lowered to the free cores by "
          f"dganalysis.threads, {threads.THREADS_ENV}={os.environ.get(threads.THREADS_ENV, 'auto')})")
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    res = {}
    for label, load in (("idle", 0), ("loaded", args.load)):
        if label == "loaded" and load == 0:
            break
        with _busy.busy_load(load):
            print(f"[{label}: {load} busy processes started by this script] {_busy.load_line()}"
                  + ("  (shared machine: not idle)" if label == "idle" else ""), flush=True)
            for dev in devices:
                res[dev, label] = run(dev, args, label)
    for dev in devices:
        if (dev, "loaded") in res:
            i, lo = res[dev, "idle"], res[dev, "loaded"]
            print(f"{dev}: slowdown under load (loaded / idle): "
                  + ", ".join(f"{k} {lo[k] / i[k]:.2f}x" for k in i) + " (baseline = single-threaded gradient pass)")


if __name__ == "__main__":
    main()
