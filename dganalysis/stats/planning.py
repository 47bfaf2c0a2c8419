"""Planning: how many trials per arm would decide a claim — with the audit's own test and level, for a stated
effect, never the observed one.

Post-hoc power at the observed effect is a restatement of the p-value and says nothing new (Hoenig & Heisey 2001).
The audit asks two planning questions instead, each for the family's most demanding level (Holm's first step,
α/m) and n trials in each arm:

* :func:`trials_to_decide` — trials per arm for the calibrated Welch test (:mod:`dganalysis.stats.behrens_fisher`)
  to reach ``power`` if the true difference were ±``effect`` (by default the ROPE: the smallest difference the
  reader says matters);
* :func:`trials_for_equivalence` — trials per arm for the TOST within ±rope (built on the same calibrated test) to
  reach ``power`` if the true difference were 0.

The protocols plan the other way, from a standardised effect (Cohen's d, or d_z for paired differences) with the
ordinary t-tests: :func:`trials_for_effect_size` (statsmodels' power solvers) — the "observed power" figure of a
paper's next run, a guide rather than evidence.

The studies state their design before a run from a paired t-test's standardised effect d_z (Cohen 1988, Ch. 2):
:func:`paired_power` (the power :func:`paired_trials` implies at n pairs, by inverting it), :func:`trials_for_power`
(pairs for a power), and the effect behind a pilot's numbers — :func:`effect_from_ci` (a reported mean and
t-interval), :func:`effect_from_trials` (a power table's "n trials would decide it") and
:func:`holm_bound_effect` (the least effect a contrast Holm decided can have). Planning from a stated effect, not
the observed one: Hoenig & Heisey (2001).

Both take the trial SDs as known. They are estimates from n − 1 degrees of freedom, so each number comes with an
interval: the same computation at the ends of the chi-square confidence interval for the variance of Δ on Welch's
df (80% by default; variances scaled together), which at n = 3 (2–4 df) spans a factor of 7–20 in n — planning from
three trials is rough, and the interval says so. Up to :data:`EXACT_UP_TO` trials per arm, powers are computed by
the quadrature of :func:`~dganalysis.stats.behrens_fisher.rejection_probability` (the noncentral case); above, by the
noncentral t on the Satterthwaite df at the calibrated level, which agrees with it there (tested).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import special, stats

from dganalysis.stats import behrens_fisher as bf
from dganalysis.validation import check_number, check_scalar

POWER = 0.8


def power_difference(n: int, sd_a, sd_b, delta, level: float) -> np.ndarray:
    """Power of the calibrated Welch test at ``level`` (worst-case size) with n trials per arm, for true SDs and Δ
    (arrays broadcast; by the quadrature of :func:`~dganalysis.stats.behrens_fisher.rejection_probability`)."""
    sd_a, sd_b, delta = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (sd_a, sd_b, delta)))
    r = special.expit(bf.logit_grid(n, n))
    crit = bf.welch_crit(np.array([bf.level_for(level, n, n)]), n, n, r)[0]
    tau = np.sqrt((sd_a**2 + sd_b**2) / n)
    return bf.rejection_probability(crit, n, n, np.log(sd_a**2 / sd_b**2), delta=np.abs(delta) / tau)


def power_equivalence(n: int, sd_a, sd_b, rope: float, level: float) -> np.ndarray:
    """Power of the calibrated TOST within ±rope at ``level`` when the true Δ is 0: P(``|Δ̂|`` + c₁·SE < rope),
    c₁ the one-sided calibrated Welch critical value (by quadrature over the logit of B and over S, as the size;
    per item over the cells holding all but 10⁻¹³ of its Beta weight, so the power moves by less than that)."""
    sd_a, sd_b = np.broadcast_arrays(np.asarray(sd_a, dtype=float), np.asarray(sd_b, dtype=float))
    grid = bf.logit_grid(n, n)
    r = special.expit(grid)
    w1 = bf.level_for(min(2 * level, 0.999), n, n) / 2  # one-sided level: h(2w)/2 = level
    c1 = special.stdtrit(bf.welch_df_from_share(r, n, n), 1 - w1)  # (grid,)
    shape = sd_a.shape
    shift = np.log(sd_a**2 / sd_b**2).reshape(-1, 1)
    tau = np.sqrt((sd_a**2 + sd_b**2) / n).reshape(-1, 1)
    wts = bf.logit_beta_density(grid - shift, (n - 1) / 2, (n - 1) / 2) * (grid[1] - grid[0])
    # per item, only the cells inside its Beta window: the rest hold < 1e-13 of the weight (the power moves less)
    rows, cols = bf.window_cells(wts, bf.POWER_TOL)
    x, wts = grid[cols] - shift, wts[rows, cols]
    bb, es = special.expit(x), np.exp(shift)
    g_over_tau2 = (es * bb + 1.0 - bb) / (es * (n - 1) + (n - 1))  # estimated Var(Δ) per unit S, over Var(Δ)
    half = (rope / tau)[..., None] - (c1[cols] * np.sqrt(g_over_tau2))[..., None] * np.sqrt(bf.chi_square_nodes(2 * n - 2, 100))  # in τ
    inside = half > 0
    covered = np.zeros(half.shape)
    covered[inside] = 2 * special.ndtr(half[inside]) - 1  # P(|Δ̂| < half-width given S), 0 where it is negative
    pr = covered.mean(axis=-1)
    return (pr * wts).sum(axis=-1).reshape(shape)


_N_KNOTS = np.array([2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50, 100])
EXACT_UP_TO = 15  #: trials per arm up to which planning uses the quadrature; above, the noncentral-t approximation


def _smallest_n(power_vec, exact, power: float, max_n: int, size: int) -> np.ndarray:
    """Smallest n in [2, max_n] with power ≥ ``power``, per item: bisection on the vectorised approximation
    ``power_vec(n)`` (n an array), then, where that lands at or below :data:`EXACT_UP_TO` + 1, a scan of the exact
    ``exact(items, n)`` from n = 2. inf where even ``max_n`` falls short."""
    lo, hi = np.full(size, 2), np.full(size, max_n)
    reach = power_vec(hi) >= power
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        good = power_vec(mid) >= power
        hi, lo = np.where(good, mid, hi), np.where(good, lo, mid)
    out = np.where(reach, hi, np.inf).astype(float)
    if exact is not None:
        todo = np.flatnonzero(out <= EXACT_UP_TO + 1)
        for n in range(2, EXACT_UP_TO + 2):
            if not todo.size:
                break
            hit = exact(todo, n) >= power
            out[todo[hit]] = n
            todo = todo[~hit]
    return out


def _level_at_vec(level: float, n) -> np.ndarray:
    """The calibrated Welch level at n per arm: exact at the knots 2–100, log-linear between; Welch's own above 100
    (its worst-case size there is within 1% of nominal at the levels the audit uses)."""
    n = np.asarray(n, dtype=float)
    return np.where(n >= _N_KNOTS[-1], level, level * np.interp(np.log(n), np.log(_N_KNOTS), _knot_ratios(level)))


@lru_cache(maxsize=64)
def _knot_ratios(level: float) -> np.ndarray:
    """Calibrated level / level at the knots (computed once per level: the bisection asks at every step)."""
    return np.array([bf.level_for(level, int(k), int(k)) / level for k in _N_KNOTS])


def _nct_sf_vec(x, df, nc):
    with np.errstate(all="ignore"):
        v = stats.nct.sf(x, df, nc)
    return np.where(np.isfinite(v), v, stats.norm.sf(x - nc))


def _nct_two_sided(c, df, nc):
    return _nct_sf_vec(c, df, nc) + 1.0 - _nct_sf_vec(-c, df, nc)


def _vec_power_difference(n, sd_a, sd_b, delta, level):
    """Noncentral-t approximation on the Satterthwaite df of the true SDs at the calibrated level (used above
    :data:`EXACT_UP_TO` trials, where it agrees with :func:`power_difference`; tested)."""
    tau = np.sqrt((sd_a**2 + sd_b**2) / n)
    df = bf.welch_df(sd_a**2 / n, sd_b**2 / n, n, n)
    c = stats.t.isf(_level_at_vec(level, n) / 2, df)
    return _nct_two_sided(c, df, np.abs(delta) / tau)


def _vec_power_equivalence(n, sd_a, sd_b, rope, level):
    """2·P(t(df, rope/τ) > c₁) − 1: a lower bound on the TOST's power by Bonferroni's inequality (Chow & Liu 2008),
    used above :data:`EXACT_UP_TO` trials."""
    tau = np.sqrt((sd_a**2 + sd_b**2) / n)
    df = bf.welch_df(sd_a**2 / n, sd_b**2 / n, n, n)
    c1 = stats.t.isf(_level_at_vec(min(2 * level, 0.999), n) / 2, df)
    return np.maximum(0.0, 2 * _nct_sf_vec(c1, df, rope / tau) - 1)


def _sd_factors(sd_a, sd_b, n_a, n_b, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Factors (low, high) on both SDs: the chi-square interval of Var(Δ̂) on Welch's df (1 where it is infinite)."""
    df = bf.welch_df(sd_a**2 / n_a, sd_b**2 / n_b, n_a, n_b)
    a = (1 - confidence) / 2
    fin = np.isfinite(df)
    d = np.where(fin, df, 1.0)
    return (np.where(fin, np.sqrt(d / stats.chi2.ppf(1 - a, d)), 1.0),
            np.where(fin, np.sqrt(d / stats.chi2.ppf(a, d)), 1.0))


