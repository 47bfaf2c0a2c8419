"""Reading the dynamic-DG results: held-out printed accuracy, the power table, and the paper's findings side by side.

Companion of :mod:`dganalysis.protocols.dynamic` (Zhang, Zhang & Liu, Sec. 4.2–4.3). Nothing here decides anything
new: the verdicts come from :func:`~dganalysis.protocols.dynamic.swap_test` and
:func:`~dganalysis.protocols.dynamic.domain_plus`; these functions arrange them for a reader.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.protocols.dynamic import (
    COPES,
    DEGRADES,
    REVERSAL,
    UNDECIDED,
    SwapTestResult,
    _split,
)
from dganalysis.stats.intervals import t_interval
from dganalysis.validation import ConfigError, check_choices_list, check_frame, check_scalar, describe


def heldout_table(selected: pd.DataFrame, choices: Sequence[str | Sequence[str]], exclude: Sequence[str] = (),
                  methods: Sequence[str] | None = None, confidence: float = 0.95) -> pd.DataFrame:
    """Accuracy on each choice's held-out domains other than ``exclude`` (e.g. the held-out *printed* domain).

    One row per (train, domain, method): ``mean, sd, n, ci_low, ci_high`` (t interval over trials). Descriptive:
    the held-out domain changes with the choice, so no swap test can be made on it (a swap test needs one test
    domain for every choice).
    """
    check_frame(selected, (), "selected", func="heldout_table")
    check_choices_list(choices, "choices", func="heldout_table")
    check_scalar(confidence, "confidence", func="heldout_table", low=0.0, high=1.0, low_open=True, high_open=True)
    rows = []
    for c in choices:
        train = frozenset(_split(c))
        sub = selected[selected["train_domains"].map(lambda s: frozenset(_split(s))) == train]
        if sub.empty:
            raise ValueError(f"choices: no selected runs trained on {sorted(train)}")
        for dom in [d for d in dict.fromkeys(sub["domain"]) if d not in set(exclude) and d not in train]:
            g = sub[sub["domain"] == dom]
            for m in methods if methods is not None else list(dict.fromkeys(g["algorithm"])):
                x = g[g["algorithm"] == m].groupby("trial_seed")["acc"].mean().to_numpy()
                n = len(x)
                mean, sd = (float(x.mean()), float(x.std(ddof=1)) if n > 1 else np.nan) if n else (np.nan, np.nan)
                low, high = t_interval(mean, sd, n, confidence)
                rows.append(dict(train=",".join(sorted(train)), domain=dom, method=m, mean=mean, sd=sd, n=n,
                                 ci_low=low, ci_high=high))
    return pd.DataFrame(rows)


def power_table(swap: SwapTestResult | Sequence[SwapTestResult] = (), dp: pd.DataFrame | None = None,
                trials_run: int | None = None) -> pd.DataFrame:
    """Every undecided claim with its observed effect and the trials that would decide it (80% power by default).

    ``trials_needed`` treats the observed standardised effect as the truth at the level the claim needs in its
    family; ``inf`` = the observed effect is zero or points the other way (no number of trials helps).
    """
    if not isinstance(swap, (SwapTestResult, list, tuple)):
        raise ConfigError(f"power_table: parameter 'swap': expected a SwapTestResult or a list of them, got {describe(swap)}")
    if dp is not None:
        check_frame(dp, (), "dp", func="power_table")
    check_scalar(trials_run, "trials_run", func="power_table", kind='int', low=1, nullable=True)
    swaps = [swap] if isinstance(swap, SwapTestResult) else list(swap)
    rows = []
    for s in swaps:
        for _, r in s.pairs[s.pairs["verdict"] == UNDECIDED].iterrows():
            claim = REVERSAL if r["raw_reversal"] else "stable order"
            c = s.claims[(s.claims["method_a"] == r["method_a"]) & (s.claims["method_b"] == r["method_b"])]
            c = c[c["claim"] == REVERSAL] if r["raw_reversal"] else c[c["claim"] != REVERSAL]
            c = c.iloc[0]
            rows.append(dict(criterion=f"ST → {s.test_domain}", claim=f"{r['method_a']} vs {r['method_b']}: {claim}",
                             effect_diff=c["effect_diff"], effect=c["effect"], p_adj=c["p_adj"],
                             trials_needed=r["trials_needed"]))
    if dp is not None:
        for _, r in dp[~dp["verdict"].isin([COPES, DEGRADES])].iterrows():
            rows.append(dict(criterion=f"Domain+ → {r['test_domain']}", claim=f"{r['method']}: {r['base']} +{r['added']}",
                             effect_diff=r["delta"], effect=r["effect"], p_adj=r["p_adj"],
                             trials_needed=r["trials_needed"]))
    out = pd.DataFrame(rows, columns=["criterion", "claim", "effect_diff", "effect", "p_adj", "trials_needed"])
    if trials_run is not None:
        out["trials_run"] = trials_run
    return out


def _swap_rows(swap: SwapTestResult) -> list[dict]:
    """The two swap-test rows of :func:`findings`: decided reversals (Fig. 9) and the stable advantage of CORAL and
    IB-ERM."""
    n_pairs = len(swap.pairs)
    n_rev = int((swap.pairs["verdict"] == REVERSAL).sum())
    n_raw = int(swap.pairs["raw_reversal"].sum())
    n_und = int((swap.pairs["verdict"] == UNDECIDED).sum())
    stable = list(swap.methods.index[swap.methods["st_verdict"] == "stable advantage"])
    return [dict(finding="order of methods reverses with the training-domain choice (Fig. 9)",
                 ours=f"{n_rev} decided reversal(s), {n_raw} raw-mean reversal(s), {n_und} undecided, of {n_pairs} "
                      f"method pairs ({swap.correction} over {len(swap.claims)} claims)",
                 reproduced="yes" if n_rev else ("not decided" if n_raw else "no")),
            dict(finding="CORAL and IB-ERM have a stable advantage (ST criterion)",
                 ours=f"stable advantage: {', '.join(stable) or 'none decided'}",
                 reproduced="yes" if {"CORAL", "IB_ERM"} <= set(stable) else
                 ("partly" if {"CORAL", "IB_ERM"} & set(stable) else "not decided"))]


def findings(swap: SwapTestResult | None, dp: pd.DataFrame, helps_all: Sequence[str] = ("d2",),
             degrades_erm: Sequence[str] = ("d0", "d1")) -> pd.DataFrame:
    """The paper's Sec. 4.3 findings next to ours, one row each, with the numbers that decide them.

    Paper (PaHCC, Fig. 9 and 11): most methods' order reverses under the swap test; CORAL and IB-ERM keep a stable
    advantage; adding the printed domain closest to handwriting (Fig. 11a) helps every method; adding a distant one
    (Fig. 11b, c) degrades ERM and others. ``helps_all`` / ``degrades_erm``: the added domains for which the paper
    reports each (PaHCC names by default). ``swap`` None: no swap test was run (its two rows are left out).
    """
    if swap is not None and not isinstance(swap, SwapTestResult):
        raise ConfigError(f"findings: parameter 'swap': expected a SwapTestResult (swap_test) or None (no swap test "
                          f"run), got {describe(swap)}")
    check_frame(dp, (), "dp", func="findings")
    rows = [] if swap is None else _swap_rows(swap)
    for (base, added), g in dp.groupby(["base", "added"], sort=False):
        cells = ", ".join(f"{m} {d * 100:+.1f} [{lo * 100:+.1f}, {hi * 100:+.1f}]" for m, d, lo, hi in
                          zip(g["method"], g["delta"], g["ci_low"], g["ci_high"]))
        n_c, n_d = int((g["verdict"] == COPES).sum()), int((g["verdict"] == DEGRADES).sum())
        erm = g[g["method"] == "ERM"]["verdict"]
        if added in helps_all:
            claim, ok = f"adding it helps every method run ({', '.join(g['method'])}) (Fig. 11a)", n_c == len(g)
            part = 0 < n_c < len(g)
        elif added in degrades_erm:
            claim, ok = "adding it degrades ERM (Fig. 11b, c)", bool(len(erm) and erm.iloc[0] == DEGRADES)
            part = False
        else:
            claim, ok, part = "(no paper statement)", False, False
        if ok:
            rep = "yes"
        elif part:
            rep = "partly"
        elif added in degrades_erm and len(erm) and g[g["method"] == "ERM"]["ci_low"].iloc[0] > 0:
            rep = "no"  # ERM gains, and its (per-comparison) CI excludes 0: the opposite of the paper
        elif added in helps_all and n_d:
            rep = "no"
        else:
            rep = "not decided"
        rows.append(dict(finding=f"Domain+ {base} +{added} → {g['test_domain'].iloc[0]}: {claim}",
                         ours=f"{n_c} copes / {n_d} degrades / {len(g) - n_c - n_d} undecided of {len(g)} "
                              f"({'all' if (g['delta'] > 0).all() else int((g['delta'] > 0).sum())} Δ > 0); "
                              f"Δ (points, 95% CI per comparison): {cells}", reproduced=rep))
    return pd.DataFrame(rows)
