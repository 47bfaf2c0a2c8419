"""How much better an algorithm is than a baseline across tasks: the probability of improvement, the IQM of the
differences, their intervals, and the Bayesian signed-rank posterior.

* :func:`probability_of_improvement` (Agarwal et al. 2021, rliable's metric): the probability that a run of the
  algorithm beats a run of the baseline on a randomly drawn task, ties counting ½ (the Mann–Whitney U statistic per
  task, averaged over tasks), vectorised over leading axes (bootstrap replicates).
* :func:`sweep_intervals` — runs (trials) within each task: the stratified bootstrap of Agarwal et al. (runs
  resampled with replacement within each task, each arm on its own; its SE, widened for the few runs, with a Student
  t quantile — Agarwal et al.'s percentile interval covered 0.78–0.89 at 2–3 runs) of the PoI and of the IQM
  (:func:`iqm`: the middle 50%, fractional weights at the quartiles) of the differences to the baseline's mean on each task. Computed here with
  rliable's metric definitions because ``rliable.library``'s bootstrap imports ``arch``, whose 7.x releases fail to
  import under pandas ≥ 3.
* :func:`table_intervals` — one value per task (published means): the exact interval of the PoI with ties
  (:func:`dganalysis.stats.intervals.clopper_pearson_ties`, Clopper & Pearson 1934) and the Tukey–McLaughlin
  interval of the IQM of the differences (:func:`dganalysis.stats.intervals.trimmed_mean_t`).
* :func:`signed_rank_probs` — the Bayesian signed-rank test (Benavoli et al. 2017): posterior P(better),
  P(equivalent within a ROPE), P(worse), the numbers of ``baycomp.two_on_multiple``, vectorised.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from dganalysis.stats.intervals import clopper_pearson_ties, trimmed_mean, trimmed_mean_t


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PoI of x over y for arrays (..., runs, tasks): mean over tasks of P(x > y) + ½ P(x = y) (rliable's metric,
    ``rliable.metrics.probability_of_improvement``, over any leading axes)."""
    gt = (x[..., :, None, :] > y[..., None, :, :]).mean(axis=(-3, -2))
    eq = (x[..., :, None, :] == y[..., None, :, :]).mean(axis=(-3, -2))
    return (gt + 0.5 * eq).mean(axis=-1)


def iqm(s: np.ndarray) -> np.ndarray:
    """Interquartile mean over the last two axes (runs × tasks) flattened: the mean of the middle 50% of the values,
    with fractional weights at the quartiles when their number is not divisible by 4 (Agarwal et al. 2021's
    definition; :func:`dganalysis.stats.intervals.trimmed_mean`). rliable's ``metrics.aggregate_iqm`` is
    ``scipy.stats.trim_mean(·, 0.25)``, which cuts ⌊n/4⌋ whole values: equal when 4 divides n, otherwise it keeps
    more than half (5 of 7 datasets on a table)."""
    flat = s.reshape(*s.shape[:-2], -1)
    return trimmed_mean(flat, 0.25)


def _stratified(x: np.ndarray, rng: np.random.Generator, reps: int) -> np.ndarray:
    """(reps, runs, tasks): runs resampled with replacement within each task, the tasks' indices in one draw.

    Written out rather than by ``scipy.stats.bootstrap``: scipy resamples a sample's batch (here the tasks) with one
    set of indices, the same runs in every task, and each task as a sample of its own would take its own draw in
    another order — either way other replicates than these, and these are the ones the audit's sweep intervals
    (its JSON included) are computed from. The percentile ends (:func:`_ci`) and the bootstrap SE (:func:`_se_t`)
    both read these replicates."""
    runs, tasks = x.shape
    idx = rng.integers(0, runs, size=(reps, runs, tasks))
    return np.take_along_axis(np.broadcast_to(x, (reps, runs, tasks)), idx, axis=1)


def _ci(values: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1 - confidence) / 2
    return float(np.quantile(values, a)), float(np.quantile(values, 1 - a))


#: :func:`sweep_intervals`' constructions: the bootstrap SE with Student t (default) and the percentile interval
SWEEP_METHODS = ("bootstrap_se_t", "percentile")


def _se_t(replicates: np.ndarray, estimate: float, runs: tuple[int, int],
          confidence: float) -> tuple[float, float]:
    """estimate ∓ t · √(m/(m − 1)) · SD of the bootstrap replicates, t on (n_x − 1) + (n_y − 1) df, m the fewer
    runs of the two arms; NaN with fewer than 2 runs in an arm."""
    m = min(runs)
    if m < 2:
        return float("nan"), float("nan")
    half = stats.t.ppf(0.5 + confidence / 2, sum(runs) - 2) * np.sqrt(m / (m - 1)) * float(np.std(replicates))
    return estimate - half, estimate + half


