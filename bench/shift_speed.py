"""Benchmark: our torch ``estimate_shift`` vs a straightforward scipy implementation of the same formulas.

The reference evaluates one ``scipy.stats.gaussian_kde`` per density (p, q and every p(z|y), q(z|y)),
as the OoD-Bench code does, and applies Definition 1 / eq. 5 with numpy at the *same* Monte-Carlo
points. With ``bandwidth="scott"`` the reference is scipy's default KDE; with ``bandwidth="shared"``
each gaussian_kde is given the shared kernel covariance (a subclass fixing the covariance).

Setting: 8-d features, n_p = n_q = 5,000 points (a 10,000-point pooled set), 10,000 evaluation
points, 2 and 100 classes. Prints both times, their ratio and the largest difference of the estimates.

    python bench/shift_speed.py [--n 5000] [--samples 10000] [--dim 8] [--threads 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from scipy import linalg
from scipy.stats import gaussian_kde

from dganalysis.shift.estimator import draw_samples, estimate_shift, prepare


class FixedKernelKDE(gaussian_kde):
    """gaussian_kde with a given kernel covariance instead of factor**2 * data covariance."""

    def __init__(self, dataset: np.ndarray, kernel_cov: np.ndarray) -> None:
        self._kernel_cov = np.asarray(kernel_cov, dtype=np.float64)
        super().__init__(dataset)

    def _compute_covariance(self) -> None:
        self.factor = 1.0
        self.covariance = self._kernel_cov
        self.cho_cov = linalg.cholesky(self._kernel_cov, lower=True)
        self.log_det = 2 * np.log(np.diag(self.cho_cov * np.sqrt(2 * np.pi))).sum()


def scipy_reference(z_p, y_p, z_q, y_q, points, eps_div, eps_cor, bandwidth):
    """Definition 1 with eq. 5, one gaussian_kde per density, evaluated at ``points`` (standardised space)."""
    pooled = np.concatenate([z_p, z_q])
    mean, std = pooled.mean(0), pooled.std(0)
    zp, zq = (z_p - mean) / std, (z_q - mean) / std
    n_p, n_q, d = len(zp), len(zq), zp.shape[1]
    classes = np.unique(np.concatenate([y_p, y_q]))
    if bandwidth == "shared":
        within = 0.5 * (np.cov(zp, rowvar=False) + np.cov(zq, rowvar=False))
        h2 = ((n_p + n_q) / 2) ** (-2.0 / (d + 4))

        def make(data):
            return FixedKernelKDE(data.T, within * h2)
    else:

        def make(data):
            return gaussian_kde(data.T)

    pts = points.T
    p, q = make(zp)(pts), make(zq)(pts)
    w = 0.5 * (p + q)
    in_s = p * q < eps_div
    div = np.where(in_s, 0.5 * np.abs(p - q) / w, 0.0)
    total_diff = np.zeros(len(points))
    for c in classes:
        pc = make(zp[y_p == c])(pts) * np.mean(y_p == c) if np.any(y_p == c) else 0.0
        qc = make(zq[y_q == c])(pts) * np.mean(y_q == c) if np.any(y_q == c) else 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            total_diff += np.nan_to_num(np.abs(pc / p - qc / q))
    in_t = ~in_s & (0.5 * total_diff > eps_cor)
    cor = np.where(in_t, 0.5 * np.sqrt(p * q) / w * total_diff, 0.0)
    return float(np.clip(div.mean(), 0, 1)), float(np.clip(cor.mean(), 0, 1))


def make_features(n: int, d: int, n_classes: int, seed: int):
    """Two environments: class-dependent means, a spurious direction whose label correlation flips,
    and a region only the test environment covers (both kinds of shift present)."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=2.0, size=(n_classes, d))
    y_p, y_q = rng.integers(0, n_classes, n), rng.integers(0, n_classes, n)
    z_p = means[y_p] + rng.normal(size=(n, d))
    z_q = means[y_q] + rng.normal(size=(n, d))
    z_p[:, 0] += np.where(y_p % 2 == 0, 1.5, -1.5)
    z_q[:, 0] += np.where(y_q % 2 == 0, -1.5, 1.5)
    z_q[: n // 5, 1] += 12.0
    return z_p, y_p, z_q, y_q


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="points per environment")
    ap.add_argument("--samples", type=int, default=10_000, help="Monte-Carlo evaluation points")
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--classes", type=int, nargs="+", default=[2, 100])
    ap.add_argument("--bandwidth", nargs="+", default=["shared", "scott"])
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (scipy runs single-threaded; on a busy shared CPU 2 OpenMP threads are slower)")
    ap.add_argument("--eps-div", type=float, default=1e-12)
    ap.add_argument("--eps-cor", type=float, default=0.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device={device} torch_threads={torch.get_num_threads()} n_p=n_q={args.n} d={args.dim} "
          f"eval_points={args.samples} eps_div={args.eps_div} eps_cor={args.eps_cor}")
    header = f"{'bandwidth':>9} {'classes':>7} {'ours_s':>8} {'scipy_s':>8} {'ratio':>7} {'div':>7} {'cor':>7} {'max|diff|':>10}"
    print(header)
    for bw in args.bandwidth:
        for c in args.classes:
            z_p, y_p, z_q, y_q = make_features(args.n, args.dim, c, seed=c)
            kw = dict(eps_div=args.eps_div, eps_cor=args.eps_cor, n_samples=args.samples, seed=1, bandwidth=bw)
            estimate_shift(z_p[:200], y_p[:200], z_q[:200], y_q[:200], **{**kw, "n_samples": 100})  # warm-up
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            ours = estimate_shift(z_p, y_p, z_q, y_q, device=device, **kw)
            if device == "cuda":
                torch.cuda.synchronize()
            t_ours = time.perf_counter() - t0
            points = draw_samples(prepare(z_p, y_p, z_q, y_q, bandwidth=bw), args.samples, 1)  # identical points
            t0 = time.perf_counter()
            ref = scipy_reference(z_p, y_p, z_q, y_q, points, args.eps_div, args.eps_cor, bw)
            t_ref = time.perf_counter() - t0
            diff = max(abs(ours.diversity - ref[0]), abs(ours.correlation - ref[1]))
            print(f"{bw:>9} {c:>7} {t_ours:8.3f} {t_ref:8.3f} {t_ref / t_ours:7.1f} {ours.diversity:7.4f} "
                  f"{ours.correlation:7.4f} {diff:10.2e}", flush=True)


if __name__ == "__main__":
    main()
