"""The audit's point estimates equal rliable's definitions (rliable is a test dependency only: its bootstrap stack is
not imported by dganalysis)."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.stats.improvement import iqm, probability_of_improvement


def test_iqm_and_poi_equal_rliables():
    metrics = pytest.importorskip("rliable.metrics", reason="rliable is in the test extra: pip install -e .[test]")
    rng = np.random.default_rng(4)
    for runs, tasks in ((3, 7), (5, 2), (10, 4)):
        x, y = rng.normal(size=(runs, tasks)), rng.normal(size=(runs, tasks))
        assert float(iqm(x)) == pytest.approx(float(metrics.aggregate_iqm(x)), abs=1e-12)
        assert float(probability_of_improvement(x, y)) == pytest.approx(
            float(metrics.probability_of_improvement(x, y)), abs=1e-12)
