"""Yu et al. (2024), *Rethinking the Evaluation Protocol of Domain Generalization*, Table 5: two findings.

**C1 — Table 5's new leaderboards agree (Spearman 0.794) and reorder the old one.** Recomputed from the published
per-dataset accuracies (``dganalysis/protocols/data/yu2023_table5_leaderboards.csv``): Spearman's ρ between the
MoCo-v2 and MoCo-v3 leaderboards' averages and the number of algorithms whose rank changes old → new. A
recomputation of a printed table is not a test: :func:`published_finding` returns two
:class:`~dganalysis.findings.engine.Measurement` s and the verdict *measured*.

**C2 — the protocol (LODO vs LOGO) reorders the leaderboard (our runs).** "Reorders" here means, exactly: a
**pre-specified pair** of algorithms ``(a, b)`` swaps places — ``a`` is ahead of ``b`` on the leave-one-domain-out
leaderboard and behind it on the leave-one-group-out one. Two claims (:func:`reversal_finding`):

* ``LODO: a − b`` > 0 and ``LOGO: a − b`` < 0, each a mean contrast over **trials**: a unit is one trial seed, its
  value the algorithm's leaderboard average in that trial (the mean over the board's datasets of the mean over each
  dataset's test domains, the Average column of Table 5 per trial). ``a`` and ``b`` of one trial share its seed (the
  same data split), so the engine pairs them on the shared seeds (Welch calibrated without shared seeds).
* ROPE **±0.5 points** (:data:`ROPE`): Table 5's per-dataset SDs over trials (SE·√3) have median 0.5 points; a
  pair closer than one trial-to-trial SD is not an order a reader of the leaderboard can see, and equivalence
  within it is decided *against* a reversal.
* **family**: the two claims, one joint step-down; *reproduced* when both are decided the paper's way (the pair
  reverses), *not reproduced* when either is decided against (e.g. ``a`` ahead under both protocols).

The pair: :data:`PAIR` = (CORAL, ERM), fixed from the pilot — the quick run of 2026-11-24 (3 trials; recorded in
``params/quick/05_leaderboards.yaml``) put CORAL first under LODO and last under LOGO. A reordering that no pair
was named for in advance is shown by the descriptive tables (ΔR, Spearman, Friedman/Nemenyi) but decides nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dganalysis.findings import engine
from dganalysis.validation import ConfigError, check_frame

ROPE = 0.5  #: points of accuracy (module docstring)
PAIR = ("CORAL", "ERM")  #: the pre-specified pair: ahead under LODO, behind under LOGO (module docstring)
PROTOCOLS = ("LODO", "LOGO")
COLUMNS = ("protocol", "algorithm", "trial_seed", "acc")
PAPER_SPEARMAN = 0.794
PAPER = "Yu et al. 2024"
PILOT = "pilot: quick run of 2026-11-24 (params/quick/05_leaderboards.yaml: CORAL 1st under LODO, last under LOGO)"
OLD = "Old (supervised ResNet-50)"
#: the per-trial SD of the pair's difference in our own setting, from the quick run of 2026-11-29 (RotatedFashionMNIST
#: 16 px, 100 steps, 3 trials; CORAL − ERM: SD 1.81 points under LODO, 4.75 under LOGO; their root mean square):
#: the design's noise, as Table 5's SDs (5,000-step runs on other data) understate it about tenfold
PILOT_RUNS = "quick run of 2026-11-29 (RotatedFashionMNIST 16 px, 100 steps, 3 trials)"
PILOT_RUNS_SD = float(np.sqrt((1.81 ** 2 + 4.75 ** 2) / 2))


# ------------------------------------------------------------------------------------------------- C1
def published_finding(published: pd.DataFrame, *, paper_spearman: float = PAPER_SPEARMAN) -> engine.FindingResult:
    """C1 from the published long frame (:func:`dganalysis.protocols.leaderboard.load_published`; columns
    ``leaderboard, algorithm, dataset, acc``, one row per leaderboard × algorithm × dataset, the first leaderboard
    the old one): the recomputed Spearman ρ of the two new leaderboards and the rank changes old → new, as
    measurements (verdict *measured*)."""
    check_frame(published, ("leaderboard", "algorithm", "dataset", "acc"), "published", func="published_finding",
                what="one row per leaderboard × algorithm × dataset")
    from dganalysis.protocols import leaderboard as lb

    names = list(dict.fromkeys(published["leaderboard"]))
    if len(names) < 3:
        raise ConfigError(f"published_finding: {len(names)} leaderboards {names}; expected the old one and two new")
    rho = float(lb.spearman_matrix(published).loc[names[1], names[2]])
    prk = lb.ranks(published)
    moved = int((lb.delta_rank(prk, prk.columns[0], prk.columns[1]) != 0).sum())
    return engine.decide_finding([
        engine.Measurement("Spearman ρ, new vs new", rho,
                           f"recomputed Spearman {rho:.3f} ({names[1]} vs {names[2]}; paper {paper_spearman})"),
        engine.Measurement("algorithms moving old → new", float(moved),
                           f"{moved} of {len(prk)} algorithms change rank {names[0]} → {names[1]}")])


# ------------------------------------------------------------------------------------------------- C2
def reversal_frame(selected: Mapping[str, pd.DataFrame], *, method_col: str = "algorithm", acc_col: str = "acc",
                 scale: float = 100.0) -> pd.DataFrame:
    """The frame of :func:`reversal_finding` from selected frames per protocol (``{"LODO": frame, "LOGO": frame}``,
    contract of :func:`dganalysis.records.selection.select`): per protocol, algorithm and trial seed, the mean over
    datasets of the mean over the dataset's test-domain rows, × ``scale``."""
    parts = []
    for proto, sel in selected.items():
        check_frame(sel, ("dataset", method_col, acc_col, "trial_seed"), f"selected[{proto!r}]", func="trials_frame",
                    what="dganalysis.records.selection.select's frame")
        per_ds = sel.groupby(["dataset", method_col, "trial_seed"], sort=False)[acc_col].mean()
        avg = per_ds.groupby(level=[1, 2], sort=False).mean().mul(scale).reset_index()
        parts.append(avg.rename(columns={method_col: "algorithm", acc_col: "acc"}).assign(protocol=proto))
    if not parts:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.concat(parts, ignore_index=True)[list(COLUMNS)]


