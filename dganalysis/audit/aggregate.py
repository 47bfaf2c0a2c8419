"""Across datasets, per algorithm against the baseline: probability of improvement, IQM, Wilcoxon signed-rank with
Holm beside Friedman/Nemenyi, and the Bayesian signed-rank test with a ROPE.

Each analysis runs on one *family* (one board and selection method of one input); datasets are the tasks / blocks.

* **Probability of improvement** (Agarwal et al. 2021, ``rliable.metrics.probability_of_improvement``): the
  probability that a run of the algorithm beats a run of the baseline on a randomly drawn dataset, ties counting ½
  (the Mann–Whitney U statistic per dataset, averaged over datasets). *Sweep:* runs are the trials, the datasets are
  fixed; its CI is the stratified bootstrap of Agarwal et al. (trials resampled with replacement within each dataset,
  each algorithm on its own; percentile interval) — computed here vectorised with rliable's metric definition,
  because ``rliable.library``'s bootstrap imports ``arch``, whose 7.x releases (the ones rliable allows) fail to
  import under pandas ≥ 3. With 3 trials it covers less than its nominal level (measured: ``ci_coverage``). *Table*
  (means only): each dataset holds one "run", the published mean, so PoI is the share of datasets where the
  algorithm's mean is higher, ties ½. Its interval is about a *population of datasets* from which the table's are
  taken as a random sample: θ = P(win) + ½ P(tie) on a new dataset. It is exact binomial
  (:func:`dganalysis.audit.intervals.clopper_pearson_ties`, Clopper & Pearson 1934): the lower bound counts ties as
  losses, the upper as wins (conservative where means tie); 0 wins of 7 gives [0, 0.41]. No runs are simulated
  from the means.
* **IQM** (``rliable.metrics.aggregate_iqm``, the 25%-trimmed mean) of the difference to the baseline's mean on
  each dataset (a baseline-normalised score, in points): runs of different datasets are commensurable only as such
  differences — the IQM of raw accuracy pooled over datasets would trim whole datasets, and is not reported. Sweep:
  over runs × datasets, the same stratified bootstrap; table: over datasets, the Tukey–McLaughlin trimmed-mean t
  interval (:func:`dganalysis.audit.intervals.trimmed_mean_t`).
* Every interval carries ``ci_method`` and ``ci_coverage`` (``iqm_delta_ci_method``, ``iqm_delta_ci_coverage``): the
  coverage of that construction measured on simulated data at the nearest simulated size (the smallest over the
  scenarios simulated there; ``bench/audit_interval_coverage.py``, :func:`dganalysis.audit.intervals.coverage`);
  NaN at a level other than 0.95.
* **Wilcoxon signed-rank** (``scipy.stats.wilcoxon``'s p-value, two-sided, Pratt's zeros: :func:`wilcoxon_p`) for
  every pair of algorithms over the datasets' means, Holm-adjusted over all pairs: it decides *this pair*, whatever
  else is in the pool (Benavoli, Corani & Mangili 2016). **Friedman / Nemenyi** (:mod:`dganalysis.protocols.friedman`,
  Demšar 2006) ask whether the average ranks differ at all and which pairs differ *given the whole pool* — adding or
  removing an algorithm can change a Nemenyi verdict on A vs B, not a Wilcoxon one. With 7 datasets the smallest two-sided Wilcoxon p is 1/64.
* **Bayesian signed-rank** (Benavoli et al. 2017, ``baycomp.two_on_multiple``'s numbers on the datasets' means,
  seeded; :func:`signed_rank_probs`):
  posterior P(better), P(equivalent: |Δ| < rope), P(worse) of the algorithm against the baseline, from 5000
  posterior samples (Monte-Carlo error ≤ 0.007).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.audit import intervals
from dganalysis.stats.multiplicity import holm

AGG_COLUMNS = ["board", "selection", "algorithm", "baseline", "prob_improvement", "ci_low", "ci_high", "ci_method",
               "ci_coverage", "iqm_delta", "iqm_delta_low", "iqm_delta_high", "iqm_delta_ci_method",
               "iqm_delta_ci_coverage", "p_better", "p_equivalent", "p_worse", "n_datasets", "n_runs", "basis"]
BASIS_RUNS = "trials within datasets (stratified bootstrap)"
BASIS_TABLE = "datasets (published means) as a sample of datasets"


def _runs(trials: dict[tuple[str, str], np.ndarray], algorithm: str, datasets: list[str]) -> np.ndarray:
    """(runs, datasets) matrix of an algorithm's trials (``trials``: (algorithm, dataset) → accuracies, in the
    trial frame's order); datasets with more trials are cut to the fewest."""
    cols = [trials.get((algorithm, d), np.empty(0)) for d in datasets]
    k = min(len(c) for c in cols)
    return np.stack([c[:k] for c in cols], axis=1)