def sweep_intervals(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, reps: int,
                    confidence: float, method: str = "bootstrap_se_t") -> tuple[float, float, float, float]:
    """The intervals of a sweep from the stratified bootstrap (Agarwal et al. 2021: runs resampled with replacement
    within each dataset, each arm on its own), from (runs, datasets) arrays of the algorithm (``x``) and the baseline
    (``y``): (PoI low, high, IQM-of-Δ low, high), Δ to the baseline's mean on each dataset (resampled with the
    baseline's runs).

    ``method="bootstrap_se_t"`` (default): the point estimate ∓ t · √(m/(m − 1)) · the bootstrap SE, Student t on
    2(m − 1) degrees of freedom (the two arms' within-dataset run variances), m the runs per arm, the PoI's interval
    clipped to [0, 1]. Resampling m runs estimates a variance with divisor m, not m − 1: the bootstrap SE of a mean
    is √((m − 1)/m) of the usual one, 0.71 of it at 2 runs (Efron & Tibshirani 1993, Sec. 5.2; Hesterberg 2015, *The
    American Statistician* 69:371, on the bootstrap's narrowness in small samples), and a normal quantile ignores
    that the variance is estimated from a few runs. ``method="percentile"``: Agarwal et al.'s percentile interval,
    which covered 0.78–0.89 at 2–3 runs for a nominal 0.95 (SIMULATED sweeps,
    :func:`dganalysis.audit.coverage.simulate_sweep_aggregate`); the default covered ≥ 0.94 at 2–8 runs there,
    conservatively at 2 runs (0.95–0.99), where its interval is wide. NaN intervals with one run in an arm."""
    if method not in SWEEP_METHODS:
        raise ValueError(f"sweep_intervals: parameter 'method': expected one of {SWEEP_METHODS}, got {method!r}")
    xb, yb = _stratified(x, rng, reps), _stratified(y, rng, reps)
    poi_b = probability_of_improvement(xb, yb)
    iqm_b = iqm(xb - yb.mean(axis=-2, keepdims=True))
    if method == "percentile":
        return (*_ci(poi_b, confidence), *_ci(iqm_b, confidence))
    runs = (len(x), len(y))
    lo, hi = _se_t(poi_b, float(probability_of_improvement(x, y)), runs, confidence)
    dlo, dhi = _se_t(iqm_b, float(iqm(x - y.mean(axis=0))), runs, confidence)
    lo, hi = (float(v) for v in np.clip((lo, hi), 0.0, 1.0))  # PoI is a probability (NaN stays NaN)
    return lo, hi, dlo, dhi


def table_intervals(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float, float, float]:
    """A table's intervals from the datasets' means of the algorithm (``x``) and the baseline (``y``), 1-D: the
    Clopper–Pearson interval of PoI with ties (:func:`dganalysis.stats.intervals.clopper_pearson_ties`) and the
    Tukey–McLaughlin interval of the IQM of Δ (:func:`dganalysis.stats.intervals.trimmed_mean_t`)."""
    d = np.asarray(x, float) - np.asarray(y, float)
    lo, hi = clopper_pearson_ties(int((d > 0).sum()), int((d == 0).sum()), len(d), confidence)
    _, dlo, dhi = trimmed_mean_t(d, confidence)
    return float(lo), float(hi), float(dlo), float(dhi)


def signed_rank_probs(x: np.ndarray, y: np.ndarray, rope: float, nsamples: int,
                      seed: int) -> tuple[float, float, float]:
    """The Bayesian signed-rank test of Benavoli et al. 2017 on paired scores: the numbers of
    ``baycomp.two_on_multiple(x, y, rope=rope, nsamples=nsamples, random_state=seed)``, faster. (P(left), P(rope),
    P(right)): left is ``x`` above ``y`` by more than ``rope``, right below; with ``rope = 0``, P(rope) is 0 (as
    baycomp returns it: three values whatever the rope).

    baycomp draws the ``nsamples`` Dirichlet weights in one call and then, in a Python loop, sums the outer product of
    each draw's weights over the pairs of differences above (below) ±rope: ~75 ms a test at 5000 samples. The same
    draws (the same ``RandomState`` call) are summed here for every sample at once, each sum over the same products in
    the same order, so the posterior samples, and the winners counted from them, are the same numbers.
    ``tests/stats/test_improvement`` holds the two equal."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"signed_rank_probs: expected two 1-D arrays of the same length, got shapes {x.shape} and "
                         f"{y.shape}")
    if rope < 0 or nsamples < 1:
        raise ValueError(f"signed_rank_probs: expected rope ≥ 0 and nsamples ≥ 1, got {rope} and {nsamples}")
    diff = np.concatenate(([0.0], y - x))
    sums = diff[:, None] + diff[None, :]  # baycomp's diff_m + diff_m.T
    weights = np.ones(len(diff))
    weights[0] = 0.5  # baycomp's prior
    draws = np.random.RandomState(seed).dirichlet(weights, nsamples)
    regions = [_heaviside(-sums, 2 * rope), _heaviside(sums, 2 * rope)] if rope > 0 else [_heaviside(sums, 0.0)]
    step = max(1, 4_000_000 // diff.size ** 2)  # samples per chunk (~32 MB of products)
    mass = np.empty((len(regions), nsamples))
    for lo in range(0, nsamples, step):
        w = draws[lo:lo + step]
        prod = w[:, :, None] * w[:, None, :]  # np.outer(w, w) for each draw
        for k, region in enumerate(regions):
            mass[k, lo:lo + step] = (prod * region).reshape(len(w), -1).sum(axis=1)
    samples = np.zeros((nsamples, 3))
    if rope > 0:
        samples[:, 0], samples[:, 2] = mass
        samples[:, 1] = -samples[:, 0] - samples[:, 2] + 1
    else:
        samples[:, 2] = mass[0]
        samples[:, 0] = -samples[:, 2] + 1
    pl, pe, pr = np.bincount(np.argmax(samples, axis=1), minlength=3) / nsamples
    return float(pl), float(pe), float(pr)


def _heaviside(a: np.ndarray, thresh: float) -> np.ndarray:
    return (a > thresh).astype(float) + 0.5 * (a == thresh).astype(float)