def reversal_finding(frame: pd.DataFrame, *, pair: Sequence[str] = PAIR, protocols: Sequence[str] = PROTOCOLS,
                     alpha: float = engine.ALPHA, rope: float = ROPE) -> engine.FindingResult:
    """C2 decided (module docstring): does ``pair[0]`` lead ``pair[1]`` under ``protocols[0]`` and trail it under
    ``protocols[1]``?

    ``frame``: one row per (protocol, algorithm, trial) — columns ``protocol``, ``algorithm``, ``trial_seed`` (the
    unit id, shared by the algorithms of one trial) and ``acc`` (the trial's leaderboard average, points). Two
    claims, ``"<protocol>: a − b"``, directions +1 and −1, ROPE ± ``rope`` points, one family. A pair member with
    no runs under a protocol leaves its claim undecided (with the reason)."""
    check_frame(frame, COLUMNS, "frame", func="reversal_finding", what="one row per protocol × algorithm × trial")
    if len(pair) != 2 or pair[0] == pair[1]:
        raise ConfigError(f"reversal_finding: pair={list(pair)!r}; expected two different algorithms")
    if len(protocols) != 2:
        raise ConfigError(f"reversal_finding: protocols={list(protocols)!r}; expected two protocol names")
    a, b = pair
    claims = []
    for proto, direction in zip(protocols, (1, -1)):
        f = frame[frame["protocol"] == proto]
        arm = f[f["algorithm"] == a].set_index("trial_seed")["acc"]
        base = f[f["algorithm"] == b].set_index("trial_seed")["acc"]
        claims.append(engine.Claim(f"{proto}: {a} − {b}", arm, base, direction=direction, rope=rope,
                                   units="trials", unit_of_measure="points"))
    return engine.decide_finding(claims, alpha)


