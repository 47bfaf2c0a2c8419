"""Family-wise error control: Holm's step-down, and one step-down over each claim's difference and equivalence.

:func:`adjust_pvalues` is the entry point of the protocols (one family, a named method: Holm by :func:`holm`,
statsmodels' ``multipletests`` for the others); the audit calls :func:`holm` and :func:`joint_step_down` directly.

**Holm** (Holm 1979): sort the m p-values, compare the i-th smallest with α/(m − i + 1), stop at the first that
fails. :func:`holm` gives the adjusted p-values (equal to ``statsmodels.stats.multitest.multipletests(p,
method="holm")[1]`` row by row, tested), vectorised over leading axes.

**Difference and equivalence together** (:func:`joint_step_down`). Each claim j has two null hypotheses: H_j⁼
"Δ_j = 0" (rejected: better or worse) and H_j^≈ "``|Δ_j|`` ≥ rope" (rejected: equivalent). At most one of them is
true for any Δ_j. Holm run separately on each kind keeps each kind's error at α but not the two together: a family
with one claim at Δ = 0 among claims at ``|Δ|`` = rope with tiny SEs makes a false difference *and* a false
equivalence each about α likely (about 2α in all). The joint procedure orders all 2m p-values and compares the k-th
smallest with α / t_k, where t_k is the number of claims that still have a hypothesis among those not yet rejected
(a claim leaves the count only when both its hypotheses are rejected) — Shaffer's (1986) logically restricted
step-down with "at most one true hypothesis per claim". Validity: let I be the claims with a true hypothesis
(``|I|`` ≤ m) and E the event that every true hypothesis has p > α/``|I|``; P(E) ≥ 1 − α. Before the first false
rejection each claim of I still holds its true hypothesis, so t_k ≥ ``|I|`` and the threshold is ≤ α/``|I|``: on E
no true hypothesis is rejected.
Hence P(any true hypothesis rejected: better/worse where Δ_j = 0, equivalent where ``|Δ_j|`` ≥ rope) ≤ α for every
configuration of the Δ_j.

**Directional (type III) errors are outside this proof**: a ``better`` where Δ_j < 0 rejects a *false* null, in the
wrong direction. Results that extend step-down procedures to directional decisions — Shaffer (1980, Ann. Statist.
8:1342) for Holm's procedure with independent test statistics, Guo & Romano (2015, J. Statist. Plann. Inference 163)
for step-downs under independence and some dependence — assume independence (or a specific dependence); the audit's
claims of one family share the baseline's arm and use calibrated supremum p-values, and no result is shown here to
cover them. Per claim, at a fixed level, a wrong sign is no more likely than the one-sided half of the size at
Δ_j = 0 (the statistic is stochastically increasing in Δ_j given the SEs). With no equivalence test
(rope 0) it is exactly Holm. Its price against two separate Holm runs: a claim decided different still counts while
its equivalence hypothesis stands, so later steps divide by a little more.
"""

from __future__ import annotations

import numpy as np

from dganalysis.validation import check_pvalues, check_scalar


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis; NaN entries are left out of the family and stay NaN."""
    p = np.asarray(p, dtype=float)
    nan = np.isnan(p)
    m = (~nan).sum(axis=-1, keepdims=True)
    filled = np.where(nan, np.inf, p)
    order = np.argsort(filled, axis=-1, kind="stable")
    ps = np.take_along_axis(filled, order, axis=-1)
    rank = np.arange(p.shape[-1])
    adj = np.maximum.accumulate(np.minimum(np.maximum(m - rank, 1) * np.where(np.isinf(ps), 1.0, ps), 1.0), axis=-1)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return np.where(nan, np.nan, out)


def joint_step_down(p_diff: np.ndarray, p_equiv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Adjusted p-values (difference, equivalence) of the joint step-down over the last axis (one family of m
    claims, each with up to two hypotheses; NaN: not tested). A hypothesis is rejected at level α when its adjusted
    p-value is below α; the family-wise error over both kinds is then at most α (module docstring)."""
    pd_, pe = np.broadcast_arrays(np.asarray(p_diff, dtype=float), np.asarray(p_equiv, dtype=float))
    m = pd_.shape[-1]
    both = np.concatenate([pd_, pe], axis=-1)  # (..., 2m): claim of column c is c % m
    nan = np.isnan(both)
    filled = np.where(nan, np.inf, both)
    order = np.argsort(filled, axis=-1, kind="stable")
    ps = np.take_along_axis(filled, order, axis=-1)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(2 * m), order.shape), axis=-1)
    pos = np.where(nan, -1, pos)
    done = np.maximum(pos[..., :m], pos[..., m:])  # position of each claim's last tested hypothesis (−1: none)
    tested = done >= 0
    hist = np.zeros(order.shape, dtype=float)
    np.put_along_axis(hist, np.where(tested, done, 0), tested.astype(float), axis=-1)
    completed_before = np.cumsum(hist, axis=-1) - hist  # claims whose every hypothesis sits before position k
    t = tested.sum(axis=-1, keepdims=True) - completed_before
    adj_sorted = np.maximum.accumulate(np.minimum(np.maximum(t, 1) * np.where(np.isinf(ps), 1.0, ps), 1.0), axis=-1)
    out = np.empty_like(adj_sorted)
    np.put_along_axis(out, order, adj_sorted, axis=-1)
    out = np.where(nan, np.nan, out)
    return out[..., :m], out[..., m:]


def adjust_pvalues(p, alpha: float = 0.05, method: str = "holm") -> np.ndarray:
    """Multiple-testing adjusted p-values of a 1-D family ``p``: ``method="holm"`` by :func:`holm`, any other
    method of statsmodels' ``multipletests`` (``"bonferroni"``, ``"fdr_bh"``, ...) by statsmodels; ``method="none"``
    returns ``p``. ``alpha`` matters only to the methods whose adjusted p-values depend on it (statsmodels' two-stage
    ones).

    NaN entries are excluded from the family and returned as NaN.
    """
    check_pvalues(p, "p", func="adjust_pvalues")
    check_scalar(alpha, "alpha", func="adjust_pvalues", low=0.0, high=1.0, low_open=True, high_open=True)
    p = np.asarray(p, dtype=float)
    out = np.full_like(p, np.nan)
    ok = ~np.isnan(p)
    if method in (None, "none"):
        out[ok] = p[ok]
        return out
    if ok.any():
        if method == "holm":
            out[ok] = holm(p[ok])
        else:
            from statsmodels.stats.multitest import multipletests

            out[ok] = multipletests(p[ok], alpha=alpha, method=method)[1]
    return out
