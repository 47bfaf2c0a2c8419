"""Reading the dynamic-DG results: held-out printed accuracy (a description).

Companion of :mod:`dganalysis.protocols.dynamic` (Zhang, Zhang & Liu, Sec. 4.2–4.3). Nothing here decides anything:
the paper's findings are decided by :mod:`dganalysis.findings.dynamic` (the audit's engine).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from dganalysis.protocols.dynamic import (
    _split,
)
from dganalysis.stats.intervals import mean_t_interval
from dganalysis.validation import check_choices_list, check_frame, check_scalar


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
                mean, sd, low, high = mean_t_interval(x, confidence)
                rows.append(dict(train=",".join(sorted(train)), domain=dom, method=m, mean=mean, sd=sd, n=n,
                                 ci_low=low, ci_high=high))
    return pd.DataFrame(rows)