def finding_rows(published: pd.DataFrame, boards: Mapping[str, Mapping[str, pd.DataFrame]] | None = None, *,
                 alpha: float = engine.ALPHA) -> list[dict]:
    """C1 on Table 5's ``published`` numbers and C2 on each board of our runs (``boards``: board name → {protocol:
    selected frame}, ``""`` for the notebook-wide board; None or empty: C2 not run), as rows for
    :func:`dganalysis.studies.findings.replace_findings` (``paper, finding, ours, verdict, decision``)."""
    c1 = published_finding(published)
    rows = [dict(paper=PAPER, finding="Table 5: new leaderboards agree with each other (Spearman 0.794) and reorder "
                 "the old one", ours=c1.ours(3), verdict=c1.verdict, decision=c1,
                 data="published numbers (Yu et al. 2024, Table 5), no images of ours")]
    a, b = PAIR
    for board, protos in (boards or {}).items():
        res = reversal_finding(reversal_frame(protos), alpha=alpha)
        rows.append(dict(paper=PAPER, finding=f"the protocol (LODO vs LOGO) reorders the leaderboard: {a} ahead of {b} "
                         f"under LODO, behind under LOGO (our runs{', ' + board if board else ''})",
                         ours=res.ours(2), verdict=res.verdict, decision=res))
    return rows


def table5_pair(pair: Sequence[str] = PAIR, leaderboard: str = OLD) -> tuple[float, float]:
    """The design's expected gap and per-trial SD for ``pair`` from Yu et al. (2024) Table 5's ``leaderboard``
    (default the old one): the gap of the printed averages, and the SD over trials of the difference of the two
    algorithms' averages over the board's k datasets, √(3 Σ (SE_a² + SE_b²)) / k (SE over 3 trials, datasets and
    algorithms taken independent)."""
    from dganalysis.protocols.leaderboard import load_published

    pub = load_published()
    t = pub[pub["leaderboard"] == leaderboard].set_index(["algorithm", "dataset"])
    a, b = (t.loc[m] for m in pair)
    gap = float(a["acc"].mean() - b["acc"].mean())
    sd = float(np.sqrt(3 * ((a["se"] ** 2).sum() + (b["se"] ** 2).sum())) / len(a))
    return gap, sd


def simulate_reversal(rng: np.random.Generator, n: int, *, effect: float, sd: float, pair: Sequence[str] = PAIR,
                      protocols: Sequence[str] = PROTOCOLS, base: float = 70.0,
                      shared: int | None = None) -> pd.DataFrame:
    """A SIMULATED frame of :func:`reversal_finding`'s columns: ``n`` trials of both pair members under both
    protocols; ``a − b`` = +``effect`` under ``protocols[0]`` and −``effect`` under ``protocols[1]``, each value
    N(mean, sd/√2) (a trial's difference has SD ``sd``). ``shared``: trial seeds ``a`` and ``b`` share (default
    all)."""
    k = n if shared is None else int(shared)
    s = sd / np.sqrt(2)
    rows = []
    for proto, sign in zip(protocols, (1, -1)):
        for alg, mean, seeds in ((pair[0], base + sign * effect, list(range(n))),
                                 (pair[1], base, list(range(k)) + list(range(1000, 1000 + n - k)))):
            rows += [dict(protocol=proto, algorithm=alg, trial_seed=t, acc=v)
                     for t, v in zip(seeds, rng.normal(mean, s, n))]
    return pd.DataFrame(rows, columns=list(COLUMNS))
