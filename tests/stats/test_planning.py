"""Planning figures: trials per arm to decide ±rope or show equivalence, with the audit's own test."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.stats import planning
from dganalysis.stats.planning import trials_for_effect_size


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
