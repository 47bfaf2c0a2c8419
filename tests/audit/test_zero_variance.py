"""A cell or arm whose trials are identical (sample SD 0) carries no estimate of its variance: no claim is decided on
it (dganalysis.stats.ttests.zero_variance; docs/audit.md, "Zero variance")."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dganalysis.audit.claims import claims
from dganalysis.audit.sweep_cells import cells_from_trials, pairs_from_trials


def _trials(rows):
    return pd.DataFrame([dict(board="", selection="training_domain", dataset=ds, algorithm=alg, trial_seed=s, acc=a)
                         for ds, alg, s, a in rows])


def _seeds(ds, alg, accs, seeds=None):
    return [(ds, alg, s, a) for s, a in zip(seeds or range(len(accs)), accs, strict=True)]


def test_identical_trials_in_both_arms_are_not_decided():
    """Two arms of 3 identical trials each, Δ = 2 points (unpaired: the seeds differ): before, SE = 0 gave p = 0 and
    'better'; now no test, out of the family, and ``why`` names the arm and the SD that would decide it."""
    t = _trials(_seeds("D", "A", [72.0, 72.0, 72.0], [10, 11, 12]) + _seeds("D", "ERM", [70.0, 70.0, 70.0]))
    cl = claims(cells_from_trials(t), "ERM", rope=0.0, pairs=pairs_from_trials(t, "ERM")).iloc[0]
    assert cl["verdict"] == "undecided" and not np.isfinite(cl["p"]) and cl["m"] == 0
    assert "zero variance" in cl["why"] and "A" in cl["why"] and "ERM" in cl["why"]
    assert "points" in cl["why"]  # the number that would change it


def test_one_zero_variance_arm_is_not_decided_by_itself():
    """A zero-SD arm against a noisy one: Welch's statistic would lean on the zero SD as if the arm's mean were exact
    (p = 0.013 at Δ = 5, calibrated): undecided now, with the largest SD of that arm under which it would be decided."""
    t = _trials(_seeds("D", "A", [75.0, 75.0, 75.0], [10, 11, 12]) + _seeds("D", "ERM", [70.0, 71.0, 69.0]))
    cl = claims(cells_from_trials(t), "ERM", rope=0.0).iloc[0]
    assert cl["verdict"] == "undecided" and not np.isfinite(cl["p"])
    assert "A's 3 trials" in cl["why"] and "would be better" in cl["why"]


def test_identical_paired_differences_are_not_decided():
    """Shared seeds, per-seed differences all exactly 1 point: the paired t's SE is 0 (p = 0 before); undecided
    now, ``why`` says the differences have zero variance."""
    t = _trials(_seeds("D", "A", [71.0, 72.5, 70.2]) + _seeds("D", "ERM", [70.0, 71.5, 69.2]))
    cl = claims(cells_from_trials(t), "ERM", rope=1.0, pairs=pairs_from_trials(t, "ERM")).iloc[0]
    assert cl["paired"] and cl["verdict"] == "undecided" and not np.isfinite(cl["p"])
    assert "zero variance" in cl["why"] and "differences" in cl["why"]


def test_nonzero_spread_is_tested_as_before():
    t = _trials(_seeds("D", "A", [75.0, 75.2, 74.9], [10, 11, 12]) + _seeds("D", "ERM", [70.0, 71.0, 69.0]))
    cl = claims(cells_from_trials(t), "ERM", rope=0.0).iloc[0]
    assert np.isfinite(cl["p"]) and cl["m"] == 1 and cl["why"] in ("",) + (cl["why"],)
