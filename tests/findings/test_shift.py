"""Calibration of Table 3's decisions (:mod:`dganalysis.findings.shift`) on SIMULATED frames."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

from dganalysis.findings import shift as fs
from dganalysis.findings.power import simulated_power, verdict_rates
from dganalysis.validation import ConfigError

ALPHA, REPS, N = 0.05, 300, 4
SE = math.sqrt(ALPHA * (1 - ALPHA) / REPS)  # Monte-Carlo SE of a rate at α
SD, SD0, SDB = fs.PILOT_SD_CORRELATION, fs.PILOT_SD_ZERO, fs.PILOT_SD_BLUE


def _a(effect: float, n: int = N, seed: int = 1, reps: int = REPS):
    return verdict_rates(partial(fs.correlation_shift_finding, alpha=ALPHA),
                         partial(fs.simulate_correlation_shift, effect=effect, sd=SD), n, reps, seed)


def _b(effect: float, n: int = N, seed: int = 1, reps: int = REPS, sd: float = SDB):
    return verdict_rates(partial(fs.new_colour_finding, alpha=ALPHA),
                         partial(fs.simulate_new_colour, effect=effect, sd=sd), n, reps, seed)


@pytest.mark.parametrize("effect", [0.0, -fs.ROPE])
def test_correlation_nulls_rarely_reproduced(effect):
    assert _a(effect).rate("reproduced") <= ALPHA + 3 * SE


@pytest.mark.parametrize("effect", [0.0, -fs.ROPE])
def test_new_colour_nulls_rarely_reproduced(effect):
    assert _b(effect).rate("reproduced") <= ALPHA + 3 * SE


def test_effects_at_the_rope_edge_rarely_refuted():
    assert _a(+fs.ROPE).rate("not reproduced") <= ALPHA + 3 * SE
    assert _b(+fs.ROPE, sd=SD).rate("not reproduced") <= ALPHA + 3 * SE


def test_diversity_at_the_rope_edge_rarely_called_equivalent():
    """The direction-0 claims: a true diversity at ±ROPE is rarely decided the paper's way (within the ROPE)."""
    for div in (fs.ROPE, -fs.ROPE):
        r = verdict_rates(partial(fs.correlation_shift_finding, alpha=ALPHA),
                          partial(fs.simulate_correlation_shift, effect=1.0, sd=SD, diversity=div, sd_diversity=SD),
                          N, REPS, 3)
        assert r.rate("reproduced") <= ALPHA + 3 * SE


@pytest.mark.parametrize("which", ["a", "b"])
def test_power_at_the_design_effect_matches_the_design(which):
    if which == "a":  # n = 4: between 0 and 1 (the design needs 5 for 80%)
        step, n = fs.paper_step((0.9, 0.5, 0.1)), 4
        dec = partial(fs.correlation_shift_finding, alpha=ALPHA)
        sim = partial(fs.simulate_correlation_shift, effect=step, sd=SD, sd_diversity=SD0)
        planted = verdict_rates(dec, sim, n, 400, 4242)
    else:  # n = 2: the quick profile's runs
        n = 2
        dec = partial(fs.new_colour_finding, alpha=ALPHA)
        sim = partial(fs.simulate_new_colour, effect=fs.PAPER_BLUE_DIVERSITY, sd=SDB, sd_correlation=SD0)
        planted = verdict_rates(dec, sim, n, 400, 4242)
    design = simulated_power(dec, sim, n, 400, 0)  # the design's power (design_power, seed 0) without its n search
    assert abs(planted.power - design.power) <= 3 * math.hypot(planted.mc_se, design.mc_se) + 0.02
    assert 0.1 < design.power < 0.95


def test_identical_runs_are_undecided_for_zero_variance():
    f = pd.DataFrame({"rho_te": [0.9, 0.9, 0.1, 0.1, 0.1, 0.1], "blue": [False] * 4 + [True] * 2,
                      "trial": [0, 1, 0, 1, 0, 1], "diversity": [0.0, 0.0, 0.0, 0.0, 0.9, 0.95],
                      "correlation": [0.6, 0.7, 0.0, 0.05, 0.0, 0.0]})
    a = fs.correlation_shift_finding(f)
    assert [c.outcome for c in a.claims[1:]] == ["undecided", "undecided"] and "zero variance" in a.why
    b = fs.new_colour_finding(f)
    assert b.claims[1].outcome == "undecided" and "zero variance" in b.why and b.verdict != "reproduced"


def test_partly_shared_run_numbers_are_paired_on_the_shared_ones():
    f = fs.simulate_correlation_shift(np.random.default_rng(0), 5, effect=0.3, sd=SD, shared=3)
    c = fs.correlation_shift_finding(f).claims[0]
    assert c.n_paired == 3 and c.dropped == 4 and "paired" in c.test


def test_missing_columns_named():
    with pytest.raises(ConfigError, match=r"lacks columns \['trial', 'diversity'\]"):
        fs.correlation_shift_finding(pd.DataFrame({"rho_te": [0.9], "blue": [False], "correlation": [0.5]}))
    with pytest.raises(ConfigError, match="blue = True"):
        fs.new_colour_finding(fs.simulate_correlation_shift(np.random.default_rng(0), 2, effect=0.3, sd=SD))
    with pytest.raises(ConfigError, match="at least two"):
        fs.correlation_shift_finding(fs.simulate_new_colour(np.random.default_rng(0), 2, effect=1, sd=SDB)
                                     .assign(blue=False))


def test_paper_step_interpolates_table3():
    assert fs.paper_step((0.9, 0.5, 0.1)) == pytest.approx(0.335)
    assert fs.paper_step((0.9, 0.7, 0.5, 0.3, 0.1)) == pytest.approx(0.1675)
