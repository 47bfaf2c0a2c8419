"""Claims against a baseline, one per (board, selection, dataset, algorithm ≠ baseline), with calibrated verdicts.

A *claim* is "algorithm A differs from the baseline B on dataset D under selection method S", measured by
Δ = mean(A) − mean(B) in accuracy points on D's average over test environments (DomainBed's Avg column, computed per
trial seed; Gulrajani & Lopez-Paz 2021). Each claim gets:

* **the test** — Welch's t-test from the two cells' summaries (mean, standard deviation, n): SE_Δ² = s_A²/n_A +
  s_B²/n_B with sample variances, Welch–Satterthwaite degrees of freedom (Welch 1947). It is exact under normal trial
  accuracies and valid at n = 3 (df ≥ 2); a bootstrap over 3 trials is not (27 resamples, an interval too narrow),
  so no verdict here rests on one. Runs of different algorithms are independent; where they share a trial's data
  split the correlation is positive and Welch is conservative.
* **the correction** — Holm's step-down adjustment (Holm 1979) over the *family* of one (board, selection): its
  claims of all algorithms on all datasets (91 for DomainBed's 14 algorithms × 7 datasets). With algorithms identical
  in distribution, a better/worse verdict appears in at most α of the audits (family-wise error rate).
* **equivalence** — two one-sided tests (TOST; Schuirmann 1987) of |Δ| < rope from the same t statistic and df, their
  p-value (the larger one-sided p) Holm-adjusted over the family too: "equivalent" is claimed for a true |Δ| = rope
  in at most α of the audits.
* **verdict** — ``equivalent`` when the TOST passes (a difference smaller than the ROPE does not matter, significant
  or not), else ``better`` / ``worse`` when the Holm-adjusted Welch p < α (by the sign of Δ), else ``undecided``.
  A cell without an SE (a table that gives none) or n < 2 is ``undecided`` and left out of the family.
* **intervals** — ``ci_low``/``ci_high``: the per-claim ``confidence`` interval of Δ (Welch t); ``sim_low``/
  ``sim_high``: simultaneous over the family (Bonferroni, level 1 − (1 − confidence)/m), the interval to read beside
  the Holm verdicts (a claim whose simultaneous interval excludes 0 is decided; Holm may decide more).
* **trials_needed** — trials per group for 80% power of the two-sided two-sample t-test (equal variances, df 2n − 2;
  statsmodels ``TTestIndPower``'s formula) at level α/m (Holm's first step, m = testable claims in the family) if
  the observed standardised effect — at the cautious end of the rounding box — were the truth: a planning figure,
  not evidence. It can be ≤ n for a claim left undecided only by the published rounding.

**Published rounding.** A printed mean is a value in [mean − r/2, mean + r/2] and a printed SE one in
[max(SE − r/2, 0), SE + r/2] (r: the resolution, 0.1 for one decimal): "± 0.0" means SE < 0.05, never zero. A
verdict must hold over this whole box: the better/worse test uses |Δ| shrunk by the rounding of both means and the
largest p over the two SEs' box (Welch's df is not monotone in the SEs, so the corner is not enough; scaling both SEs
up raises SE_Δ and leaves the df unchanged, so the worst case lies on the box's upper edges, searched at 17 points
each);
the TOST uses |Δ| grown by it and the same worst case over the SEs; the CI is widened alike. As every true value lies
in the box, each p-value is at least the one the unrounded numbers would give, so the error rates hold. We also give
``verdict_nominal`` (printed numbers taken at face value, a printed 0.0 SE as zero — what a naive reader computes,
Holm over the same family) and ``rounding_changed`` where the two differ. An SE with ``se_ddof = 0`` (population
standard deviation, DomainBed's) is converted to the sample one by × √(n/(n−1)).

The numerical core (:func:`decide`) works on arrays with any leading batch shape (the calibration tests run
thousands of simulated families at once); :func:`claims` is the frame-level entry point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

VERDICTS = ("better", "worse", "equivalent", "undecided")
KEY = ["board", "selection", "dataset", "algorithm"]
CLAIM_COLUMNS = [
    "board", "selection", "dataset", "algorithm", "baseline", "mean", "baseline_mean", "delta", "se", "df", "ci_low",
    "ci_high", "sim_low", "sim_high", "p", "p_adj", "p_equiv", "p_equiv_adj", "verdict", "verdict_nominal", "rounding_changed",
    "trials_needed", "n", "baseline_n", "m", "test", "correction",
]
GRID = 17  #: points per upper edge of the SE rounding box (ends included) searched for the worst case
TEST = "Welch t"
TOST = "TOST (Welch t)"


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values along the last axis (Holm 1979); NaN entries are left out of the family and stay NaN.

    Equal to ``statsmodels.stats.multitest.multipletests(p, method="holm")[1]`` per row (tested), vectorized over
    the leading axes: sort, multiply the i-th smallest of m by (m − i), running maximum, clip at 1, unsort.
    """
    p = np.asarray(p, dtype=float)
    nan = np.isnan(p)
    m = (~nan).sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(nan, np.inf, p), axis=-1, kind="stable")
    ps = np.take_along_axis(np.where(nan, np.inf, p), order, axis=-1)
    rank = np.arange(p.shape[-1])
    adj = np.maximum.accumulate(np.minimum(np.maximum(m - rank, 1) * np.where(np.isinf(ps), 1.0, ps), 1.0), axis=-1)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return np.where(nan, np.nan, out)


