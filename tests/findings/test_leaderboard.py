"""Calibration of Table 5's decisions (:mod:`dganalysis.findings.leaderboard`) on SIMULATED frames."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

from dganalysis.findings import leaderboard as fl
from dganalysis.findings.power import design_power, verdict_rates
from dganalysis.protocols.leaderboard import load_published
from dganalysis.validation import ConfigError

ALPHA, REPS, N = 0.05, 300, 4
SE = math.sqrt(ALPHA * (1 - ALPHA) / REPS)  # Monte-Carlo SE of a rate at α
GAP, SD = fl.table5_pair()


def _rates(effect: float, n: int = N, seed: int = 1, reps: int = REPS):
    return verdict_rates(partial(fl.reversal_finding, alpha=ALPHA), partial(fl.simulate_reversal, effect=effect, sd=SD),
                         n, reps, seed)


@pytest.mark.parametrize("effect", [0.0, -fl.ROPE])
def test_no_reversal_is_rarely_reproduced(effect):
    assert _rates(effect).rate("reproduced") <= ALPHA + 3 * SE


def test_reversal_at_the_rope_edge_is_rarely_refuted():
    assert _rates(+fl.ROPE).rate("not reproduced") <= ALPHA + 3 * SE


def test_power_at_the_design_effect_matches_the_design(tmp_path, monkeypatch):
    monkeypatch.setenv("DGANALYSIS_CACHE", str(tmp_path))
    design = design_power(partial(fl.reversal_finding, alpha=ALPHA), partial(fl.simulate_reversal, effect=GAP, sd=SD),
                          3, cache_key=None)
    planted = _rates(GAP, n=3, seed=777, reps=400)
    assert abs(planted.power - design.power) <= 3 * math.hypot(planted.mc_se, design.mc_se) + 0.02
    assert 0.2 < design.power < 0.9  # at 3 trials the power is far from 0 and 1: the comparison can fail


def test_identical_trials_are_undecided_for_zero_variance():
    f = pd.DataFrame({"protocol": ["LODO"] * 4 + ["LOGO"] * 4, "algorithm": ["CORAL", "CORAL", "ERM", "ERM"] * 2,
                      "trial_seed": [0, 1] * 4, "acc": [71.0, 71.0, 70.0, 70.0, 69.0, 69.0, 70.0, 70.0]})
    res = fl.reversal_finding(f)
    assert [c.outcome for c in res.claims] == ["undecided", "undecided"] and res.verdict == "not decided"
    assert res.why.count("zero variance") == 2


def test_partly_shared_seeds_are_paired_on_the_shared_ones():
    f = fl.simulate_reversal(np.random.default_rng(0), 5, effect=GAP, sd=SD, shared=3)
    res = fl.reversal_finding(f)
    assert all(c.n_paired == 3 and c.dropped == 4 for c in res.claims)
    assert "3 paired trials, 4 unpaired dropped" in res.ours()


def test_missing_columns_and_pair_named():
    with pytest.raises(ConfigError, match=r"lacks columns \['protocol', 'trial_seed'\]"):
        fl.reversal_finding(pd.DataFrame({"algorithm": ["ERM"], "acc": [1.0]}))
    with pytest.raises(ConfigError, match="pair"):
        fl.reversal_finding(fl.simulate_reversal(np.random.default_rng(0), 3, effect=1, sd=1), pair=("ERM", "ERM"))


def test_missing_pair_member_is_undecided_with_its_reason():
    f = fl.simulate_reversal(np.random.default_rng(0), 3, effect=GAP, sd=SD)
    res = fl.reversal_finding(f[f["algorithm"] != "CORAL"])
    assert res.verdict == "not decided" and "0 vs 3 trials" in res.why


def test_published_recomputation_is_measured():
    res = fl.published_finding(load_published())
    assert res.verdict == "measured" and res.claims == []
    assert res.measurements[0].value == pytest.approx(0.794, abs=5e-4) and res.measurements[1].value == 8
    with pytest.raises(ConfigError, match="lacks columns"):
        fl.published_finding(pd.DataFrame({"leaderboard": ["a"]}))


def test_trials_frame_averages_test_domains_then_datasets():
    sel = pd.DataFrame({"dataset": ["A", "A", "B", "A", "A", "B"], "algorithm": "ERM", "trial_seed": [0] * 3 + [1] * 3,
                        "acc": [0.5, 0.7, 0.9, 0.4, 0.6, 0.8]})
    f = fl.reversal_frame({"LODO": sel})
    assert list(f.columns) == list(fl.COLUMNS)
    assert f.set_index("trial_seed")["acc"].to_dict() == pytest.approx({0: 75.0, 1: 65.0})