def _plan(kind: str, sd_a, sd_b, n_a, n_b, effect: float, level: float, power: float, confidence: float,
          max_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sd_a, sd_b, n_a, n_b = np.broadcast_arrays(*(np.atleast_1d(np.asarray(x, dtype=float))
                                                 for x in (sd_a, sd_b, n_a, n_b)))
    _check(sd_a, sd_b, effect, level)
    lo_f, hi_f = _sd_factors(sd_a, sd_b, n_a, n_b, confidence)
    vec, exact = ((_vec_power_difference, power_difference) if kind == "difference"
                  else (_vec_power_equivalence, power_equivalence))
    out = []
    for f in (np.ones_like(sd_a), lo_f, hi_f):
        a, b = f * sd_a, f * sd_b
        out.append(_smallest_n(lambda n, a=a, b=b: vec(n, a, b, effect, level),
                               lambda i, n, a=a, b=b: exact(n, a[i], b[i], effect, level), power, max_n, a.size))
    return out[0], out[1], out[2]


def trials_to_decide(sd_a, sd_b, n_a, n_b, effect: float, level: float, power: float = POWER,
                     confidence: float = 0.8, max_n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, low, high) per item: trials per arm for the calibrated Welch test at ``level`` to reach ``power`` against
    a true ``|Δ|`` = ``effect``, at the estimated SDs (from ``n_a``, ``n_b`` trials) and at the ends of their
    ``confidence`` interval; inf above ``max_n``."""
    return _plan("difference", sd_a, sd_b, n_a, n_b, effect, level, power, confidence, max_n)


def trials_for_equivalence(sd_a, sd_b, n_a, n_b, rope: float, level: float, power: float = POWER,
                           confidence: float = 0.8, max_n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, low, high) per item: trials per arm for the calibrated TOST within ±``rope`` at ``level`` to reach
    ``power`` if the true Δ were 0, at the estimated SDs and at the ends of their ``confidence`` interval."""
    return _plan("equivalence", sd_a, sd_b, n_a, n_b, rope, level, power, confidence, max_n)


def paired_trials(sd_d, n, effect: float, level: float, kind: str = "difference", power: float = POWER,
                  confidence: float = 0.8, max_n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, low, high): trials for the paired t-test (df n − 1; exact noncentral t) to decide ``|Δ|`` = ``effect``
    (``kind="difference"``), or for its TOST within ±``effect`` at Δ = 0 (``"equivalence"``: the Bonferroni lower
    bound on its power), from the SD of the paired differences estimated on n − 1 df."""
    sd_d, n = np.broadcast_arrays(np.atleast_1d(np.asarray(sd_d, dtype=float)),
                                  np.atleast_1d(np.asarray(n, dtype=float)))
    _check(sd_d, sd_d, effect, level)
    a = (1 - confidence) / 2
    df0 = np.maximum(n - 1, 1)
    factors = (np.ones_like(sd_d), np.sqrt(df0 / stats.chi2.ppf(1 - a, df0)), np.sqrt(df0 / stats.chi2.ppf(a, df0)))

    def pw(m, sd):
        df = m - 1.0
        nc = effect * np.sqrt(m) / sd
        if kind == "difference":
            return _nct_two_sided(stats.t.isf(level / 2, df), df, nc)
        return np.maximum(0.0, 2 * _nct_sf_vec(stats.t.isf(level, df), df, nc) - 1)

    out = [_smallest_n(lambda m, sd=f * sd_d: pw(m, sd), None, power, max_n, sd_d.size) for f in factors]
    return out[0], out[1], out[2]


def _check(sd_a, sd_b, effect: float, level: float) -> None:
    if not (np.all(np.asarray(sd_a) > 0) and np.all(np.asarray(sd_b) > 0)):
        raise ValueError(f"sd_a={sd_a}, sd_b={sd_b}: expected positive trial SDs")
    if not effect > 0:
        raise ValueError(f"effect={effect}: expected a difference > 0 in accuracy points")
    if not 0 < level < 1:
        raise ValueError(f"level={level}: expected a level in (0, 1)")


def trials_for_effect_size(effect: float, alpha: float, power: float = 0.8, paired: bool = True,
                  alternative: str = "larger", max_n: int = 10_000) -> float:
    """Trials (per group) for a t-test to reach ``power`` at level ``alpha`` if the true standardised effect were
    ``effect`` (statsmodels ``TTestPower`` for paired differences, ``TTestIndPower`` for two groups).

    ``alternative="larger"`` is one-sided (the sign of ``effect`` is taken as the direction), ``"two-sided"``
    two-sided. NaN when the effect is undefined, ``inf`` when it is 0 or needs more than ``max_n``. This is the usual "observed power"
    planning figure: it treats the observed effect as the truth, a guide for the next run, not evidence.
    """
    check_number(effect, "effect", func="trials_for_effect_size", nullable=True)
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    if alternative not in ("larger", "two-sided"):
        raise ValueError(f"alternative={alternative!r}: expected 'larger' or 'two-sided'")
    if effect is None or np.isnan(effect):
        return np.nan
    if abs(effect) < 1e-12:
        return np.inf  # no number of trials decides a zero effect
    if np.isinf(effect):
        return 2.0  # noiseless difference: the smallest sample with a variance estimate
    from statsmodels.stats.power import TTestIndPower, TTestPower

    solver = TTestPower() if paired else TTestIndPower()
    for n in range(2, max_n + 1):
        if solver.power(abs(effect), n, alpha, alternative=alternative) >= power:
            return float(n)
        if n > 64:  # switch to the continuous solver once the loop gets long
            key = "nobs" if paired else "nobs1"
            try:
                n_real = float(solver.solve_power(effect_size=abs(effect), alpha=alpha, power=power,
                                                  alternative=alternative, **{key: None}))
            except (ValueError, RuntimeError):  # pragma: no cover - statsmodels root finding failure
                return np.inf
            return float(np.ceil(n_real)) if n_real <= max_n else np.inf
    return np.inf


def paired_power(effect: float, n: int, level: float) -> float:
    """Power of the two-sided paired t-test at ``level`` with ``n`` pairs if the true standardised effect (d_z) were
    ``effect``: the largest power for which :func:`paired_trials` asks no more than ``n`` trials (bisection to 1e-4),
    so a design's power and its trials for a target power come from one computation. 0 for fewer than 2 pairs."""
    f = "paired_power"
    check_number(effect, "effect", func=f)
    if not effect > 0:
        raise ValueError(f"{f}: parameter 'effect': expected a standardised effect d_z > 0, got {effect}")
    check_scalar(n, "n", func=f, kind="int", low=0)
    check_scalar(level, "level", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    if n < 2:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2
        need = paired_trials(1.0, n, effect, level, power=mid)[0][0]
        lo, hi = (mid, hi) if need <= n else (lo, mid)
    return lo


def trials_for_power(effect: float, level: float, power: float = POWER, pilot_n: int = 6) -> float:
    """Pairs for the two-sided paired t-test at ``level`` to reach ``power`` if the true d_z were ``effect``
    (:func:`paired_trials` at the point estimate, SD 1; ``pilot_n`` only sets its unused interval's df); inf above
    2,000."""
    f = "trials_for_power"
    check_number(effect, "effect", func=f)
    check_scalar(level, "level", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(power, "power", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(pilot_n, "pilot_n", func=f, kind="int", low=2)
    return float(paired_trials(1.0, pilot_n, effect, level, power=power)[0][0])


def effect_from_trials(trials: float, level: float, power: float = POWER) -> float:
    """The d_z for which :func:`paired_trials` asks ``trials`` pairs at ``level`` and ``power`` (bisection on a log
    scale over [0.001, 50], 60 steps; the upper end): turns a pilot's power table ("n trials would decide it") back
    into an effect."""
    f = "effect_from_trials"
    check_scalar(trials, "trials", func=f, low=2.0)
    check_scalar(level, "level", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(power, "power", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    lo, hi = 1e-3, 50.0
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if paired_trials(1.0, 6, mid, level, power=power)[0][0] <= trials else (mid, hi)
    return hi


def effect_from_ci(mean: float, ci_low: float, ci_high: float, n: int, confidence: float = 0.95) -> float:
    """The absolute d_z of a paired mean reported as ``mean [ci_low, ci_high]``, a Student-t interval over ``n``
    pairs at ``confidence`` (Student 1908): the SD of the differences is the half-width over
    t_{(1 + confidence)/2, n − 1} times √n (the inverse of :func:`dganalysis.stats.intervals.t_half_width`)."""
    f = "effect_from_ci"
    for name, v in (("mean", mean), ("ci_low", ci_low), ("ci_high", ci_high)):
        check_number(v, name, func=f)
    if not ci_low < ci_high:
        raise ValueError(f"{f}: parameters 'ci_low', 'ci_high': expected ci_low < ci_high, got [{ci_low}, {ci_high}]")
    check_scalar(n, "n", func=f, kind="int", low=2)
    check_scalar(confidence, "confidence", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    half = (ci_high - ci_low) / 2
    sd = half / stats.t.ppf(0.5 + confidence / 2, n - 1) * math.sqrt(n)
    return abs(mean) / sd


def holm_bound_effect(n: int, m: int, alpha: float) -> float:
    """The smallest absolute d_z a two-sided paired t-test over ``n`` pairs can show and still be decided by Holm's
    (1979) first step in a family of ``m`` (p < α/m): t_{1 − α/(2m), n − 1} / √n, a lower bound on the effect of a
    contrast a pilot decided."""
    f = "holm_bound_effect"
    check_scalar(n, "n", func=f, kind="int", low=2)
    check_scalar(m, "m", func=f, kind="int", low=1)
    check_scalar(alpha, "alpha", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    return float(stats.t.isf(alpha / m / 2, n - 1) / math.sqrt(n))