@dataclass
class Decision:
    """Arrays of one batch of claims (see :func:`decide`); shapes follow the inputs."""

    delta: np.ndarray
    se: np.ndarray
    df: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    sim_low: np.ndarray  # simultaneous (Bonferroni, level 1 − (1 − confidence)/m over the family)
    sim_high: np.ndarray
    p: np.ndarray
    p_adj: np.ndarray
    p_equiv: np.ndarray
    p_equiv_adj: np.ndarray
    verdict: np.ndarray  # int codes into VERDICTS
    p_nominal: np.ndarray
    verdict_nominal: np.ndarray


def _welch(se_a, se_b, n_a, n_b):
    """(SE of the difference, Welch df) from ddof-1 standard errors."""
    va, vb = se_a**2, se_b**2
    se = np.sqrt(va + vb)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(va > 0, va**2 / (n_a - 1), 0.0) + np.where(vb > 0, vb**2 / (n_b - 1), 0.0)
        df = np.where(den > 0, (va + vb) ** 2 / den, np.inf)
    return se, df


def _p_diff(d_abs, se, df):
    """Two-sided Welch p of |Δ| = d_abs (zero SE: exact, p = 0 when d_abs > 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(d_abs / se, df)
    return np.where(se > 0, p, np.where(d_abs > 0, 0.0, 1.0))


def _p_tost(d_abs, se, df, rope):
    """TOST p of |Δ| < rope at |Δ| = d_abs: the binding one-sided test, P(T ≤ (d_abs − rope)/se)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = stats.t.cdf((d_abs - rope) / se, df)
    return np.where(se > 0, p, np.where(d_abs < rope, 0.0, 1.0))


def _verdicts(delta, p_adj, pe_adj, alpha):
    v = np.full(delta.shape, 3, dtype=np.int8)  # undecided
    sig = p_adj < alpha
    v = np.where(sig & (delta > 0), 0, v)
    v = np.where(sig & (delta < 0), 1, v)
    return np.where(pe_adj < alpha, 2, v).astype(np.int8)


@dataclass(frozen=True)
class Summaries:
    """Per-cell summaries of one side of a batch of claims (arrays or scalars that broadcast to ``(..., m)``):
    ``mean`` and ``se`` in accuracy points, ``n`` trials, ``ddof`` of the SE's standard deviation (0: DomainBed's
    population-std SE), and the rounding resolutions of the printed ``mean`` and ``se`` (0: exact numbers)."""

    mean: Any
    se: Any
    n: Any
    ddof: Any = 1
    mean_res: Any = 0.0
    se_res: Any = 0.0

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, suffix: str = "") -> Summaries:
        """The columns ``mean, se, n, se_ddof, mean_res, se_res`` (each with ``suffix``) of ``frame``."""
        return cls(*(frame[c + suffix].to_numpy() for c in ("mean", "se", "n", "se_ddof", "mean_res", "se_res")))


