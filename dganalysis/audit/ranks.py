"""Across datasets, every pair of algorithms of one family (one board and selection method of one input): the
Wilcoxon signed-rank test with Holm (:func:`wilcoxon_pairs`) beside Friedman/Nemenyi (:func:`friedman_tests`), on
the datasets' means; the statistics are :mod:`dganalysis.stats.rank_tests`.

**Wilcoxon signed-rank** (``scipy.stats.wilcoxon``'s p-value, two-sided, Pratt's zeros:
:func:`dganalysis.stats.rank_tests.wilcoxon_p`) for every pair of algorithms over the datasets' means, Holm-adjusted
over all pairs: it decides *this pair*, whatever else is in the pool (Benavoli, Corani & Mangili 2016).
**Friedman / Nemenyi** (:mod:`dganalysis.stats.rank_tests`, Demšar 2006) ask whether the average ranks differ at all
and which pairs differ *given the whole pool* — adding or removing an algorithm can change a Nemenyi verdict on A vs
B, not a Wilcoxon one. With 7 datasets the smallest two-sided Wilcoxon p is 1/64.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from dganalysis.stats.multiplicity import holm
from dganalysis.stats.rank_tests import friedman, wilcoxon_ps


def block_means(cells: pd.DataFrame, board: str, selection: str) -> pd.DataFrame:
    """Datasets × algorithms of the dataset-average means of one family, complete rows only."""
    avg = cells[(cells["env"].fillna("") == "") & (cells["board"] == board) & (cells["selection"] == selection)]
    wide = avg.pivot_table(index="dataset", columns="algorithm", values="mean").dropna(axis=0, how="any")
    wide.columns.name = None
    return wide


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


def friedman_tests(cells: pd.DataFrame, alpha: float = 0.05) -> dict:
    """(board, selection) → :class:`dganalysis.stats.rank_tests.FriedmanResult` over datasets (≥ 3 algorithms,
    ≥ 2 complete datasets; otherwise left out)."""
    out = {}
    for (board, selection), _ in cells.groupby(["board", "selection"], sort=False):
        wide = block_means(cells, board, selection)
        if wide.shape[1] >= 3 and len(wide) >= 2:
            out[(board, selection)] = friedman(wide, alpha=alpha)
    return out
