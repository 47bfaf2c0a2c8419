"""Calibration of the dynamic-DG findings' decisions (:mod:`dganalysis.findings.dynamic`) on SIMULATED frames:
the rate of a false "reproduced" at the nulls (no effect; the opposite effect at the ROPE's edge), of a false "not
reproduced" at the paper's effect at the ROPE's edge, the power at the design's effect against the design's own
simulation, zero variance, partly shared seeds and missing columns. Rates over R draws carry MC SE √(p(1−p)/R)."""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dganalysis.findings import dynamic as fd
from dganalysis.findings.power import simulated_power, verdict_rates
from dganalysis.studies.runner import load_params
from dganalysis.studies.study import build_params, design_for
from dganalysis.validation import ConfigError

ROOT = Path(__file__).resolve().parents[2]
ALPHA, ROPE, SD = 0.05, fd.ROPE, 2.0
REPRODUCED, NOT_REPRODUCED = "reproduced", "not reproduced"


def _bound(reps: int, p: float = ALPHA) -> float:
    return p + 3 * math.sqrt(p * (1 - p) / reps)


# the three decisions, each with its simulation at a given effect (points), on small frames
REV = (partial(fd.decide_swap_reversal, alpha=ALPHA),
       lambda effect, offset=0.0: partial(fd.simulate_swap_reversal, effect=effect, offset=offset, sd=SD,
                                          methods=("A", "B", "C"), n_choices=2))
STABLE = (partial(fd.decide_stable_advantage, named=("CORAL",), others=("ERM", "SagNet"), alpha=ALPHA),
          lambda effect: partial(fd.simulate_stable_advantage, effect=effect, sd=SD, named=("CORAL",),
                                 others=("ERM", "SagNet"), n_choices=2))
DPLUS = (partial(fd.decide_domain_plus, base="d0,d1", extended="d0,d1,d2", alpha=ALPHA),
         lambda effect: partial(fd.simulate_domain_plus, effect=effect, sd=SD, methods=("CORAL", "IB_ERM")))
DMINUS = (partial(fd.decide_domain_plus, base="d0,d1", extended="d0,d1,d2", direction=-1, alpha=ALPHA),
          lambda effect: partial(fd.simulate_domain_plus, effect=-effect, sd=SD, methods=("ERM",)))


@pytest.mark.parametrize("case", [STABLE, DPLUS, DMINUS], ids=["stable", "domain+ helps", "domain+ degrades"])
def test_conjunctions_nulls_and_edge(case):
    """effect 0 and the opposite effect at the ROPE's edge: "reproduced" ≤ α + 3 MC SE; the paper's effect at the
    edge: "not reproduced" (equivalence or the other sign decided) ≤ α + 3 MC SE. ``effect`` is in the paper's
    direction."""
    decide, sim = case
    reps, n = 200, 5
    for effect in (0.0, -ROPE):
        r = verdict_rates(decide, sim(effect), n, reps, seed=11)
        assert r.rate(REPRODUCED) <= _bound(reps), (effect, r.rates)
    edge = verdict_rates(decide, sim(ROPE), n, reps, seed=12)
    assert edge.rate(NOT_REPRODUCED) <= _bound(reps), edge.rates
    # a test that can fail: a large effect is reproduced most of the time
    assert verdict_rates(decide, sim(6 * SD), n, 50, seed=13).power > 0.8


def test_reversal_nulls_and_edge():
    """The existential reversal: no pair differs (effect 0), or a stable order at the ROPE's edge (A − B = +rope
    under both choices): "reproduced" ≤ α + 3 MC SE. A reversal of half-swing rope: "not reproduced" (every pair
    decided not to reverse) ≤ α + 3 MC SE."""
    decide, sim = REV
    reps, n = 200, 5
    for effect, offset in ((0.0, 0.0), (0.0, ROPE), (0.0, -ROPE)):
        r = verdict_rates(decide, sim(effect, offset), n, reps, seed=21)
        assert r.rate(REPRODUCED) <= _bound(reps), (effect, offset, r.rates)
    edge = verdict_rates(decide, sim(ROPE), n, reps, seed=22)
    assert edge.rate(NOT_REPRODUCED) <= _bound(reps), edge.rates
    big = verdict_rates(decide, sim(6 * SD), n, 50, seed=23)
    assert big.power > 0.8, big.rates


def test_reversal_rule_by_hand():
    """The existential rule on a hand-made frame: A ahead under c1, behind under c2 (tiny noise) → reproduced,
    with the pair named; a stable order everywhere decided → not reproduced."""
    rows = []
    for s in range(6):
        for c, sign in (("x,y", 1), ("x,z", -1)):
            rows += [dict(method="A", train=c, trial_seed=s, acc=0.6 + sign * 0.1 + 0.001 * (s % 3)),
                     dict(method="B", train=c, trial_seed=s, acc=0.6 + 0.0005 * s)]
    res = fd.decide_swap_reversal(pd.DataFrame(rows))
    assert res.verdict == REPRODUCED and "reversing: A/B" in res.why
    stable = pd.DataFrame([dict(r, acc=r["acc"] + (0.25 if r["method"] == "A" else 0.0)) for r in rows])
    assert fd.decide_swap_reversal(stable).verdict == NOT_REPRODUCED


def _quick_design():
    p = build_params("03_dynamic_dg", load_params("quick", "03_dynamic_dg", ROOT))
    return {c.key: c for c in design_for("03_dynamic_dg", p)}


