"""Confidence intervals the audit reports beside its point estimates, each for a stated population.

* :func:`clopper_pearson_ties` — a probability θ = P(win) + ½ P(tie) from wins and ties among n independent units
  (a table's probability of improvement over datasets). The exact binomial interval (Clopper & Pearson 1934) of the
  wins bounds θ from below (ties counted as losses) and that of wins + ties bounds it from above (ties counted as
  wins), each one-sided at (1 − confidence)/2: since P(win) ≤ θ ≤ P(win) + P(tie), the interval covers θ with
  probability ≥ confidence whatever the tie rate — conservative where ties occur.
* :func:`trimmed_mean` — the trimmed mean with fractional weights at the cut (at 25%: the interquartile mean, IQM,
  of Agarwal et al. 2021, exactly the middle half of the values for any n), and :func:`trimmed_mean_t`, the same
  estimate with the Tukey & McLaughlin (1963) interval (Winsorized variance, Student t on n − 2g − 1 degrees of
  freedom; Yuen 1974, Wilcox 2012 Sec. 4.4).
* :func:`unbiased_expected_max_weights` — the without-replacement (U-statistic) estimator of the expected best of k
  draws (Tang et al. 2020 show that Dodge et al.'s with-replacement eq. 1 is biased low).
* :func:`t_interval_over` — the Student-t interval of a mean over independent replicates (e.g. trials),
  :func:`mean_t_interval`, the same for one mean with its SD, :func:`t_interval`, the same from a mean, an SD and n
  already computed, and :func:`t_half_width`, its
  half-width from an SD (the standard error itself: :mod:`dganalysis.stats.moments`).
* :func:`dodge_eq1_weights` — the weights of Dodge et al.'s (2019) eq. 1, the expected best of k draws with
  replacement.
* :func:`paired_percentile_bootstrap` — a percentile bootstrap interval (Efron & Tibshirani 1993, Ch. 13) of a
  statistic of paired samples, the units resampled with all their values together (``scipy.stats.bootstrap`` with
  ``paired=True``); with a handful of units it is narrow (anti-conservative), a description rather than a test.
* :func:`search_intervals` — the expected-max curve of a hyperparameter search (Dodge et al. 2019's eq. 1 and the
  unbiased estimator) with Student-t intervals over trials for each budget and for the gain to the full budget, the
  gain's upper end corrected for skewness (:func:`skew_corrected_t_upper`).

Their coverage, measured on simulated data, ships with the audit (:mod:`dganalysis.audit.coverage`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import special, stats

from dganalysis.validation import ConfigError, check_callable, check_list, check_scalar, describe


def clopper_pearson_ties(wins: np.ndarray | int, ties: np.ndarray | int, n: np.ndarray | int,
                         confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Interval for θ = P(win) + ½ P(tie) from ``wins`` and ``ties`` among ``n`` independent datasets (arrays
    broadcast): the lower bound is the exact (Clopper & Pearson 1934) one-sided bound of ``wins`` of ``n``, the upper
    that of ``wins + ties`` of ``n``, each at level 1 − (1 − confidence)/2 — the numbers of
    ``scipy.stats.binomtest(k, n).proportion_ci(confidence, method="exact")``'s ends. Without ties it is the
    Clopper–Pearson interval; 0 wins of 7 gives [0, 0.410]."""
    wins, ties, n = (np.asarray(a, dtype=float) for a in (wins, ties, n))
    if not 0 < confidence < 1:
        raise ValueError(f"clopper_pearson_ties: parameter 'confidence': expected a level in (0, 1), got {confidence}")
    if (wins < 0).any() or (ties < 0).any() or (wins + ties > n).any() or (n < 1).any():
        raise ValueError("clopper_pearson_ties: expected 0 ≤ wins, 0 ≤ ties, wins + ties ≤ n and n ≥ 1")
    a = (1 - confidence) / 2
    up = wins + ties
    with np.errstate(invalid="ignore"):
        lo = np.where(wins > 0, stats.beta.ppf(a, np.maximum(wins, 1), n - wins + 1), 0.0)
        hi = np.where(up < n, stats.beta.ppf(1 - a, up + 1, np.maximum(n - up, 1)), 1.0)
    return lo, hi


