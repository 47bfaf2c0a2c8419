"""Yu et al. (2024)'s two leakage findings with our numbers and a verdict each (for the index summary).

* LP vs FT (Sec. 2.1, Tables 1–2): with supervised pretraining on test-like data, linear probing beats fine-tuning on
  the test domains (Gap > 0); with self-supervised pretraining it does not.
* Oracle selection (Sec. 2.2, Table 4): oracle leakage is positive at K=1 and falls as one model must serve K > 1
  test domains.
Rows go to :func:`dganalysis.findings.replace_findings`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PAPER = "Yu et al. 2024"


def oracle_findings(leak_k: pd.DataFrame, alpha: float = 0.05) -> list[dict]:
    """Two rows from :func:`dganalysis.protocols.oracle_k_trials.leakage_vs_k`: leakage at K=1 > 0 (one-sided
    t over trials, per training group, Holm over the groups) and leakage falls at the largest K (paired, Holm)."""
    from dganalysis.protocols.stats import adjust_pvalues

    k1 = leak_k[leak_k["k"] == 1]
    kmax = leak_k[leak_k["k"] == leak_k["k"].max()]
    p1 = adjust_pvalues(k1["p_positive"].to_numpy(), alpha, "holm")
    pf = adjust_pvalues(kmax["p_fall"].to_numpy(), alpha, "holm") if "p_fall" in kmax else np.array([np.nan])
    cell = lambda r: f"{r.leakage:+.2f} [{r.ci_low:+.2f}, {r.ci_high:+.2f}]"  # noqa: E731
    pos = dict(paper=PAPER, finding="oracle selection leaks: oracle − IID accuracy > 0 at K=1 (Table 4)",
               ours="; ".join(f"train {r.train_domains}: {cell(r)} pts (n={r.n_trials}, Holm p={p:.2g}; "
                              f"~{r.trials_needed:.0f} trials would decide it)" for r, p in zip(k1.itertuples(), p1)),
               verdict="reproduced" if len(p1) and (p1 < alpha).all() else
               "partly" if (p1 < alpha).any() else "not decided")
    if len(kmax) and int(kmax["k"].iloc[0]) > 1:
        fall = dict(paper=PAPER, finding=f"oracle leakage falls as K grows (K=1 → K={int(kmax['k'].iloc[0])})",
                    ours="; ".join(f"train {r.train_domains}: Δ={r.fall:+.2f} [{r.fall_ci_low:+.2f}, "
                                   f"{r.fall_ci_high:+.2f}] pts (Holm p={p:.2g}; ~{r.trials_needed:.0f} trials)"
                                   for r, p in zip(kmax.itertuples(), pf)),
                    verdict="reproduced" if (pf < alpha).all() else "partly" if (pf < alpha).any() else
                    "not reproduced" if (kmax["fall"] > 0).all() else "not decided")
    else:
        fall = dict(paper=PAPER, finding="oracle leakage falls as K grows", ours="only K=1 available",
                    verdict="not decided")
    return [pos, fall]


def lp_ft_findings(gap: pd.DataFrame, supervised: str, self_supervised: str) -> list[dict]:
    """One row from :func:`dganalysis.protocols.leakage.gap_table` (index = pretraining, column ``Avg``): Gap > 0
    for the supervised test-like source and ≤ 0 for the self-supervised one (means over test domains, one split;
    no trial-level test here)."""
    gs, gu = float(gap.loc[supervised, "Avg"]), float(gap.loc[self_supervised, "Avg"])
    ok = gs > 0 >= gu
    return [dict(paper=PAPER, finding="supervised test-like pretraining leaks: LP beats FT (Gap > 0), "
                                      "self-supervised does not (Tables 1–2)",
                 ours=f"Gap (Avg over test domains): {supervised} {gs:+.3f}, {self_supervised} {gu:+.3f}",
                 verdict="reproduced" if ok else "partly" if gs > gu else "not reproduced")]
