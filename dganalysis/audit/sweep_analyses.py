"""Analyses only a raw sweep allows (a published table cannot): how much model selection costs, whether it changes
the ranking, whether the hyperparameter search had saturated, LODO vs LOGO, and the selected hyperparameters.

Inputs are the tidy frame of :func:`dganalysis.records.load` (or :func:`dganalysis.records.index.load_indexed`) and,
where a function takes ``selections``, either method names or ``{method: dganalysis.records.selection.select(df, method)}``
already computed. Selection is always :func:`dganalysis.records.selection.select` (DomainBed's methods, bit for bit).
Accuracies are reported in points (percent). A dataset's *average* is DomainBed's "Avg" computed per trial: the mean
over the dataset's columns (its test domains, from the runs with the fewest test domains, as
:func:`dganalysis.records.summaries.build_tables` with ``test_domains="auto"``); a trial missing a column has no average.

References: Gulrajani & Lopez-Paz 2021 (model selection, Sec. 3); Dodge et al. 2019, *Show Your Work* (expected
validation performance, Sec. 3, eq. 1-2); Tang et al. 2020, *Showing Your Work Doesn't Always Work* (the unbiased
without-replacement estimator); Yu et al. 2024, *Rethinking the Evaluation Protocol of DG* (LOGO, Sec. 4).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.audit import coverage
from dganalysis.audit.inputs import AuditInput, main_selection
from dganalysis.records.selection import select
from dganalysis.records.selection_methods import CONFIG, METHODS
from dganalysis.stats import intervals
from dganalysis.validation import ConfigError

#: the selection methods whose regret against ``oracle`` is reported
REGRET_METHODS = ("training_domain", "leave_one_out")
#: a search is flagged saturated when the interval of the gain from doubling the budget to its full size lies at or
#: below this many points, not saturated when it lies above
SATURATION_GAIN = 0.5
_KEYS = ["dataset", "algorithm", "setting"]


# ---------------------------------------------------------------- helpers


def _str(df: pd.DataFrame) -> pd.DataFrame:
    cats = {c: "str" for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)}
    return df.astype(cats) if cats else df


def _selections(df: pd.DataFrame, selections: Mapping[str, pd.DataFrame] | Iterable[str] | None,
                need: Sequence[str] = ()) -> dict[str, pd.DataFrame]:
    """``{method: selected}``: given frames are used as they are, names are selected here, ``need`` is added."""
    if selections is None:
        selections = {}
    if isinstance(selections, str):
        raise ConfigError(f"selections: expected method names or {{method: selected frame}}, got the string "
                         f"{selections!r}; write [{selections!r}]")
    out = dict(selections) if isinstance(selections, Mapping) else dict.fromkeys(selections)
    for m in need:
        out.setdefault(m, None)
    bad = [m for m in out if m not in METHODS]
    if bad:
        raise ConfigError(f"selections: unknown methods {bad}; expected some of {list(METHODS)}")
    return {m: _str(select(df, m) if s is None else s) for m, s in out.items()}


def _columns(selected: pd.DataFrame) -> pd.DataFrame:
    """The configs with the fewest test domains per dataset (DomainBed's single-test-domain runs)."""
    k = selected["test_domains"].str.count(",") + 1
    return selected[k == k.groupby(selected["dataset"]).transform("min")]


def trial_averages(selected: pd.DataFrame, columns: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per (dataset, algorithm, setting, trial_seed): the mean selected accuracy (points) over the dataset's columns
    (DomainBed's Avg computed per trial); trials missing a column are dropped. ``columns`` (rows with dataset,
    train/test/val domains and domain) fixes the columns; default: those of ``selected``."""
    sel = _columns(_str(selected))
    cols = ["train_domains", "test_domains", "val_domains", "domain"]
    if columns is None:
        columns = sel
    n_cols = columns.drop_duplicates(["dataset", *cols]).groupby("dataset").size().rename("n_cols")
    g = sel.groupby([*_KEYS, "trial_seed"], as_index=False).agg(avg=("acc", "mean"), n=("acc", "size"))
    g = g.merge(n_cols, left_on="dataset", right_index=True)
    g = g[g["n"] == g["n_cols"]]
    return g.assign(avg=100 * g["avg"])[[*_KEYS, "trial_seed", "avg"]].reset_index(drop=True)


def _t_interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """Mean and Student-t interval over the values (trials; :func:`dganalysis.stats.intervals.t_interval_over`):
    valid for small n under normality (n ≥ 2)."""
    if not len(values):
        return float("nan"), float("nan"), float("nan")
    mean, lo, hi = intervals.t_interval_over(np.asarray(values, dtype=float), confidence)
    return float(mean), float(lo), float(hi)


def _drop_single_setting(out: pd.DataFrame) -> pd.DataFrame:
    """Drop the ``setting`` column when each (dataset, algorithm) has one setting (the usual sweep)."""
    if out.empty or out.groupby(["dataset", "algorithm"])["setting"].nunique().max() <= 1:
        return out.drop(columns="setting")
    return out


# ---------------------------------------------------------------- model-selection sensitivity


def selection_regret(
    df: pd.DataFrame, selections: Mapping[str, pd.DataFrame] | Iterable[str] | None = REGRET_METHODS,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Regret of each selection method against the oracle (test-domain validation), in points, per
    (dataset, algorithm): per trial, the oracle's dataset average minus the method's (positive: the method picked
    worse models than the oracle could), then its mean over trials with a Student-t interval at ``confidence``
    (valid at 3 trials under normality of the per-trial regrets; a bootstrap over 3 trials is not).

    Returns columns dataset, algorithm, selection, regret, ci_low, ci_high, n (trials with every column under both
    methods); ``setting`` too when a (dataset, algorithm) has several settings.
    """
    if not 0 < confidence < 1:
        raise ConfigError(f"selection_regret: confidence must be in (0, 1), got {confidence!r}")
    sels = _selections(df, selections, need=("oracle",))
    oracle = trial_averages(sels["oracle"])
    rows = []
    for method, sel in sels.items():
        if method == "oracle":
            continue
        both = oracle.merge(trial_averages(sel, columns=_columns(sels["oracle"])), on=[*_KEYS, "trial_seed"],
                            suffixes=("_oracle", ""))
        for key, part in both.groupby(_KEYS, sort=True):
            regret = (part["avg_oracle"] - part["avg"]).to_numpy()
            mean, lo, hi = _t_interval(regret, confidence)
            rows.append({**dict(zip(_KEYS, key)), "selection": method, "regret": mean, "ci_low": lo, "ci_high": hi,
                         "n": len(regret)})
    cols = [*_KEYS, "selection", "regret", "ci_low", "ci_high", "n"]
    return _drop_single_setting(pd.DataFrame(rows, columns=cols))


def ranking_changes(df: pd.DataFrame, selections: Mapping[str, pd.DataFrame] | Iterable[str] | None = (
        "training_domain", "leave_one_out", "oracle")) -> pd.DataFrame:
    """Per dataset, the algorithms' ranks under each selection method (1 = best mean over trials of the dataset
    average; ties share the mean rank), whether the ranking changes between methods, and Kendall's tau and Spearman's
    rho between every pair of methods (over the algorithms ranked by both).

    One method given: compared with the oracle (the oracle alone: with training-domain validation).
    Returns one row per (dataset, algorithm): ``mean_<method>`` (points), ``rank_<method>``, ``changed`` (True where
    the dataset's ranking differs between any two methods), ``kendall_<a>_<b>``, ``spearman_<a>_<b>``.
    """
    sels = _selections(df, selections)
    if len(sels) < 2:  # one method: compared with the oracle (what the method costs in ranking)
        sels = _selections(df, {**sels, "oracle": None} if "oracle" not in sels else {**sels, "training_domain": None})
    wide = None
    for method, sel in sels.items():
        means = trial_averages(sel).groupby(["dataset", "algorithm"], as_index=False)["avg"].mean()
        means = means.rename(columns={"avg": f"mean_{method}"})
        wide = means if wide is None else wide.merge(means, on=["dataset", "algorithm"], how="outer")
    parts = []
    for _, part in wide.groupby("dataset", sort=True):
        part = part.copy()
        for m in sels:
            part[f"rank_{m}"] = part[f"mean_{m}"].rank(ascending=False, method="average")
        ranks = part[[f"rank_{m}" for m in sels]]
        complete = ranks.dropna()
        part["changed"] = bool((complete.nunique(axis=1) > 1).any()) if len(complete) else False
        for a, b in itertools.combinations(sels, 2):
            both = part[[f"mean_{a}", f"mean_{b}"]].dropna()
            tau = rho = float("nan")
            if len(both) >= 2 and both.iloc[:, 0].nunique() > 1 and both.iloc[:, 1].nunique() > 1:
                tau = float(stats.kendalltau(both.iloc[:, 0], both.iloc[:, 1]).statistic)
                rho = float(stats.spearmanr(both.iloc[:, 0], both.iloc[:, 1]).statistic)
            part[f"kendall_{a}_{b}"], part[f"spearman_{a}_{b}"] = tau, rho
        parts.append(part)
    return pd.concat(parts, ignore_index=True).sort_values(["dataset", "algorithm"], ignore_index=True)


# ---------------------------------------------------------------- expected best accuracy vs search budget


def expected_max(values: np.ndarray, n: int, order: np.ndarray | None = None) -> float:
    """Dodge et al. (2019) eq. 1: the expected maximum of ``n`` draws with replacement from the empirical
    distribution of ``values``, E = Σ_i v_(i) [(i/N)^n − ((i−1)/N)^n] over the values sorted ascending.

    ``order`` (e.g. validation scores) sorts the draws instead: then E is the expected ``values`` of the draw a search
    of ``n`` draws would pick by ``order`` (the expected test accuracy of the validation-selected model). Ties in
    ``order`` are broken by ``values`` ascending (pessimistic)."""
    values = np.asarray(values, dtype=float)
    big_n = len(values)
    if big_n == 0 or n < 1:
        raise ConfigError(f"expected_max: need at least one value and n ≥ 1, got {big_n} values and n={n}")
    idx = np.argsort(values, kind="stable") if order is None else np.lexsort((values, np.asarray(order, float)))
    i = np.arange(1, big_n + 1)
    weights = (i / big_n) ** n - ((i - 1) / big_n) ** n
    return float(np.dot(values[idx], weights))


def _per_draw(df: pd.DataFrame | None, selection: str, draws: pd.DataFrame | None) -> pd.DataFrame:
    """Per (config, test domain, hparams draw): the test accuracy and validation score of the draw's own
    checkpoint choice under ``selection`` (``select(df, selection, per_draw=True)``, or ``draws`` when given)."""
    if draws is None:
        if df is None:
            raise ConfigError("expected_max_curve: give the tidy frame df or its per-draw selection draws")
        draws = select(df, selection, per_draw=True)
    elif not isinstance(draws, pd.DataFrame) or not {"selection", "hparams_seed", "acc", "val_acc"} <= set(draws):
        raise ConfigError(f"expected_max_curve: parameter 'draws': expected the frame of select(df, {selection!r}, "
                         f"per_draw=True), got {type(draws).__name__}")
    elif set(draws["selection"].unique()) - {selection}:
        raise ConfigError(f"expected_max_curve: draws holds the selection {sorted(set(draws['selection']))}, not "
                         f"{selection!r}; expected select(df, {selection!r}, per_draw=True)")
    return _columns(_str(draws)) if len(draws) else draws


#: the columns of :func:`expected_max_curve`
CURVE_COLUMNS = ["dataset", "algorithm", "budget", "expected_max", "expected_max_unbiased", "ci_low", "ci_high",
                 "ci_method", "ci_coverage", "gain", "gain_low", "gain_high", "n_draws", "n_trials"]


def expected_max_curve(
    df: pd.DataFrame | None, selection: str = "training_domain", budgets: Sequence[int] | None = None,
    confidence: float = 0.95, draws: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Expected best accuracy as a function of the number of hyperparameter draws (Dodge et al. 2019, Sec. 3).

    For each (dataset, algorithm, trial, test domain) the N hparams draws of the sweep each give a test accuracy at
    the checkpoint ``selection`` picks within that draw, and a validation score. The expected accuracy of a search of
    n draws is :func:`expected_max` of the accuracies ordered by validation score (the draw such a search would pick;
    with ``selection="oracle"`` the score is the test domain's own 'out' split). The curve is averaged over test
    domains (the dataset average) and trials, in points.

    Interval (:func:`dganalysis.stats.intervals.search_intervals`): a Student-t interval at ``confidence`` over trials of each trial's unbiased
    (without-replacement) estimate, column ``expected_max_unbiased`` its centre. It is not a bootstrap of a maximum
    (a bootstrap resample of N draws holds fewer distinct values, so its maxima sit below the curve; measured
    coverage 0.45–0.50 where such an interval was simulated for comparison). Dodge et al.'s
    ``expected_max`` is kept as the point estimate; it is biased low for k near N (at k = N the unbiased estimate is
    the largest draw), and may then lie under ``ci_low``. ``ci_coverage``: the interval's coverage measured on
    simulated searches (:func:`dganalysis.audit.coverage.coverage`; NaN at a level other than 0.95). ``gain``,
    ``gain_low``, ``gain_high``: the gain from this budget to the curve's largest, with its interval.

    ``budgets`` default 1..N (the unbiased estimate and the interval are NaN above N). ``draws``:
    ``select(df, selection, per_draw=True)`` when already made (e.g. cached by
    :func:`dganalysis.records.indexed.select_for_tables`); ``df`` is then not read and may be None.
    Returns columns :data:`CURVE_COLUMNS`.
    """
    if selection not in METHODS:
        raise ConfigError(f"expected_max_curve: unknown selection {selection!r}; expected one of {list(METHODS)}")
    if not 0 < confidence < 1:
        raise ConfigError(f"expected_max_curve: parameter 'confidence': expected a level in (0, 1), got {confidence}")
    if budgets is not None and (isinstance(budgets, (str, int)) or any(int(b) < 1 for b in budgets)):
        raise ConfigError(f"expected_max_curve: budgets must be a list of draw counts ≥ 1, got {budgets!r}")
    draws = _per_draw(df, selection, draws)
    rows = []
    # one matrix of draws: a row per (dataset, algorithm, setting, trial, split, test domain), a column per hparams
    # seed, rows in sorted key order (the draws' own order within a row does not matter: each search sorts them)
    keys = ["dataset", "algorithm", "setting", "trial_seed", "train_domains", "test_domains", "val_domains", "domain"]
    g = draws.groupby(keys, sort=True, observed=True)
    row = g.ngroup().to_numpy()
    all_seeds, col = np.unique(draws["hparams_seed"].to_numpy(), return_inverse=True)
    shape = (g.ngroups, len(all_seeds))
    acc_m, val_m, seen = np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, dtype=bool)
    acc_m[row, col], val_m[row, col], seen[row, col] = draws["acc"].to_numpy(float), draws["val_acc"].to_numpy(float), True
    first = np.zeros(shape[0], dtype=np.int64)
    first[row[::-1]] = np.arange(len(row))[::-1]  # each matrix row's first draw
    names = draws[["dataset", "algorithm"]].to_numpy()[first]  # sorted: each (dataset, algorithm) a block of rows
    trial_of = draws["trial_seed"].to_numpy()[first]
    change = np.flatnonzero((names[1:] != names[:-1]).any(axis=1)) + 1
    bounds = [0, *change.tolist(), shape[0]] if shape[0] else [0]
    method = coverage.CI_METHODS["expected_max_trials_t"]
    for k in range(len(bounds) - 1):
        rs = slice(bounds[k], bounds[k + 1])
        ds, alg = names[bounds[k]]
        present = seen[rs].any(axis=0)  # the seeds this (dataset, algorithm) drew
        seeds = all_seeds[present]
        acc, val = acc_m[rs][:, present], val_m[rs][:, present]
        full = ~np.isnan(acc).any(axis=1) & ~np.isnan(val).any(axis=1)
        if not full.any():
            continue
        sizes = list(range(1, len(seeds) + 1)) if budgets is None else [int(b) for b in budgets]
        trial = trial_of[rs][full]
        res = intervals.search_intervals(100 * acc[full], val[full], trial, sizes, confidence)
        n_trials = len(np.unique(trial))
        cov = coverage.coverage("expected_max_trials_t", confidence, trials=n_trials, draws=len(seeds))
        for j, n in enumerate(sizes):
            rows.append({"dataset": ds, "algorithm": alg, "budget": n, "expected_max": float(res["expected_max"][j]),
                         "expected_max_unbiased": float(res["unbiased"][j]), "ci_low": float(res["ci_low"][j]),
                         "ci_high": float(res["ci_high"][j]), "ci_method": method,
                         "ci_coverage": cov if n_trials > 1 and n <= len(seeds) else float("nan"),
                         "gain": float(res["gain"][j]), "gain_low": float(res["gain_low"][j]),
                         "gain_high": float(res["gain_high"][j]), "n_draws": len(seeds), "n_trials": n_trials})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def saturation(curve: pd.DataFrame, threshold: float = SATURATION_GAIN) -> pd.DataFrame:
    """Whether each search had saturated: the gain of the expected best accuracy over the last doubling of the
    budget (from ⌈N/2⌉ to N draws, N the largest budget of the curve) is at most ``threshold`` points — decided
    from its interval (``gain_low``/``gain_high`` of :func:`expected_max_curve`), not from the point estimate.

    ``saturated`` is True where the whole interval of the gain lies at or below ``threshold`` (more draws would not
    raise the best accuracy by more than that), False where it lies above (more draws would: the algorithm's number
    understates what its search space can reach, Dodge et al. 2019, Sec. 4), and NaN (unknown) where the interval
    straddles the threshold, is missing (one trial) or N = 1. ``gain`` is the point estimate of eq. 1.
    Returns columns dataset, algorithm, saturated, gain, gain_low, gain_high, budget (N), ci_method, ci_coverage.
    """
    need = {"dataset", "algorithm", "budget", "expected_max"}
    if not need <= set(curve.columns):
        raise ConfigError(f"saturation: curve lacks columns {sorted(need - set(curve.columns))}; expected "
                         "expected_max_curve's output")
    if not threshold >= 0:
        raise ConfigError(f"saturation: parameter 'threshold': expected a gain ≥ 0 points, got {threshold!r}")
    rows = []
    nan = float("nan")
    for (ds, alg), part in curve.groupby(["dataset", "algorithm"], sort=True):
        part = part.set_index("budget")
        top = int(part.index.max())
        half = (top + 1) // 2
        at = part[part.index <= half]
        gain = lo = hi = nan
        method, cov = "", nan
        if half < top and len(at):
            r = at.iloc[-1]
            gain = float(part.loc[top, "expected_max"] - r["expected_max"])
            lo, hi = float(r.get("gain_low", nan)), float(r.get("gain_high", nan))
            method, cov = r.get("ci_method", ""), float(r.get("ci_coverage", nan))
        saturated: Any = nan
        if hi <= threshold:
            saturated = True
        elif lo > threshold:
            saturated = False
        rows.append({"dataset": ds, "algorithm": alg, "saturated": saturated, "gain": gain, "gain_low": lo,
                     "gain_high": hi, "budget": top, "ci_method": method, "ci_coverage": cov})
    return pd.DataFrame(rows, columns=["dataset", "algorithm", "saturated", "gain", "gain_low", "gain_high", "budget",
                                       "ci_method", "ci_coverage"])


# ---------------------------------------------------------------- LODO vs LOGO


def lodo_vs_logo(df: pd.DataFrame, selection: str = "training_domain",
                 selected: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """Leave-one-domain-out vs leave-one-group-out ranking (Yu et al. 2024): per dataset, each algorithm's mean
    selected accuracy (points) over the runs with one test domain (LODO) and over the runs with two test domains
    (LOGO, every test domain of every pair), their ranks (1 = best) and the rank change; Kendall's tau between the two
    rankings per dataset. None when the sweep has no runs with two test domains.

    On a DomainBed sweep the pair runs exist for leave-one-out selection; here they are evaluated as test groups.
    ``selected``: ``select(df, selection)`` when already made (e.g. cached by
    :func:`dganalysis.records.indexed.select_indexed`).
    """
    sel = _str(select(df, selection) if selected is None else selected)
    if sel.empty:
        return None
    k = sel["test_domains"].str.count(",") + 1
    if not (k == 2).any():
        return None
    rows = []
    for ds, part in sel.groupby("dataset", sort=True):
        kk = part["test_domains"].str.count(",") + 1
        lodo = part[kk == 1].groupby(["algorithm", "trial_seed"])["acc"].mean().groupby("algorithm").mean()
        logo = part[kk == 2].groupby(["algorithm", "trial_seed"])["acc"].mean().groupby("algorithm").mean()
        both = pd.DataFrame({"lodo_acc": 100 * lodo, "logo_acc": 100 * logo}).dropna()
        if both.empty:
            continue
        both["lodo_rank"] = both["lodo_acc"].rank(ascending=False, method="average")
        both["logo_rank"] = both["logo_acc"].rank(ascending=False, method="average")
        both["rank_change"] = both["logo_rank"] - both["lodo_rank"]
        tau = float("nan")
        if len(both) >= 2 and both["lodo_acc"].nunique() > 1 and both["logo_acc"].nunique() > 1:
            tau = float(stats.kendalltau(both["lodo_acc"], both["logo_acc"]).statistic)
        rows.append(both.reset_index().assign(dataset=ds, kendall_tau=tau))
    if not rows:
        return None
    out = pd.concat(rows, ignore_index=True)
    return out[["dataset", "algorithm", "lodo_acc", "logo_acc", "lodo_rank", "logo_rank", "rank_change",
                "kendall_tau"]]


# ---------------------------------------------------------------- selected hyperparameters


def selected_hparams(df: pd.DataFrame, selection: str = "training_domain",
                     selected: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """The hyperparameters ``selection`` picked, one record per (dataset, algorithm, split, trial): dataset,
    algorithm, train/test/val domains (lists of names), trial_seed, the chosen hparams_seed, its hparams (dict),
    step (the chosen checkpoint; the last one for oracle), job_id, and the run's steps, checkpoint_freq,
    holdout_fraction and dataset_kwargs where its records name them (``setting``). What DomainBed's users asked to be
    published so that a result can be re-run without re-sweeping (DomainBed issues #32, #93). ``selected``:
    ``select(df, selection)`` when already made."""
    sel = _str(select(df, selection) if selected is None else selected)
    sel = sel.drop_duplicates([*CONFIG, "job_id", "step"])  # test domains sharing a pick (oracle picks per domain)
    out = []
    for r in sel.itertuples(index=False):
        setting = json.loads(r.setting) if r.setting else {}
        rec = {"dataset": r.dataset, "algorithm": r.algorithm, "train_domains": _names(r.train_domains),
               "test_domains": _names(r.test_domains), "val_domains": _names(r.val_domains),
               "trial_seed": int(r.trial_seed), "hparams_seed": int(r.hparams_seed),
               "hparams": json.loads(r.hparams) if r.hparams else {}, "step": int(r.step), "job_id": r.job_id,
               "selection": selection}
        for key in ("steps", "checkpoint_freq", "holdout_fraction", "dataset_kwargs"):
            if setting.get(key) is not None:
                rec[key] = setting[key]
        out.append(rec)
    return out


def _names(joined: str) -> list[str]:
    return [d for d in str(joined).split(",") if d]


def analyse_input(inp: AuditInput, selections: list[str], confidence: float) -> tuple[dict, list[str]]:
    """This module's analyses of a sweep input (:func:`dganalysis.audit.inputs.read_inputs`) on its audited
    ``selections``, in one sequence; an analysis the sweep cannot give (e.g. one hparams draw, no pair runs) is left
    out with a note saying why."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    main_sel = main_selection(selections)
    have = inp.selected  # the audited methods, the oracle and training-domain validation (read_inputs)
    picks = {m: have[m] for m in selections}
    # ranking_changes compares a single method with the oracle (the oracle alone with training-domain validation)
    other = "training_domain" if "oracle" in picks else "oracle"
    ranked = picks if len(picks) > 1 else {**picks, other: have[other]}
    steps = [
        ("selection_regret", lambda: selection_regret(None, {**picks, "oracle": have["oracle"]},
                                                         confidence=confidence)),
        ("ranking_changes", lambda: ranking_changes(None, ranked)),
        ("expected_max", lambda: expected_max_curve(None, main_sel, draws=inp.draws[main_sel])),
        ("lodo_vs_logo", lambda: lodo_vs_logo(None, "training_domain", have["training_domain"])),
        ("selected_hparams", lambda: selected_hparams(None, main_sel, have[main_sel])),
    ]
    for key, call in steps:
        try:
            value = call()
        except ValueError as e:  # this sweep cannot give the analysis (e.g. no oracle, one hparam draw)
            notes.append(f"{key}: {e}")
            continue
        if value is not None:
            out[key] = value
    if "expected_max" in out:
        try:
            out["saturation"] = saturation(out["expected_max"])
        except ValueError as e:
            notes.append(f"saturation: {e}")
    return out, notes
