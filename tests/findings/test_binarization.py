"""Calibration of Table 7's decision (:mod:`dganalysis.findings.binarization`) on SIMULATED frames."""

from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dganalysis.findings import binarization as fb
from dganalysis.findings.power import verdict_rates
from dganalysis.validation import ConfigError

ALPHA, REPS, N = 0.05, 300, 4
SE = math.sqrt(ALPHA * (1 - ALPHA) / REPS)  # Monte-Carlo SE of a rate at α


def _rates(effect: float, n: int = N, seed: int = 1, methods=("ERM", "CORAL")):
    return verdict_rates(partial(fb.binarization_finding, alpha=ALPHA),
                         partial(fb.simulate_binarization, effect=effect, sd=fb.PILOT_SD, methods=methods),
                         n, REPS, seed)


@pytest.mark.parametrize("effect", [0.0, -fb.ROPE])
def test_null_effects_rarely_reproduced(effect):
    assert _rates(effect).rate("reproduced") <= ALPHA + 3 * SE


def test_gap_at_the_rope_edge_rarely_refuted():
    assert _rates(+fb.ROPE).rate("not reproduced") <= ALPHA + 3 * SE


def test_power_at_the_design_effect_matches_the_design(tmp_path, monkeypatch):
    monkeypatch.setenv("DGANALYSIS_CACHE", str(tmp_path))
    from dganalysis.studies.design import binarization_design

    c = binarization_design(SimpleNamespace(sweep=SimpleNamespace(algorithms=["ERM", "CORAL"], n_trials=2,
                                                                  steps=300)))[0]
    design = c.simulated
    planted = _rates(fb.PAPER_GAP, n=2, seed=12345)
    se = math.sqrt(design.power * (1 - design.power) / REPS) + design.mc_se
    assert abs(planted.power - design.power) <= 3 * se + 0.02
    assert 0.05 < design.power < 0.99  # n = 2 is short of certain: the comparison can fail


def test_identical_trials_are_undecided_for_zero_variance():
    f = pd.DataFrame({"algorithm": "ERM", "colour": ["gray"] * 3 + ["binary"] * 3, "trial_seed": [0, 1, 2] * 2,
                      "acc": [20.0] * 3 + [60.0] * 3})
    res = fb.binarization_finding(f)
    assert res.claims[0].outcome == "undecided" and res.verdict == "not decided"
    assert "zero variance" in res.why


def test_partly_shared_seeds_are_paired_on_the_shared_ones():
    f = fb.simulate_binarization(np.random.default_rng(0), 5, shared=3)
    c = fb.binarization_finding(f).claims[0]
    assert c.n_paired == 3 and c.dropped == 4 and "paired" in c.test
    assert "3 paired trials, 4 unpaired dropped" in fb.binarization_finding(f).ours()


def test_missing_columns_named():
    with pytest.raises(ConfigError, match=r"lacks columns \['colour', 'trial_seed'\]"):
        fb.binarization_finding(pd.DataFrame({"algorithm": ["ERM"], "acc": [1.0]}))
    with pytest.raises(ConfigError, match="'colour' has \\['grey'\\]"):
        fb.binarization_finding(pd.DataFrame({"algorithm": ["ERM"], "colour": ["grey"], "trial_seed": [0],
                                              "acc": [1.0]}))


def test_trials_frame_from_selected_frames():
    sel = pd.DataFrame({"algorithm": "ERM", "train_domains": "d0,d1,d2", "domain": ["hw", "hw", "hw", "d0"],
                        "trial_seed": [0, 0, 1, 0], "acc": [0.2, 0.4, 0.5, 0.9]})
    f = fb.binarization_frame(sel, sel.assign(acc=sel["acc"] + 0.4), "d0,d1,d2", "hw")
    assert list(f.columns) == list(fb.COLUMNS) and len(f) == 4
    assert f.loc[(f["colour"] == "gray") & (f["trial_seed"] == 0), "acc"].item() == pytest.approx(30.0)
