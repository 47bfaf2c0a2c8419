"""Where the KDE shift estimate of Ye et al. (2022, OoD-Bench) is valid, and what happens outside it.

Definition 1's diversity term counts Monte-Carlo points where a density is below ``eps_div`` (OoD-Bench: 1e-12,
an *absolute* density). A Gaussian KDE in d standardised dimensions has densities of order (2πe)^(-d/2) at typical
points and far lower in its sparse tails, so as d grows ever more points fall below any fixed ``eps_div`` although
the two samples come from one distribution. Measured on SIMULATED i.i.d. data (``bench/shift_null_regime.py``,
table in docs/validation.md; n = 1,000 points per environment, mean of 3–5 seeds): the null diversity is 0.000 up
to d = 4, 0.002 at d = 8, 0.005 at d = 9, 0.010 at d = 10, 0.18 at d = 14, 0.44 at d = 16 and 0.95–1.0 from
d = 24; fewer points make it worse (n = 250: 0.02 at d = 10), more points only a little better (n = 4,000: 0.007
at d = 10). OoD-Bench itself runs the estimate on the 8-d output of its
environment classifier (:mod:`dganalysis.shift.env_classifier`, ``EnvClassifierConfig.z_dim = 8``).

Rules (:func:`check_regime`, called by :func:`dganalysis.shift.estimate_shift` and ``fit_densities``):

- d ≤ :data:`MAX_DIM` = 9: the largest d whose null diversity stays below 0.01 (the upper bound of OoD-Bench's
  calibration target [0.005, 0.01]: an i.i.d. estimate up to 0.01 reads "no shift") at n = 1,000;
- :data:`MAX_DIM` < d ≤ :data:`REFUSE_DIM` = 16: a :class:`ShiftRegimeWarning` (null diversity 0.01 to 0.57 over
  n = 250 … 4,000: the estimate may report a shift that is not there);
- d > :data:`REFUSE_DIM` (null diversity ≥ 0.9 at every n measured): refused with a ``ConfigError`` unless the
  call runs inside ``with allow_high_dim():`` (an explicit, visible opt-in that keeps the estimators' signatures
  short).

The documented path for high-dimensional features: train the environment classifier and estimate on its 8-d
features (:func:`dganalysis.shift.shift_trials`, or :func:`dganalysis.shift.train_env_classifier` then
``model.features(x)``), as OoD-Bench does.
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import Iterator

from dganalysis.validation import ConfigError, check_scalar

_ALLOWED: contextvars.ContextVar[bool] = contextvars.ContextVar("dganalysis_allow_high_dim", default=False)


@contextlib.contextmanager
def allow_high_dim() -> Iterator[None]:
    """Within this block, shift estimates on features above :data:`REFUSE_DIM` dimensions are computed (with a
    :class:`ShiftRegimeWarning`) instead of refused: ``with allow_high_dim(): estimate_shift(...)``."""
    token = _ALLOWED.set(True)
    try:
        yield
    finally:
        _ALLOWED.reset(token)

#: largest feature dimension with null diversity < 0.01 at n = 1,000 per environment (bench/shift_null_regime.py)
MAX_DIM = 9
#: above this the null diversity is ≥ 0.9 at n = 250 … 4,000: refused outside ``with allow_high_dim():``
REFUSE_DIM = 16

HOW_TO = ("estimate on the 8-d features of the environment classifier instead, as OoD-Bench does: "
          "dganalysis.shift.shift_trials(dataset, train, test) on images, or train_env_classifier(...) then "
          "model.features(x) (docs/validation.md, 'Shift estimator: valid regime')")


class ShiftRegimeWarning(UserWarning):
    """An estimate is computed outside the regime where its null (no-shift) value is near 0."""


def check_regime(d: int, n: int, *, func: str = "estimate_shift", stacklevel: int = 2,
                 arg: str = "parameters 'z_p', 'z_q'",
                 override: str = "To compute it anyway: with dganalysis.shift.allow_high_dim(): ...") -> None:
    """Warn (``MAX_DIM < d ≤ REFUSE_DIM``) or refuse (``d > REFUSE_DIM`` outside :func:`allow_high_dim`) a KDE
    shift estimate on ``d``-dimensional features with ``n`` points in the smaller environment (``stacklevel``: of
    the user's call, as :func:`warnings.warn` counts it from the caller of this function)."""
    check_scalar(d, "d", func="check_regime", kind="int", low=1)
    check_scalar(n, "n", func="check_regime", kind="int", low=0)
    if d <= MAX_DIM:
        return
    if d > REFUSE_DIM and not _ALLOWED.get():
        raise ConfigError(
            f"{func}: {arg}: {d}-dimensional features are outside the estimator's valid regime "
            f"(d ≤ {MAX_DIM}): on i.i.d. data with no shift it reports a diversity shift of 0.9 to 1 at d > "
            f"{REFUSE_DIM} (measured, docs/validation.md); {HOW_TO}. {override}")
    warnings.warn(
        f"{func}: {d}-dimensional features (n = {n}) are above d = {MAX_DIM}, where the KDE estimate of Ye et al. "
        f"reports a diversity shift on i.i.d. data with no shift (0.01 at d = 10, 0.44 at d = 16, n = 1,000); {HOW_TO}",
        ShiftRegimeWarning, stacklevel=stacklevel + 1)
