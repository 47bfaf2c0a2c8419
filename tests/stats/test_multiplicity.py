"""Holm and the joint step-down over difference and equivalence hypotheses."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from dganalysis.stats.multiplicity import adjust_pvalues, holm, joint_step_down
from tests._holm_reference import statsmodels_holm


def test_joint_step_down_without_equivalence_is_holm():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=(30, 9)) ** 3
    p[3, 2] = np.nan
    d, e = joint_step_down(p, np.full_like(p, np.nan))
    np.testing.assert_array_equal(np.isnan(d), np.isnan(p))
    np.testing.assert_allclose(d[~np.isnan(p)], holm(p)[~np.isnan(p)])
    assert np.isnan(e).all()
    row = p[0]
    np.testing.assert_allclose(holm(row), statsmodels_holm(row))


def test_joint_step_down_counts_a_claim_until_both_hypotheses_fall():
    # sorted: d0 .001, e2 .004, e1 .01, d1 .02 (no claim complete before: ×3), then d2 (claim 1 done: ×2), e0 (×1)
    d, e = joint_step_down(np.array([0.001, 0.02, 0.5]), np.array([0.9, 0.01, 0.004]))
    np.testing.assert_allclose(d, [0.003, 0.06, 1.0])
    np.testing.assert_allclose(e, [1.0, 0.03, 0.012])


def test_joint_step_down_is_never_below_holm_over_the_claims_of_each_kind():
    rng = np.random.default_rng(1)
    pd_, pe = rng.uniform(size=(200, 6)) ** 4, rng.uniform(size=(200, 6)) ** 4
    d, e = joint_step_down(pd_, pe)
    assert np.all(d >= holm(pd_) - 1e-12) and np.all(e >= holm(pe) - 1e-12)


def test_adjust_pvalues_holm_is_statsmodels_to_the_bit_and_other_methods_are_statsmodels():
    """The protocols' entry point: Holm by the vectorised ``holm`` (the same numbers as statsmodels' ``multipletests``,
    ties included), other methods by statsmodels; NaN out of the family; ``"none"`` the raw p-values."""
    rng = np.random.default_rng(2)
    for i in range(300):
        p = rng.uniform(size=int(rng.integers(1, 30))) ** rng.uniform(0.3, 5)
        if i % 3 == 0:
            p = np.round(p, 2)  # ties
        want = statsmodels_holm(p)
        np.testing.assert_array_equal(adjust_pvalues(p), want)
        np.testing.assert_array_equal(holm(p), want)
    p = np.array([0.01, np.nan, 0.04, 0.03])
    ok = ~np.isnan(p)
    for method in ("bonferroni", "fdr_bh", "hommel"):
        got = adjust_pvalues(p, 0.05, method)
        assert np.isnan(got[1])
        np.testing.assert_array_equal(got[ok], multipletests(p[ok], alpha=0.05, method=method)[1])
    np.testing.assert_array_equal(adjust_pvalues(p, method="none"), p)
    assert np.isnan(adjust_pvalues(np.array([np.nan]))).all()
    with pytest.raises(ValueError, match="alpha"):
        adjust_pvalues(p, alpha=1.5)
