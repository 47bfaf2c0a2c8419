"""Rank statistics over many test cells: Friedman test, Nemenyi critical-difference diagram, bootstrap rank CIs.

A leaderboard's average rank (Yu et al. 2024 Table 5; Gulrajani & Lopez-Paz 2021) hides how uncertain it is. Following
Demšar (2006), each *block* is one (dataset, test domain) cell — for leave-one-group-out, one domain of one group —
scored by the mean selected accuracy over trials; algorithms are ranked within each block (1 = best, ties share the
mean rank), the Friedman test asks whether the average ranks differ at all, and the Nemenyi post-hoc test (with its
critical-difference diagram) says which pairs do. The tests come from ``scipy`` (the Nemenyi p-values by the
formula scikit-posthocs uses, held equal to it by a test: :func:`nemenyi_friedman`), the diagram from
``scikit-posthocs``; we only arrange the blocks. :func:`bootstrap_rank_ci` resamples blocks with replacement
(``scipy.stats.bootstrap``, percentile intervals) to give each algorithm's average rank a confidence interval. Blocks are treated as independent, which
they are not quite (cells of one dataset share training runs of the other domains): the intervals are a guide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.validation import ConfigError, check_frame, check_scalar, check_str, describe


def block_scores(
    selected: pd.DataFrame,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
) -> pd.DataFrame:
    """Blocks × algorithms table of mean accuracy over trials; a block is ``dataset | test group | domain``.

    Only blocks where every algorithm has a score are kept (the Friedman test needs complete blocks).
    """
    check_frame(selected, (), "selected", func="block_scores")
    check_str(method_col, "method_col", func="block_scores")
    check_str(acc_col, "acc_col", func="block_scores")
    need = {"dataset", method_col, acc_col, "test_domains", "domain", "trial_seed"}
    missing = need - set(selected.columns)
    if missing:
        raise ValueError(f"selected frame: missing columns {sorted(missing)} (expected the selection contract)")
    if "selection" in selected and selected["selection"].nunique() > 1:
        raise ValueError(f"selected frame mixes selection methods {sorted(selected['selection'].unique())}")
    df = selected.assign(block=selected["dataset"].astype(str) + " | " + selected["test_domains"].astype(str)
                         + " | " + selected["domain"].astype(str))
    wide = df.groupby(["block", method_col])[acc_col].mean().unstack(method_col)
    if methods is not None:
        unknown = sorted(set(methods) - set(wide.columns))
        if unknown:
            raise ValueError(f"methods: {unknown} have no selected rows")
        wide = wide[list(methods)]
    wide = wide.dropna(axis=0, how="any")
    wide.columns.name = None
    return wide


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
    nemenyi: pd.DataFrame
    critical_difference: float
    alpha: float

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
    nem = nemenyi_friedman(scores)
    q = stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    cd = float(q * np.sqrt(k * (k + 1) / (6 * n)))
    avg = block_ranks(scores).mean().sort_values()
    return FriedmanResult(float(res.statistic), float(res.pvalue), n, k, avg, nem, cd, alpha)


def nemenyi_friedman(scores: pd.DataFrame) -> pd.DataFrame:
    """Nemenyi post-hoc p-values after the Friedman test (Demšar 2006, Sec. 3.2.2), methods × methods: with R_i the
    average rank of method i over the N blocks of ``scores`` (k methods, ties averaged), q_ij = |R_i − R_j| /
    √(k(k+1)/(6N)) and p_ij = P(Q > q_ij √2), Q the studentized range of k means with infinite degrees of freedom
    (``scipy.stats.studentized_range``); 1 on the diagonal.

    scikit-posthocs' ``posthoc_nemenyi_friedman`` computes exactly this (``tests/protocols/test_friedman.py`` holds
    the two equal, ties included). It is not called because importing scikit-posthocs imports matplotlib and
    seaborn, about 0.5 CPU-s: most of what an audit's statistics cost when it draws no figure. Its critical-difference
    diagram (:func:`plot_cd_diagram`) is still drawn by scikit-posthocs."""
    check_frame(scores, (), "scores", func="nemenyi_friedman")
    values = scores.to_numpy(dtype=float)
    n, k = values.shape
    nan = bool(np.isnan(values).any())
    if k < 2 or n < 1 or nan:
        raise ValueError(f"nemenyi_friedman: parameter 'scores': expected complete blocks × methods scores (≥ 2 "
                         f"methods, ≥ 1 block, no NaN), got {n} blocks × {k} methods{' with NaN' if nan else ''}")
    mean_ranks = stats.rankdata(values, axis=1, method="average").mean(axis=0)
    upper = np.triu_indices(k, 1)
    q = np.abs(mean_ranks[upper[0]] - mean_ranks[upper[1]]) / np.sqrt(k * (k + 1.0) / (6.0 * n))
    p = np.ones((k, k))
    p[upper] = stats.studentized_range.sf(q * np.sqrt(2.0), k, np.inf)
    p[upper[1], upper[0]] = p[upper]
    return pd.DataFrame(p, index=scores.columns, columns=scores.columns)


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
