"""Welch's and the paired t-test of the protocols (dganalysis.stats.ttests): scipy's numbers, the conventions for
too few trials and zero variance, and Welch's df held equal to the audit's (dganalysis.stats.behrens_fisher)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.stats import behrens_fisher as bf
from dganalysis.stats import ttests
from dganalysis.stats.ttests import PAIRED, TOO_FEW, WELCH, compare, tost_p, welch


def test_compare_paired_and_welch_match_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.6, 0.05, 5), rng.normal(0.55, 0.05, 5)
    idx = [3, 1, 4, 0, 2]
    c = compare(pd.Series(a, index=idx), pd.Series(b, index=idx))
    ref = stats.ttest_rel(a, b)
    assert c.test == PAIRED and c.n_pairs == 5
    assert c.p == pytest.approx(ref.pvalue) and c.t == pytest.approx(ref.statistic)
    assert c.p_greater == pytest.approx(stats.ttest_rel(a, b, alternative="greater").pvalue)
    assert c.p_less == pytest.approx(stats.ttest_rel(a, b, alternative="less").pvalue)
    d = a - b
    half = stats.t.ppf(0.975, 4) * d.std(ddof=1) / np.sqrt(5)
    assert (c.ci_low, c.ci_high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert c.effect == pytest.approx(d.mean() / d.std(ddof=1))
    # pairing follows the trial-seed index, not the position
    shuffled = compare(pd.Series(a, index=idx), pd.Series(b[::-1], index=idx[::-1]))
    assert shuffled.p == pytest.approx(ref.pvalue)
    # no shared trial seeds (or plain lists): Welch
    w = compare(pd.Series(a, index=range(5)), pd.Series(b, index=range(10, 15)))
    assert w.test == WELCH and w.n_pairs == 0
    assert w.p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue)
    assert compare(list(a), list(b)).test == WELCH
    assert compare(pd.Series(a, index=idx), pd.Series(b, index=idx), paired=False).test == WELCH
    assert compare([0.5], [0.4, 0.3]).test == TOO_FEW
    with pytest.raises(ValueError, match="shared trial seeds"):
        compare(pd.Series(a, index=range(5)), pd.Series(b, index=range(10, 15)), paired=True)


def test_two_equal_paired_differences_are_not_exact():
    a, b = pd.Series([0.70, 0.65], index=[0, 1]), pd.Series([0.60, 0.55], index=[0, 1])
    c = compare(a, b)
    assert c.test == TOO_FEW and np.isnan(c.p) and c.diff == pytest.approx(0.10)
    c3 = compare(pd.Series([0.7, 0.65, 0.5]), pd.Series([0.6, 0.55, 0.4]))
    assert c3.test == "exact (no variance)" and c3.p == 0.0


def test_zero_variance_welch_is_exact():
    w = welch([0.5] * 3, [0.5] * 3)
    assert w.p == 1.0 and w.diff == 0.0
    w = welch([0.7] * 3, [0.5] * 3)
    assert w.p == 0.0 and w.ci_low == w.ci_high == pytest.approx(0.2) and w.t == np.inf


def test_welch_df_and_p_are_the_audits():
    """One Welch: the protocols' df is behrens_fisher.welch_df, the audit's (the same bits), and the p-value
    welch_p's on it and scipy's."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        n_a, n_b = (int(k) for k in rng.integers(2, 12, 2))
        a, b = rng.normal(0, rng.uniform(0.01, 5), n_a), rng.normal(0.3, rng.uniform(0.01, 5), n_b)
        w = welch(a, b)
        va, vb = a.var(ddof=1) / n_a, b.var(ddof=1) / n_b
        assert w.df == float(bf.welch_df(va, vb, n_a, n_b))
        assert w.p == pytest.approx(float(bf.welch_p(w.diff, w.se, bf.welch_df(va, vb, n_a, n_b))), rel=1e-12)
        assert w.p == pytest.approx(stats.ttest_ind(a, b, equal_var=False).pvalue, rel=1e-9)


def test_tost_p_is_the_larger_of_scipys_two_one_sided_tests():
    """On paired differences (df n − 1) the TOST p of |Δ| < rope is the larger of the one-sided one-sample t-tests
    of mean < rope and mean > −rope (Schuirmann 1987), whichever sign the mean has."""
    rng = np.random.default_rng(5)
    for shift in (-0.8, -0.1, 0.0, 0.3, 1.5):
        d = rng.normal(shift, 0.7, 6)
        rope = 1.0
        upper = stats.ttest_1samp(d, rope, alternative="less").pvalue
        lower = stats.ttest_1samp(d, -rope, alternative="greater").pvalue
        se = d.std(ddof=1) / np.sqrt(len(d))
        assert float(tost_p(abs(d.mean()), se, len(d) - 1, rope)) == pytest.approx(max(upper, lower), rel=1e-10)
    # zero SE: equivalent exactly when inside the rope; arrays broadcast
    assert tost_p(np.array([0.5, 1.0, 2.0]), 0.0, 3, 1.0).tolist() == [0.0, 1.0, 1.0]
    assert tost_p(np.zeros((2, 3)), np.ones(3), 4, 1.0).shape == (2, 3)


def test_one_sample_p_is_scipys_one_sample_t():
    x = [0.4, 1.3, -0.2, 0.9, 0.7]
    for alt in ("greater", "less", "two-sided"):
        assert ttests.one_sample_p(x, 0.1, alt) == float(stats.ttest_1samp(x, 0.1, alternative=alt).pvalue)
    # by hand: t = mean / (sd / √n) on n − 1 df, upper tail
    t = np.mean(x) / (np.std(x, ddof=1) / np.sqrt(5))
    assert ttests.one_sample_p(x) == pytest.approx(stats.t.sf(t, 4))
    assert np.isnan(ttests.one_sample_p([1.0]))
    with pytest.raises(ValueError, match="one_sample_p: parameter 'alternative'"):
        ttests.one_sample_p(x, alternative="larger")
