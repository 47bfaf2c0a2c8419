"""Reproduction check: a sweep (or a table) against a published table, cell by cell.

"I can't reproduce your numbers — is my lower number noise?" Each (selection, dataset, algorithm) present in both
gets Δ = ours − reference on the dataset average (points) and the tests of :mod:`dganalysis.audit.claims` — Welch's
statistic with its p-value calibrated over the variance ratio, TOST within ±rope, the published table's rounding
honoured (worst case over its rounding box), one joint step-down over the cells of one selection (and reference
board) — and a verdict: ``consistent`` (equivalent within ±rope), ``lower`` / ``higher`` (a decided difference), or
``undecided`` (neither; ``trials_needed``: trials per arm that would decide a difference of ±rope with 80% power). Consistency is the TOST: it is claimed for a true |Δ| = rope in at most α of the checks.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dganalysis.audit.claims import CLAIM_VERDICTS, Summaries, decide, trial_sds
from dganalysis.stats import planning
from dganalysis.validation import ConfigError

REFERENCE_VERDICTS = {"better": "higher", "worse": "lower", "equivalent": "consistent", "undecided": "undecided"}
REF_COLUMNS = ["reference_board", "selection", "dataset", "algorithm", "mean", "reference_mean", "delta", "ci_low",
               "ci_high", "p_adj", "p_equiv_adj", "verdict", "n", "reference_n", "trials_needed", "test",
               "correction"]


def compare_with_reference(ours: pd.DataFrame, reference: pd.DataFrame, alpha: float = 0.05, rope: float = 1.0,
            confidence: float = 0.95) -> pd.DataFrame:
    """Cell-by-cell comparison of two cells frames (dataset averages, ``env == ""``); columns :data:`REF_COLUMNS`.
    Raises when no (selection, dataset, algorithm) is shared."""
    a = ours[ours["env"].fillna("") == ""]
    b = reference[reference["env"].fillna("") == ""]
    key = ["selection", "dataset", "algorithm"]
    joined = a.merge(b, on=key, suffixes=("", "_r"))
    if joined.empty:
        raise ConfigError(f"reference: no (selection, dataset, algorithm) in common; ours has datasets "
                         f"{sorted(a['dataset'].unique())}, algorithms {sorted(a['algorithm'].unique())}; the "
                         f"reference has {sorted(b['dataset'].unique())}, {sorted(b['algorithm'].unique())}")
    out = []
    for (board, selection), fam in joined.groupby(["board_r", "selection"], sort=False):
        d = decide(Summaries.from_frame(fam), Summaries.from_frame(fam, "_r"), alpha=alpha, rope=rope,
                   confidence=confidence)
        m = int(np.isfinite(d.p).sum())
        sd_a, sd_b = trial_sds(fam, "_r")
        need = np.full(len(fam), np.nan)
        ok = (d.verdict == CLAIM_VERDICTS.index("undecided")) & np.isfinite(d.p) & np.isfinite(sd_a) & np.isfinite(sd_b)
        if rope > 0:
            need[ok & ((sd_a == 0) | (sd_b == 0))] = 2.0  # a noiseless difference
            pos = ok & (sd_a > 0) & (sd_b > 0)
            if pos.any():
                need[pos] = planning.trials_to_decide(sd_a[pos], sd_b[pos], fam["n"].to_numpy()[pos],
                                                      fam["n_r"].to_numpy()[pos], rope, alpha / max(m, 1),
                                                      max_n=10_000)[0]
        out.append(pd.DataFrame({
            "reference_board": board, "selection": selection, "dataset": fam["dataset"].to_numpy(),
            "algorithm": fam["algorithm"].to_numpy(), "mean": fam["mean"].to_numpy(),
            "reference_mean": fam["mean_r"].to_numpy(), "delta": d.delta, "ci_low": d.ci_low, "ci_high": d.ci_high,
            "p_adj": d.p_adj, "p_equiv_adj": d.p_equiv_adj,
            "verdict": [REFERENCE_VERDICTS[CLAIM_VERDICTS[v]] for v in d.verdict], "n": fam["n"].to_numpy(),
            "reference_n": fam["n_r"].to_numpy(), "trials_needed": need,
            "test": f"Welch t calibrated over the variance ratio + TOST, rope ±{rope:g}; reference rounding honoured",
            "correction": f"joint step-down over {m} cells ({selection}{', ' + board if board else ''})",
        }))
    return pd.concat(out, ignore_index=True)[REF_COLUMNS]