@pytest.mark.parametrize("key,n", [("D+d2-named", None), ("D+d2-all", None), ("ST-reversal", 12), ("ST-stable", 12)])
def test_planted_design_effect_matches_the_design(key, n):
    """At the design's effect the decision's "reproduced" rate, on a different seed, is within 3 MC SE (+0.02) of
    the design's simulated power (the quick profile's design; its n, or a larger one where the design's power is
    near 0 and would test nothing)."""
    c = _quick_design()[key]
    n = n or c.n
    reps = 200
    design = simulated_power(c.decide, c.simulate, n, reps, seed=0)  # what design_power computes at n
    again = simulated_power(c.decide, c.simulate, n, reps, seed=99)
    se = math.sqrt(design.power * (1 - design.power) / reps + again.power * (1 - again.power) / reps)
    assert abs(again.power - design.power) <= 3 * se + 0.02, (design.power, again.power)
    if key == "D+d2-named":
        assert design.power > 0.5  # the quick profile decides it (its design says so)


def _flat(n=4, methods=("CORAL", "ERM"), trains=("d0,d1", "d0,d1,d2")) -> pd.DataFrame:
    return pd.DataFrame([dict(method=m, train=t, trial_seed=s, acc=0.5) for m in methods for t in trains
                         for s in range(n)])


@pytest.mark.parametrize("decide", [
    partial(fd.decide_swap_reversal), partial(fd.decide_stable_advantage, named=("CORAL",)),
    partial(fd.decide_domain_plus, base="d0,d1", extended="d0,d1,d2")], ids=["reversal", "stable", "domain+"])
def test_identical_trials_are_undecided_with_zero_variance(decide):
    res = decide(_flat())
    assert all(c.outcome == "undecided" for c in res.claims)
    assert res.verdict == "not decided" and "zero variance" in res.why


def test_partly_shared_seeds_pair_on_the_shared_ones():
    rng = np.random.default_rng(3)
    u = fd.simulate_domain_plus(rng, 6, effect=5, sd=SD, methods=("CORAL",))
    # seeds 0-4 before, 1-5 after: 4 shared, one dropped on each side
    u = u[~(((u["train"] == "d0,d1") & (u["trial_seed"] == 5)) | ((u["train"] == "d0,d1,d2") & (u["trial_seed"] == 0)))]
    c = fd.decide_domain_plus(u, base="d0,d1", extended="d0,d1,d2").claims[0]
    assert (c.n_paired, c.dropped) == (4, 2) and "paired" in c.test
    s = fd.simulate_stable_advantage(rng, 5, effect=5, sd=SD, named=("CORAL",), others=("ERM",), n_choices=2)
    s = s[~((s["method"] == "ERM") & (s["trial_seed"] == 0))]
    cs = fd.decide_stable_advantage(s, named=("CORAL",)).claims
    assert all((c.n_paired, c.dropped) == (4, 1) for c in cs)
    r = fd.simulate_swap_reversal(rng, 5, effect=5, sd=SD, methods=("A", "B"), n_choices=2)
    r = r[~((r["method"] == "B") & (r["trial_seed"] == 4))]
    assert all((c.n_paired, c.dropped) == (4, 1) for c in fd.decide_swap_reversal(r).claims)


@pytest.mark.parametrize("decide", [
    fd.decide_swap_reversal, partial(fd.decide_stable_advantage, named=("CORAL",)),
    partial(fd.decide_domain_plus, base="d0,d1", extended="d0,d1,d2")], ids=["reversal", "stable", "domain+"])
def test_missing_columns_are_named(decide):
    with pytest.raises(ConfigError, match=r"lacks columns \['trial_seed'\]"):
        decide(_flat().drop(columns="trial_seed"))
    with pytest.raises(ConfigError, match="one row per unit"):
        decide(pd.concat([_flat(), _flat()]))


def test_arguments_are_checked():
    u = _flat()
    with pytest.raises(ConfigError, match="base ⊂ extended"):
        fd.decide_domain_plus(u, base="d0,d1,d2", extended="d0,d1")
    with pytest.raises(ConfigError, match="'methods'"):
        fd.decide_domain_plus(u, base="d0,d1", extended="d0,d1,d2", methods=["IRM"])
    with pytest.raises(ConfigError, match="'choices'"):
        fd.decide_swap_reversal(u, choices=["d0,d1", "d5,d6"])
    assert fd.domain_plus_step([[["d0", "d1"], ["d0", "d1", "d2"]]], "d2") == ("d0,d1", "d0,d1,d2")
    assert fd.domain_plus_step([[["d0", "d1"], ["d0", "d1", "d2"]]], "d0") is None


def test_decide_all_runs_what_the_design_runs():
    """The notebook's one call: each Domain+ finding whose key the design runs and whose added domain is a step of
    a chain is decided (SIMULATED gains of 8 points, SD 1); the others are left out."""
    methods = ["CORAL", "IB_ERM", "ERM"]
    units = fd.simulate_domain_plus(np.random.default_rng(4), 6, effect=8.0, sd=1.0, methods=methods)
    chains = [[["d0", "d1"], ["d0", "d1", "d2"]]]
    out = fd.decide_all(units, ["D+d2-named", "D+d2-all", "D+d1-ERM"], methods=methods, choices=[], chains=chains)
    assert set(out) == {"D+d2-named", "D+d2-all"}  # no chain adds d1
    assert [c.name for c in out["D+d2-named"].claims] == [c.name for c in out["D+d2-all"].claims][:2]
    assert len(out["D+d2-all"].claims) == 3
    assert out["D+d2-named"].verdict == "reproduced" and out["D+d2-all"].verdict == "reproduced"
