"""Diversity and correlation shift (OoD-Bench, Ye et al., CVPR 2022) and baseline shift measures.

- :func:`estimate_shift` (``estimator``): Definition 1 on two labelled feature samples, computed as OoD-Bench's
  ``quantify.py`` does; ``formula="eq5"`` (default, its legacy mode) or ``"hellinger"`` (its current default);
  ``bandwidth="scott"`` (default, scipy's rule per density) or ``"shared"``; fast batched torch KDE in ``kde``.
- :func:`calibrate_thresholds` (``calibration``): eps_div / eps_cor by OoD-Bench's bisection on i.i.d. trials.
- ``env_classifier``: the environment classifier, recipes ``"oodbench"`` (default) and ``"dganalysis"``.
- :func:`shift_trials` (``pipeline``): balance, split, train, extract z, (calibrate,) estimate; one row per trial.
- ``regime``: the estimate is valid on features of d ≤ :data:`MAX_DIM` = 9 dimensions (measured null diversity);
  it warns (:class:`ShiftRegimeWarning`) above and refuses above :data:`REFUSE_DIM` = 16 — use the environment
  classifier's 8-d features (docs/validation.md).
- ``baselines``: :func:`emd`, :func:`mmd`, :func:`ni_index`.
- ``sanity``: parametric coloured digits of Fig. 4; ``study``: the notebook-06 tables and plots.
"""

from dganalysis.shift.baselines import emd, mmd, ni_index
from dganalysis.shift.calibration import Calibration, calibrate_thresholds
from dganalysis.shift.env_classifier import EnvClassifierConfig, train_env_classifier
from dganalysis.shift.estimator import ShiftDensities, ShiftEstimate, estimate_shift, fit_densities
from dganalysis.shift.pipeline import ShiftOptions, shift_summary, shift_trials
from dganalysis.shift.regime import MAX_DIM, REFUSE_DIM, ShiftRegimeWarning, allow_high_dim
from dganalysis.shift.sanity import colored_digits_shift

__all__ = [
    "ShiftOptions",
    "Calibration",
    "EnvClassifierConfig",
    "MAX_DIM",
    "REFUSE_DIM",
    "ShiftDensities",
    "ShiftEstimate",
    "ShiftRegimeWarning",
    "allow_high_dim",
    "calibrate_thresholds",
    "colored_digits_shift",
    "emd",
    "estimate_shift",
    "fit_densities",
    "mmd",
    "ni_index",
    "shift_trials",
    "shift_summary",
    "train_env_classifier",
]
