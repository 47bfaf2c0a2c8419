"""Diversity and correlation shift (OoD-Bench, Ye et al., CVPR 2022) and baseline shift measures.

- :func:`estimate_shift` (``estimator``): Definition 1 on two labelled feature samples (KDE, importance-sampled
  Monte Carlo, eq. 5), fast torch KDE in ``kde``.
- :func:`calibrate_thresholds` (``calibration``): eps_div / eps_cor by bisection on an i.i.d. split.
- :func:`shift_trials` (``env_classifier``): train the environment classifier, extract z, estimate; per trial.
- ``baselines``: :func:`emd`, :func:`mmd`, :func:`ni_index`.
- ``sanity``: parametric coloured digits of Fig. 4; ``study``: the notebook-06 tables and plots.
"""

from dganalysis.shift.baselines import emd, mmd, ni_index
from dganalysis.shift.calibration import Calibration, calibrate_thresholds
from dganalysis.shift.env_classifier import EnvClassifierConfig, shift_trials, summarize, train_env_classifier
from dganalysis.shift.estimator import ShiftEstimate, estimate_shift
from dganalysis.shift.sanity import colored_digits_shift

__all__ = [
    "Calibration",
    "EnvClassifierConfig",
    "ShiftEstimate",
    "calibrate_thresholds",
    "colored_digits_shift",
    "emd",
    "estimate_shift",
    "mmd",
    "ni_index",
    "shift_trials",
    "summarize",
    "train_env_classifier",
]
