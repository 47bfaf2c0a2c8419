"""The KDE shift estimate's valid regime (dganalysis.shift.regime): measured on SIMULATED i.i.d. data, warned, refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dganalysis.shift import MAX_DIM, REFUSE_DIM, ShiftRegimeWarning, allow_high_dim, estimate_shift, fit_densities
from dganalysis.validation import ConfigError


def null_pair(d: int, n: int = 1000, seed: int = 0):
    """SIMULATED: both environments from one standard Gaussian, labels independent of the features."""
    rng = np.random.default_rng([d, seed])
    y = np.arange(n) % 2
    return rng.standard_normal((n, d)), y, rng.standard_normal((n, d)), y


def null_diversity(d: int, **kw) -> float:
    with warnings.catch_warnings(), allow_high_dim():
        warnings.simplefilter("ignore", ShiftRegimeWarning)
        return estimate_shift(*null_pair(d), n_samples=4000, **kw).diversity


def test_thresholds_hold_on_the_null():
    # the constants are the measurement's: null diversity below OoD-Bench's 0.01 at MAX_DIM, far above past REFUSE_DIM
    assert null_diversity(MAX_DIM) < 0.01
    assert null_diversity(REFUSE_DIM) > 0.1
    assert null_diversity(REFUSE_DIM + 8) > 0.8


def test_no_warning_inside_the_regime():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShiftRegimeWarning)
        estimate_shift(*null_pair(MAX_DIM, n=200), n_samples=500)


@pytest.mark.parametrize("fn", [estimate_shift, fit_densities])
def test_warns_above_and_refuses_well_above(fn):
    with pytest.warns(ShiftRegimeWarning, match="environment classifier") as rec:
        fn(*null_pair(MAX_DIM + 1, n=200), n_samples=500)
    assert rec[0].filename == __file__  # points at the caller's line
    with pytest.raises(ConfigError, match=r"z_p.*with dganalysis.shift.allow_high_dim\(\)"):
        fn(*null_pair(REFUSE_DIM + 1, n=200), n_samples=500)
    with pytest.warns(ShiftRegimeWarning), allow_high_dim():
        fn(*null_pair(REFUSE_DIM + 1, n=200), n_samples=500)
    with pytest.raises(ConfigError):  # the opt-in ends with the block
        fn(*null_pair(REFUSE_DIM + 1, n=200), n_samples=500)


def test_warning_is_a_userwarning():
    assert issubclass(ShiftRegimeWarning, UserWarning)


def test_shift_trials_refuses_a_high_dimensional_classifier_before_training():
    from dganalysis.shift import EnvClassifierConfig, colored_digits_shift, shift_trials

    ds = colored_digits_shift(seed=0)
    with pytest.raises(ConfigError, match=r"shift_trials: parameter 'cfg' \(z_dim\): 17-dimensional.*z_dim=8"):
        shift_trials(ds, "train", "test", cfg=EnvClassifierConfig(z_dim=REFUSE_DIM + 1), max_per_env=50)
