"""dganalysis.stats.improvement: rliable's probability of improvement, baycomp's Bayesian signed-rank numbers."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.stats.improvement import probability_of_improvement, signed_rank_probs, sweep_intervals


def test_probability_of_improvement_is_rliables_over_leading_axes():
    from rliable import metrics

    rng = np.random.default_rng(5)
    x = np.round(rng.normal(60, 2, (4, 3, 7)), 0)  # (replicates, runs, tasks), ties
    y = np.round(rng.normal(59, 2, (4, 5, 7)), 0)
    got = probability_of_improvement(x, y)
    assert got.shape == (4,)
    for r in range(4):
        assert got[r] == pytest.approx(float(metrics.probability_of_improvement(x[r], y[r])), abs=1e-15)


def test_sweep_intervals_bracket_the_point_estimates_and_are_seeded():
    rng = np.random.default_rng(8)
    x, y = rng.normal(61, 1, (3, 7)), rng.normal(60, 1, (3, 7))
    a = sweep_intervals(x, y, np.random.default_rng(0), 500, 0.95)
    assert a == sweep_intervals(x, y, np.random.default_rng(0), 500, 0.95)
    assert a[0] <= probability_of_improvement(x, y) <= a[1] and a[2] <= a[3]


def test_sweep_intervals_are_the_bootstrap_se_with_t():
    """The default interval, written out: the estimate ∓ t on 2(m − 1) df × √(m/(m − 1)) × the SD of the stratified
    bootstrap replicates (the same draws as ``method="percentile"``, whose ends are their 2.5% and 97.5% quantiles);
    the PoI clipped to [0, 1]; NaN with one run; an unknown method is refused."""
    from scipy import stats

    from dganalysis.stats.improvement import _stratified, iqm

    rng = np.random.default_rng(9)
    x, y = rng.normal(60.5, 1, (3, 7)), rng.normal(60, 1, (3, 7))
    got = sweep_intervals(x, y, np.random.default_rng(1), 300, 0.9)
    r = np.random.default_rng(1)
    xb, yb = _stratified(x, r, 300), _stratified(y, r, 300)
    poi_b, iqm_b = probability_of_improvement(xb, yb), iqm(xb - yb.mean(axis=-2, keepdims=True))
    q = stats.t.ppf(0.95, 4) * np.sqrt(3 / 2)
    poi, d = float(probability_of_improvement(x, y)), float(iqm(x - y.mean(axis=0)))
    want = (max(poi - q * poi_b.std(), 0), min(poi + q * poi_b.std(), 1), d - q * iqm_b.std(), d + q * iqm_b.std())
    assert got == pytest.approx(want, rel=1e-12)
    pct = sweep_intervals(x, y, np.random.default_rng(1), 300, 0.9, method="percentile")
    assert pct == pytest.approx((*np.quantile(poi_b, [0.05, 0.95]), *np.quantile(iqm_b, [0.05, 0.95])), rel=1e-12)
    far = sweep_intervals(x + 50, y, np.random.default_rng(1), 300, 0.9)
    assert far[:2] == (1.0, 1.0)  # every run wins: SE 0, [1, 1]
    assert np.isnan(sweep_intervals(x[:1], y, np.random.default_rng(1), 300, 0.9)).all()
    with pytest.raises(ValueError, match="parameter 'method'"):
        sweep_intervals(x, y, np.random.default_rng(1), 300, 0.9, method="bca")


@pytest.mark.parametrize("rope", [1.0, 0.0])
def test_signed_rank_probs_are_baycomps(rope):
    """The vectorised sampler gives baycomp.two_on_multiple's probabilities, the same numbers: random paired means
    rounded to 0.1 (differences on the ±rope edge, tied sums), 2 to 40 datasets, several seeds and sample sizes."""
    import baycomp

    rng = np.random.default_rng(6)
    for _ in range(25):
        n = int(rng.integers(2, 41))
        x = np.round(rng.normal(60, 5, n), 1)
        y = np.round(x + rng.normal(0.3, 1.0, n), 1)
        seed, nsamples = int(rng.integers(0, 1000)), int(rng.choice([1, 7, 500, 3000]))
        want = baycomp.two_on_multiple(x, y, rope=rope, random_state=seed, nsamples=nsamples)
        got = signed_rank_probs(x, y, rope, nsamples, seed)
        assert got == tuple(want), (n, seed, nsamples, got, want)
    with pytest.raises(ValueError, match="rope ≥ 0"):
        signed_rank_probs(np.zeros(3), np.ones(3), -1.0, 10, 0)