def trimmed_mean(values: np.ndarray, trim: float = 0.25, axis: int = -1) -> np.ndarray:
    """The ``trim``-trimmed mean along ``axis`` with fractional weights at the cut: the mean of the empirical quantile
    function over [trim, 1 − trim], ∫ Q̂(u) du / (1 − 2·trim), Q̂(u) = x_(⌈nu⌉). The i-th smallest of n values gets
    weight n·``|[(i − 1)/n, i/n] ∩ [trim, 1 − trim]|`` / (n(1 − 2·trim)): exactly trim·n values are cut from each
    end, the boundary values in part.

    At trim = 0.25 this is the interquartile mean as Agarwal et al. (2021, *Deep RL at the Edge of the Statistical
    Precipice*, Sec. 4) define it — the mean of the middle 50% of the runs — and the population IQM 2∫_{1/4}^{3/4}
    Q(u) du the audit's coverage is measured against (:mod:`dganalysis.audit.coverage`). ``scipy.stats.trim_mean``
    (and rliable's ``metrics.aggregate_iqm``, which calls it) cuts ⌊trim·n⌋ whole values instead: at n = 7 it cuts 1
    of 7 from each end (keeping 71%, not 50%), at n = 21 (3 runs × 7 datasets) 5 instead of 5.25. The two agree when
    trim·n is an integer (n divisible by 4 at 25%). Example (tests/stats/test_iqm_rliable.py): n = 7, values 0, 1, 2,
    4, 8, 16, 100 — weights 0, ¼, 1, 1, 1, ¼, 0 over 3.5: IQM = 18.25/3.5 = 5.214 (scipy: 31/5 = 6.2); n = 8, adding
    32: the mean of 2, 4, 8, 16 = 7.5 (both)."""
    x = np.sort(np.moveaxis(np.asarray(values, dtype=float), axis, -1), axis=-1)
    n = x.shape[-1]
    if not 0 <= trim < 0.5:
        raise ValueError(f"trimmed_mean: parameter 'trim': expected a share in [0, 0.5), got {trim!r}")
    edges = np.arange(n + 1) / n
    w = np.clip(np.minimum(edges[1:], 1 - trim) - np.maximum(edges[:-1], trim), 0.0, None)
    return (x * w).sum(axis=-1) / w.sum()


