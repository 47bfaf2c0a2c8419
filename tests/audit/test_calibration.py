"""Calibration of the audit's verdicts on SIMULATED data (:mod:`_calibration_scenarios`): the family-wise error of
better/worse verdicts under the null is at most α (within Monte-Carlo error) in every scenario of SD ratios 1, 3, 10,
30, 100 × n = 3, 5, 10 trials × published rounding on/off × families of 5 and 91 claims; power at planted effects at
equal variances; equivalence at the ROPE's edge; difference and equivalence together. The measured rates, with more
simulations, are in docs/audit.md (bench/audit_calibration.py)."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.audit.claims import Summaries, decide
from dganalysis.stats.multiplicity import holm
from tests._holm_reference import statsmodels_holm
from tests.audit._calibration_scenarios import (
    ALPHA,
    BETTER,
    EQUIV,
    WORSE,
    decide_sim,
    fwer,
    mc_bound,
    null_fwer,
    planted_power,
    simulate,
)

SIMS = {5: 3000, 91: 1000}


@pytest.mark.parametrize("rounding", [False, True], ids=["exact", "rounded"])
@pytest.mark.parametrize("m", [5, 91])
@pytest.mark.parametrize("n", [3, 5, 10])
def test_null_fwer_at_most_alpha_for_every_variance_ratio(n, m, rounding):
    sims = SIMS[m]
    rates = {r: null_fwer(sims, m, n, r, rounding, seed=100 * n + m + int(rounding) + int(r)) for r in
             (1, 3, 10, 30, 100)}
    print(f"\nnull FWER, n={n}, family {m}, {'rounded' if rounding else 'exact'}: "
          + ", ".join(f"SD ratio {r}: {v:.4f}" for r, v in rates.items()))
    assert max(rates.values()) <= mc_bound(sims), rates


def test_welch_uncalibrated_would_fail_where_the_calibrated_test_holds():
    """The scenario of the report that motivated the calibration: one algorithm vs ERM on 5 datasets, n = 3, the
    algorithm's trial SD 10× ERM's. Welch's own p (p_welch, Holm) errs in far more than α of families."""
    d = decide_sim(*simulate(4000, 5, 3, 10.0, seed=7))
    welch = (holm(d.p_welch) < ALPHA).any(axis=-1).mean()
    assert welch > mc_bound(4000) and fwer(d.verdict) <= mc_bound(4000)


@pytest.mark.parametrize("n,effect,floor", [(3, 6.0, 0.3), (5, 3.0, 0.5), (10, 2.0, 0.6)])
def test_power_at_planted_effects_equal_variances(n, effect, floor):
    """A valid test that never decides is no use: in the paper's family (5 claims) planted effects are decided."""
    p = planted_power(1000, 5, n, effect, rounding=False, seed=n)
    print(f"\npower, n={n}, Δ = {effect} trial SDs, family of 5: {p:.3f}")
    assert p > floor


def test_no_wrong_sign_verdicts_at_planted_effects():
    alg, base = simulate(2000, 91, 3, 1.0, effect=np.where(np.arange(13) % 2, 8.0, -8.0), base_sd=np.ones(7))
    d = decide_sim(alg, base)
    sign = np.tile(np.where(np.arange(13) % 2, 1, -1), 7)
    wrong = ((d.verdict == WORSE) & (sign > 0)) | ((d.verdict == BETTER) & (sign < 0))
    assert wrong.any(axis=-1).mean() <= mc_bound(2000, 0.01)
    assert (d.verdict != 3).mean() > 0.02  # some are decided


@pytest.mark.parametrize("rope", [0.5, 1.0])
@pytest.mark.parametrize("sd_ratio", [1.0, 10.0])
def test_equivalence_at_the_rope_edge_at_most_alpha(rope, sd_ratio):
    sims = 3000
    signs = np.where(np.arange(5) % 2, 1.0, -1.0)[:, None]
    d = decide_sim(*simulate(sims, 5, 3, sd_ratio, effect=rope * signs, seed=4, base_sd=np.full(5, 0.05)), rope=rope)
    rate = fwer(d.verdict, (EQUIV,))
    print(f"\n|Δ| = rope = {rope}, SD ratio {sd_ratio}: equivalence claimed in {rate:.4f} of families")
    assert rate <= mc_bound(sims)
    d0 = decide_sim(*simulate(1000, 5, 3, 1.0, effect=0.0, seed=5, base_sd=np.full(5, 0.05)), rope=rope)
    assert (d0.verdict == EQUIV).mean() > 0.5  # far inside the rope it is found


def test_difference_and_equivalence_together_at_most_alpha():
    """The configuration where two separate Holm runs err about 2α: one claim at Δ = 0, the others exactly at the
    ROPE's edge with tiny SEs. The joint step-down keeps any false verdict at α."""
    sims, rope = 6000, 1.0
    effect = np.array([0.0, 1.0, -1.0, 1.0, -1.0])[:, None]
    sd = np.array([1.0, 0.02, 0.02, 0.02, 0.02])
    d = decide_sim(*simulate(sims, 5, 3, 1.0, effect=effect, seed=11, base_sd=sd), rope=rope)
    false_diff = np.isin(d.verdict[:, 0], (BETTER, WORSE))
    false_equiv = (d.verdict[:, 1:] == EQUIV).any(axis=-1)
    rate = float((false_diff | false_equiv).mean())
    print(f"\nfalse difference or equivalence (joint step-down): {rate:.4f}")
    assert rate <= mc_bound(sims)


def test_table_face_value_reading_fails_where_the_rounding_box_holds():
    """Published tables: a "± 0.0" read as zero errs in most families; the rounding box keeps the error ≤ α."""
    sims = 1000
    d = decide_sim(*simulate(sims, 91, 3, 1.0, seed=6, base_sd=np.array([0.05, 0.03, 0.3, 0.2, 0.1, 0.25, 0.04])),
                   rounding=True)
    assert fwer(d.verdict) <= mc_bound(sims)
    assert fwer(d.verdict_nominal) > 2 * ALPHA


def test_holm_matches_statsmodels_row_by_row():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=(40, 17)) ** 3
    p[5, [2, 9]] = np.nan
    got = holm(p)
    for row, prow in zip(got, p, strict=True):
        ok = ~np.isnan(prow)
        np.testing.assert_allclose(row[ok], statsmodels_holm(prow[ok]))
        assert np.isnan(row[~ok]).all()


def test_paired_claims_exact_for_any_variances_and_correlation():
    """Paired differences over shared trial seeds: a t-test on n − 1 df, exact whatever the arms' SDs and their
    correlation; its size is α (one claim, 20,000 SIMULATED pairs of 3 trials, SD ratio 30, correlation 0.9)."""
    rng = np.random.default_rng(3)
    sims, n = 20000, 3
    z = rng.standard_normal((sims, 1, n))
    a = 30 * (0.9 * z + np.sqrt(1 - 0.81) * rng.standard_normal((sims, 1, n)))
    b = z
    d = a - b
    from dganalysis.audit.claims import Paired

    dec = decide(Summaries(a.mean(-1), a.std(-1, ddof=1) / np.sqrt(n), n),
                 Summaries(b.mean(-1), b.std(-1, ddof=1) / np.sqrt(n), n), alpha=ALPHA,
                 paired=Paired(d.mean(-1), d.std(-1, ddof=1) / np.sqrt(n), n))
    assert dec.paired.all()
    size = float(np.isin(dec.verdict, (BETTER, WORSE)).mean())
    assert abs(size - ALPHA) <= 3 * np.sqrt(ALPHA * (1 - ALPHA) / sims)
