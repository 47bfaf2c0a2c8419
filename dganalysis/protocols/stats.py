"""Small statistics shared by the protocols: Welch's two-sample comparison and multiple-testing correction.

Welch's t-test (Welch 1947) compares two means without assuming equal variances; the degrees of freedom come
from the Welch–Satterthwaite equation. We use it for every comparison *over trials* (trial = one independent
repetition of a training run with its own data split and seed, as in DomainBed), because different methods and
different training-domain choices are independent runs.

Choices where textbooks are silent (documented here once and referred to by the protocols):

* fewer than 2 trials in either group: no variance estimate, so p = NaN and the comparison is *undecided*;
* both groups with zero variance (e.g. deterministic runs): the difference is exact; p = 0 if the means
  differ by more than ``tol`` and p = 1 otherwise, the CI collapses to the point difference;
* NaN p-values are left out of the multiple-testing family and stay NaN after correction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from statsmodels.stats.multitest import multipletests

TOL = 1e-12


@dataclass(frozen=True)
class WelchResult:
    """Difference ``mean(a) - mean(b)`` with Welch standard error, t, df, two-sided p and a confidence interval."""

    diff: float
    se: float
    t: float
    df: float
    p: float
    ci_low: float
    ci_high: float
    n_a: int
    n_b: int


def welch(a, b, confidence: float = 0.95, tol: float = TOL) -> WelchResult:
    """Welch's t-test and CI for ``mean(a) - mean(b)`` (two-sided).

    ``se = sqrt(s_a²/n_a + s_b²/n_b)`` with sample variances (ddof=1);
    ``df = se⁴ / ((s_a²/n_a)²/(n_a-1) + (s_b²/n_b)²/(n_b-1))``; CI = diff ± t_{1-(1-confidence)/2, df} · se.
    See the module docstring for the n < 2 and zero-variance conventions.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        return WelchResult(np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, n_a, n_b)
    diff = float(a.mean() - b.mean())
    if n_a < 2 or n_b < 2:
        return WelchResult(diff, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, n_a, n_b)
    va, vb = a.var(ddof=1) / n_a, b.var(ddof=1) / n_b
    se2 = va + vb
    if se2 <= tol**2:
        p = 0.0 if abs(diff) > tol else 1.0
        t = np.sign(diff) * np.inf if p == 0.0 else 0.0
        return WelchResult(diff, 0.0, float(t), np.inf, p, diff, diff, n_a, n_b)
    se = float(np.sqrt(se2))
    denom = (va**2 / (n_a - 1) if va > 0 else 0.0) + (vb**2 / (n_b - 1) if vb > 0 else 0.0)
    df = float(se2**2 / denom)
    t = diff / se
    p = float(2 * stats.t.sf(abs(t), df))
    q = float(stats.t.ppf(1 - (1 - confidence) / 2, df))
    return WelchResult(diff, se, float(t), df, p, diff - q * se, diff + q * se, n_a, n_b)


def adjust_pvalues(p, alpha: float = 0.05, method: str = "holm") -> np.ndarray:
    """Multiple-testing adjusted p-values (statsmodels ``multipletests``); ``method="none"`` returns ``p``.

    NaN entries are excluded from the family and returned as NaN.
    """
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if method in (None, "none"):
        out[ok] = p[ok]
        return out
    if ok.any():
        out[ok] = multipletests(p[ok], alpha=alpha, method=method)[1]
    return out


def direction(diff: float, p_adj: float, alpha: float) -> int:
    """+1 / −1 when ``diff`` is significant at ``alpha`` (adjusted p), 0 when not or undecidable."""
    if np.isnan(p_adj) or p_adj >= alpha or np.isnan(diff):
        return 0
    return 1 if diff > 0 else -1
