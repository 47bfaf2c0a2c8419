"""Calibrating the thresholds eps_div and eps_cor on an i.i.d. split (OoD-Bench, Ye et al., CVPR 2022).

The estimates of Definition 1 from finite samples are biased upwards (two KDEs of i.i.d. samples
never agree exactly). OoD-Bench tunes its thresholds so that the shift between i.i.d. data is about
zero; we make this a documented option: split the *training* environment's features at random
into two halves, treat them as p and q, and bisect

- ``eps_div`` (threshold on p(z) q(z), in log10 space): the largest value whose i.i.d. diversity
  estimate is at most ``tol`` (D_div grows with eps_div: more points fall into S);
- then ``eps_cor`` (floor on the posterior total variation, in [0, 1]): the smallest value whose
  i.i.d. correlation estimate is at most ``tol`` (D_cor falls as the floor rises).

Both searches reuse the same KDE log-densities at the same Monte-Carlo points (thresholds do not
change densities), so calibration costs one estimate plus ``2 * n_iter`` cheap re-weightings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dganalysis.shift.estimator import draw_samples, log_densities, prepare, shift_terms


@dataclass
class Calibration:
    """Thresholds fitted on an i.i.d. split and the i.i.d. estimates they give."""

    eps_div: float
    eps_cor: float
    iid_diversity: float
    iid_correlation: float
    tol: float


def calibrate_thresholds(
    z: np.ndarray,
    y: np.ndarray,
    *,
    tol: float = 0.01,
    n_samples: int = 10_000,
    seed: int = 0,
    bandwidth: str = "shared",
    n_iter: int = 40,
    device=None,
) -> Calibration:
    """Fit ``eps_div`` and ``eps_cor`` so that a random half/half split of ``(z, y)`` shows shift <= ``tol``.

    Use features of the training environment extracted like the ones to be compared (same network,
    similar sample size per half: KDE noise shrinks with the sample size).
    """
    z = np.asarray(z, dtype=np.float64)
    y = np.asarray(y).reshape(-1)
    if len(z) != len(y) or len(z) < 8:
        raise ValueError(f"calibrate_thresholds: need >= 8 labelled points, got z {z.shape}, y {y.shape}")
    if not 0 < tol < 1:
        raise ValueError(f"calibrate_thresholds: tol must be in (0, 1), got {tol}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(z))
    a, b = perm[: len(z) // 2], perm[len(z) // 2 :]
    prep = prepare(z[a], y[a], z[b], y[b], bandwidth=bandwidth)
    pts = draw_samples(prep, n_samples, rng)
    lp, lq, lc_p, lc_q = log_densities(prep, pts, device=device)

    def est(eps_div: float, eps_cor: float) -> tuple[float, float]:
        t = shift_terms(lp, lq, lc_p, lc_q, prep.log_prior_p, prep.log_prior_q, eps_div, eps_cor)
        return float(t["div"].mean()), float(t["cor_class"].sum(1).mean())

    log_prod = lp + lq
    finite = log_prod[np.isfinite(log_prod)]
    lo = np.log10(np.exp(-700.0)) if not len(finite) else float(finite.min() / np.log(10)) - 1.0
    hi = float(finite.max() / np.log(10)) + 1.0 if len(finite) else 0.0
    if est(10.0**hi, 0.0)[0] <= tol:  # even putting every point into S gives no i.i.d. diversity
        lo = hi
    for _ in range(n_iter):
        mid = 0.5 * (lo + hi)
        if est(10.0**mid, 0.0)[0] <= tol:
            lo = mid
        else:
            hi = mid
    eps_div = 10.0**lo
    lo_c, hi_c = 0.0, 1.0
    if est(eps_div, 0.0)[1] <= tol:
        hi_c = 0.0
    for _ in range(n_iter):
        mid = 0.5 * (lo_c + hi_c)
        if est(eps_div, mid)[1] <= tol:
            hi_c = mid
        else:
            lo_c = mid
    eps_cor = hi_c
    d, c = est(eps_div, eps_cor)
    return Calibration(eps_div=float(eps_div), eps_cor=float(eps_cor), iid_diversity=d, iid_correlation=c, tol=tol)
