"""Rank tests over blocks: Friedman / Nemenyi with the critical-difference diagram and bootstrap rank intervals
for many methods, and the Wilcoxon signed-rank test for one pair.

Following Demšar (2006), a *block* is one unit on which every method has a score (a test cell of a leaderboard, a
dataset of the audit's table). Methods are ranked within each block (1 = best, ties share the mean rank); the
Friedman test (``scipy.stats.friedmanchisquare``) asks whether the average ranks differ at all, and the Nemenyi
post-hoc test (``scikit_posthocs.posthoc_nemenyi_friedman``, :attr:`FriedmanResult.nemenyi`) says which pairs do
*given the whole pool* — adding or removing a method can change a Nemenyi verdict on A vs B. The
critical-difference diagram is drawn by ``scikit-posthocs``. :func:`bootstrap_rank_ci` resamples blocks with
replacement (``scipy.stats.bootstrap``, percentile intervals) to give each method's average rank a confidence
interval; blocks are treated as independent, which they need not be (read the intervals as a guide).

The Wilcoxon signed-rank test (:func:`wilcoxon_p`, :func:`wilcoxon_ps`: ``scipy.stats.wilcoxon``'s two-sided p-value
with Pratt's zeros, the same numbers, vectorised over many pairs) decides one pair on its own, whatever else is in
the pool (Benavoli, Corani & Mangili 2016).

Spearman's rank correlation between two measures over a few items (:func:`spearman_test`) carries its exact
permutation p-value for small n (all n! pairings; Spearman 1904, the permutation distribution as in Hollander,
Wolfe & Chicken 2014, Ch. 8); :func:`spearman_min_p` is the smallest p-value such a test can give, 2/n! —
1/12 ≈ 0.083 with 4 items, so no ranking of 4 items reaches p < 0.05.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.validation import ConfigError, check_frame, check_numeric, check_scalar, describe


def block_ranks(scores: pd.DataFrame) -> pd.DataFrame:
    """Rank of each algorithm within each block (1 = highest accuracy; ties get the average rank)."""
    check_frame(scores, (), "scores", func="block_ranks")
    return scores.rank(axis=1, ascending=False, method="average")


@dataclass
class FriedmanResult:
    """Friedman test over blocks, Nemenyi post-hoc p-values and the critical difference (Demšar 2006)."""

    statistic: float
    p: float
    n_blocks: int
    n_methods: int
    avg_rank: pd.Series
    critical_difference: float
    alpha: float
    #: the blocks × methods scores tested
    scores: pd.DataFrame = field(repr=False)

    @functools.cached_property
    def nemenyi(self) -> pd.DataFrame:
        """Nemenyi post-hoc p-values, methods × methods (Demšar 2006, Sec. 3.2.2: the average ranks' differences
        over √(k(k+1)/(6N)), referred to the studentized range with infinite df), by scikit-posthocs'
        ``posthoc_nemenyi_friedman``. Computed when first asked for (the critical-difference diagram asks): importing
        scikit-posthocs imports matplotlib and seaborn, and an audit that draws no figure imports no plotting stack."""
        import scikit_posthocs as sp

        return sp.posthoc_nemenyi_friedman(self.scores.reset_index(drop=True))

    def summary(self) -> str:
        verdict = "average ranks differ" if self.p < self.alpha else "no evidence that average ranks differ"
        return (f"Friedman χ²={self.statistic:.2f}, p={self.p:.3g} over {self.n_blocks} blocks × {self.n_methods} "
                f"methods: {verdict} (α={self.alpha}); Nemenyi CD={self.critical_difference:.2f} ranks")


def friedman(scores: pd.DataFrame, alpha: float = 0.05) -> FriedmanResult:
    """Friedman test (``scipy.stats.friedmanchisquare``) and Nemenyi post-hoc (``scikit_posthocs``) on ``scores``.

    ``scores``: blocks × methods (:func:`block_scores`); needs ≥ 3 methods and ≥ 2 blocks. The critical difference
    is ``q_α √(k(k+1)/(6N))`` with ``q_α`` the studentized range quantile / √2 (Demšar 2006, eq. for Nemenyi).
    """
    check_frame(scores, (), "scores", func="friedman")
    check_scalar(alpha, "alpha", func="friedman", low=0.0, high=1.0, low_open=True, high_open=True)
    n, k = scores.shape
    if k < 3 or n < 2:
        raise ValueError(f"scores: the Friedman test needs >= 3 methods and >= 2 blocks, got {k} methods, {n} blocks")
    res = stats.friedmanchisquare(*[scores[c].to_numpy() for c in scores.columns])
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    cd = float(q * np.sqrt(k * (k + 1) / (6 * n)))
    avg = block_ranks(scores).mean().sort_values()
    return FriedmanResult(float(res.statistic), float(res.pvalue), n, k, avg, cd, alpha, scores)


def plot_cd_diagram(result: FriedmanResult, title: str = "", ax=None):
    """Critical-difference diagram (``scikit_posthocs.critical_difference_diagram``): methods joined by a bar are
    not significantly different by the Nemenyi test at ``result.alpha``."""
    if not isinstance(result, FriedmanResult):
        raise ConfigError(f"plot_cd_diagram: parameter 'result': expected a FriedmanResult (friedman), got {describe(result)}")
    import matplotlib.pyplot as plt
    import scikit_posthocs as sp

    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(6, 1.2 + 0.25 * result.n_methods))
    sp.critical_difference_diagram(result.avg_rank, result.nemenyi, alpha=result.alpha, ax=ax)
    ax.set_title(f"{title}{' — ' if title else ''}Friedman p={result.p:.3g}, {result.n_blocks} blocks "
                 f"(Nemenyi, α={result.alpha})", fontsize="small")
    fig.tight_layout()
    return fig


def bootstrap_rank_ci(scores: pd.DataFrame, confidence: float = 0.95, n_resamples: int = 2000,
                      seed: int = 0) -> pd.DataFrame:
    """Average rank of each method with a percentile bootstrap CI over blocks (``scipy.stats.bootstrap``).

    One row per method: ``avg_rank, ci_low, ci_high``. The ranks are computed once per block, then blocks are
    resampled with replacement; every method uses the same resampled blocks (same ``seed``).
    """
    check_frame(scores, (), "scores", func="bootstrap_rank_ci")
    check_scalar(confidence, "confidence", func="bootstrap_rank_ci", low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(n_resamples, "n_resamples", func="bootstrap_rank_ci", kind='int', low=1)
    check_scalar(seed, "seed", func="bootstrap_rank_ci", kind='int', low=0)
    ranks = block_ranks(scores)
    if len(ranks) < 2:
        raise ValueError(f"scores: need >= 2 blocks for a bootstrap, got {len(ranks)}")
    rows = []
    for m in ranks.columns:
        x = ranks[m].to_numpy()
        if np.ptp(x) == 0:  # the same rank in every block: the interval is that rank
            lo = hi = float(x[0])
        else:
            b = stats.bootstrap((x,), np.mean, confidence_level=confidence, n_resamples=n_resamples,
                                method="percentile", random_state=seed)
            lo, hi = float(b.confidence_interval.low), float(b.confidence_interval.high)
        rows.append(dict(method=m, avg_rank=float(x.mean()), ci_low=lo, ci_high=hi))
    return pd.DataFrame(rows).set_index("method").sort_values("avg_rank")


#: up to this many pairs, with ties or zeros, scipy's Wilcoxon p-value is its exact permutation test (2^n signs)
PERMUTATION_MAX_N = 13


def _numbers(values, name: str, func: str) -> np.ndarray:
    """``values`` as a float array, or a TypeError naming the parameter."""
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{func}: parameter {name!r}: expected an array of numbers, got {describe(values)}") from err


def wilcoxon_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the pairs (``x``, ``y``), zeros by Pratt: the p-value of
    ``scipy.stats.wilcoxon(x, y, zero_method="pratt")``, the same number, faster (:func:`wilcoxon_ps` of one row)."""
    x, y = _numbers(x, "x", "wilcoxon_p"), _numbers(y, "y", "wilcoxon_p")
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"wilcoxon_p: expected two 1-D arrays of the same length, got shapes {x.shape} and {y.shape}")
    return float(wilcoxon_ps(x[None], y[None])[0])


