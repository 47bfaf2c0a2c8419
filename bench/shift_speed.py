"""Benchmark: our ``estimate_shift`` vs OoD-Bench's own ``quantify.py``, idle AND loaded, in one run (Ye et al. 2022).

Baseline: ``python -m ood_bench.scripts.quantify --legacy_mode`` from ``$OODBENCH_SRC`` (e.g.
``OODBENCH_SRC=../shared/reference/OoD-Bench``), run in-process on a ``data.npz`` of the same features with the
same seed and sample size: its whole path (standardisation, one ``scipy.stats.gaussian_kde`` per density,
``compute_div``/``compute_cor`` with their Python loops), with numpy's default BLAS threads. Without
``$OODBENCH_SRC`` the baseline is a vectorised scipy transcription of the same computation (faster than
OoD-Bench's loops, so the ratio is a lower bound) and the output says so.

Ours: the defaults (``formula="eq5"`` = its legacy mode, ``bandwidth="scott"``, its thresholds, 10,000
points), threads chosen by :mod:`dganalysis.threads`. Grid: d in ``--dims`` x n points per environment in
``--ns`` (simulated features, 2 classes with equal counts, both kinds of shift), first with the machine as it
is ("idle"; on a shared machine it is not: the load is printed), then with ``--load`` busy processes
(default: one per usable core) started and stopped by this script. Each cell: OoD-Bench timed once, ours the
median of ``--repeat`` runs; ratio = OoD-Bench / ours. Also printed: the largest |difference| of D_div, D_cor
from OoD-Bench's over the grid (identical Monte-Carlo points: float32 rounding only) and whether our estimates
idle and loaded are bit-identical.

    OODBENCH_SRC=/path/to/OoD-Bench python bench/shift_speed.py [--quick] [--load N] [--dims ...] [--ns ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy.stats import gaussian_kde
from sklearn.preprocessing import StandardScaler

from dganalysis import threads
from dganalysis.shift.estimator import estimate_shift

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import _busy  # noqa: E402
from tests.reference import _oodbench  # noqa: E402


def scipy_transcription(z_p, y_p, z_q, y_q, seed, m, eps_div=1e-12, eps_cor=5e-4) -> tuple[float, float]:
    """quantify.py's legacy-mode computation, one gaussian_kde per density, numpy instead of Python loops."""
    sc = StandardScaler().fit(np.r_[z_p, z_q])
    zp, zq = sc.transform(z_p), sc.transform(z_q)
    kde_w = gaussian_kde(np.r_[zp, zq].T)
    pts = kde_w.resample(m, seed=seed)
    w, p, q = kde_w(pts), gaussian_kde(zp.T)(pts), gaussian_kde(zq.T)(pts)
    div = np.sum(np.where((p < eps_div) | (q < eps_div), np.abs(p - q) / w, 0)) / (2 * m)
    in_cor = (p > eps_cor) & (q > eps_cor)
    sp, sq = np.where(in_cor, p, 1.0), np.where(in_cor, q, 1.0)
    cor = 0.0
    for c in np.unique(y_p):
        pc, qc = gaussian_kde(zp[y_p == c].T)(pts), gaussian_kde(zq[y_q == c].T)(pts)
        integrand = np.abs(pc * np.sqrt(sq / sp) - qc * np.sqrt(sp / sq))
        cor += np.mean(y_p == c) * np.sum(np.where(in_cor, integrand / w, 0)) / (2 * m)
    return float(div), float(cor)


def make_features(n: int, d: int, n_classes: int, seed: int):
    """Two simulated environments with equal class counts: class-dependent means, a spurious direction whose
    label correlation flips, and a region only the test environment covers (both kinds of shift)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n // n_classes)
    means = rng.normal(scale=2.0, size=(n_classes, d))
    z_p = means[y] + rng.normal(size=(len(y), d))
    z_q = means[y] + rng.normal(size=(len(y), d))
    z_p[:, 0] += np.where(y % 2 == 0, 1.5, -1.5)
    z_q[:, 0] += np.where(y % 2 == 0, -1.5, 1.5)
    z_q[: len(y) // 5, min(1, d - 1)] += 12.0  # d = 1: on the only dimension
    return z_p.astype(np.float32), y, z_q.astype(np.float32), y


def time_cell(root, z_p, y_p, z_q, y_q, seed: int, samples: int, repeat: int):
    """(OoD-Bench seconds, its (div, cor), our median seconds, our estimate) for one grid cell."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        if root is not None:
            r = _oodbench.run_quantify(Path(tmp), z_p, y_p, z_q, y_q, seed=seed, sample_size=samples, legacy_mode=True)
            ref = (r["div"], r["cor"])
        else:
            ref = scipy_transcription(z_p, y_p, z_q, y_q, seed, samples)
        t_base = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ours = estimate_shift(z_p, y_p, z_q, y_q, n_samples=samples, seed=seed, device="cpu")
        times.append(time.perf_counter() - t0)
    return t_base, ref, float(np.median(times)), ours


