"""Across datasets, per algorithm against the baseline: probability of improvement, IQM and the Bayesian
signed-rank test with a ROPE (every pair of algorithms, Wilcoxon and Friedman/Nemenyi: :mod:`dganalysis.audit.ranks`).

Each analysis runs on one *family* (one board and selection method of one input); datasets are the tasks / blocks.
This module arranges the audit's cells into those families; the statistics are :mod:`dganalysis.stats.improvement`
and :mod:`dganalysis.stats.intervals`.

* **Probability of improvement** (Agarwal et al. 2021, rliable's ``metrics.probability_of_improvement``, computed here and tested equal): the
  probability that a run of the algorithm beats a run of the baseline on a randomly drawn dataset, ties counting ½
  (the Mann–Whitney U statistic per dataset, averaged over datasets). *Sweep:* runs are the trials, the datasets are
  fixed; its CI rests on the stratified bootstrap of Agarwal et al. (trials resampled with replacement within each
  dataset, each algorithm on its own) — computed here vectorised with rliable's metric definition, because
  ``rliable.library``'s bootstrap imports ``arch``, whose 7.x releases (the ones rliable allows) fail to import under
  pandas ≥ 3 — as the estimate ∓ Student t × the bootstrap SE widened by √(m/(m − 1)) for m trials
  (:func:`dganalysis.stats.improvement.sweep_intervals`): Agarwal et al.'s percentile interval covered 0.78–0.89 at
  2–3 trials for a nominal 0.95 (measured: ``ci_coverage``). *Table*
  (means only): each dataset holds one "run", the published mean, so PoI is the share of datasets where the
  algorithm's mean is higher, ties ½. Its interval is about a *population of datasets* from which the table's are
  taken as a random sample: θ = P(win) + ½ P(tie) on a new dataset. It is exact binomial
  (:func:`dganalysis.stats.intervals.clopper_pearson_ties`, Clopper & Pearson 1934): the lower bound counts ties as
  losses, the upper as wins (conservative where means tie); 0 wins of 7 gives [0, 0.41]. No runs are simulated
  from the means.
* **IQM** (Agarwal et al. 2021: the mean of the middle 50%, fractional weights at the quartiles when 4 does not divide
  the number of values, :func:`dganalysis.stats.improvement.iqm`; rliable's ``metrics.aggregate_iqm`` cuts ⌊n/4⌋
  whole values and agrees only when 4 divides n) of the difference to the baseline's mean on
  each dataset (a baseline-normalised score, in points): runs of different datasets are commensurable only as such
  differences — the IQM of raw accuracy pooled over datasets would trim whole datasets, and is not reported. Sweep:
  over runs × datasets, the same stratified bootstrap; table: over datasets, the Tukey–McLaughlin trimmed-mean t
  interval (:func:`dganalysis.stats.intervals.trimmed_mean_t`).
* Every interval carries ``ci_method`` and ``ci_coverage`` (``iqm_delta_ci_method``, ``iqm_delta_ci_coverage``): the
  coverage of that construction measured on simulated data at the nearest simulated size (the smallest over the
  scenarios simulated there; ``bench/audit_interval_coverage.py``, :func:`dganalysis.audit.coverage.coverage`);
  NaN at a level other than 0.95.
* **Bayesian signed-rank** (Benavoli et al. 2017, ``baycomp.two_on_multiple``'s numbers on the datasets' means,
  seeded; :func:`dganalysis.stats.improvement.signed_rank_probs`):
  posterior P(better), P(equivalent: |Δ| < rope), P(worse) of the algorithm against the baseline, from 5000
  posterior samples (Monte-Carlo error ≤ 0.007).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dganalysis.audit import coverage
from dganalysis.stats.improvement import (
    iqm,
    probability_of_improvement,
    signed_rank_probs,
    sweep_intervals,
    table_intervals,
)

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
                n_runs = min(len(x), len(y))
                size = dict(runs=n_runs)
                methods = ("poi_sweep_bootstrap_se_t", "iqm_delta_sweep_bootstrap_se_t")
            else:
                x, y = pair[[alg]].to_numpy().T, pair[[baseline]].to_numpy().T
                basis = BASIS_TABLE
                n_runs = 1
                size = dict(n_datasets=len(datasets))
                methods = ("poi_table_clopper_pearson", "iqm_delta_table_trimmed_t")
            pb, pe, pw = signed_rank_probs(pair[alg].to_numpy(), pair[baseline].to_numpy(), rope, bayes_samples, seed)
            lo, hi, dlo, dhi = (sweep_intervals(x, y, rng, reps, confidence) if tr else
                                table_intervals(x[0], y[0], confidence))
            poi = float(probability_of_improvement(x, y))
            iqm_d = float(iqm(x - y.mean(axis=0)))
            cov = [coverage.coverage(m, confidence, **size) for m in methods]
            rows.append(dict(board=board, selection=selection, algorithm=alg, baseline=baseline,
                             prob_improvement=poi, ci_low=lo, ci_high=hi, ci_method=coverage.CI_METHODS[methods[0]],
                             ci_coverage=cov[0], iqm_delta=iqm_d, iqm_delta_low=dlo, iqm_delta_high=dhi,
                             iqm_delta_ci_method=coverage.CI_METHODS[methods[1]], iqm_delta_ci_coverage=cov[1],
                             p_better=float(pb), p_equivalent=float(pe), p_worse=float(pw), n_datasets=len(datasets),
                             n_runs=n_runs, basis=basis))
    return pd.DataFrame(rows, columns=AGG_COLUMNS)
