"""The coverage of the audit's intervals, measured on simulated data: the shipped table, its lookup, and the
simulators that measured it.

The audit reports four interval constructions beside its point estimates (:mod:`dganalysis.stats.intervals`,
:mod:`dganalysis.stats.improvement`): a table's probability of improvement (Clopper–Pearson with ties) and IQM of
the differences (Tukey–McLaughlin), a sweep's stratified-bootstrap SE of both with a Student t quantile (the
percentile interval measured for comparison), and the expected-max curve's Student-t
interval over trials (:func:`dganalysis.audit.sweep_analyses.expected_max_curve`). Each one's coverage was measured on
simulated data by ``bench/audit_interval_coverage.py`` and shipped in ``dganalysis/audit/data/interval_coverage.json``;
:func:`coverage` looks a method's measured coverage up at the size nearest to the one audited, and the simulators
here (``simulate_*``) are what the bench and the tests run. :data:`CI_METHODS` holds each construction's ``ci_method``
text.
"""

from __future__ import annotations

import functools
import json
import math
from importlib import resources
from typing import Any

import numpy as np
from scipy import stats

from dganalysis.stats.intervals import (
    clopper_pearson_ties,
    dodge_eq1_weights,
    paired_percentile_bootstrap,
    search_intervals,
    trimmed_mean_t,
)
from dganalysis.validation import ConfigError

#: the level the shipped coverage table was measured at
NOMINAL = 0.95
COVERAGE_FILE = "interval_coverage.json"
#: :func:`coverage` answers for sizes up to this factor outside the simulated range, NaN beyond
RANGE_FACTOR = 1.5

#: ``ci_method`` texts, one per interval construction (also the keys of the coverage table)
CI_METHODS = {
    "poi_table_clopper_pearson": "exact binomial over datasets (Clopper-Pearson; ties counted as losses for the "
                                 "lower bound, as wins for the upper)",
    "poi_sweep_bootstrap_se_t": "stratified bootstrap SE (trials resampled within each dataset) x sqrt(m/(m-1)), "
                                "Student t on 2(m-1) df, m trials per arm; clipped to [0, 1]",
    "iqm_delta_table_trimmed_t": "Tukey-McLaughlin trimmed-mean t over datasets (df = n - 2g - 1)",
    "iqm_delta_sweep_bootstrap_se_t": "stratified bootstrap SE (trials resampled within each dataset) x "
                                      "sqrt(m/(m-1)), Student t on 2(m-1) df, m trials per arm",
    "poi_sweep_stratified_bootstrap": "stratified bootstrap (trials resampled within each dataset; percentile)",
    "iqm_delta_sweep_stratified_bootstrap": "stratified bootstrap (trials resampled within each dataset; "
                                            "percentile)",
    "expected_max_trials_t": "Student t over trials of the per-trial unbiased (without-replacement) estimate; "
                             "pointwise in the budget; the gain's upper end skewness-corrected (Cornish-Fisher, "
                             "skewness 1)",
    "poi_table_dataset_bootstrap": "bootstrap over datasets (percentile)",
    "expected_max_bootstrap": "bootstrap over hparams draws of Dodge et al.'s eq. 1 (percentile)",
}


# ---------------------------------------------------------------- the shipped coverage table


