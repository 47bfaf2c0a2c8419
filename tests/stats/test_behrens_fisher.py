"""The calibrated Welch test: its size integral against simulation of Welch's test, the calibration's properties,
and its power at equal variances against Welch's and Hsu's (SIMULATED normal trials)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from dganalysis.stats import behrens_fisher as bf


def _welch_p_sim(rng, sims, n_a, n_b, sd_ratio):
    a = sd_ratio * rng.standard_normal((sims, n_a))
    b = rng.standard_normal((sims, n_b))
    va, vb = a.var(1, ddof=1) / n_a, b.var(1, ddof=1) / n_b
    return bf.welch_p(a.mean(1) - b.mean(1), np.sqrt(va + vb), bf.welch_df(va, vb, n_a, n_b))


@pytest.mark.parametrize("n_a,n_b,sd_ratio", [(3, 3, 1.0), (3, 3, 10.0), (3, 5, 0.2), (5, 5, 4.0)])
def test_size_integral_matches_simulation_of_welch(n_a, n_b, sd_ratio):
    """P(p_Welch ≤ w) by the quadrature equals the simulated rate (200,000 simulated pairs) at w = 0.05 and 0.01."""
    rng = np.random.default_rng(0)
    p = _welch_p_sim(rng, 200_000, n_a, n_b, sd_ratio)
    grid = special.expit(bf.logit_grid(n_a, n_b))
    theta = sd_ratio**2
    shift = np.log(theta / ((n_a - 1) * n_a) * ((n_b - 1) * n_b))
    for w in (0.05, 0.01):
        crit = bf.welch_crit(np.array([w]), n_a, n_b, grid)[0]
        exact = float(bf.rejection_probability(crit, n_a, n_b, shift))
        sim = float((p <= w).mean())
        assert abs(sim - exact) <= 4 * np.sqrt(exact * (1 - exact) / 200_000), (w, sim, exact)


def test_welch_exceeds_its_level_and_the_calibration_says_by_how_much():
    # at n = 3 the worst case over the variance ratio: 1.18x at 0.05, 1.70x at 0.01, 4.6x at 0.05/91
    ratios = bf.calibrate(np.array([0.05, 0.01, 0.05 / 91]), 3, 3) / np.array([0.05, 0.01, 0.05 / 91])
    np.testing.assert_allclose(ratios, [1.18, 1.70, 4.61], rtol=0.02)
    # large n: Welch keeps its level
    assert bf.calibrate(0.05, 60, 60) / 0.05 < 1.01


def test_calibration_is_monotone_at_least_p_and_inverted_by_calibrated_level():
    p = np.logspace(-9, 0, 200)
    h = bf.calibrate(p, 3, 4)
    assert np.all(np.diff(h) >= 0) and np.all(h >= p) and h[-1] == 1.0
    for target in (0.05, 0.01, 0.05 / 91):
        w = bf.calibrated_level(target, 3, 4)
        assert w < target and bf.calibrate(w, 3, 4) == pytest.approx(target, rel=0.01)
        assert bf.level_for(target, 3, 4) == pytest.approx(float(w), rel=0.02)
    assert np.isnan(bf.calibrate(np.nan, 3, 3))
    with pytest.raises(ValueError, match="whole numbers of trials"):
        bf.calibrate(0.1, 1, 3)


def test_calibrated_size_at_most_the_level_on_simulated_nulls():
    """Welch at the calibrated level keeps α = 0.01 at every SD ratio (200,000 simulated pairs each) where Welch's
    own test does not."""
    rng = np.random.default_rng(1)
    w = float(bf.calibrated_level(0.01, 3, 3))
    worst_welch = 0.0
    for r in (1.0, 3.0, 10.0, 30.0, 100.0):
        p = _welch_p_sim(rng, 200_000, 3, 3, r)
        assert (p <= w).mean() <= 0.01 + 3 * np.sqrt(0.01 * 0.99 / 200_000)
        worst_welch = max(worst_welch, (p <= 0.01).mean())
    assert worst_welch > 0.013


def test_power_between_hsu_and_welch_at_equal_variances():
    """n = 3, α = 0.01, a 6-SD effect: Welch 0.77 (not valid), calibrated 0.55, Hsu (df 2) 0.31."""
    from dganalysis.stats.planning import power_difference

    cal = float(power_difference(3, 1.0, 1.0, 6.0, 0.01))
    nc = 6.0 / np.sqrt(2 / 3)
    c = stats.t.isf(0.005, 2)  # Hsu: Welch's statistic (t on 4 df at equal variances) against t on min(n) − 1 = 2 df
    hsu = float(stats.nct.sf(c, 4, nc) + np.nan_to_num(stats.nct.cdf(-c, 4, nc)))  # the lower tail: ~0
    assert hsu < cal - 0.15 and cal == pytest.approx(0.55, abs=0.02) and hsu == pytest.approx(0.31, abs=0.02)


def test_welch_df_from_share_is_welch_df():
    """The df written through arm A's share r of the squared SEs is Welch–Satterthwaite's from the SEs."""
    rng = np.random.default_rng(2)
    va, vb = rng.uniform(0.01, 4, 50), rng.uniform(0.01, 4, 50)
    for n_a, n_b in ((3, 3), (3, 8), (10, 4)):
        np.testing.assert_allclose(bf.welch_df_from_share(va / (va + vb), n_a, n_b), bf.welch_df(va, vb, n_a, n_b),
                                   rtol=1e-12)
    # the limits: all the variance in one arm gives that arm's n − 1
    assert bf.welch_df_from_share(np.array([0.0, 1.0]), 3, 8).tolist() == pytest.approx([7.0, 2.0])


def test_calibrate_one_sided_is_half_the_two_sided_calibration():
    """Below ½ the one-sided p is h(2p)/2 (valid: at least p); from ½ on it is p itself; NaN stays NaN."""
    p1 = np.array([1e-6, 1e-3, 0.01, 0.2, 0.49, 0.5, 0.8, np.nan])
    got = bf.calibrate_one_sided(p1, 3, 3)
    low = p1 < 0.5
    np.testing.assert_array_equal(got[low], bf.calibrate(2 * p1[low], 3, 3) / 2)
    np.testing.assert_array_equal(got[5:7], p1[5:7])
    assert np.isnan(got[-1]) and np.all(got[:5] >= p1[:5]) and got[2] > p1[2]  # n = 3: the calibration costs
    # large n: Welch keeps its level, the calibration changes (almost) nothing
    assert float(bf.calibrate_one_sided(0.01, 200, 200)) == pytest.approx(0.01, rel=0.02)


@pytest.mark.parametrize("n_a,n_b", [(2, 2), (2, 5)])
def test_calibrated_p_is_an_upper_bound_of_h_on_a_dense_grid(n_a, n_b):
    """h(w) = sup over the variance ratio of Welch's size, recomputed directly at 40 levels halfway (in log) between
    the table's knots and maximised over a grid of log-shifts 8× finer than the table's (step 1/16 over ±25, the
    table's whole range of variance ratios): ``calibrate`` is never below it, and exceeds it by less than 1% (the
    table alone falls short by at most 7.6e-6 relative on such grids; the margin is 1e-3)."""
    from scipy import special

    knots = bf._W_GRID[(bf._W_GRID > 1e-8) & (bf._W_GRID < 0.5)]
    w = np.sqrt(knots[:-1] * knots[1:])[::2]
    crit = bf.welch_crit(w, n_a, n_b, special.expit(bf.logit_grid(n_a, n_b)))
    shifts = np.arange(-25.0, 25.0 + 1e-9, 1 / 16)
    dense = np.zeros(len(w))
    for chunk in np.array_split(shifts, 8):
        dense = np.maximum(dense, bf.rejection_probability(crit, n_a, n_b, chunk[:, None]).max(axis=0))
    dense = np.maximum(dense, w)
    got = bf.calibrate(w, n_a, n_b)
    assert (got >= dense).all()
    assert (got <= dense * 1.01).all()  # the margin (0.1%) and the log-log interpolation's own excess (≤ 0.4%)