def print_grid(title: str, dims, ns, cells: dict) -> None:
    print(f"\n{title}: ratio OoD-Bench / ours (OoD-Bench s / ours s)")
    print("   n \\ d " + "".join(f"{d:>18}" for d in dims))
    for n in ns:
        row = "".join(f"{cells[d, n][0] / cells[d, n][2]:7.1f} ({cells[d, n][0]:5.2f}/{cells[d, n][2]:5.3f})"
                      for d in dims)
        print(f"{n:>8} " + row)
    ratios = [c[0] / c[2] for c in cells.values()]
    print(f"min ratio {min(ratios):.1f}, median {np.median(ratios):.1f}, max {max(ratios):.1f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="feature dimensions")
    ap.add_argument("--ns", type=int, nargs="+", default=[500, 1500, 5000, 20000], help="points per environment")
    ap.add_argument("--quick", action="store_true", help="d in (2, 16) x n in (1500, 5000): a few cells, < 2 min")
    ap.add_argument("--classes", type=int, default=2)
    ap.add_argument("--samples", type=int, default=10_000, help="Monte-Carlo points (quantify's --sample_size)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs of ours per cell (the median is reported)")
    ap.add_argument("--load", type=int, default=_busy.default_load(),
                    help="busy processes for the loaded grid (default: one per usable core; 0: idle grid only)")
    args = ap.parse_args()
    if args.quick:
        args.dims, args.ns = [2, 16], [1500, 5000]
    if min(args.dims) < 1 or min(args.ns) < 4 or args.samples < 1 or args.repeat < 1:
        ap.error("--dims >= 1, --ns >= 4, --samples >= 1 and --repeat >= 1 expected")
    root = _oodbench.oodbench_root()
    if root is not None:
        _oodbench.load_oodbench(root)
        print(f"baseline: OoD-Bench quantify.py --legacy_mode ({root})")
    else:
        print(f"baseline: scipy transcription of quantify.py ({_oodbench.skip_reason()}; a faster baseline)")
    print(f"features: simulated, {args.classes} classes; {args.samples} Monte-Carlo points; ours on the CPU, "
          f"threads from dganalysis.threads ({threads.THREADS_ENV}={os.environ.get(threads.THREADS_ENV, 'auto')})")
    seed = 0
    data = {(d, n): make_features(n, d, args.classes, seed=d) for d in args.dims for n in args.ns}
    z_p, y_p, z_q, y_q = data[args.dims[0], args.ns[0]]
    estimate_shift(z_p[:300], y_p[:300], z_q[:300], y_q[:300], n_samples=100, device="cpu")  # warm-up
    grids, estimates, max_diff = {}, {}, 0.0
    for label, load in (("idle", 0), ("loaded", args.load)):
        if label == "loaded" and load == 0:
            break
        with _busy.busy_load(load):
            print(f"\n[{label}: {load} busy processes started by this script] {_busy.load_line()}"
                  + ("  (shared machine: not idle)" if label == "idle" else ""), flush=True)
            cells = {}
            for (d, n), (z_p, y_p, z_q, y_q) in data.items():
                t_base, ref, t_ours, ours = time_cell(root, z_p, y_p, z_q, y_q, seed, args.samples, args.repeat)
                cells[d, n] = (t_base, ref, t_ours)
                estimates[label, d, n] = (ours.diversity, ours.correlation)
                max_diff = max(max_diff, abs(ours.diversity - ref[0]), abs(ours.correlation - ref[1]))
            print(f"after the grid: {_busy.load_line()}")
        grids[label] = cells
        print_grid(f"{label} ({load} busy processes)", args.dims, args.ns, cells)
    same = all(estimates["idle", d, n] == estimates["loaded", d, n] for d, n in data) if "loaded" in grids else None
    print(f"\nmax |ours - OoD-Bench| over D_div, D_cor and the grid: {max_diff:.2e}; "
          f"ours bit-identical idle vs loaded: {same}")


if __name__ == "__main__":
    main()
