"""Planning figures: trials per arm to decide ±rope or show equivalence, with the audit's own test; a paired t-test's
power and trials for a stated d_z, and the d_z behind a pilot's interval, power table or Holm decision."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dganalysis.stats import planning
from dganalysis.stats.planning import trials_for_effect_size
from dganalysis.validation import ConfigError


def test_the_approximation_agrees_with_the_quadrature_where_it_is_used():
    for n, sa, sb, d in ((16, 1.0, 2.0, 1.5), (25, 1.0, 1.0, 0.8), (40, 3.0, 1.0, 1.5)):
        exact = float(planning.power_difference(n, sa, sb, d, 0.01))
        approx = float(planning._vec_power_difference(np.array(n), sa, sb, d, 0.01))
        assert approx == pytest.approx(exact, abs=0.02)
    exact = float(planning.power_equivalence(30, 1.0, 1.0, 1.0, 0.05 / 7))
    approx = float(planning._vec_power_equivalence(np.array(30), 1.0, 1.0, 1.0, 0.05 / 7))
    assert approx <= exact + 0.01 and approx == pytest.approx(exact, abs=0.05)


def test_trials_grow_with_noise_and_the_interval_brackets_the_point():
    n, lo, hi = planning.trials_to_decide([0.5, 1.0, 2.0], [0.5, 1.0, 2.0], 3, 3, 1.0, 0.05 / 7)
    assert np.all(np.diff(n) > 0) and np.all(lo <= n) and np.all(n <= hi)
    # the figure is the smallest n reaching 80% power
    k = int(n[1])
    assert planning.power_difference(k, 1.0, 1.0, 1.0, 0.05 / 7) >= 0.8 > planning.power_difference(
        k - 1, 1.0, 1.0, 1.0, 0.05 / 7) - 1e-9 or k <= 2
    e, _, _ = planning.trials_for_equivalence([1.0], [1.0], 3, 3, 1.0, 0.05 / 7)
    assert e[0] >= 2 and np.isfinite(e[0])
    big, _, _ = planning.trials_to_decide([100.0], [100.0], 3, 3, 0.5, 0.05, max_n=500)
    assert np.isinf(big[0])


def test_paired_planning_and_input_errors():
    n, lo, hi = planning.paired_trials([1.0, 3.0], 3, 1.0, 0.05 / 7)
    assert n[0] < n[1] and np.all(lo <= n) and np.all(n <= hi)
    with pytest.raises(ValueError, match="effect"):
        planning.trials_to_decide([1.0], [1.0], 3, 3, 0.0, 0.05)
    with pytest.raises(ValueError, match="sd_a"):
        planning.trials_to_decide([0.0], [1.0], 3, 3, 1.0, 0.05)


def test_trials_for_effect_size_matches_statsmodels_power():
    from statsmodels.stats.power import TTestIndPower, TTestPower

    n = trials_for_effect_size(1.0, 0.01, 0.8, paired=True)
    pw = lambda k: TTestPower().power(effect_size=1.0, nobs=k, alpha=0.01, alternative="larger")  # noqa: E731
    assert pw(n) >= 0.8 > pw(n - 1)
    m = trials_for_effect_size(-0.5, 0.05, 0.8, paired=False, alternative="two-sided")  # the sign is the direction
    pi = lambda k: TTestIndPower().power(effect_size=0.5, nobs1=k, alpha=0.05, alternative="two-sided")  # noqa: E731
    assert pi(m) >= 0.8 > pi(m - 1) and m > 60  # beyond the loop: the continuous solver, rounded up
    assert trials_for_effect_size(0.0, 0.05) == np.inf and np.isnan(trials_for_effect_size(np.nan, 0.05))
    assert trials_for_effect_size(0.01, 0.05, max_n=100) == np.inf
    with pytest.raises(ValueError, match="alternative"):
        trials_for_effect_size(1.0, 0.05, alternative="less")


def _nct_power(effect: float, n: int, level: float) -> float:
    """Two-sided paired t power by the noncentral t, written out here independently of stats.planning."""
    df, nc = n - 1, effect * math.sqrt(n)
    c = stats.t.isf(level / 2, df)
    return float(stats.nct.sf(c, df, nc) + stats.nct.cdf(-c, df, nc))


@pytest.mark.parametrize("effect, n, level", [(2.07, 6, 0.025), (0.8, 6, 0.05), (1.2, 15, 0.0025), (1.0, 4, 0.1)])
def test_paired_power_inverts_paired_trials(effect, n, level):
    """paired_power inverts planning.paired_trials: planning asks ≤ n trials just below it and > n just above, and
    it agrees with the noncentral-t power computed here."""
    p = planning.paired_power(effect, n, level)
    assert p == pytest.approx(_nct_power(effect, n, level), abs=2e-3)
    if p > 0.01:
        assert planning.paired_trials(1.0, n, effect, level, power=p - 0.005)[0][0] <= n
    if p < 0.99:
        assert planning.paired_trials(1.0, n, effect, level, power=p + 0.005)[0][0] > n
    assert planning.paired_power(effect, 1, level) == 0.0


def test_trials_for_power_is_the_smallest_n_reaching_it():
    k = planning.trials_for_power(1.0, 0.05)
    assert _nct_power(1.0, int(k), 0.05) >= planning.POWER > _nct_power(1.0, int(k) - 1, 0.05)
    assert planning.trials_for_power(1.0, 0.05, power=0.9) > k
    assert planning.trials_for_power(1e-3, 0.05) == np.inf  # more than 2,000 pairs


def test_effects_are_computed_from_the_pilots_numbers():
    # d_z of a mean and 95% t-interval over 6 pairs: |mean| / (half-width / t(5) * sqrt(6))
    assert planning.effect_from_ci(4.09, 1.86, 6.32, 6) == pytest.approx(
        4.09 / (2.23 / stats.t.ppf(0.975, 5) * 6 ** 0.5))
    # the smallest d_z a Holm-decided 6-trial contrast can have, and a power table's trials turned back into d_z
    b = planning.holm_bound_effect(6, 13, 0.05)
    assert 2 * stats.t.sf(b * 6 ** 0.5, 5) == pytest.approx(0.05 / 13)  # a mean of b SDs over 6 pairs: p = α/13
    e = planning.effect_from_trials(15, 0.0025)
    trials = lambda dz: planning.paired_trials(1.0, 6, dz, 0.0025)[0][0]  # noqa: E731
    assert trials(e) <= 15 < trials(e * 0.97)


def test_effect_from_ci_inverts_the_t_interval():
    from dganalysis.stats.intervals import t_half_width

    half = t_half_width(2.0, 9, 0.9)
    assert planning.effect_from_ci(-1.0, -1.0 - half, -1.0 + half, 9, confidence=0.9) == pytest.approx(0.5)


def test_planning_inputs_are_checked_by_name():
    with pytest.raises(ValueError, match="paired_power: parameter 'effect'"):
        planning.paired_power(0.0, 6, 0.05)
    with pytest.raises(ConfigError, match="level"):
        planning.paired_power(1.0, 6, 1.5)
    with pytest.raises(ValueError, match="effect_from_ci: parameters 'ci_low', 'ci_high'"):
        planning.effect_from_ci(1.0, 2.0, 0.5, 6)
    with pytest.raises(ConfigError, match="holm_bound_effect.*'m'"):
        planning.holm_bound_effect(6, 0, 0.05)
    with pytest.raises(ConfigError, match="effect_from_trials.*'trials'"):
        planning.effect_from_trials(1, 0.05)
