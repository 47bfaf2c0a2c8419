"""Notebook 07's findings (dganalysis.findings.worst_case) decided by the engine: error rates at SIMULATED nulls,
power against the design's own simulation, zero variance, partly shared units, missing columns."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from dganalysis.findings import power
from dganalysis.findings import worst_case as wc
from dganalysis.studies.design import worst_case_design
from dganalysis.studies.params import WorstCaseParams
from dganalysis.validation import ConfigError

ALPHA = 0.05
REPS = 300
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"
ROPE = wc.LOG_ROPE


def bound(reps=REPS):
    """α + 3 Monte-Carlo SEs: the most a calibrated rate may read."""
    return ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / reps)


def rate(decide, simulate, n, verdict, seed=1, reps=REPS):
    return power.verdict_rates(decide, simulate, n, reps, seed).rate(verdict)


def design(key):
    return {c.key: c for c in worst_case_design(WorstCaseParams())}[key]


def planted(key, n, reps=REPS):
    """The decision's reproduced rate at the design's effect (seed 1) against the design's own simulated power
    (seed 0, as design_power draws it): within 3 MC SEs + 0.02."""
    c = design(key)
    ref = power.simulated_power(c.decide, c.simulate, n, reps, seed=0)
    got = power.verdict_rates(c.decide, c.simulate, n, reps, seed=1)
    se = math.sqrt(max(ref.power * (1 - ref.power), 0.01) / reps)
    assert abs(got.power - ref.power) <= 3 * math.sqrt(2) * se + 0.02, (got.power, ref.power)
    return got.power


# ------------------------------------------------------------------------------------------------- (a)
def sim_a(effect, sd=0.44):
    return lambda rng, n: wc.simulate_high_near_source(rng, n, effect=effect, sd=sd)


@pytest.mark.parametrize("effect", [0.0, -ROPE])
def test_a_null_reproduced_rate(effect):
    assert rate(wc.high_near_source, sim_a(effect), 6, REPRODUCED) <= bound()


def test_a_rope_edge_not_reproduced_rate():
    assert rate(wc.high_near_source, sim_a(ROPE), 6, NOT_REPRODUCED) <= bound()


def test_a_planted_effect_matches_design():
    assert planted("a", 4) > 0.3


def test_a_zero_variance_and_pairing():
    same = pd.DataFrame({"model": list("abcd"), "nominal_ce": 0.05, "wc_ce": 0.2})
    res = wc.high_near_source(same)
    assert res.verdict == "not decided" and res.claims[0].outcome == "undecided" and "zero variance" in res.why
    fr = wc.simulate_high_near_source(np.random.default_rng(0), 8, effect=0.75, sd=0.44)
    fr.loc[0, "wc_ce"] = np.nan
    fr.loc[1, "nominal_ce"] = np.nan
    c = wc.high_near_source(fr).claims[0]
    assert (c.n_paired, c.dropped) == (6, 2) and "paired" in c.test
    d = np.log(fr.wc_ce / fr.nominal_ce).dropna() - math.log(2)
    assert c.estimate == pytest.approx(d.mean())


def test_a_errors():
    with pytest.raises(ConfigError, match=r"lacks columns \['wc_ce'\]"):
        wc.high_near_source(pd.DataFrame({"model": ["a"], "nominal_ce": [0.1]}))
    with pytest.raises(ConfigError, match="losses > 0"):
        wc.high_near_source(pd.DataFrame({"model": ["a", "b"], "nominal_ce": [0.1, 0.0], "wc_ce": [0.3, 0.2]}))
    with pytest.raises(ConfigError, match="one row per model"):
        wc.high_near_source(pd.DataFrame({"model": ["a", "a"], "nominal_ce": [0.1, 0.2], "wc_ce": [0.3, 0.2]}))


# ------------------------------------------------------------------------------------------------- (b)
def sim_b(effect, sd=0.17):
    return lambda rng, n: wc.simulate_not_overestimate(rng, n, effect=effect, sd=sd)


@pytest.mark.parametrize("effect", [ROPE, -ROPE])
def test_b_rope_edges_reproduced_rate(effect):
    """Direction 0 (the paper: no over-estimate): "reproduced" is equivalence, its nulls are the ROPE's edges."""
    assert rate(wc.not_overestimate, sim_b(effect), 8, REPRODUCED) <= bound()


def test_b_zero_effect_not_reproduced_rate():
    """At no over-estimate at all, a decided difference (against the paper) is the error."""
    assert rate(wc.not_overestimate, sim_b(0.0), 8, NOT_REPRODUCED) <= bound()


def test_b_planted_effect_matches_design():
    assert planted("b", 6) > 0.3


def test_b_units_are_models_and_zero_variance():
    cmp = pd.DataFrame({"model": ["WM#0"] * 3 + ["G2DM#0"] * 3, "rho_input": [0.0, 0.5, 1.0] * 2,
                        "nominal": 0.1, "input_primal": [0.1, 0.5, 0.9] * 2, "rep_wc": [0.1, 0.6, 1.1] * 2})
    # the ρ_input = 0 rows are not units; both models reach 80% of their excess exactly: zero variance over models
    res = wc.not_overestimate(cmp)
    assert res.claims[0].outcome == "undecided" and "zero variance: the 2 per-unit differences" in res.why
    fr = wc.simulate_not_overestimate(np.random.default_rng(0), 6, effect=0.0, sd=0.17)
    fr.loc[3, "input_primal"] = np.nan  # one radius of model m0 missing: m0 is the mean of its other three
    c = wc.not_overestimate(fr).claims[0]
    assert c.n == 6 and c.units == "models"
    # an input excess ≤ 0 is floored at 0.1% of the representation excess (a large over-estimate), not dropped
    fr2 = fr.dropna().copy()
    fr2.loc[fr2.index[0], "input_primal"] = fr2.loc[fr2.index[0], "nominal"]
    c2 = wc.not_overestimate(fr2).claims[0]
    assert c2.n == 6 and c2.estimate > c.estimate + math.log(100) / 3 / 6


