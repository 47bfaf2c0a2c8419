"""Oracle leakage vs K with confidence intervals over trials (Yu et al. 2024, Sec. 2.2, Table 4).

:func:`dganalysis.protocols.oracle_k.oracle_k_table` averages over trials; here the same table is made per trial
(``trial_seed`` added to the grouping), so each trial gives one leakage value per K and the fall with K is a
*paired* contrast over trials (same trial seed = same data splits). The tables here describe (means, t-intervals
over trials, a bootstrap interval of the relative fall); the findings are decided by
:mod:`dganalysis.findings.leakage` from :func:`dganalysis.findings.leakage.oracle_trials` of the per-trial rows.

Like-for-like candidates: the oracle of Yu et al. (as DomainBed's) chooses among the *last* checkpoints of the
hyperparameter draws. Training-domain validation that may also pick an earlier checkpoint differs from it in early
stopping too, which can put the "oracle" below IID and is not leakage. :func:`last_checkpoints` restricts a tidy
frame to each job's last checkpoint so that both selections choose among the same candidates. :func:`oracle_leakage`
does all of it for one named oracle (held-out or literal, :data:`dganalysis.protocols.oracle_k.ORACLES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from dganalysis.protocols.oracle_k import (
    GROUP_COLUMNS,
    ORACLES,
    oracle_k_select,
    oracle_k_table,
    report_on,
    with_pooled_split,
)
from dganalysis.stats.intervals import mean_t_interval, paired_percentile_bootstrap
from dganalysis.validation import check_frame, check_mapping, check_scalar, check_series, check_str


def last_checkpoints(tidy: pd.DataFrame) -> pd.DataFrame:
    """Rows of each job's last recorded step only (the oracle's candidates)."""
    check_frame(tidy, ("job_id", "step"), "tidy", func="last_checkpoints")
    if not {"job_id", "step"} <= set(tidy.columns):
        raise ValueError("tidy frame: expected columns job_id and step (dganalysis.records.load output)")
    return tidy[tidy["step"] == tidy.groupby("job_id")["step"].transform("max")]


def leakage_by_trial(iid_selected: pd.DataFrame, oracle_selected: pd.DataFrame,
                     by: Sequence[str] = tuple(GROUP_COLUMNS), scale: float = 100.0) -> pd.DataFrame:
    """Table 4 per trial: :func:`oracle_k_table` grouped by ``by`` + ``trial_seed``."""
    check_frame(iid_selected, (), "iid_selected", func="leakage_by_trial")
    check_frame(oracle_selected, (), "oracle_selected", func="leakage_by_trial")
    for name, f in (("iid_selected", iid_selected), ("oracle_selected", oracle_selected)):
        if "trial_seed" not in f:
            raise ValueError(f"{name}: missing column trial_seed")
    return oracle_k_table(iid_selected, oracle_selected, by=list(by) + ["trial_seed"], scale=scale)


def relative_fall(leak_k: pd.Series, leak_1: pd.Series, confidence: float = 0.95,
                  n_resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Table 4's "leakage" reduction in percent, ``100 · (mean leak_K − mean leak_1) / mean leak_1``, with a paired
    percentile bootstrap CI over trials (trials resampled with their K=1 and K values together;
    :func:`dganalysis.stats.intervals.paired_percentile_bootstrap`, seeded). A ratio of means rather than a mean of
    per-trial ratios: a trial with a leakage near 0 at K=1 would dominate the latter. NaN where fewer than 3 paired trials or the mean K=1 leakage is 0.
    The trials are taken in the order of their index (the trial seeds), so the interval does not depend on the order
    of the rows (which follows the job ids).
    With a handful of trials a percentile bootstrap is narrow (anti-conservative): it describes the size, while the
    verdicts rest on the paired t of the absolute fall (:func:`leakage_vs_k`)."""
    leak_k = check_series(leak_k, "leak_k", func="relative_fall")
    leak_1 = check_series(leak_1, "leak_1", func="relative_fall")
    check_scalar(confidence, "confidence", func="relative_fall", low=0.0, high=1.0, low_open=True, high_open=True)
    common = leak_k.index.intersection(leak_1.index).sort_values()  # trial order: the resamples never follow row order
    a, b = leak_k[common].to_numpy(dtype=float), leak_1[common].to_numpy(dtype=float)
    if len(common) < 3 or b.mean() == 0:
        return (np.nan, np.nan, np.nan)

    def ratio(x, y, axis=-1):
        return 100 * (x.mean(axis=axis) - y.mean(axis=axis)) / y.mean(axis=axis)

    est = float(ratio(a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        lo, hi = paired_percentile_bootstrap((a, b), ratio, confidence=confidence, n_resamples=n_resamples,
                                             seed=np.random.default_rng(seed), vectorized=True)
    return est, lo, hi


def _paired_fall(x: pd.Series, base: pd.Series, confidence: float) -> tuple[float, float, float]:
    """Mean of ``x − base`` over the trial seeds both have, with its t-interval (descriptive; NaN interval with
    fewer than 2 shared seeds, where the difference of the means is shown)."""
    common = x.index.intersection(base.index)
    if len(common) < 2:
        return float(x.mean() - base.mean()), np.nan, np.nan
    mean, _, low, high = mean_t_interval((x[common] - base[common]).to_numpy(dtype=float), confidence)
    return mean, low, high


def leakage_vs_k(per_trial: pd.DataFrame, by: Sequence[str] = tuple(GROUP_COLUMNS), confidence: float = 0.95) -> pd.DataFrame:
    """Mean leakage per K over trials with a t-interval, and its change from K=1 and from K−1 (paired over trials).

    One row per (``by``, K ≥ 1): ``leakage`` (points), ``ci_low, ci_high``, ``n_trials``; ``fall`` =
    leak(K) − leak(1), the mean over the trial seeds both have, with its t-interval (``fall_ci_low/high``);
    ``fall_prev`` the same against K−1 (``fall_prev_ci_low/high``); ``reduction_pct`` with its bootstrap interval
    (:func:`relative_fall`, Table 4's percentage). A description: the verdicts are
    :mod:`dganalysis.findings.leakage`'s.
    """
    check_frame(per_trial, (), "per_trial", func="leakage_vs_k")
    check_scalar(confidence, "confidence", func="leakage_vs_k", low=0.0, high=1.0, low_open=True, high_open=True)
    d = per_trial[per_trial["k"] > 0]
    rows = []
    for key, g in d.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        by_k = {int(k): gk.set_index("trial_seed")["leakage"] for k, gk in g.groupby("k")}
        base = by_k.get(1)
        for k, x in by_k.items():
            n = len(x)
            m, _, low, high = mean_t_interval(x, confidence)
            row = dict(zip(by, key), k=int(k), leakage=m, ci_low=low, ci_high=high, n_trials=n)
            if k > 1 and base is not None:
                fall = _paired_fall(x, base, confidence)
                row.update(fall=fall[0], fall_ci_low=fall[1], fall_ci_high=fall[2])
                if k - 1 in by_k:
                    prev = _paired_fall(x, by_k[k - 1], confidence)
                    row.update(fall_prev=prev[0], fall_prev_ci_low=prev[1], fall_prev_ci_high=prev[2])
                est, lo, hi = relative_fall(x, base, confidence)
                row.update(reduction_pct=est, reduction_ci_low=lo, reduction_ci_high=hi)
            rows.append(row)
    return pd.DataFrame(rows)


class OracleLeakage(NamedTuple):
    """:func:`oracle_leakage`'s result: Table 4 averaged over trials, the same table per trial (the values the CIs
    are computed from, saved so a reader can re-derive them) and the per-K summary with CIs."""

    table: pd.DataFrame
    per_trial: pd.DataFrame
    vs_k: pd.DataFrame


def oracle_leakage(tidy: pd.DataFrame, sizes: Mapping[str, Mapping[str, int]], oracle: str = "held_out",
                   confidence: float = 0.95) -> OracleLeakage:
    """Table 4 (mean over trials, :func:`oracle_k_table`), its per-trial rows (:func:`leakage_by_trial`) and the
    leakage per K with CIs over trials (:func:`leakage_vs_k`) of one named oracle (:data:`dganalysis.protocols.oracle_k.ORACLES`), from the runs' tidy
    frame. Both selections choose among the same candidates, each job's last checkpoint (:func:`last_checkpoints`);
    IID is training-domain validation, reported on the split the oracle reports (``in`` for ``held_out``, the whole
    domain for ``literal``). ``sizes``: :func:`dganalysis.protocols.oracle_k.split_sizes` of the dataset. The rows are
    taken in trial order, so the numbers do not depend on the order of the runs (their job ids)."""
    check_frame(tidy, (), "tidy", func="oracle_leakage")
    check_mapping(sizes, "sizes", func="oracle_leakage", what="split_sizes(...)")
    check_str(oracle, "oracle", func="oracle_leakage")
    from dganalysis.records import select

    if oracle not in ORACLES:
        raise ValueError(f"oracle: unknown oracle {oracle!r}; expected one of {list(ORACLES)}")
    # trial order, not the rows' (job-id) order: every mean and interval below sums its trials in one order
    last = last_checkpoints(tidy).sort_values(["trial_seed", "hparams_seed"], kind="stable")
    iid = select(last, "training_domain_last")
    last = with_pooled_split(last, sizes)
    iid = report_on(iid, last, ORACLES[oracle][1])
    orc = oracle_k_select(last, oracle=oracle)
    table = oracle_k_table(iid, orc).assign(oracle=oracle)
    per_trial = leakage_by_trial(iid, orc)
    return OracleLeakage(table, per_trial.assign(oracle=oracle),
                         leakage_vs_k(per_trial, confidence=confidence).assign(oracle=oracle))


def plot_leakage_vs_k(summary: pd.DataFrame, label_col: str = "train_domains", ax=None):
    """Leakage (points) vs K with the CI over trials, one line per ``label_col`` value (e.g. ``"oracle"``)."""
    check_frame(summary, (), "summary", func="plot_leakage_vs_k")
    import matplotlib.pyplot as plt

    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(4.5, 3.2))
    for lab, g in summary.groupby(label_col, sort=False):
        ax.errorbar(g["k"], g["leakage"], yerr=[g["leakage"] - g["ci_low"], g["ci_high"] - g["leakage"]],
                    marker="o", capsize=3, label=f"train {lab}" if label_col == "train_domains" else str(lab))
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(sorted(summary["k"].unique()))
    ax.set(xlabel="K (test domains the oracle must serve at once)", ylabel="oracle − IID accuracy (points)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
