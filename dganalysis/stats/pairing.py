"""When two arms of trials are compared paired, and on which trials: one rule for the audit and the protocols.

Two runs with the same trial seed share their data splits (DomainBed's ``trial_seed`` seeds each domain's in/out
split; ``dganalysis.training.train`` does the same), so the split-to-split part of the variance cancels in their difference.
**The rule** (:func:`use_pairs`): a comparison is paired exactly when the two arms share at least :data:`MIN_PAIRS`
trial seeds, and is then made on the shared seeds only — the paired t-test on the per-seed differences (Student
1908; exact for any variances and any correlation of the arms, df n_paired − 1); trials whose seed the other arm
lacks are dropped and counted (``dropped_a``, ``dropped_b``). The rule looks at the seeds alone, never at the
accuracies, so choosing it cannot bias the test; with fewer than 2 shared seeds there is no variance of differences
to estimate and the arms are compared unpaired.

Before this module the audit paired only when *every* seed was shared (else unpaired over all trials) while
:func:`dganalysis.stats.ttests.compare` paired on the shared subset; both now call :func:`use_pairs`
(:func:`pair_seeds` per comparison, :func:`paired_differences` over a frame of many). Dropping the unshared trials
costs their information; keeping the split's cancellation is worth more only when the arms are correlated and few
trials go (measured on SIMULATED data, ``tests/stats/test_pairing.py`` and docs/audit.md: at ρ = 0.8 and Δ = 2 trial
SDs, 4 of 5 seeds shared, the rule decides 0.977 against the unpaired test's 0.836 on all 5; with 2 of 3 shared,
0.272 against 0.344). Which would win depends on ρ, which only the outcomes reveal, so the rule does not choose by it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: the fewest shared trial seeds a paired comparison needs (one difference has no variance estimate)
MIN_PAIRS = 2


def use_pairs(n_shared) -> np.ndarray:
    """The pairing rule: paired where the arms share at least :data:`MIN_PAIRS` trial seeds (arrays broadcast)."""
    return np.asarray(n_shared) >= MIN_PAIRS


@dataclass(frozen=True)
class SeedPairing:
    """The seeds two arms share (``seeds``, in the order of ``a``), whether the comparison is paired (:func:`use_pairs`), and the
    trials each arm has outside the shared seeds (``dropped_a``, ``dropped_b``; dropped only when paired)."""

    seeds: pd.Index
    paired: bool
    n_a: int
    n_b: int

    @property
    def n_paired(self) -> int:
        return len(self.seeds) if self.paired else 0

    @property
    def dropped_a(self) -> int:
        return self.n_a - len(self.seeds) if self.paired else 0

    @property
    def dropped_b(self) -> int:
        return self.n_b - len(self.seeds) if self.paired else 0


def pair_seeds(a: Sequence | pd.Index, b: Sequence | pd.Index) -> SeedPairing:
    """:class:`SeedPairing` of two arms given their trial seeds (one per trial, unique within an arm)."""
    ia, ib = pd.Index(a), pd.Index(b)
    if ia.has_duplicates or ib.has_duplicates:
        raise ValueError("pair_seeds: trial seeds must be unique within each arm (average repeated runs first)")
    common = ia.intersection(ib)
    return SeedPairing(common, bool(use_pairs(len(common))), len(ia), len(ib))


def paired_differences(trials: pd.DataFrame, by: list[str], arm: str, baseline: str, seed: str = "trial_seed",
                       value: str = "acc") -> pd.DataFrame:
    """Per group of ``by`` and arm ≠ ``baseline`` (column ``arm``) of a per-trial frame: the pairing of the arm with
    the group's baseline trials by :func:`use_pairs`, and the per-seed differences arm − baseline over the shared
    seeds. Columns ``by + [arm]``, ``d_mean``, ``d_sd`` (ddof 1), ``d_se`` (``d_sd``/√n), ``n_pair``, ``n_a``,
    ``n_b``, ``dropped_a``, ``dropped_b`` and ``paired``; the difference columns are NaN (and ``n_pair``,
    ``dropped_*`` 0) where the rule does not pair."""
    t = trials[[*by, arm, seed, value]]
    base = t[t[arm] == baseline].drop(columns=arm)
    other = t[t[arm] != baseline]
    if base.duplicated([*by, seed]).any() or other.duplicated([*by, arm, seed]).any():
        raise ValueError("paired_differences: trial seeds must be unique within each arm (average repeated runs "
                         "first)")
    j = other.merge(base, on=[*by, seed], suffixes=("", "_b"), how="left")
    j["d"] = j[value] - j[value + "_b"]
    per = j.groupby([*by, arm], sort=False).agg(d_mean=("d", "mean"), d_sd=("d", lambda x: x.std(ddof=1)),
                                                n_shared=("d", "count"), n_a=(value, "size")).reset_index()
    nb = base.groupby(by, sort=False).size().rename("n_b").reset_index()
    per = per.merge(nb, on=by, how="left")
    per["n_b"] = per["n_b"].fillna(0).astype(int)
    paired = use_pairs(per["n_shared"].to_numpy())
    per["paired"] = paired
    per["n_pair"] = np.where(paired, per["n_shared"], 0)
    per["dropped_a"] = np.where(paired, per["n_a"] - per["n_shared"], 0)
    per["dropped_b"] = np.where(paired, per["n_b"] - per["n_shared"], 0)
    for c in ("d_mean", "d_sd"):
        per[c] = np.where(paired, per[c], np.nan)
    per["d_se"] = per["d_sd"] / np.sqrt(np.where(paired, per["n_pair"], np.nan))
    return per[[*by, arm, "d_mean", "d_sd", "d_se", "n_pair", "n_a", "n_b", "dropped_a", "dropped_b", "paired"]]
