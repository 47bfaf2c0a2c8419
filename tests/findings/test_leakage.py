"""Yu et al. 2024's leakage findings (dganalysis.findings.leakage): calibration on SIMULATED frames, power against
the design's simulated power, zero variance, partial pairing, frame validation, and the frame builders."""

import functools
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dganalysis.findings import leakage as lk
from dganalysis.findings.power import mc_se, simulated_power, verdict_rates
from dganalysis.studies.design import leakage_oracle_design
from dganalysis.validation import ConfigError

ALPHA, REPS, N = 0.05, 300, 5
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"

#: name -> (decision, simulate, rope, sd used in the null checks, paper's direction, design key)
FINDINGS = {
    "lp_ft": (lk.lp_ft_leakage, lk.simulate_lp_ft_leakage, lk.ROPE_LP_FT, 2.0, +1, "LPFT"),
    "held_out_leaks": (lk.held_out_leaks, lk.simulate_held_out_leaks, lk.ROPE_LEAK, 0.05, +1, "C1"),
    "held_out_falls": (lk.held_out_leakage_falls, lk.simulate_held_out_leakage_falls, lk.ROPE_FALL, 0.04, +1, "C2"),
    "literal_small": (lk.literal_leakage_small, lk.simulate_literal_leakage_small, lk.ROPE_SMALL, 1.0, 0, "C3"),
    "literal_falls": (lk.literal_leakage_falls, lk.simulate_literal_leakage_falls, lk.ROPE_FALL, 0.04, +1, "C4"),
}
PAIRED = {"lp_ft": ("supervised_lp", "supervised_ft"), "held_out_leaks": ("oracle_k1", "iid"),
          "held_out_falls": ("leak_k1", "leak_k3"), "literal_small": ("oracle_k1", "iid"),
          "literal_falls": ("leak_k2", "leak_k3")}


def rate(name: str, effect: float, verdict: str, seed: int) -> float:
    decide, simulate, _, sd, _, _ = FINDINGS[name]
    return verdict_rates(decide, functools.partial(simulate, effect=effect, sd=sd), N, REPS, seed).rate(verdict)


def bound() -> float:
    return ALPHA + 3 * mc_se(ALPHA, REPS)


@pytest.mark.parametrize("name", list(FINDINGS))
def test_nulls_are_rarely_reproduced(name):
    """Where the paper is wrong, "reproduced" in at most α (+3 MC SE) of SIMULATED data sets: a difference claim at
    Δ = 0 and at the ROPE's edge the other way; the equivalence claim (direction 0) at either edge of its ROPE."""
    _, _, rope, _, direction, _ = FINDINGS[name]
    nulls = (0.0, -rope) if direction else (-rope, rope)
    for i, effect in enumerate(nulls):
        assert rate(name, effect, REPRODUCED, seed=10 + i) <= bound(), (name, effect)


@pytest.mark.parametrize("name", list(FINDINGS))
def test_paper_edge_is_rarely_refuted(name):
    """Where the paper is (just) right, "not reproduced" in at most α (+3 MC SE): a difference claim at the ROPE's
    edge in the paper's direction; the equivalence claim at Δ = 0."""
    _, _, rope, _, direction, _ = FINDINGS[name]
    assert rate(name, rope if direction else 0.0, NOT_REPRODUCED, seed=20) <= bound()


def design_claims():
    p = SimpleNamespace(sweep=SimpleNamespace(n_trials=4, steps=5000),
                        oracle=SimpleNamespace(n_trials=4, steps=5000, splits=[{"train": ["a"], "test": ["b"]}]))
    return {c.key: c for c in leakage_oracle_design(p)}


@pytest.mark.parametrize("name", list(FINDINGS))
def test_planted_effect_matches_the_design_power(name):
    """At the design's effect and SD, the share reproduced on fresh SIMULATED data sets (another seed) is the
    design's simulated power within 3 MC SE (+0.02)."""
    c = design_claims()[FINDINGS[name][5]]
    design = simulated_power(c.decide, c.simulate, c.n, 400, seed=0)
    fresh = verdict_rates(c.decide, c.simulate, c.n, REPS, seed=7)
    tol = 3 * math.hypot(mc_se(design.power, 400), mc_se(fresh.power, REPS)) + 0.02
    assert abs(fresh.power - design.power) <= tol, (design.power, fresh.power)