def decide(a: Summaries, b: Summaries, *, alpha: float = 0.05, rope: float = 0.0, confidence: float = 0.95,
           grid: int = GRID) -> Decision:
    """Verdicts of a batch of claims A vs B from summaries; the last axis is one Holm family.

    The fields of ``a`` and ``b`` broadcast to one shape ``(..., m)``; SEs as given (``ddof`` 0: population-std SEs,
    converted); NaN SE: no test (p NaN, undecided, out of the family). See the module docstring for the tests, the
    rounding box and the verdicts.
    """
    mean_a, se_a, n_a, ddof_a, mean_res_a, se_res_a = a.mean, a.se, a.n, a.ddof, a.mean_res, a.se_res
    mean_b, se_b, n_b, ddof_b, mean_res_b, se_res_b = b.mean, b.se, b.n, b.ddof, b.mean_res, b.se_res
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise ValueError(f"alpha={alpha}, confidence={confidence}: expected values in (0, 1)")
    if not rope >= 0:
        raise ValueError(f"rope={rope}: expected a width ≥ 0 in accuracy points")
    arrs = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        mean_a, se_a, n_a, mean_b, se_b, n_b, ddof_a, ddof_b, mean_res_a, mean_res_b, se_res_a, se_res_b)))
    ma, sa, na, mb, sb, nb, da, db, mra, mrb, sra, srb = arrs
    ca = np.where(da == 0, np.sqrt(na / np.maximum(na - 1, 1)), 1.0)  # ddof-0 SE → ddof-1 SE
    cb = np.where(db == 0, np.sqrt(nb / np.maximum(nb - 1, 1)), 1.0)
    delta = ma - mb
    r = (mra + mrb) / 2  # Δ's rounding half-width
    ok = np.isfinite(sa) & np.isfinite(sb) & (na >= 2) & (nb >= 2)
    # nominal: the printed numbers at face value
    se_n, df_n = _welch(sa * ca, sb * cb, na, nb)
    p_nom = np.where(ok, _p_diff(np.abs(delta), se_n, df_n), np.nan)
    pe_nom = np.where(ok, _p_tost(np.abs(delta), se_n, df_n, rope), np.nan) if rope > 0 else np.full(delta.shape,
                                                                                                       np.nan)
    # conservative: worst case over the rounding box. Scaling both SEs up by k scales SE_Δ by k and leaves Welch's df
    # unchanged, so every maximum (of the p-values and of the CI half-width) lies on an upper edge of the box:
    # SE_A at its upper end with SE_B anywhere in its interval, or the reverse. Each edge is searched at `grid` points.
    u = np.linspace(0.0, 1.0, grid) if grid > 1 else np.array([1.0])
    lo_a, hi_a = np.maximum(sa - sra / 2, 0.0), sa + sra / 2
    lo_b, hi_b = np.maximum(sb - srb / 2, 0.0), sb + srb / 2
    if np.any(sra > 0) or np.any(srb > 0):
        ga = np.concatenate([np.broadcast_to(hi_a[..., None], (*hi_a.shape, len(u))),
                             lo_a[..., None] + (hi_a - lo_a)[..., None] * u], axis=-1)
        gb = np.concatenate([lo_b[..., None] + (hi_b - lo_b)[..., None] * u,
                             np.broadcast_to(hi_b[..., None], (*hi_b.shape, len(u)))], axis=-1)
    else:
        ga, gb = sa[..., None], sb[..., None]
    se_g, df_g = _welch(ga * ca[..., None], gb * cb[..., None], na[..., None], nb[..., None])
    d_lo = np.maximum(np.abs(delta) - r, 0.0)[..., None]
    d_hi = (np.abs(delta) + r)[..., None]
    p = np.where(ok, _p_diff(d_lo, se_g, df_g).max(axis=-1), np.nan)
    pe = (np.where(ok, _p_tost(d_hi, se_g, df_g, rope).max(axis=-1), np.nan) if rope > 0
          else np.full(delta.shape, np.nan))
    q = stats.t.ppf(1 - (1 - confidence) / 2, df_g)
    half = np.where(ok, (q * se_g).max(axis=-1), np.nan)
    m = np.maximum(ok.sum(axis=-1, keepdims=True), 1)
    q_sim = stats.t.ppf(1 - (1 - confidence) / (2 * m[..., None]), df_g)
    half_sim = np.where(ok, (q_sim * se_g).max(axis=-1), np.nan)
    p_adj, pe_adj = holm(p), holm(pe)
    verdict = np.where(ok, _verdicts(delta, p_adj, pe_adj, alpha), 3).astype(np.int8)
    verdict_nom = np.where(ok, _verdicts(delta, holm(p_nom), holm(pe_nom), alpha), 3).astype(np.int8)
    return Decision(delta, np.where(ok, se_g.max(axis=-1), np.nan),
                    np.where(ok, df_g.min(axis=-1), np.nan), delta - r - half, delta + r + half,
                    delta - r - half_sim, delta + r + half_sim, p, p_adj,
                    pe, pe_adj, verdict, p_nom, verdict_nom)