@functools.lru_cache(maxsize=1)
def coverage_table() -> dict[str, Any]:
    """The coverage table ``bench/audit_interval_coverage.py`` wrote (``dganalysis/audit/data/`` +
    :data:`COVERAGE_FILE`)."""
    text = resources.files("dganalysis.audit").joinpath("data", COVERAGE_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def coverage(method: str, confidence: float = NOMINAL, **size: float) -> float:
    """The smallest coverage measured on simulated data for interval ``method`` (a key of :data:`CI_METHODS`) at the
    simulated size nearest to ``size`` (e.g. ``n_datasets=7``; ``runs=3``; ``trials=3, draws=20``: nearest in the
    log of each given size), over the scenarios simulated there. NaN when ``confidence`` is not the level measured
    (:data:`NOMINAL`), the method was not measured, or a given size lies outside the simulated range by more than a
    factor :data:`RANGE_FACTOR` (a coverage measured elsewhere says little there)."""
    if method not in CI_METHODS:
        raise ConfigError(f"coverage: unknown interval method {method!r}; expected one of {list(CI_METHODS)}")
    if not math.isclose(confidence, NOMINAL):
        return float("nan")
    try:
        rows = coverage_table()["methods"][method]["rows"]
    except (FileNotFoundError, KeyError):
        return float("nan")
    keys = [k for k in size if size[k] is not None and size[k] > 0 and any(k in r["size"] for r in rows)]
    if not rows:
        return float("nan")
    for k in keys:
        simulated = [r["size"][k] for r in rows if k in r["size"]]
        if not min(simulated) / RANGE_FACTOR <= size[k] <= max(simulated) * RANGE_FACTOR:
            return float("nan")

    def dist(row: dict) -> float:
        return sum(abs(math.log(row["size"][k] / size[k])) for k in keys if k in row["size"])

    return float(min(rows, key=dist)["coverage"])


# ---------------------------------------------------------------- simulators (bench and tests)


def _rounded_normal_theta(mu: float, sd: float) -> float:
    """θ = P(win) + ½ P(tie) for Δ ~ N(mu, sd) rounded to 0.1 (a tie: |Δ| < 0.05)."""
    win = stats.norm.sf(0.05, mu, sd)
    tie = stats.norm.cdf(0.05, mu, sd) - stats.norm.cdf(-0.05, mu, sd)
    return float(win + tie / 2)


#: simulated populations of per-dataset differences Δ (points), rounded to 0.1 as published: (mean, SD)
TABLE_SCENARIOS = {"null": (0.0, 1.0), "small effect": (1.0, 1.0), "large effect": (3.0, 1.0),
                   "mostly ties": (0.0, 0.05)}


def simulate_poi_table(n_datasets: int, sims: int, rng: np.random.Generator,
                       confidence: float = NOMINAL, method: str = "poi_table_clopper_pearson") -> dict[str, float]:
    """SIMULATED tables: per scenario of :data:`TABLE_SCENARIOS`, ``sims`` tables of ``n_datasets`` differences,
    each table's PoI interval (``method``: the audit's Clopper–Pearson with ties, or, for comparison, a
    percentile bootstrap over datasets); returns scenario → share of intervals that contain the population θ."""
    out = {}
    for name, (mu, sd) in TABLE_SCENARIOS.items():
        d = np.round(rng.normal(mu, sd, (sims, n_datasets)), 1)
        theta = _rounded_normal_theta(mu, sd)
        if method == "poi_table_clopper_pearson":
            lo, hi = clopper_pearson_ties((d > 0).sum(1), (d == 0).sum(1), n_datasets, confidence)
        elif method == "poi_table_dataset_bootstrap":  # each table's datasets resampled 1000 times, in turn
            wins = (d > 0) + 0.5 * (d == 0)
            lo, hi = np.array([paired_percentile_bootstrap((w,), np.mean, confidence=confidence, n_resamples=1000,
                                                           seed=rng, vectorized=True) for w in wins]).T
        else:
            raise ValueError(f"simulate_poi_table: unknown method {method!r}")
        out[name] = float(np.mean((lo <= theta + 1e-12) & (theta - 1e-12 <= hi)))
    return out


def _mixture_iqm(means: np.ndarray, sd: float) -> float:
    """IQM (2∫ Q(u) du over u ∈ [¼, ¾]) of the equal mixture of N(m, sd²) over ``means``."""
    grid = np.linspace(means.min() - 8 * sd, means.max() + 8 * sd, 200_001)
    cdf = stats.norm.cdf((grid[:, None] - means[None]) / sd).mean(1)
    u = np.linspace(0.25, 0.75, 20_001)
    return float(np.interp(u, cdf, grid).mean())


#: simulated sweeps (points): per scenario the algorithm's offset on each of 7 datasets and the two arms' trial SDs
SWEEP_SCENARIOS = {"null": (np.zeros(7), 1.0, 1.0), "effect 1 SD": (np.ones(7), 1.0, 1.0),
                   "unequal SDs": (np.zeros(7), 2.0, 1.0),
                   "heterogeneous effect": (np.linspace(-2.0, 4.0, 7), 1.0, 1.0)}


def simulate_sweep_aggregate(runs: int, sims: int, rng: np.random.Generator, confidence: float = NOMINAL,
                             reps: int = 1000, method: str = "bootstrap_se_t") -> dict[str, dict[str, float]]:
    """SIMULATED sweeps of ``runs`` trials × 7 datasets per arm (dataset means 50–80 points): the audit's stratified
    bootstrap intervals (its own functions; ``method`` of :func:`dganalysis.stats.improvement.sweep_intervals`: the
    audit's bootstrap SE with t, or the percentile interval for comparison) for PoI and IQM of Δ to the baseline's
    mean. Returns
    ``{"poi": {scenario: coverage}, "iqm_delta": {...}}``; the parameters are the datasets' mean PoI
    (Φ(Δ_d / √(σ_x² + σ_y²)) averaged) and the IQM of the mixture over datasets of X_d − E[Y_d]."""
    from dganalysis.stats.improvement import sweep_intervals

    out: dict[str, dict[str, float]] = {"poi": {}, "iqm_delta": {}}
    base = np.linspace(50, 80, 7)
    for name, (effect, sx, sy) in SWEEP_SCENARIOS.items():
        poi_true = float(stats.norm.cdf(effect / math.hypot(sx, sy)).mean())
        iqm_true = _mixture_iqm(effect, sx)
        hit_p = hit_i = 0
        for _ in range(sims):
            x = base + effect + rng.normal(0, sx, (runs, 7))
            y = base + rng.normal(0, sy, (runs, 7))
            lo, hi, dlo, dhi = sweep_intervals(x, y, rng, reps, confidence, method)
            hit_p += lo <= poi_true <= hi
            hit_i += dlo <= iqm_true <= dhi
        out["poi"][name], out["iqm_delta"][name] = hit_p / sims, hit_i / sims
    return out


def _exp_trimmed_mean(trim: float = 0.25) -> float:
    """Population trimmed mean of Exp(1) − 1: ∫ Q(u) du / (1 − 2 trim) over [trim, 1 − trim], Q(u) = −ln(1 − u)."""
    def integral(u: float) -> float:  # an antiderivative of −ln(1 − u)
        return (1 - u) * math.log(1 - u) + u
    return (integral(1 - trim) - integral(trim)) / (1 - 2 * trim) - 1.0


def simulate_iqm_table(n_datasets: int, sims: int, rng: np.random.Generator,
                       confidence: float = NOMINAL) -> dict[str, float]:
    """SIMULATED tables of per-dataset differences Δ (rounded to 0.1): normal N(1, 2²), heavy-tailed (1 + 2·t₃) and
    skewed (1 + 2·(Exp(1) − 1)); coverage of :func:`trimmed_mean_t` for the population 25%-trimmed mean."""
    draws = {"normal": (lambda s: 1 + 2 * rng.standard_normal(s), 1.0),
             "heavy tails (t3)": (lambda s: 1 + 2 * rng.standard_t(3, s), 1.0),
             "skewed (exponential)": (lambda s: 1 + 2 * (rng.exponential(1.0, s) - 1), 1 + 2 * _exp_trimmed_mean())}
    out = {}
    for name, (draw, truth) in draws.items():
        d = np.round(draw((sims, n_datasets)), 1)
        _, lo, hi = trimmed_mean_t(d, confidence)
        out[name] = float(np.mean((lo <= truth) & (truth <= hi)))
    return out


def _expected_max_std_normal(k: int) -> float:
    """E[max of k independent standard normals] (numerical integration of k z φ(z) Φ(z)^(k−1))."""
    z = np.linspace(-10, 10, 200_001)
    return float(np.trapezoid(z * k * stats.norm.pdf(z) * stats.norm.cdf(z) ** (k - 1), z))


#: simulated searches: (ρ, s) — a draw's hparams quality h ~ N(0, 1) moves test accuracy A = μ_d + s·h + N(0, 1)
#: and validation accuracy V = 80 + s·h + N(0, σ_v²), σ_v chosen so that corr(A, V) = ρ
SEARCH_SCENARIOS = {"validation tracks test (rho 0.8)": (0.8, 2.0), "validation weak (rho 0.2)": (0.2, 2.0)}


def search_truth(rho: float, s: float, k: int) -> float:
    """The true expected test accuracy (minus μ_d) of the validation-selected draw among k, for the bivariate normal
    of :data:`SEARCH_SCENARIOS`: cov(A, V) / sd(V) · E[max of k standard normals]."""
    var_a = s * s + 1.0
    var_v = (s * s) ** 2 / (rho * rho * var_a)  # corr = s² / √(var_a var_v) = rho
    return s * s / math.sqrt(var_v) * _expected_max_std_normal(k)


def _bootstrap_of_draws(a: np.ndarray, v: np.ndarray, budgets: np.ndarray, confidence: float,
                        rng: np.random.Generator, n_boot: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """A percentile bootstrap of Dodge et al.'s eq. 1 curve over hparams draws (the same resample of the draw columns
    for every row: the draws are the paired units), the usual way to put an interval on the curve; measured for
    comparison only."""
    eq1 = dodge_eq1_weights(a.shape[1], budgets)

    def curve(aa: np.ndarray, vv: np.ndarray, axis: int = -1) -> np.ndarray:
        """(budgets, resamples): the rows' mean eq. 1 curve of each resample (rows × resamples × draws)."""
        order = np.lexsort((aa, vv), axis=axis)
        return (np.take_along_axis(aa, order, axis=axis) @ eq1.T).mean(axis=0).T

    return paired_percentile_bootstrap((a.T, v.T), curve, confidence=confidence, n_resamples=n_boot, seed=rng,
                                       vectorized=True)


def simulate_search(trials: int, draws: int, sims: int, rng: np.random.Generator,
                    confidence: float = NOMINAL, method: str = "expected_max_trials_t",
                    detail: dict[str, dict[str, float]] | None = None) -> dict[str, float]:
    """SIMULATED sweeps of one (dataset, algorithm): ``trials`` trials × 4 test domains × ``draws`` hparams draws
    (the hparams shared by a trial's test domains, a trial effect N(0, 0.5²) shifting its accuracies); the audit's
    interval (:func:`dganalysis.stats.intervals.search_intervals`) at budgets 1, ⌈N/2⌉ and N and for the gain from ⌈N/2⌉
    to N. Returns scenario → the smallest coverage over those four intervals. ``method="expected_max_bootstrap"``:
    a percentile bootstrap over draws, for comparison (budgets only; it gives no interval for the gain). ``detail``, a
    dict, receives per scenario each interval's coverage and the share of sweeps whose true gain lay above
    ``gain_high`` (the miss that would flag a search saturated wrongly; nominal (1 − confidence)/2)."""
    mus = np.array([55.0, 60.0, 65.0, 70.0])
    half = (draws + 1) // 2
    budgets = np.array(sorted({1, half, draws}))
    out = {}
    for name, (rho, s) in SEARCH_SCENARIOS.items():
        var_a = s * s + 1.0
        sd_v = math.sqrt((s * s) ** 2 / (rho * rho * var_a) - s * s)
        truth = mus.mean() + np.array([search_truth(rho, s, int(k)) for k in budgets])
        gain_truth = truth[-1] - truth[list(budgets).index(half)]
        hits = np.zeros(len(budgets) + 1)
        above = 0
        for _ in range(sims):
            h = rng.standard_normal((trials, 1, draws))
            shift = rng.normal(0, 0.5, (trials, 1, 1))
            a = mus[None, :, None] + shift + s * h + rng.standard_normal((trials, 4, draws))
            v = 80 + shift + s * h + rng.normal(0, sd_v, (trials, 4, draws))
            trial = np.repeat(np.arange(trials), 4)
            if method == "expected_max_bootstrap":
                lo, hi = _bootstrap_of_draws(a.reshape(-1, draws), v.reshape(-1, draws), budgets, confidence, rng)
                hits[:-1] += (lo <= truth) & (truth <= hi)
                hits[-1] += 1
                continue
            res = search_intervals(a.reshape(-1, draws), v.reshape(-1, draws), trial, budgets, confidence)
            hits[:-1] += (res["ci_low"] <= truth) & (truth <= res["ci_high"])
            j = list(budgets).index(half)
            hits[-1] += res["gain_low"][j] <= gain_truth <= res["gain_high"][j]
            above += gain_truth > res["gain_high"][j]
        out[name] = float(hits.min() / sims)
        if detail is not None:
            detail[name] = {**{f"budget {int(k)}": float(h / sims) for k, h in zip(budgets, hits[:-1])},
                            **({} if method == "expected_max_bootstrap" else
                               {f"gain {half} to {draws}": float(hits[-1] / sims),
                                "true gain above gain_high": above / sims})}
    return out