def _poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """PoI of x over y for arrays (..., runs, tasks): mean over tasks of P(x > y) + ½ P(x = y) (rliable's metric)."""
    gt = (x[..., :, None, :] > y[..., None, :, :]).mean(axis=(-3, -2))
    eq = (x[..., :, None, :] == y[..., None, :, :]).mean(axis=(-3, -2))
    return (gt + 0.5 * eq).mean(axis=-1)


def _iqm(s: np.ndarray) -> np.ndarray:
    flat = s.reshape(*s.shape[:-2], -1)
    return stats.trim_mean(flat, 0.25, axis=-1)


def _stratified(x: np.ndarray, rng: np.random.Generator, reps: int) -> np.ndarray:
    """(reps, runs, tasks): runs resampled with replacement within each task."""
    runs, tasks = x.shape
    idx = rng.integers(0, runs, size=(reps, runs, tasks))
    return np.take_along_axis(np.broadcast_to(x, (reps, runs, tasks)), idx, axis=1)


def _ci(values: np.ndarray, confidence: float) -> tuple[float, float]:
    a = (1 - confidence) / 2
    return float(np.quantile(values, a)), float(np.quantile(values, 1 - a))


def sweep_intervals(x: np.ndarray, y: np.ndarray, rng: np.random.Generator, reps: int,
                    confidence: float) -> tuple[float, float, float, float]:
    """The stratified-bootstrap intervals of a sweep, from (runs, datasets) arrays of the algorithm (``x``) and the
    baseline (``y``): (PoI low, high, IQM-of-Δ low, high), Δ to the baseline's mean on each dataset (resampled with
    the baseline's runs)."""
    xb, yb = _stratified(x, rng, reps), _stratified(y, rng, reps)
    lo, hi = _ci(_poi(xb, yb), confidence)
    dlo, dhi = _ci(_iqm(xb - yb.mean(axis=-2, keepdims=True)), confidence)
    return lo, hi, dlo, dhi


def table_intervals(x: np.ndarray, y: np.ndarray, confidence: float) -> tuple[float, float, float, float]:
    """A table's intervals from the datasets' means of the algorithm (``x``) and the baseline (``y``), 1-D: the
    Clopper–Pearson interval of PoI with ties (:func:`dganalysis.audit.intervals.clopper_pearson_ties`) and the
    Tukey–McLaughlin interval of the IQM of Δ (:func:`dganalysis.audit.intervals.trimmed_mean_t`)."""
    d = np.asarray(x, float) - np.asarray(y, float)
    lo, hi = intervals.clopper_pearson_ties(int((d > 0).sum()), int((d == 0).sum()), len(d), confidence)
    _, dlo, dhi = intervals.trimmed_mean_t(d, confidence)
    return float(lo), float(hi), float(dlo), float(dhi)


