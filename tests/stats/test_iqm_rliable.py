"""The audit's point estimates against rliable's definitions (rliable is a test dependency only: its bootstrap stack is
not imported by dganalysis): the probability of improvement equals rliable's; the IQM is the middle 50% with
fractional weights at the quartiles (Agarwal et al. 2021's definition), which equals rliable's ``aggregate_iqm``
(``scipy.stats.trim_mean``, whole values cut) exactly when 4 divides the number of values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dganalysis.stats.improvement import iqm, probability_of_improvement, table_intervals
from dganalysis.stats.intervals import trimmed_mean, trimmed_mean_t


def test_iqm_hand_computed_n7_and_n8():
    """n = 7: a quarter is 1.75 values, so the 2nd and 6th smallest keep weight ¼ and the middle three 1 (total 3.5):
    (¼·1 + 2 + 4 + 8 + ¼·16)/3.5 = 18.25/3.5. scipy's trim_mean cuts 1 of 7 from each end: 31/5 = 6.2 (what the
    table IQM over 7 datasets used to be). n = 8: the middle four, 7.5, both ways."""
    x7 = np.array([100.0, 0, 16, 1, 8, 2, 4])  # unsorted on purpose
    assert float(trimmed_mean(x7)) == pytest.approx(18.25 / 3.5, abs=1e-12)
    assert float(iqm(x7[None, :])) == pytest.approx(18.25 / 3.5, abs=1e-12)  # one run × 7 datasets: a table
    assert float(stats.trim_mean(x7, 0.25)) == pytest.approx(6.2)
    x8 = np.array([0.0, 1, 2, 4, 8, 16, 32, 100])
    assert float(trimmed_mean(x8)) == pytest.approx(7.5, abs=1e-12) == float(stats.trim_mean(x8, 0.25))
    # exactly half the mass kept for every n; the interval brackets the reported IQM
    for n in range(1, 30):
        edges = np.arange(n + 1) / n
        assert np.clip(np.minimum(edges[1:], 0.75) - np.maximum(edges[:-1], 0.25), 0, None).sum() == pytest.approx(0.5)
    est, lo, hi = trimmed_mean_t(x7)
    assert est == pytest.approx(18.25 / 3.5) and lo < est < hi
    assert table_intervals(x7, np.zeros(7), 0.95)[2:] == pytest.approx((lo, hi))
    with pytest.raises(ValueError, match="trim"):
        trimmed_mean(x7, 0.5)


def test_iqm_and_poi_against_rliable():
    metrics = pytest.importorskip("rliable.metrics", reason="rliable is in the test extra: pip install -e .[test]")
    rng = np.random.default_rng(4)
    for runs, tasks in ((3, 7), (5, 2), (10, 4), (2, 6), (4, 7)):
        x, y = rng.normal(size=(runs, tasks)), rng.normal(size=(runs, tasks))
        if runs * tasks % 4 == 0:  # trim·n whole: the same values cut
            assert float(iqm(x)) == pytest.approx(float(metrics.aggregate_iqm(x)), abs=1e-12)
        else:
            assert float(iqm(x)) != pytest.approx(float(metrics.aggregate_iqm(x)), abs=1e-9)
        assert float(probability_of_improvement(x, y)) == pytest.approx(
            float(metrics.probability_of_improvement(x, y)), abs=1e-12)