def wilcoxon_ps(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's :func:`wilcoxon_p` for two (tests, pairs) arrays: row ``i``'s p-value is that of
    ``scipy.stats.wilcoxon(x[i], y[i], zero_method="pratt")``, the same number.

    scipy's ``method="auto"`` picks the test from the differences: without ties and zeros its exact distribution
    (n ≤ 50), with them and n ≤ :data:`PERMUTATION_MAX_N` an exact permutation test over the 2^n sign assignments
    (calling its statistic once per assignment: ~25 ms a test at n = 7), else its normal approximation. The rows are
    sorted into those three groups and each group answered in one vectorised call — the exact distribution and the
    normal approximation by ``scipy.stats.wilcoxon`` itself along the rows, the permutation test by
    ``scipy.stats.permutation_test`` with W+ (the sum of the average ranks of ``|d|`` over the positive differences,
    zeros ranked and then left out, as scipy's Pratt statistic) as a vectorised statistic. A family of 91 pairs takes
    three calls instead of 91 (each call of scipy's wrapper costs ~1 ms). ``tests/stats/test_rank_tests`` holds every
    row equal to scipy's own call on random tables with ties and zeros."""
    x, y = _numbers(x, "x", "wilcoxon_ps"), _numbers(y, "y", "wilcoxon_ps")
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"wilcoxon_ps: expected two 2-D arrays (tests, pairs) of the same shape, got shapes {x.shape} "
                         f"and {y.shape}")
    d = x - y
    out = np.empty(len(d))
    mag = np.sort(np.abs(d), axis=1)
    tied = (mag[:, :1] == 0).any(axis=1) | (np.diff(mag, axis=1) == 0).any(axis=1)
    permutation = tied & (d.shape[1] <= PERMUTATION_MAX_N)
    for rows in (~tied, tied & ~permutation):  # each group's "auto" choice is the one its rows make alone
        if rows.any():
            out[rows] = stats.wilcoxon(x[rows], y[rows], zero_method="pratt", axis=1).pvalue
    if permutation.any():
        out[permutation] = stats.permutation_test((d[permutation],), _signed_rank_sum, permutation_type="samples",
                                                  vectorized=True, n_resamples=9999, alternative="two-sided",
                                                  axis=-1).pvalue
    return out


def _signed_rank_sum(d: np.ndarray, axis: int = -1) -> np.ndarray:
    """W+ of each row of differences ``d``: the sum of the average ranks of ``|d|`` over the positive ones."""
    return np.sum((d > 0) * stats.rankdata(np.abs(d), axis=axis), axis=axis)


#: up to this many items :func:`spearman_test`'s p-value is the exact permutation one (n! orderings)
EXACT_SPEARMAN_MAX_N = 8


def spearman_min_p(n: int) -> float:
    """Smallest two-sided p-value an exact Spearman permutation test can give with ``n`` items (no ties): 2/n!
    (the two perfect orders), 1 below 2 items."""
    check_scalar(n, "n", func="spearman_min_p", kind="int", low=0)
    return min(1.0, 2.0 / math.factorial(n)) if n >= 2 else 1.0


def spearman_test(x, y) -> tuple[float, float]:
    """Spearman ρ (Spearman 1904) of ``x`` and ``y`` and its two-sided p-value, over the pairs where neither is NaN:
    exact over all n! pairings for n ≤ :data:`EXACT_SPEARMAN_MAX_N` (``scipy.stats.pearsonr`` of the ranks with
    ``PermutationMethod(n_resamples=inf)``, i.e. ``scipy.stats.permutation_test``'s exact distribution), scipy's t
    approximation above (``scipy.stats.spearmanr``, which gives p = 0 for ``|ρ| = 1`` at any n). NaN for fewer than 3
    pairs or a constant input."""
    check_numeric(x, "x", func="spearman_test")
    check_numeric(y, "y", func="spearman_test")
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"spearman_test: parameters 'x' and 'y': expected two 1-d sequences of one length, got "
                          f"shapes {x.shape} and {y.shape}")
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    n = len(x)
    if n < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan"), float("nan")
    rho = float(stats.spearmanr(x, y).statistic)
    if n > EXACT_SPEARMAN_MAX_N:
        return rho, float(stats.spearmanr(x, y).pvalue)
    # Pearson's r of the ranks over all n! pairings: scipy's own permutation method, whose statistic is vectorised
    # (a permutation_test calling pearsonr once per pairing took ~7 s at n = 8; this, ~0.1 s; the same p-values)
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    res = stats.pearsonr(rx, ry, method=stats.PermutationMethod(n_resamples=math.inf))
    return rho, float(min(1.0, res.pvalue))
