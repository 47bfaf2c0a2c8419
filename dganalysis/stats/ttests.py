"""Comparisons over trials: Welch's t-test, the paired t-test on shared trial seeds, and the one-sample t-test of a
mean against a fixed value (:func:`one_sample_p`).

Welch's t-test (Welch 1947) compares two means without assuming equal variances; the degrees of freedom come
from the Welch–Satterthwaite equation (:func:`dganalysis.stats.behrens_fisher.welch_df`, the formula the audit's
calibrated test uses too). The protocols use it for every comparison *over trials*
(trial = one independent repetition of a training run with its own data split and seed, as in DomainBed), because
different methods and different training-domain choices are independent runs; where two groups share trial seeds
(the same data splits), :func:`compare` pairs them.

Welch's own p-value is approximate: at 3 trials per arm with unequal variances its size exceeds the level (see
:mod:`dganalysis.stats.behrens_fisher`, whose calibrated p-value is valid for every variance ratio and is what the
audit's claims use). The protocols report the uncalibrated p-value as their papers do.

Choices where textbooks are silent (documented here once and referred to by the protocols):

* fewer than 2 trials in either group: no variance estimate, so p = NaN and the comparison is *undecided*;
* both groups with zero variance (e.g. deterministic runs): the difference is exact; p = 0 if the means
  differ by more than ``tol`` and p = 1 otherwise, the CI collapses to the point difference;
* NaN p-values are left out of the multiple-testing family and stay NaN after correction
  (:func:`dganalysis.stats.multiplicity.adjust_pvalues`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import special, stats

from dganalysis.stats.behrens_fisher import welch_df
from dganalysis.stats.pairing import MIN_PAIRS, pair_seeds
from dganalysis.validation import check_number, check_numeric, check_scalar

TOL = 1e-12
#: a sample SD (in accuracy points) at or below this is *zero variance* (:func:`zero_variance`): ~10⁵ × the float64
#: resolution of an accuracy ≤ 100 points averaged over a few trials (~10⁻¹⁴), ~10⁴ × below one example of a
#: 10⁵-example test set (10⁻³ points)
ZERO_SD = 1e-9


def zero_variance(sd, tol: float = ZERO_SD) -> np.ndarray:
    """Where a sample SD (points; arrays broadcast; NaN: False) is *zero variance*: at or below ``tol``, the records'
    float resolution (:data:`ZERO_SD`).

    The audit's rule (:mod:`dganalysis.audit.claims`): a zero-variance arm — or zero-variance paired differences —
    gives **no test** (undecided, out of the family), like an arm with fewer than 2 trials. Why this rule and not a
    floor on the SD:

    * Under the normal model every test here assumes, a sample SD of exactly 0 has probability 0, so no error rate
      speaks about a decision taken on it; what it signals in practice is discreteness (an accuracy is a multiple of
      100/n_eval points, so trials can tie), duplicated records, or runs that do not vary — the arm's variance is
      then *not estimated*, and Welch's statistic would treat its mean as exact (p ≈ 0 when both arms are constant).
    * A floor at the float resolution would still decide (SE ~10⁻¹⁴, p ≈ 0). A floor at the accuracy's granularity
      100/n_eval (or Sheppard's q/√12 for values rounded to q) needs n_eval, which neither a table nor the audit's
      per-trial frame carries, and n ties within one bin are consistent with a true SD of the order of the bin, not
      below it — any single floor would be a guess presented as a measurement.

    The claim's ``why`` states instead the largest SD of the zero-variance arm under which the claim, alone, would be
    decided (:func:`dganalysis.audit.claims.why_undecided`): the number a reader can set against what they know of
    the runs. :func:`compare` (the protocols') keeps its own, older convention for deterministic protocol runs
    (identical paired differences are exact from :data:`MIN_EXACT` pairs on)."""
    check_numeric(sd, "sd", func="zero_variance")
    check_scalar(tol, "tol", func="zero_variance", low=0)
    sd = np.asarray(sd, dtype=float)
    return np.isfinite(sd) & (sd <= tol)


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
    df = float(welch_df(va, vb, n_a, n_b))
    t = diff / se
    p = float(2 * stats.t.sf(abs(t), df))
    q = float(stats.t.ppf(1 - (1 - confidence) / 2, df))
    return WelchResult(diff, se, float(t), df, p, diff - q * se, diff + q * se, n_a, n_b)


def one_sample_p(x, mu: float = 0.0, alternative: str = "greater") -> float:
    """p-value of Student's (1908) one-sample t-test of mean(x) against ``mu`` over independent replicates (e.g. the
    trials of one method; ``scipy.stats.ttest_1samp``): ``alternative`` "greater" (H1: mean > mu), "less" or
    "two-sided". NaN with fewer than 2 values (no variance estimate)."""
    f = "one_sample_p"
    check_numeric(x, "x", func=f)
    check_number(mu, "mu", func=f)
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(f"{f}: parameter 'alternative': expected 'greater', 'less' or 'two-sided', got "
                         f"{alternative!r}")
    if len(np.atleast_1d(np.asarray(x))) < 2:
        return float("nan")
    return float(stats.ttest_1samp(x, mu, alternative=alternative).pvalue)


def tost_p(d_abs, se, df, rope: float) -> np.ndarray:
    """The p-value of the two one-sided tests (TOST; Schuirmann 1987) of equivalence ``|Δ|`` < ``rope``,
    uncalibrated: with the estimate's absolute value ``d_abs``, its standard error ``se`` and ``df`` degrees of
    freedom, the binding side's one-sided t p-value F_t((``|Δ̂|`` − rope)/SE; df) (the other side's is smaller).
    Arrays broadcast. Zero SE: 0 when ``|Δ̂|`` < rope, else 1. For Welch's statistic, pass it through
    :func:`dganalysis.stats.behrens_fisher.calibrate_one_sided` to keep the level for every variance ratio; on
    paired differences (df = n − 1) it is exact."""
    for value, name in ((d_abs, "d_abs"), (se, "se"), (df, "df"), (rope, "rope")):
        check_numeric(value, name, func="tost_p")
    d_abs, se, df = (np.asarray(x, dtype=float) for x in (d_abs, se, df))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = special.stdtr(df, (d_abs - rope) / se)
    return np.where(se > 0, p, np.where(d_abs < rope, 0.0, 1.0))


def direction(diff: float, p_adj: float, alpha: float) -> int:
    """+1 / −1 when ``diff`` is significant at ``alpha`` (adjusted p), 0 when not or undecidable."""
    check_number(diff, "diff", func="direction")
    check_number(p_adj, "p_adj", func="direction")
    check_scalar(alpha, "alpha", func="direction", low=0.0, high=1.0, low_open=True, high_open=True)
    if np.isnan(p_adj) or p_adj >= alpha or np.isnan(diff):
        return 0
    return 1 if diff > 0 else -1


# ----------------------------------------------------------------------------------------------- paired contrasts
PAIRED, WELCH, EXACT, TOO_FEW = "paired t", "Welch t", "exact (no variance)", "n<2"
#: zero variance of the paired differences counts as an exact difference only from this many pairs on
MIN_EXACT = 3


@dataclass(frozen=True)
class Contrast:
    """``mean(a) - mean(b)`` over trials, paired on shared trial seeds where possible (:func:`compare`).

    ``p`` is two-sided; ``p_greater`` / ``p_less`` are the one-sided p-values of ``diff > 0`` / ``diff < 0``.
    ``effect`` is the standardised effect (paired: Cohen's d_z = mean / sd of the differences; Welch: Cohen's d
    with the average of the two variances); ``sd`` the matching standard deviation. ``n_pairs`` counts the paired
    trials (0 for Welch), ``dropped_a`` / ``dropped_b`` the trials of each group a paired contrast left out (their
    seed not in the other group). ``test`` names the test used.
    """

    diff: float
    se: float
    t: float
    df: float
    p: float
    p_greater: float
    p_less: float
    ci_low: float
    ci_high: float
    effect: float
    sd: float
    n_a: int
    n_b: int
    n_pairs: int
    test: str
    dropped_a: int = 0  #: trials of ``a`` left out of a paired contrast (their seed not in ``b``)
    dropped_b: int = 0


def _clean(x) -> pd.Series:
    s = pd.Series(x, dtype=float) if not isinstance(x, pd.Series) else x.astype(float)
    return s[~s.isna()]


def compare(a, b, confidence: float = 0.95, paired: bool | None = None, tol: float = TOL) -> Contrast:
    """Compare two groups of trial accuracies, ``diff = mean(a) - mean(b)``.

    ``a`` and ``b`` are Series indexed by trial seed (or plain sequences, then never paired). Pairing: two runs
    with the same trial seed share their data splits (``dganalysis.training.train``: each domain's in/out split is seeded by
    ``(trial_seed, domain index)`` only), so split-to-split variation cancels in the per-trial difference. They do
    *not* share initialisation or minibatch order (the torch seed is a hash of the whole job spec), so pairing
    removes only the split part of the variance. ``paired=None`` applies the one pairing rule of the package
    (:func:`dganalysis.stats.pairing.use_pairs`, the audit's too): paired when at least 2 trial seeds are shared, on
    the shared ones only (the others dropped and counted); ``False`` forces Welch (:func:`welch`); ``True`` requires
    pairing.
    A paired t-test on the per-trial differences d: ``se = sd(d)/√n``, ``df = n−1``, CI = mean(d) ± t·se.
    Identical differences in every pair (zero variance) are an exact difference (p = 0) from :data:`MIN_EXACT`
    pairs on (deterministic runs); with 2 pairs they are undecided (``test = "n<2"``): accuracies are discrete,
    so two equal differences happen by chance.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    sa, sb = _clean(a), _clean(b)
    indexed = isinstance(a, pd.Series) and isinstance(b, pd.Series)
    if indexed and (sa.index.has_duplicates or sb.index.has_duplicates):
        raise ValueError("compare: trial seeds must be unique within each group (average repeated runs first)")
    rule = pair_seeds(sa.index if indexed else [], sb.index if indexed else [])
    common = rule.seeds
    use = rule.paired if paired is None else paired
    if paired and not rule.paired:
        raise ValueError(f"compare(paired=True): need >= {MIN_PAIRS} shared trial seeds, got {list(common)}")
    if use:
        drop = {"dropped_a": rule.dropped_a, "dropped_b": rule.dropped_b}
        d = (sa[common] - sb[common]).to_numpy()
        n = len(d)
        diff, sd = float(d.mean()), float(d.std(ddof=1))
        if sd <= tol:
            if n < MIN_EXACT:  # two equal differences of discrete accuracies happen by chance: no evidence
                return Contrast(diff, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 0.0,
                                n, n, n, TOO_FEW, **drop)
            return replace(_exact(diff, n, n, n, tol), **drop)
        se = sd / np.sqrt(n)
        t, df = diff / se, float(n - 1)
        return replace(_from_t(diff, se, t, df, confidence, diff / sd, sd, n, n, n, PAIRED), **drop)
    w = welch(sa.to_numpy(), sb.to_numpy(), confidence=confidence, tol=tol)
    if np.isnan(w.p):
        return Contrast(w.diff, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan,
                        w.n_a, w.n_b, 0, TOO_FEW)
    if w.se == 0.0:
        return _exact(w.diff, w.n_a, w.n_b, 0, tol)
    sd = float(np.sqrt((sa.var(ddof=1) + sb.var(ddof=1)) / 2))
    return _from_t(w.diff, w.se, w.t, w.df, confidence, w.diff / sd if sd > 0 else np.nan, sd, w.n_a, w.n_b, 0, WELCH)


def _from_t(diff, se, t, df, confidence, effect, sd, n_a, n_b, n_pairs, test) -> Contrast:
    q = float(stats.t.ppf(1 - (1 - confidence) / 2, df))
    return Contrast(diff, float(se), float(t), df, float(2 * stats.t.sf(abs(t), df)), float(stats.t.sf(t, df)),
                    float(stats.t.cdf(t, df)), diff - q * se, diff + q * se, float(effect), float(sd), n_a, n_b,
                    n_pairs, test)


def _exact(diff, n_a, n_b, n_pairs, tol) -> Contrast:
    nonzero = abs(diff) > tol
    p = 0.0 if nonzero else 1.0
    pg = 0.0 if diff > tol else 1.0
    pl = 0.0 if diff < -tol else 1.0
    eff = np.sign(diff) * np.inf if nonzero else 0.0
    return Contrast(diff, 0.0, eff, np.inf, p, pg, pl, diff, diff, eff, 0.0, n_a, n_b, n_pairs, EXACT)