def per_algorithm(cells: pd.DataFrame, trials: pd.DataFrame | None, baseline: str, rope: float = 1.0,
                  confidence: float = 0.95, reps: int = 2000, seed: int = 0,
                  bayes_samples: int = 5000) -> pd.DataFrame:
    """PoI, IQM of Δ and Bayesian signed-rank per (board, selection, algorithm ≠ baseline), columns
    :data:`AGG_COLUMNS` (``n_runs``: trials per dataset used for each arm, 1 on a table).

    ``trials`` (a sweep's per-trial dataset averages) gives the run-level analyses; without it (a table) the
    datasets' means are the runs (see the module docstring). Needs ≥ 2 shared datasets per algorithm.
    ``reps``: bootstrap resamples (sweeps only; a table's intervals are exact or closed-form).
    ``bayes_samples``: posterior samples of the Bayesian signed-rank test (Monte-Carlo error of its probabilities
    ≈ 0.5/√samples ≤ 0.007 at 5000; baycomp's default is 50,000).
    """
    from rliable import metrics

    rows = []
    avg = cells[cells["env"].fillna("") == ""]
    for (board, selection), fam in avg.groupby(["board", "selection"], sort=False):
        means = fam.pivot_table(index="dataset", columns="algorithm", values="mean")
        if baseline not in means:
            continue
        tr = None  # the family's trials by (algorithm, dataset), made when first needed
        for alg in [a for a in means.columns if a != baseline]:
            pair = means[[alg, baseline]].dropna()
            datasets = list(pair.index)
            if len(datasets) < 2:
                continue
            rng = np.random.default_rng(seed)
            if tr is None:
                tr = {} if trials is None else {key: g["acc"].to_numpy() for key, g in trials[
                    (trials["board"] == board) & (trials["selection"] == selection)].groupby(
                    ["algorithm", "dataset"], sort=False, observed=True)}
            if tr:
                x, y = _runs(tr, alg, datasets), _runs(tr, baseline, datasets)
                basis = BASIS_RUNS
                lo, hi, dlo, dhi = sweep_intervals(x, y, rng, reps, confidence)
                n_runs = min(len(x), len(y))
                size = dict(runs=n_runs)
                methods = ("poi_sweep_stratified_bootstrap", "iqm_delta_sweep_stratified_bootstrap")
            else:
                x, y = pair[[alg]].to_numpy().T, pair[[baseline]].to_numpy().T
                basis = BASIS_TABLE
                lo, hi, dlo, dhi = table_intervals(x[0], y[0], confidence)
                n_runs = 1
                size = dict(n_datasets=len(datasets))
                methods = ("poi_table_clopper_pearson", "iqm_delta_table_trimmed_t")
            poi = float(metrics.probability_of_improvement(x, y))
            iqm_d = float(metrics.aggregate_iqm(x - y.mean(axis=0)))
            cov = [intervals.coverage(m, confidence, **size) for m in methods]
            pb, pe, pw = signed_rank_probs(pair[alg].to_numpy(), pair[baseline].to_numpy(), rope, bayes_samples, seed)
            rows.append(dict(board=board, selection=selection, algorithm=alg, baseline=baseline,
                             prob_improvement=poi, ci_low=lo, ci_high=hi, ci_method=intervals.METHODS[methods[0]],
                             ci_coverage=cov[0], iqm_delta=iqm_d, iqm_delta_low=dlo, iqm_delta_high=dhi,
                             iqm_delta_ci_method=intervals.METHODS[methods[1]], iqm_delta_ci_coverage=cov[1],
                             p_better=float(pb), p_equivalent=float(pe), p_worse=float(pw), n_datasets=len(datasets),
                             n_runs=n_runs, basis=basis))
    return pd.DataFrame(rows, columns=AGG_COLUMNS)