def test_b_errors():
    with pytest.raises(ConfigError, match=r"lacks columns \['rep_wc'\]"):
        wc.not_overestimate(pd.DataFrame({"model": ["a"], "rho_input": [1.0], "nominal": [0.1], "input_primal": [1]}))


# ------------------------------------------------------------------------------------------------- (c)
def sim_c(effect):
    return lambda rng, n: wc.simulate_losses_agree(rng, n, effect=effect)


@pytest.mark.parametrize("effect", [0.0, -0.5])
def test_c_null_reproduced_rate(effect):
    """No ROPE for a rank correlation: the nulls are no association and the opposite one (−0.5, the most negative
    a common correlation of three can be)."""
    assert rate(wc.losses_agree, sim_c(effect), 6, REPRODUCED, reps=200) <= bound(200)


def test_c_null_not_reproduced_rate():
    assert rate(wc.losses_agree, sim_c(0.0), 6, NOT_REPRODUCED, reps=200) <= bound(200)


def test_c_planted_effect_matches_design():
    assert planted("c", 6, reps=200) > 0.3


def test_c_zero_variance_and_missing_values():
    same = pd.DataFrame({"model": list("abcde"), "wc_ce": 0.2, "wc_hinge": 0.3, "wc_01": 0.1})
    res = wc.losses_agree(same)
    assert res.verdict == "not decided" and all(c.outcome == "undecided" for c in res.claims)
    assert res.why.count("zero variance") == 3 and res.m == 0
    fr = wc.simulate_losses_agree(np.random.default_rng(0), 7, effect=0.97)
    fr.loc[2, "wc_01"] = np.nan
    res = wc.losses_agree(fr)
    assert [c.n for c in res.claims] == [7, 6, 6] and res.m == 3
    flat = fr.assign(wc_hinge=0.5)  # one flat loss: its two claims untested, the third tested in a family of 1
    res = wc.losses_agree(flat)
    assert res.m == 1 and [c.outcome for c in res.claims][1:] == ["undecided", "undecided"]


def test_c_errors():
    with pytest.raises(ConfigError, match=r"lacks columns \['wc_hinge', 'wc_01'\]"):
        wc.losses_agree(pd.DataFrame({"model": ["a"], "wc_ce": [0.1]}))


# ------------------------------------------------------------------------------------------------- (d)
def sim_d(effect):
    return lambda rng, n: wc.simulate_predicts_better(rng, n, effect=effect)


@pytest.mark.parametrize("effect", [0.0, -0.3])
def test_d_null_reproduced_rate(effect):
    assert rate(wc.predicts_better, sim_d(effect), 10, REPRODUCED) <= bound()


def test_d_null_not_reproduced_rate():
    assert rate(wc.predicts_better, sim_d(0.0), 10, NOT_REPRODUCED) <= bound()


def test_d_planted_effect_matches_design():
    planted("d", 12)
    assert rate(wc.predicts_better, sim_d(0.45), 30, REPRODUCED, reps=100) > 0.5  # the test can decide


def test_d_statistic_exact_and_monte_carlo():
    fr = wc.simulate_predicts_better(np.random.default_rng(3), 15, effect=0.3)
    c = wc.predicts_better(fr).claims[0]
    want = abs(spearmanr(fr.wc_ce, fr.test_acc)[0]) - abs(spearmanr(fr.nominal_ce, fr.test_acc)[0])
    assert c.estimate == pytest.approx(want) and "exact, 32,768" in c.test and c.n == 15
    # the relabelled statistics are symmetric (swapping all models negates T): p is two-sided and ≥ 2/2^n
    assert c.p >= 2 / 2 ** 15
    big = wc.predicts_better(wc.simulate_predicts_better(np.random.default_rng(3), 16, effect=0.3)).claims[0]
    assert "Monte Carlo" in big.test and big.p >= 1 / 10_000


def test_d_zero_variance_missing_values_and_errors():
    same = pd.DataFrame({"model": list("abcde"), "nominal_ce": 0.05, "wc_ce": 0.2, "test_acc": 0.7})
    res = wc.predicts_better(same)
    assert res.verdict == "not decided" and "zero variance" in res.why and res.m == 0
    fr = wc.simulate_predicts_better(np.random.default_rng(0), 9, effect=0.2)
    fr.loc[4, "test_acc"] = np.nan
    c = wc.predicts_better(fr).claims[0]
    assert c.n == 8 and "256 relabellings" in c.test and "n = 8 models" in (wc.predicts_better(fr).why or "n = 8 models")
    with pytest.raises(ConfigError, match=r"lacks columns \['test_acc'\]"):
        wc.predicts_better(fr.drop(columns="test_acc"))


def test_finding_rows():
    pred = wc.simulate_high_near_source(np.random.default_rng(0), 6, effect=0.75, sd=0.44)
    rows = wc.finding_rows({"a": wc.high_near_source(pred)}, 0.05)
    assert rows[0]["finding"].startswith("worst-case loss is high close to the sources (ρ = 0.05")
    assert rows[0]["decision"].verdict == rows[0]["verdict"]
    with pytest.raises(ConfigError, match="unknown finding keys"):
        wc.finding_rows({"z": rows[0]["decision"]}, 0.05)