def _power(effect, n, alpha):
    """Power of the two-sided two-sample t-test with n per group (noncentral t; statsmodels ``TTestIndPower``'s
    formula, which returns NaN for n in the thousands)."""
    df = 2 * n - 2
    nc = effect * np.sqrt(n / 2)
    crit = stats.t.isf(alpha / 2, df)
    with np.errstate(all="ignore"):
        p = stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)
    # scipy's noncentral t returns NaN far in the tail (power ≈ 1): the normal approximation is exact enough there
    approx = stats.norm.sf(crit - nc) + stats.norm.cdf(-crit - nc)
    return np.where(np.isfinite(p), p, approx)


def trials_needed(delta, sd_a, sd_b, alpha, power: float = 0.8, max_n: int = 10_000) -> np.ndarray:
    """Trials per group for a two-sided two-sample t-test at level ``alpha`` to reach ``power`` if the true effect
    were |delta| / √((sd_a² + sd_b²)/2) (noncentral t, as statsmodels ``TTestIndPower``; Cohen 1988), by bisection over n (power
    grows with n). ``inf`` for a zero effect or more than ``max_n``; 2 for a noiseless difference; NaN where the SDs
    are unknown."""
    delta, sd_a, sd_b, alpha = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (delta, sd_a, sd_b, alpha)))
    sd = np.sqrt((sd_a**2 + sd_b**2) / 2)
    out = np.full(delta.shape, np.nan)
    ok = np.isfinite(sd) & np.isfinite(delta)
    out[ok & (np.abs(delta) == 0)] = np.inf
    out[ok & (np.abs(delta) > 0) & (sd == 0)] = 2.0
    todo = ok & (np.abs(delta) > 0) & (sd > 0)
    if not todo.any():
        return out
    eff, a = np.abs(delta[todo]) / sd[todo], alpha[todo]
    pw = lambda n: _power(eff, n, a)  # noqa: E731
    lo, hi = np.full(eff.shape, 2.0), np.full(eff.shape, float(max_n))
    reach = pw(hi) >= power
    done_lo = pw(lo) >= power
    for _ in range(int(np.ceil(np.log2(max_n))) + 1):
        mid = np.floor((lo + hi) / 2)
        good = pw(mid) >= power
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
    res = np.where(done_lo, 2.0, np.where(reach, hi, np.inf))
    out[todo] = res
    return out