def block_means(cells: pd.DataFrame, board: str, selection: str) -> pd.DataFrame:
    """Datasets × algorithms of the dataset-average means of one family, complete rows only."""
    avg = cells[(cells["env"].fillna("") == "") & (cells["board"] == board) & (cells["selection"] == selection)]
    wide = avg.pivot_table(index="dataset", columns="algorithm", values="mean").dropna(axis=0, how="any")
    wide.columns.name = None
    return wide


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
    ``tests/audit/test_aggregate`` holds the two equal."""
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


#: up to this many pairs, with ties or zeros, scipy's Wilcoxon p-value is its exact permutation test (2^n signs)
PERMUTATION_MAX_N = 13


def wilcoxon_p(x: np.ndarray, y: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the pairs (``x``, ``y``), zeros by Pratt: the p-value of
    ``scipy.stats.wilcoxon(x, y, zero_method="pratt")``, the same number, faster (:func:`wilcoxon_ps` of one row)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"wilcoxon_p: expected two 1-D arrays of the same length, got shapes {x.shape} and {y.shape}")
    return float(wilcoxon_ps(x[None], y[None])[0])


def wilcoxon_ps(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's :func:`wilcoxon_p` for two (tests, pairs) arrays: row ``i``'s p-value is that of
    ``scipy.stats.wilcoxon(x[i], y[i], zero_method="pratt")``, the same number.

    scipy's ``method="auto"`` picks the test from the differences: without ties and zeros its exact distribution
    (n ≤ 50), with them and n ≤ :data:`PERMUTATION_MAX_N` an exact permutation test over the 2^n sign assignments
    (calling its statistic once per assignment: ~25 ms a test at n = 7), else its normal approximation. The rows are
    sorted into those three groups and each group answered in one vectorised call — the exact distribution and the
    normal approximation by ``scipy.stats.wilcoxon`` itself along the rows, the permutation test by
    ``scipy.stats.permutation_test`` with W+ (the sum of the average ranks of |d| over the positive differences,
    zeros ranked and then left out, as scipy's Pratt statistic) as a vectorised statistic. A family of 91 pairs takes
    three calls instead of 91 (each call of scipy's wrapper costs ~1 ms). ``tests/audit/test_aggregate`` holds every
    row equal to scipy's own call on random tables with ties and zeros."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 2:
        raise ValueError(f"wilcoxon_ps: expected two 2-D arrays (tests, pairs) of the same shape, got shapes {x.shape} "
                         f"and {y.shape}")
    d = x - y
    out = np.empty(len(d))
    mag = np.sort(np.abs(d), axis=1)
    tied = (mag[:, :1] == 0).any(axis=1) | (np.diff(mag, axis=1) == 0).any(axis=1)
    permutation = tied & (d.shape[1] <= PERMUTATION_MAX_N)
    for rows in (~tied, tied & ~permutation):  # each group's "auto" choice is the one its rows make alone
        if rows.any():
            out[rows] = stats.wilcoxon(x[rows], y[rows], zero_method="pratt", axis=1).pvalue
    if permutation.any():
        out[permutation] = stats.permutation_test((d[permutation],), _signed_rank_sum, permutation_type="samples",
                                                  vectorized=True, n_resamples=9999, alternative="two-sided",
                                                  axis=-1).pvalue
    return out


def _signed_rank_sum(d: np.ndarray, axis: int = -1) -> np.ndarray:
    """W+ of each row of differences ``d``: the sum of the average ranks of |d| over the positive ones."""
    return np.sum((d > 0) * stats.rankdata(np.abs(d), axis=axis), axis=axis)


def wilcoxon_pairs(cells: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Two-sided Wilcoxon signed-rank test of every pair of algorithms over the datasets' means, Holm over the
    pairs of one family. ``direction``: +1 where ``a`` is decided better than ``b``, −1 worse, 0 undecided."""
    rows = []
    for (board, selection), _ in cells.groupby(["board", "selection"], sort=False):
        wide = block_means(cells, board, selection)
        if len(wide) < 2 or wide.shape[1] < 2:
            continue
        pairs = list(itertools.combinations(range(wide.shape[1]), 2))
        values = wide.to_numpy(float)
        x, y = values[:, [a for a, _ in pairs]].T, values[:, [b for _, b in pairs]].T
        p = np.ones(len(pairs))
        differ = (x != y).any(axis=1)
        p[differ] = wilcoxon_ps(x[differ], y[differ])
        names = list(wide.columns)
        frame = pd.DataFrame(dict(board=board, selection=selection, a=[names[a] for a, _ in pairs],
                                  b=[names[b] for _, b in pairs], median_diff=np.median(x - y, axis=1),
                                  n_datasets=len(wide), p=p))
        frame["p_adj"] = holm(frame["p"].to_numpy())
        frame["direction"] = np.where(frame["p_adj"] < alpha, np.sign(frame["median_diff"]), 0).astype(int)
        frame["test"] = "Wilcoxon signed-rank (two-sided, Pratt zeros)"
        frame["correction"] = f"Holm over {len(frame)} pairs"
        rows.append(frame)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["board", "selection", "a", "b", "median_diff", "n_datasets", "p", "p_adj", "direction", "test",
                 "correction"])


def wilcoxon_summary(wil: pd.DataFrame, alpha: float) -> str:
    """One family's Wilcoxon outcome in a sentence (:func:`wilcoxon_pairs`' rows of one board and selection): how many
    pairs Holm decides at ``alpha``, and, when none can be, why — with n datasets no sign pattern gives a two-sided p
    below 2/2^n (the exact test's smallest; the normal approximation's is larger), so when that exceeds Holm's first
    threshold α/m over m pairs the test cannot decide any pair, whatever the data."""
    if not 0 < alpha < 1:
        raise ValueError(f"wilcoxon_summary: parameter 'alpha': expected a level in (0, 1), got {alpha!r}")
    if wil.empty:
        return "Wilcoxon signed-rank: no pair tested"
    m, n = len(wil), int(wil["n_datasets"].iloc[0])
    decided = int((wil["direction"] != 0).sum())
    text = f"Wilcoxon signed-rank over {n} datasets, Holm over {m} pairs at α = {alpha:g}: {decided} pair(s) decided"
    floor = 2.0 ** (1 - n)
    if floor > alpha / m:
        text += (f"; none can be with {n} datasets: the smallest two-sided p is 2/2^{n} = {floor:.3g}, above Holm's "
                 f"first threshold α/{m} = {alpha / m:.2g}")
    return text


def friedman_tests(cells: pd.DataFrame, alpha: float = 0.05) -> dict:
    """(board, selection) → :class:`dganalysis.protocols.friedman.FriedmanResult` over datasets (≥ 3 algorithms,
    ≥ 2 complete datasets; otherwise left out)."""
    from dganalysis.protocols.friedman import friedman

    out = {}
    for (board, selection), _ in cells.groupby(["board", "selection"], sort=False):
        wide = block_means(cells, board, selection)
        if wide.shape[1] >= 3 and len(wide) >= 2:
            out[(board, selection)] = friedman(wide, alpha=alpha)
    return out
