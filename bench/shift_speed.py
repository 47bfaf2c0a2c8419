"""Benchmark: our ``estimate_shift`` vs OoD-Bench's own ``quantify.py`` on the same features (Ye et al. 2022).

Baseline: ``python -m ood_bench.scripts.quantify --legacy_mode`` from ``$OODBENCH_SRC`` (e.g.
``OODBENCH_SRC=../shared/reference/OoD-Bench``), run in-process on a ``data.npz`` of the same features with the
same seed and sample size — its whole path: standardisation, one ``scipy.stats.gaussian_kde`` per density,
``compute_div``/``compute_cor`` with their Python loops. Without ``$OODBENCH_SRC`` the baseline is a vectorised
scipy transcription of the same computation (one ``gaussian_kde`` per density, numpy for the sums; faster
than OoD-Bench's loops, so the ratio is a lower bound) and the output says so.

Ours: the defaults (``formula="eq5"`` = its legacy mode, ``bandwidth="scott"`` = scipy's rule per density, its
thresholds and 10,000 points); ``--bandwidth shared`` adds our shared-kernel option for comparison. Setting:
8-d simulated features, n_p = n_q = 5,000 with equal class counts, 2 and 100 classes. Prints both times,
their ratio, the share of points where a point counts for D_div or D_cor ("in S|T": we evaluate the pooled KDE
only there and the class KDEs only in T, which changes no result; OoD-Bench evaluates every density everywhere)
and the largest difference of the estimates from OoD-Bench's (identical Monte-Carlo points, so float32 rounding
only for ``scott``; ``shared`` is a different estimator, so its difference is real).

    OODBENCH_SRC=/path/to/OoD-Bench python bench/shift_speed.py [--n 5000] [--samples 10000] [--dim 8] [--repeat 3]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import gaussian_kde
from sklearn.preprocessing import StandardScaler

from dganalysis.shift.estimator import estimate_shift

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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
    z_q[: len(y) // 5, 1] += 12.0
    return z_p.astype(np.float32), y, z_q.astype(np.float32), y


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="points per environment")
    ap.add_argument("--samples", type=int, default=10_000, help="Monte-Carlo points (quantify's --sample_size)")
    ap.add_argument("--dim", type=int, nargs="+", default=[8, 2],
                    help="feature dimensions (8 = OoD-Bench's dim_z; at 2 nearly every point counts for D_cor, "
                         "so no density evaluation can be skipped)")
    ap.add_argument("--classes", type=int, nargs="+", default=[2, 100])
    ap.add_argument("--bandwidth", nargs="+", default=["scott"], choices=["scott", "shared"])
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each side (the fastest is reported)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (scipy runs single-threaded; on a busy shared CPU 2 OpenMP threads are slower)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    root = _oodbench.oodbench_root()
    if root is not None:
        _oodbench.load_oodbench(root)
        base_name = f"OoD-Bench quantify.py --legacy_mode ({root})"
    else:
        base_name = f"scipy transcription of quantify.py ({_oodbench.skip_reason()}; a faster baseline)"
    print(f"baseline: {base_name}")
    print(f"device={device} torch_threads={torch.get_num_threads()} n_p=n_q={args.n} samples={args.samples} "
          f"repeat={args.repeat} (best of)")
    print(f"{'d':>2} {'bandwidth':>9} {'classes':>7} {'ours_s':>8} {'base_s':>8} {'ratio':>7} {'div':>7} {'cor':>7} "
          f"{'in S|T':>6} {'max|diff|':>10}")
    seed = 0
    for dim, c in itertools.product(args.dim, args.classes):
        z_p, y_p, z_q, y_q = make_features(args.n, dim, c, seed=c)
        t_base, ref = float("inf"), None
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                if root is not None:
                    r = _oodbench.run_quantify(Path(tmp), z_p, y_p, z_q, y_q, seed=seed, sample_size=args.samples,
                                               legacy_mode=True)
                    ref = (r["div"], r["cor"])
                else:
                    ref = scipy_transcription(z_p, y_p, z_q, y_q, seed, args.samples)
                t_base = min(t_base, time.perf_counter() - t0)
        for bw in args.bandwidth:
            kw = dict(n_samples=args.samples, seed=seed, bandwidth=bw, device=device)
            estimate_shift(z_p[:300], y_p[:300], z_q[:300], y_q[:300], **{**kw, "n_samples": 100})  # warm-up
            t_ours = float("inf")
            for _ in range(args.repeat):
                if device == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
                ours = estimate_shift(z_p, y_p, z_q, y_q, **kw)
                if device == "cuda":
                    torch.cuda.synchronize()
                t_ours = min(t_ours, time.perf_counter() - t0)
            diff = max(abs(ours.diversity - ref[0]), abs(ours.correlation - ref[1]))
            share = ours.extra["share_evaluated"]
            print(f"{dim:>2} {bw:>9} {c:>7} {t_ours:8.3f} {t_base:8.3f} {t_base / t_ours:7.1f} {ours.diversity:7.4f} "
                  f"{ours.correlation:7.4f} {share:6.2f} {diff:10.2e}", flush=True)


if __name__ == "__main__":
    main()