def trimmed_mean_t(values: np.ndarray, confidence: float = 0.95, trim: float = 0.25,
                   axis: int = -1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Trimmed mean (:func:`trimmed_mean`: trim·n values cut from each end, fractional weights at the cut — the IQM
    at 0.25) and the Tukey & McLaughlin (1963) interval around it along ``axis``: SE = √((n − 1) s_w² / (h (h − 1)))
    with s_w² the Winsorized variance at g = ⌊trim·n⌋ and h = n − 2g, Student t on h − 1 degrees of freedom (the
    construction is defined for whole g; the centre is the fractional estimate, so the interval brackets the
    reported IQM). About the population's trimmed mean; exact for no distribution, near nominal for symmetric ones
    (coverage measured on simulated data). Needs h ≥ 2 (NaN interval otherwise)."""
    x = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    n = x.shape[-1]
    g = int(trim * n)
    h = n - 2 * g
    est = trimmed_mean(x, trim)
    if h < 2:
        nan = np.full(est.shape, np.nan)
        return est, nan, nan
    s = np.sort(x, axis=-1)
    w = np.clip(x, s[..., g:g + 1], s[..., n - g - 1:n - g])  # Winsorized
    se = np.sqrt((n - 1) * np.var(w, axis=-1, ddof=1) / (h * (h - 1)))
    half = stats.t.ppf(0.5 + confidence / 2, h - 1) * se
    return est, est - half, est + half


def unbiased_expected_max_weights(big_n: int, budgets: np.ndarray) -> np.ndarray:
    """(budgets, N) weights of the U-statistic for the expected maximum of k draws from N values sorted ascending:
    w_i = C(i − 1, k − 1) / C(N, k), the probability that the i-th smallest is the largest of k drawn without
    replacement (Hoeffding 1948; the unbiased estimator of Tang et al. 2020). Rows of budgets above N are NaN."""
    i = np.arange(1, big_n + 1)
    out = np.full((len(budgets), big_n), np.nan)
    for r, k in enumerate(budgets):
        if 1 <= k <= big_n:
            out[r] = np.exp(special.gammaln(i) - special.gammaln(k) - special.gammaln(i - k + 1)
                            - (special.gammaln(big_n + 1) - special.gammaln(k + 1) - special.gammaln(big_n - k + 1)))
            out[r, : k - 1] = 0.0
    return out


def dodge_eq1_weights(big_n: int, budgets) -> np.ndarray:
    """(budgets, N) weights of Dodge et al.'s (2019) eq. 1 over N values sorted ascending: w_i = (i/N)^k −
    ((i − 1)/N)^k, the probability that the i-th smallest is the largest of k draws with replacement."""
    i = np.arange(1, big_n + 1)
    return np.array([(i / big_n) ** n - ((i - 1) / big_n) ** n for n in budgets])


def t_half_width(sd, n, confidence: float = 0.95):
    """Half-width of the Student-t interval of a mean over ``n`` independent replicates with sample SD ``sd``
    (ddof 1): t_{(1 + confidence)/2, n − 1} · sd / √n (Student 1908). Arrays broadcast; needs n ≥ 2."""
    return stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n)


def t_interval(mean, sd, n, confidence: float = 0.95):
    """The Student-t interval ``(low, high)`` = ``mean`` ∓ :func:`t_half_width` of a mean over ``n`` independent
    replicates with sample SD ``sd`` (ddof 1), NaN where ``n < 2``. Arrays broadcast (float arrays back); scalars
    give floats. The mean and SD are the caller's (numpy's or pandas' arithmetic, NaN skipped or not)."""
    mean, sd, n = np.asarray(mean, dtype=float), np.asarray(sd, dtype=float), np.asarray(n)
    ok = n > 1
    with np.errstate(divide="ignore", invalid="ignore"):
        half = np.where(ok, t_half_width(sd, np.where(ok, n, 2), confidence), np.nan)
    low, high = mean - half, mean + half
    return (float(low), float(high)) if low.ndim == 0 else (low, high)


def mean_t_interval(values, confidence: float = 0.95) -> tuple[float, float, float, float]:
    """``(mean, sd, low, high)`` of the values of one mean over independent replicates: their mean, their sample SD
    (ddof 1; NaN with one value) and the Student-t interval (:func:`t_interval`; NaN with fewer than 2 values); all
    NaN without values. ``values``: a 1-D numpy array or pandas Series, whose own ``mean()`` and ``std(ddof=1)`` are
    taken (a Series skips NaN, as pandas does)."""
    n = len(values)
    if n == 0:
        return np.nan, np.nan, np.nan, np.nan
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if n > 1 else np.nan
    low, high = t_interval(mean, sd, n, confidence)
    return mean, sd, low, high


def t_interval_over(values: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and Student-t interval over axis 0 (independent replicates, e.g. trials); NaN with fewer than 2."""
    v = np.asarray(values, dtype=float)
    n = v.shape[0]
    mean = v.mean(axis=0)
    if n < 2:
        nan = np.full(mean.shape, np.nan)
        return mean, nan, nan
    low, high = t_interval(mean, v.std(axis=0, ddof=1), n, confidence)
    return mean, low, high


def paired_percentile_bootstrap(samples: Sequence[np.ndarray], statistic: Callable[..., float | np.ndarray], *,
                                confidence: float = 0.95, n_resamples: int = 2000,
                                seed: int | np.random.Generator = 0,
                                vectorized: bool = False) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
    """(low, high): the percentile bootstrap interval at ``confidence`` (Efron & Tibshirani 1993, Ch. 13) of
    ``statistic(*samples)`` over units resampled with replacement, each unit's values in every sample kept together
    (``scipy.stats.bootstrap(samples, statistic, paired=True, method="percentile")``; ``vectorized`` as there: the
    statistic takes an ``axis`` argument). The units lie along axis 0 of every sample; one sample is a plain
    bootstrap of its units. A vectorized statistic may return several values per resample (its last axis the
    resamples, e.g. a curve's points × resamples): the ends are then arrays, one interval per value, all from the
    same resamples. ``seed``: a Generator is used as scipy's ``rng`` (one ``integers(0, n, (n_resamples, n))`` call
    for the resampled indices, so a caller's stream goes on as after drawing them itself); an int seeds scipy's
    legacy ``random_state`` stream (NumPy's ``RandomState``), so a caller seeded that way keeps its numbers."""
    f = "paired_percentile_bootstrap"
    check_callable(statistic, "statistic", func=f)
    check_list(samples, "samples", func=f, min_len=1)
    check_scalar(confidence, "confidence", func=f, low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(n_resamples, "n_resamples", func=f, kind="int", low=1)
    if isinstance(seed, np.random.Generator):
        source = {"rng": seed}
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
        source = {"random_state": seed}
    else:
        raise ConfigError(f"{f}: parameter 'seed': expected an int or a numpy Generator, got {describe(seed)}")
    res = stats.bootstrap(tuple(samples), statistic, paired=True, vectorized=vectorized, confidence_level=confidence,
                          n_resamples=n_resamples, method="percentile", **source)
    low, high = np.asarray(res.confidence_interval.low), np.asarray(res.confidence_interval.high)
    return (float(low), float(high)) if low.ndim == 0 else (low, high)


#: the skewness the upper bound of a search's gain is corrected for (:func:`skew_corrected_t_upper`): at least the
#: per-trial gain's skewness measured in the coverage simulators (0.8 where validation tracks test, 0.05–0.25 where it
#: is weakly related; :mod:`dganalysis.audit.coverage`)
GAIN_SKEW = 1.0


def skew_corrected_t_upper(values: np.ndarray, confidence: float = 0.95, skew: float = GAIN_SKEW) -> np.ndarray:
    """Upper confidence bound at one-sided level (1 + ``confidence``)/2 for the mean over axis 0 (independent
    replicates) of a quantity whose distribution is skewed to the right with skewness at most ``skew``.

    The Student-t upper bound x̄ + t s/√n misses too often for such data: when x̄ falls low, s tends to fall low with
    it. The Edgeworth expansion of the studentized mean T = √n (x̄ − μ)/s (Hall 1992, *The Bootstrap and Edgeworth
    Expansion*, Sec. 2.6; the correction of Johnson 1978, JASA 73:536) gives P(T ≤ x) = Φ(x) + γ (2x² + 1) φ(x) /
    (6√n) + O(1/n), γ the skewness; the Cornish–Fisher inversion moves the quantile to t + γ (2t² + 1)/(6√n). Here γ
    is not estimated (three trials carry no usable estimate of it) but fixed at the bound ``skew``: the bound is then
    conservative to first order for any skewness up to it (and for left-skewed data). NaN with fewer than two
    replicates. SIMULATED searches (:func:`dganalysis.audit.coverage.simulate_search`; 2–10 trials, 5–50 draws): the
    miss of the plain t bound on the gain 0.038–0.061 for a nominal 0.025, of this bound ≤ 0.026."""
    v = np.asarray(values, dtype=float)
    n = v.shape[0]
    mean = v.mean(axis=0)
    if n < 2:
        return np.full(mean.shape, np.nan)
    t = stats.t.ppf(0.5 + confidence / 2, n - 1)
    q = t + max(float(skew), 0.0) * (2 * t * t + 1) / (6 * np.sqrt(n))
    return mean + q * v.std(axis=0, ddof=1) / np.sqrt(n)


def search_intervals(a: np.ndarray, v: np.ndarray, trial: np.ndarray, budgets: Sequence[int],
                     confidence: float = 0.95, gain_skew: float = GAIN_SKEW) -> dict[str, np.ndarray]:
    """The expected-max curve of one (dataset, algorithm) and its intervals, from (rows, N) arrays of test accuracy
    ``a`` and validation score ``v`` (a row per (trial, split, test domain), a column per hparams draw) and each row's
    trial (``trial``). Per budget k (arrays over ``budgets``):

    * ``expected_max``: Dodge et al.'s eq. 1 (draws with replacement, ordered by ``v``) averaged over the rows — the curve's point estimate;
    * ``unbiased``: the same average of the without-replacement U-statistic
      (:func:`unbiased_expected_max_weights`; Tang et al. 2020), unbiased for the
      expected test accuracy of the validation-selected draw of a search of k draws; NaN for k > N;
    * ``ci_low``/``ci_high``: the Student-t interval over trials of the per-trial ``unbiased`` (each trial's mean over
      its rows): trials are independent replicates of the whole search (their own data split and, in DomainBed, their
      own hparams draws), so the interval says how far another sweep's curve could lie, and rests on no resample of a
      maximum. Pointwise in k; NaN with one trial;
    * ``gain``: ``expected_max`` at the largest budget K minus at k, and ``gain_low``/``gain_high`` an interval for
      the mean per-trial unbiased gain (the interval the audit reads to flag a saturated search): ``gain_low`` the
      lower end of the same t interval, ``gain_high`` the skewness-corrected upper bound
      (:func:`skew_corrected_t_upper` at skewness ``gain_skew``), each one-sided at (1 − confidence)/2. The
      per-trial gain of a few draws is skewed to the right (it rides on the top draws), which makes the plain t
      upper bound miss up to twice its nominal rate (0.061 for 0.025 in simulated searches) and flags searches
      saturated too often; right skew only makes the t lower bound conservative, so it is kept.

    Ties in ``v`` are broken by ``a`` ascending (pessimistic)."""
    a, v = np.asarray(a, dtype=float), np.asarray(v, dtype=float)
    trial = np.asarray(trial)
    if a.shape != v.shape or a.ndim != 2 or len(trial) != len(a):
        raise ValueError(f"search_intervals: expected (rows, draws) arrays a and v of one shape and a trial per row, "
                         f"got {a.shape}, {v.shape} and {len(trial)} trials")
    sizes = np.asarray([int(b) for b in budgets])
    big_n = a.shape[1]
    eq1 = dodge_eq1_weights(big_n, sizes)
    unb = unbiased_expected_max_weights(big_n, sizes)
    order = np.lexsort((a, v), axis=-1)
    ranked = np.take_along_axis(a, order, axis=-1)
    point = (ranked @ eq1.T).mean(axis=0)
    per_row = ranked @ np.nan_to_num(unb).T
    per_row[:, np.isnan(unb).any(axis=1)] = np.nan
    trials = np.unique(trial)
    per_trial = np.stack([per_row[trial == t].mean(axis=0) for t in trials])  # (trials, budgets)
    top = int(np.argmax(sizes))
    mean, lo, hi = t_interval_over(per_trial, confidence)
    gains = per_trial[:, [top]] - per_trial
    _, glo, _ = t_interval_over(gains, confidence)
    ghi = skew_corrected_t_upper(gains, confidence, gain_skew)
    return {"expected_max": point, "unbiased": mean, "ci_low": lo, "ci_high": hi, "gain": point[top] - point,
            "gain_low": glo, "gain_high": ghi}
