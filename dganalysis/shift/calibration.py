"""Calibrating the thresholds eps_div and eps_cor as OoD-Bench's ``calibrate.py`` does (Ye et al., CVPR 2022).

Estimates of Definition 1 from finite samples are biased upwards: two KDEs of i.i.d. samples never agree.
OoD-Bench (``main.py --calibrate``) therefore first runs its whole pipeline on an *i.i.d. split*: the two
label-balanced environments are each split in half per class and recombined crosswise (p_a ∪ q_b versus
p_b ∪ q_a), so both new environments have the full sample size of the real ones; an environment
classifier is trained per trial and features are extracted from its holdout
(:func:`dganalysis.shift.env_classifier.iid_split`, :func:`dganalysis.shift.pipeline.shift_trials` with
``calibrate=True``).
Then ``calibrate.py`` bisects both thresholds at once until the *average over trials* of the i.i.d.
estimates lies in ``[lower_bound, upper_bound]`` (default [5e-3, 1e-2]):

- ``eps_div`` in [0, 1e-6]: too little i.i.d. diversity → raise it, too much → lower it;
- ``eps_cor`` in [0, 1]: too little i.i.d. correlation → lower it, too much → raise it;
- at most ``max_iters = 20`` iterations; the thresholds of the last iteration are returned (with a
  warning when the bounds were not reached).

Each iteration of ``calibrate.py`` re-runs ``quantify.py`` with the same seed, hence at the same
Monte-Carlo points with the same densities; we fit the densities of each trial once
(:class:`dganalysis.shift.estimator.ShiftDensities`) and re-apply thresholds, which gives the same numbers.

``calibrate.py`` calls ``quantify.py`` without ``--legacy_mode``, so OoD-Bench fits its thresholds with the
squared-Hellinger formulas even when the final estimates use eq. 5; ``formula="hellinger"`` is therefore
our default here too.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dganalysis.shift.estimator import FORMULAS, ShiftDensities
from dganalysis.validation import ConfigError, check_choice, check_interval, check_scalar, describe

log = logging.getLogger(__name__)


@dataclass
class Calibration:
    """Thresholds from the bisection and the average i.i.d. estimates at them.

    ``eps_div``, ``eps_cor``: the density thresholds found (pass them to :func:`dganalysis.shift.estimate_shift`);
    ``iid_diversity``, ``iid_correlation``: the mean i.i.d. estimates at them (target: within the bounds);
    ``n_iter``: bisection iterations run; ``converged``: whether both means reached the bounds; ``formula`` used.
    """

    eps_div: float
    eps_cor: float
    iid_diversity: float
    iid_correlation: float
    n_iter: int
    converged: bool
    formula: str


def calibrate_thresholds(
    iid_trials: Sequence[ShiftDensities],
    *,
    formula: str = "hellinger",
    lower_bound: float = 5e-3,
    upper_bound: float = 1e-2,
    eps_div_range: tuple[float, float] = (0.0, 1e-6),
    eps_cor_range: tuple[float, float] = (0.0, 1.0),
    max_iters: int = 20,
) -> Calibration:
    """OoD-Bench's threshold search (``calibrate.py``) over the fitted densities of i.i.d. trials.

    ``iid_trials``: one :class:`ShiftDensities` per i.i.d. trial (features of an environment classifier
    trained on an i.i.d. split at full sample size). Defaults are OoD-Bench's (``config.add_calib_arguments``).
    """
    f = "calibrate_thresholds"
    if isinstance(iid_trials, ShiftDensities) or not isinstance(iid_trials, Sequence) or not iid_trials:
        raise ConfigError(f"{f}: parameter 'iid_trials': expected a non-empty list of ShiftDensities (fit_densities "
                          f"of i.i.d. trials), got {describe(iid_trials)}")
    bad = [describe(t) for t in iid_trials if not callable(getattr(t, "estimate", None))]
    if bad:
        raise ConfigError(f"{f}: parameter 'iid_trials': expected ShiftDensities from fit_densities(..., "
                          f"thresholds=None), got {bad[0]}")
    check_choice(formula, FORMULAS, "formula", func=f)
    lower_bound = check_scalar(lower_bound, "lower_bound", func=f, low=0.0)
    upper_bound = check_scalar(upper_bound, "upper_bound", func=f, low=lower_bound)
    check_interval(eps_div_range, "eps_div_range", func=f, low=0.0)
    check_interval(eps_cor_range, "eps_cor_range", func=f, low=0.0)
    max_iters = check_scalar(max_iters, "max_iters", func=f, kind="int", low=1)
    lo_div, hi_div = map(float, eps_div_range)
    lo_cor, hi_cor = map(float, eps_cor_range)
    converged = False
    for it in range(1, max_iters + 1):
        eps_div, eps_cor = (lo_div + hi_div) / 2, (lo_cor + hi_cor) / 2
        ests = [t.estimate(eps_div=eps_div, eps_cor=eps_cor, formula=formula) for t in iid_trials]
        avg_div = float(np.mean([e.diversity for e in ests]))
        avg_cor = float(np.mean([e.correlation for e in ests]))
        log.debug("calibration iteration %d: eps_div=%.4e eps_cor=%.4e avg_div=%.4e avg_cor=%.4e",
                  it, eps_div, eps_cor, avg_div, avg_cor)
        if min(avg_div, avg_cor) >= lower_bound and max(avg_div, avg_cor) <= upper_bound:
            converged = True
            break
        if avg_div < lower_bound:
            lo_div = eps_div
        elif avg_div > upper_bound:
            hi_div = eps_div
        if avg_cor < lower_bound:
            hi_cor = eps_cor
        elif avg_cor > upper_bound:
            lo_cor = eps_cor
    if not converged:
        log.warning("calibrate_thresholds: bounds [%g, %g] not reached in %d iterations (avg_div=%.4g, avg_cor=%.4g)",
                    lower_bound, upper_bound, max_iters, avg_div, avg_cor)
    return Calibration(eps_div=eps_div, eps_cor=eps_cor, iid_diversity=avg_div, iid_correlation=avg_cor,
                       n_iter=it, converged=converged, formula=formula)
