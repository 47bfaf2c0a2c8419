"""The calibrated levels and the planning powers, computed over each shift's window of the Beta weight, against the
direct computation over the whole logit grid (kept here as the oracle), and the planning figures against values
computed by the direct code (SIMULATED trial SDs)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special
from scipy.optimize import brentq

from dganalysis.stats import behrens_fisher as bf
from dganalysis.stats import planning


def _oracle_level_for(target: float, n_a: int, n_b: int) -> float:
    """:func:`bf.level_for` by the direct sum: every shift of the grid and every refinement step over the whole
    logit grid, one shift per call (the same search and the same brentq tolerance)."""
    grid = special.expit(bf.logit_grid(n_a, n_b))

    def sup(logw: float) -> float:
        crit = bf.welch_crit(np.array([np.exp(logw)]), n_a, n_b, grid)[0]
        size = bf.rejection_probability(crit, n_a, n_b, bf._S_GRID[:, None])
        best, at, step = size.max(), bf._S_GRID[size.argmax()], (bf._S_GRID[1] - bf._S_GRID[0]) / 2
        while step >= 1 / 64:
            for cand in (at - step, at + step):
                val = float(bf.rejection_probability(crit, n_a, n_b, cand))
                if val > best:
                    best, at = val, cand
            step /= 2
        return max(best, np.exp(logw))

    hi = np.log(target)
    if sup(hi) <= target * (1 + 1e-9):
        return float(target)
    return float(np.exp(brentq(lambda x: np.log(sup(x)) - np.log(target), hi - 25.0, hi, xtol=1e-4)))


def _oracle_power_difference(n, sd_a, sd_b, delta, level):
    """The calibrated Welch test's power over the whole logit grid, the noncentral t by 64 χ² nodes in full."""
    grid = bf.logit_grid(n, n)
    crit = bf.welch_crit(np.array([bf.level_for(level, n, n)]), n, n, special.expit(grid))[0]
    tau = np.sqrt((sd_a**2 + sd_b**2) / n)
    s = np.log(sd_a**2 / sd_b**2)[:, None]
    x = grid - s
    w = bf.logit_beta_density(x, (n - 1) / 2, (n - 1) / 2) * (grid[1] - grid[0])
    bb, es, m = special.expit(x), np.exp(s), 2 * n - 2
    x_crit = crit * np.sqrt(m * (es * bb + 1.0 - bb) / (es * (n - 1) + (n - 1)))
    root = np.sqrt(special.chdtri(m, 1 - (np.arange(64) + 0.5) / 64) / m)
    xs = x_crit[..., None] * root
    nc = (delta / tau)[:, None, None]
    pr = (special.ndtr(nc - xs) + special.ndtr(-xs - nc)).mean(axis=-1)
    return (pr * w).sum(axis=-1) + np.maximum(0.0, 1.0 - w.sum(axis=-1))


def _oracle_power_equivalence(n, sd_a, sd_b, rope, level):
    """The calibrated TOST's power at Δ = 0 over the whole logit grid and all 100 χ² nodes."""
    grid = bf.logit_grid(n, n)
    r = special.expit(grid)
    w1 = bf.level_for(min(2 * level, 0.999), n, n) / 2
    c1 = special.stdtrit(bf.welch_df_from_share(r, n, n), 1 - w1)
    shift = np.log(sd_a**2 / sd_b**2)[:, None]
    tau = np.sqrt((sd_a**2 + sd_b**2) / n)[:, None]
    x = grid - shift
    wts = bf.logit_beta_density(x, (n - 1) / 2, (n - 1) / 2) * (grid[1] - grid[0])
    bb, es, m = special.expit(x), np.exp(shift), 2 * n - 2
    g = (es * bb + 1.0 - bb) / (es * (n - 1) + (n - 1))
    s = special.chdtri(m, 1 - (np.arange(100) + 0.5) / 100)
    half = (rope / tau)[..., None] - (c1 * np.sqrt(g))[..., None] * np.sqrt(s)
    return (np.where(half > 0, 2 * special.ndtr(half) - 1, 0.0).mean(axis=-1) * wts).sum(axis=-1)


@pytest.mark.parametrize("n_a,n_b,target", [(2, 2, 0.05 / 12), (3, 3, 0.05 / 91), (3, 3, 0.05), (15, 15, 0.05 / 6),
                                            (3, 7, 0.01)])
def test_level_for_equals_the_direct_computation(n_a, n_b, target):
    assert bf.level_for(target, n_a, n_b) == pytest.approx(_oracle_level_for(target, n_a, n_b), rel=1e-6)


@pytest.mark.parametrize("n", [2, 3, 15])
def test_planning_powers_equal_the_direct_computation(n):
    sd_a, sd_b = np.array([1.0, 0.1, 2.0, 0.5]), np.array([1.0, 2.0, 0.1, 0.5])  # SD ratios 1, 1/20, 20, 1
    for level in (0.05, 0.05 / 91):
        np.testing.assert_allclose(planning.power_difference(n, sd_a, sd_b, 1.0, level),
                                   _oracle_power_difference(n, sd_a, sd_b, 1.0, level), rtol=0, atol=1e-9)
        np.testing.assert_allclose(planning.power_equivalence(n, sd_a, sd_b, 1.0, level),
                                   _oracle_power_equivalence(n, sd_a, sd_b, 1.0, level), rtol=0, atol=1e-9)


def test_windowed_size_bounds_the_direct_sum_from_above_within_its_tolerance():
    n_a, n_b, w = 4, 4, 1e-4
    crit = bf.welch_crit(np.array([w]), n_a, n_b, special.expit(bf.logit_grid(n_a, n_b)))[0]
    rows = bf._SizeRows(n_a, n_b, np.array([-20.0, -3.0, 0.0, 2.5, 25.0]))
    direct = bf.rejection_probability(crit, n_a, n_b, rows.shifts)
    for tol in (1e-12 * w, 1e-6 * w):
        fast = rows.size(crit, tol)
        assert np.all(fast >= direct - 1e-15 * direct) and np.all(fast <= direct + tol)
    start, length = bf._windows(rows.masses, 1e-6 * w)
    assert length < rows.w.shape[1]  # the window leaves cells out at this tolerance


def test_trials_equal_the_values_of_the_direct_code():
    """At 0.05/12: numbers computed by the direct (whole-grid) code; whole numbers, so they must agree exactly."""
    sd_a, sd_b = np.array([0.4, 0.1, 1.0, 3.0]), np.array([0.4, 2.0, 1.0, 0.15])
    n_a, n_b = np.array([3, 2, 15, 5]), np.array([3, 4, 15, 5])
    got = planning.trials_to_decide(sd_a, sd_b, n_a, n_b, 1.0, 0.05 / 12)
    eq = planning.trials_for_equivalence(sd_a, sd_b, n_a, n_b, 1.0, 0.05 / 12)
    assert [a.tolist() for a in got] == [[8, 60, 30, 129], [6, 31, 23, 68], [19, 284, 43, 469]]
    assert [a.tolist() for a in eq] == [[8, 66, 33, 143], [6, 34, 25, 75], [21, 316, 48, 523]]