def claims(cells: pd.DataFrame, baseline: str = "ERM", alpha: float = 0.05, rope: float = 1.0,
           confidence: float = 0.95, with_trials_needed: bool = True) -> pd.DataFrame:
    """One row per (board, selection, dataset, algorithm ≠ ``baseline``) of the dataset-average cells (``env ==
    ""``) of a cells frame (:mod:`dganalysis.audit.tables` or :func:`dganalysis.audit.inputs.cells_from_trials`),
    columns :data:`CLAIM_COLUMNS`. Families: one per (board, selection). A dataset without a baseline cell gives
    no claims. See the module docstring."""
    _check_cells(cells, baseline)
    avg = cells[cells["env"].fillna("") == ""] if "env" in cells else cells
    base = avg[avg["algorithm"] == baseline].set_index(["board", "selection", "dataset"])
    other = avg[avg["algorithm"] != baseline]
    rows = other.join(base, on=["board", "selection", "dataset"], rsuffix="_b", how="inner")
    if rows.empty:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    out = []
    for (board, selection), fam in rows.groupby(["board", "selection"], sort=False):
        d = decide(Summaries.from_frame(fam), Summaries.from_frame(fam, "_b"), alpha=alpha, rope=rope,
                   confidence=confidence)
        m = int(np.isfinite(d.p).sum())
        frame = pd.DataFrame({
            "board": board, "selection": selection, "dataset": fam["dataset"].to_numpy(),
            "algorithm": fam["algorithm"].to_numpy(), "baseline": baseline, "mean": fam["mean"].to_numpy(),
            "baseline_mean": fam["mean_b"].to_numpy(), "delta": d.delta, "se": d.se, "df": d.df,
            "ci_low": d.ci_low, "ci_high": d.ci_high, "sim_low": d.sim_low, "sim_high": d.sim_high, "p": d.p, "p_adj": d.p_adj, "p_equiv": d.p_equiv,
            "p_equiv_adj": d.p_equiv_adj, "verdict": np.asarray(VERDICTS)[d.verdict],
            "verdict_nominal": np.asarray(VERDICTS)[d.verdict_nominal], "n": fam["n"].to_numpy(),
            "baseline_n": fam["n_b"].to_numpy(), "m": m,
            "test": np.where(np.isfinite(d.p), TEST + (f" + {TOST}, rope ±{rope:g}" if rope > 0 else ""),
                             "none (no SE or n < 2)"),
            "correction": f"Holm over {m} claims ({selection}{', ' + board if board else ''})",
        })
        frame["rounding_changed"] = frame["verdict"] != frame["verdict_nominal"]
        if with_trials_needed and m:
            ca = np.where(fam["se_ddof"] == 0, np.sqrt(fam["n"] / (fam["n"] - 1)), 1.0)
            cb = np.where(fam["se_ddof_b"] == 0, np.sqrt(fam["n_b"] / (fam["n_b"] - 1)), 1.0)
            r = (fam["mean_res"].to_numpy() + fam["mean_res_b"].to_numpy()) / 2
            sd_a = (fam["se"] + fam["se_res"] / 2).to_numpy() * ca * np.sqrt(fam["n"].to_numpy())
            sd_b = (fam["se_b"] + fam["se_res_b"] / 2).to_numpy() * cb * np.sqrt(fam["n_b"].to_numpy())
            frame["trials_needed"] = trials_needed(np.maximum(np.abs(d.delta) - r, 0.0), sd_a, sd_b, alpha / m)
        else:
            frame["trials_needed"] = np.nan
        out.append(frame)
    return pd.concat(out, ignore_index=True)[CLAIM_COLUMNS]


def _check_cells(cells: pd.DataFrame, baseline: str) -> None:
    need = ["board", "selection", "dataset", "algorithm", "mean", "se", "n", "se_ddof", "mean_res", "se_res"]
    missing = [c for c in need if c not in cells]
    if missing:
        raise ValueError(f"cells lack column(s) {missing}; expected the frame of dganalysis.audit.tables/inputs")
    algs = sorted(cells["algorithm"].unique())
    if baseline not in algs:
        import difflib

        close = [a for a in algs if a.lower() == baseline.lower()] or difflib.get_close_matches(baseline, algs, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"baseline {baseline!r} is not among the algorithms {algs}{hint}")


def summary_counts(claims_df: pd.DataFrame) -> dict[str, int]:
    """Number of claims per verdict (all four keys) and ``total``."""
    counts = claims_df["verdict"].value_counts()
    return {**{v: int(counts.get(v, 0)) for v in VERDICTS}, "total": len(claims_df)}


def verdict_sentence(row: pd.Series, alpha: float, rope: float) -> str:
    """One sentence stating a claim's verdict with n, the test and the correction."""
    what = {"better": "better than", "worse": "worse than", "equivalent": f"equivalent (within ±{rope:g} points) to",
            "undecided": "undecided (not shown better, worse or equivalent) against"}[row["verdict"]]
    ci = (f"95% CI [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}] (simultaneous over the family "
          f"[{row['sim_low']:+.2f}, {row['sim_high']:+.2f}])" if np.isfinite(row["ci_low"]) else "no CI (no SE)")
    p = (f"Holm-adjusted p = {row['p_adj']:.3g}" + (f", TOST p = {row['p_equiv_adj']:.3g}" if rope > 0 else "")
         if np.isfinite(row["p_adj"]) else "no test")
    extra = (f" (the printed numbers taken at face value would say {row['verdict_nominal']}: the difference rests on "
             "rounding)") if row.get("rounding_changed") else ""
    sel = f"{row['selection']}{', ' + row['board'] if row['board'] else ''}"
    return (f"{row['algorithm']} is {what} {row['baseline']} on {row['dataset']} ({sel}): Δ = {row['delta']:+.2f} "
            f"points, {ci}, n = {int(row['n'])} vs {int(row['baseline_n'])} trials, {row['test']}, {p} "
            f"({row['correction']}, α = {alpha:g}){extra}.")