@pytest.mark.parametrize("name", list(FINDINGS))
def test_zero_variance_is_undecided(name):
    decide, simulate, _, _, _, _ = FINDINGS[name]
    frame = simulate(np.random.default_rng(0), 4, effect=1.5, sd=0.0)  # identical trial-to-trial differences
    res = decide(frame)
    assert res.verdict == "not decided" and all(c.outcome == "undecided" for c in res.claims)
    assert "zero variance" in res.why


@pytest.mark.parametrize("name", list(FINDINGS))
def test_partly_shared_seeds_are_paired_on_the_shared(name):
    decide, simulate, _, _, _, _ = FINDINGS[name]
    arm, base = PAIRED[name]
    frame = simulate(np.random.default_rng(1), 6, effect=2.0, sd=1.0)
    frame.loc[frame.index[0], arm] = np.nan  # trial 0 lacks the arm, trial 5 the base: 4 shared seeds
    frame.loc[frame.index[5], base] = np.nan
    c = decide(frame).claims[0]
    assert (c.n_paired, c.dropped) == (4, 2) and c.test.startswith("paired t")
    assert "4 paired trials, 2 unpaired dropped" in decide(frame).ours()


@pytest.mark.parametrize("name", list(FINDINGS))
def test_missing_columns_are_named(name):
    decide, simulate, _, _, _, _ = FINDINGS[name]
    arm, _ = PAIRED[name]
    frame = simulate(np.random.default_rng(2), 3, effect=1.0, sd=1.0)
    with pytest.raises(ConfigError, match=f"lacks columns \\['{arm}'\\]"):
        decide(frame.drop(columns=arm))
    with pytest.raises(ConfigError, match="no rows"):
        decide(frame.iloc[:0])


def test_one_trial_is_not_decided_and_groups_form_one_family():
    one = lk.simulate_lp_ft_leakage(np.random.default_rng(3), 1, effect=30.0, sd=1.0)
    res = lk.lp_ft_leakage(one)
    assert res.verdict == "not decided" and "a t-test needs at least 2" in res.why
    two = lk.held_out_leaks(lk.simulate_held_out_leaks(np.random.default_rng(4), 6, effect=5.0, sd=1.0, groups=2))
    assert res.m == 0 and two.m == 2 and [c.name.split(":")[0] for c in two.claims] == ["train g0", "train g1"]
    assert two.verdict == "reproduced"
    big = lk.literal_leakage_small(lk.simulate_literal_leakage_small(np.random.default_rng(5), 6, effect=5.0, sd=1.0))
    assert big.verdict == "not reproduced"  # decided above Table 4's largest leakage


def test_frame_builders():
    rows = []
    for t in (0, 1):
        rows.append(dict(train_domains="a", trial_seed=t, k=0, row="IID", Avg=50.0 + t, leakage=0.0))
        for k, leak in ((1, 3.0), (2, 2.0), (3, 1.0 + t)):
            rows.append(dict(train_domains="a", trial_seed=t, k=k, row=f"K={k}", Avg=50.0 + t + leak, leakage=leak))
    wide = lk.oracle_trials(pd.DataFrame(rows)).set_index("trial_seed")
    assert wide.loc[1, ["iid", "oracle_k1", "leak_k1", "leak_k2", "leak_k3"]].tolist() == [51.0, 54.0, 3.0, 2.0, 2.0]
    sel = pd.DataFrame([dict(pretraining=p, mode=m, trial_seed=t, domain=d, acc=a)
                        for p, base in (("sup", 0.8), ("ssl", 0.5)) for m, dm in (("LP", 0.1), ("FT", 0.0))
                        for t in (0, 1) for d, a in (("x", base + dm), ("y", base + dm + 0.02 * t))])
    frame = lk.lp_ft_trials(sel, "sup", "ssl").set_index("trial_seed")
    assert frame.loc[1, "supervised_lp"] == pytest.approx(91.0) and frame.loc[0, "self_supervised_ft"] == pytest.approx(50.0)
    with pytest.raises(ConfigError, match="no runs of pretraining \\['other'\\]"):
        lk.lp_ft_trials(sel, "sup", "other")
    with pytest.raises(ConfigError, match="lacks columns \\['k'\\]"):
        lk.oracle_trials(pd.DataFrame(rows).drop(columns="k"))
