"""Claims against a baseline, one per (board, selection, dataset, algorithm ≠ baseline), with verdicts whose
family-wise error is at most α for every ratio of the two arms' variances; and the same tests of an input's cells
against a published reference table (the reproduction check, :func:`compare_with_reference`).

A *claim* is "algorithm A differs from the baseline B on dataset D under selection method S", measured by
Δ = mean(A) − mean(B) in accuracy points on D's average over test environments (DomainBed's Avg column, computed per
trial seed; Gulrajani & Lopez-Paz 2021). Each claim gets:

* **the test** — Welch's statistic from the two cells' summaries (mean, SD, n), its p-value *calibrated to the
  worst case over the unknown variance ratio* (:mod:`dganalysis.stats.behrens_fisher`): Welch's own p-value is not
  valid at n = 3 when the variances differ (its size reaches 4.6× the level at Holm's first step over 91 claims), the
  calibrated one is, for every ratio, at a cost in power that is small from n = 10 and large at n = 3 in a big family
  (measured on simulated claims at equal variances, docs/audit.md: n = 3, family of 5, Δ = 6 trial SDs, 0.88 against
  Welch's 0.98; n = 3, family of 91, Δ = 8 SDs, 0.035 against 0.377; n = 10, family of 5, Δ = 1.5 SDs, 0.806 against
  0.812). On a sweep, where both arms ran at least 2
  of the same trial seeds (DomainBed's ``trial_seed`` fixes the data split), the claim is tested *paired* instead,
  on the shared seeds only: a t-test on the per-seed differences, exact for any variances and correlation (df
  n_paired − 1); the rule is :func:`dganalysis.stats.pairing.use_pairs`, the protocols' too, and ``n_paired``,
  ``dropped``, ``baseline_dropped`` count the pairs and the trials without a partner. Column ``test`` says which
  ran.
* **equivalence** — two one-sided tests (TOST; Schuirmann 1987) of |Δ| < rope from the same statistic, each one-sided
  p-value calibrated the same way (h(2p)/2).
* **the family and its correction** — a verdict is a claim about error rates over a *family*; the reader chooses it
  (``family``): ``"algorithm"`` (default; the family a paper claims: one algorithm against the baseline over the
  datasets of one selection method and board), ``"dataset"`` (every algorithm against the baseline on one dataset)
  or ``"table"`` (every claim of one selection method and board: 91 for DomainBed's table). Within a family, the
  difference and the equivalence hypotheses of all claims go through one step-down
  (:func:`dganalysis.stats.multiplicity.joint_step_down`): P(any true hypothesis rejected — better or worse where
  Δ = 0, equivalent where ``|Δ|`` ≥ rope) ≤ α. A wrong *sign* (better where Δ < 0: a directional error) is outside
  that guarantee (see :mod:`dganalysis.stats.multiplicity`). Every row
  also carries ``verdict_table`` (the strict all-claims family's verdict), the unadjusted ``p`` and ``p_equiv`` and
  the simultaneous intervals, so a reader can re-adjust for another family.
* **verdict** — ``equivalent`` when the TOST passes, else ``better`` / ``worse`` when the difference is rejected (by
  the sign of Δ), else ``undecided``. A cell without an SE or with n < 2 is ``undecided`` and out of the family; so
  is a claim resting on *zero variance* — an arm whose trials are identical, or identical paired differences (trial
  SD ≤ 10⁻⁹ points, the records' float resolution; :func:`dganalysis.stats.ttests.zero_variance` says why no SD floor
  is used instead): its ``test`` reads ``none (zero variance)`` and ``why`` gives the largest SD of that arm at which
  the claim, alone, would be decided. A printed "± 0.0" is not zero variance (see *Published rounding*).
* **intervals** — ``ci_low``/``ci_high``: the per-claim ``confidence`` interval of Δ, inverted from the calibrated
  test (valid for every variance ratio); ``sim_low``/``sim_high``: simultaneous over the family (Bonferroni, level
  1 − (1 − confidence)/m), the interval to read beside the verdicts.
* **planning** (:mod:`dganalysis.stats.planning`), for undecided claims only: ``trials_needed`` — trials per arm
  for the audit's own test at the family's first-step level α/m to decide a true |Δ| = rope with 80% power, and
  ``trials_equivalence`` — trials per arm to show equivalence within ±rope if the true Δ were 0; each with
  ``_low``/``_high``, the same figure at the ends of the 80% interval of the SDs (estimated from n − 1 df). These
  answer "how many trials would a study need", not "was this one powerful" (post-hoc power at the observed effect
  says nothing new; Hoenig & Heisey 2001).
* **why** — for an undecided claim, what stands between it and a verdict, in words with the number that would
  change it (:func:`why_undecided`).

**Published rounding.** A printed mean is a value in [mean − r/2, mean + r/2] and a printed SE one in
[max(SE − r/2, 0), SE + r/2] (r: the resolution, 0.1 for one decimal): "± 0.0" means SE < 0.05, never zero. A
verdict must hold over this whole box: the difference test uses |Δ| shrunk by the rounding of both means and the
largest p over the two SEs' box (Welch's df is not monotone in the SEs, so the corner is not enough; scaling both SEs
up raises SE_Δ and leaves the df unchanged, so the worst case lies on the box's upper edges). Each edge is cut into
16 cells; over a cell SE_Δ lies between its values at the ends and Welch's df, which rises and then falls along an
edge, between the smaller end and its peak, and each p rises with SE_Δ and falls with the df (or the reverse), so
the value at the cell's worst corner bounds it: the p used is an upper bound of the box's largest, not a grid search
that could miss a peak between points (:func:`box_cells`; never below a 1,000-point search per edge in the tests).
The TOST uses |Δ| grown by the rounding and the same bound over the SEs; the CI is widened alike. As every true
value lies in the box and the calibration is monotone, each p-value is at least the one the unrounded numbers would
give, so the error rates hold. ``verdict_nominal`` takes the printed numbers at face value (a printed 0.0 SE as zero —
what a naive reader computes; same test and family) and ``rounding_changed`` marks where the two differ. An SE with
``se_ddof = 0`` (population standard deviation, DomainBed's) is converted to the sample one by × √(n/(n−1)).

**Reproduction check** (:func:`compare_with_reference`): "I can't reproduce your numbers — is my lower number
noise?" Each (selection, dataset, algorithm) present both in an input and in a published reference table gets
Δ = ours − reference on the dataset average (points) and the same tests — Welch's statistic with its p-value
calibrated over the variance ratio, TOST within ±rope, the published table's rounding honoured (worst case over its
rounding box), one joint step-down over the cells of one selection (and reference board) — and a verdict:
``consistent`` (equivalent within ±rope), ``lower`` / ``higher`` (a decided difference), or ``undecided`` (neither;
``trials_needed``: trials per arm that would decide a difference of ±rope with 80% power). Consistency is the TOST: it
is claimed for a true |Δ| = rope in at most α of the checks.

The numerical core (:func:`decide`) works on arrays with any leading batch shape (the calibration tests run
thousands of simulated families at once); :func:`claims` is the frame-level entry point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from dganalysis.stats import behrens_fisher as bf
from dganalysis.stats import planning
from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.stats.multiplicity import joint_step_down
from dganalysis.stats.ttests import ZERO_SD, tost_p, zero_variance
from dganalysis.validation import ConfigError

CLAIM_VERDICTS = ("better", "worse", "equivalent", "undecided")
CLAIM_KEY = ["board", "selection", "dataset", "algorithm"]
FAMILIES = {"algorithm": ["board", "selection", "algorithm"], "dataset": ["board", "selection", "dataset"],
            "table": ["board", "selection"]}
DEFAULT_FAMILY = "algorithm"
FAMILY_WORDS = {"algorithm": "each algorithm vs {b} over the datasets", "dataset": "every algorithm vs {b} on each "
                "dataset", "table": "every claim of the table"}
CLAIM_COLUMNS = [
    "board", "selection", "dataset", "algorithm", "baseline", "mean", "baseline_mean", "delta", "se", "df", "ci_low",
    "ci_high", "sim_low", "sim_high", "p_welch", "p", "p_adj", "p_equiv", "p_equiv_adj", "verdict", "verdict_nominal",
    "rounding_changed", "verdict_table", "family", "m", "trials_needed", "trials_needed_low", "trials_needed_high",
    "trials_equivalence", "trials_equivalence_low", "trials_equivalence_high", "n", "baseline_n", "paired", "test",
    "correction", "why", "n_paired", "dropped", "baseline_dropped",
]
GRID = 17  #: points per upper edge of the SE rounding box (ends included): 16 cells, each bounded (:func:`box_cells`)
TEST = "Welch t calibrated over the variance ratio"
TEST_PAIRED = "paired t over shared trial seeds"
TOST = "TOST"


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
    p_welch: np.ndarray  # Welch's own two-sided p (worst case over the rounding box), not valid at small n
    p: np.ndarray  # the valid two-sided p (calibrated, or paired), unadjusted
    p_adj: np.ndarray
    p_equiv: np.ndarray
    p_equiv_adj: np.ndarray
    verdict: np.ndarray  # int codes into CLAIM_VERDICTS
    p_nominal: np.ndarray
    verdict_nominal: np.ndarray
    paired: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    zero_variance: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # untested: an SD of 0


def _ddof1_factor(ddof, n):
    """× this turns an SE from a population (ddof 0) standard deviation into the sample (ddof 1) one: √(n/(n − 1))
    where ``ddof`` is 0, else 1."""
    return np.where(ddof == 0, np.sqrt(n / np.maximum(n - 1, 1)), 1.0)


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


@dataclass(frozen=True)
class Paired:
    """Per-claim paired differences A − B over the trial seeds both arms ran (NaN where a claim is not paired):
    their ``mean``, standard error ``se`` (sample SD / √n) and number ``n``."""

    mean: Any
    se: Any
    n: Any


def box_cells(sa, sb, ha, hb, na, nb, grid: int = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bounds of SE_Δ and of Welch's df over the rounding box of two standard errors (``sa`` ± ``ha``, ``sb`` ±
    ``hb``, each cut at 0; arrays broadcast), cell by cell along its two upper edges: ``(se_lo, se_hi, df_lo, df_hi)``,
    each ``(..., 2 (grid − 1))`` (one cell, the corner, when neither SE is rounded).

    The maxima :func:`decide` needs (of Welch's p, the TOST's p and the interval's half-width) lie on the upper edges
    (SE_A at its top with SE_B anywhere, or the reverse): scaling both SEs by k > 1 scales SE_Δ by k and leaves the
    df unchanged, and each of those quantities rises with SE_Δ at fixed df. Each edge is cut into ``grid`` − 1 cells
    at evenly spaced points. Along an edge SE_Δ rises, so it lies between its values at a cell's ends; Welch's df,
    (v_a + v_b)² / (v_a²/(n_a − 1) + v_b²/(n_b − 1)) with v_a fixed, rises while v_b < v_a (n_b − 1)/(n_a − 1) and
    falls after (its derivative has the sign of v_a²/(n_a − 1) − v_a v_b/(n_b − 1)), so over a cell its minimum is at
    an end and its maximum at an end or at that peak. A quantity monotone in SE_Δ and in the df is thus bounded over
    a cell by its value at the corner of these bounds, and over the box by the largest of those: an upper bound, not a
    search that could fall between grid points. Tested against a 1,000-point search per edge."""
    sa, sb, ha, hb, na, nb = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (sa, sb, ha, hb, na, nb)))
    lo_a, hi_a = np.maximum(sa - ha, 0.0), sa + ha
    lo_b, hi_b = np.maximum(sb - hb, 0.0), sb + hb
    na, nb = na[..., None], nb[..., None]
    if not (np.any(ha > 0) or np.any(hb > 0)) or grid < 2:
        va, vb = hi_a[..., None] ** 2, hi_b[..., None] ** 2
        se, df = np.sqrt(va + vb), bf.welch_df(va, vb, na, nb)
        return se, se, df, df
    u = np.linspace(0.0, 1.0, grid)
    fixed = [hi_a[..., None] ** 2, hi_b[..., None] ** 2]  # the variance held at its top on edge A, edge B
    moving = [(lo_b[..., None] + (hi_b - lo_b)[..., None] * u) ** 2, (lo_a[..., None] + (hi_a - lo_a)[..., None] * u) ** 2]
    out: list[list[np.ndarray]] = [[], [], [], []]
    for fix, mov, n_fix, n_mov in ((fixed[0], moving[0], na, nb), (fixed[1], moving[1], nb, na)):
        df = bf.welch_df(fix, mov, n_fix, n_mov)
        se = np.sqrt(fix + mov)
        peak = fix * (n_mov - 1) / (n_fix - 1)  # the moving variance at which the df peaks
        inside = (mov[..., :-1] < peak) & (peak < mov[..., 1:])
        df_peak = np.broadcast_to(bf.welch_df(fix, peak, n_fix, n_mov), inside.shape)
        out[0].append(se[..., :-1])
        out[1].append(se[..., 1:])
        out[2].append(np.minimum(df[..., :-1], df[..., 1:]))
        out[3].append(np.where(inside, df_peak, np.maximum(df[..., :-1], df[..., 1:])))
    se_lo, se_hi, df_lo, df_hi = (np.concatenate(x, axis=-1) for x in out)
    return se_lo, se_hi, df_lo, df_hi


def decide(a: Summaries, b: Summaries, *, alpha: float = 0.05, rope: float = 0.0, confidence: float = 0.95,
           grid: int = GRID, paired: Paired | None = None) -> Decision:
    """Verdicts of a batch of claims A vs B from summaries; the last axis is one family.

    The fields of ``a`` and ``b`` broadcast to one shape ``(..., m)``; SEs as given (``ddof`` 0: population-std SEs,
    converted); NaN SE: no test (p NaN, undecided, out of the family). ``paired``: where finite, the claim is tested
    on its paired differences instead (exact t on n − 1 df; no rounding). See the module docstring.
    """
    if not 0 < alpha < 1 or not 0 < confidence < 1:
        raise ConfigError(f"alpha={alpha}, confidence={confidence}: expected values in (0, 1)")
    if not rope >= 0:
        raise ConfigError(f"rope={rope}: expected a width ≥ 0 in accuracy points")
    arrs = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (
        a.mean, a.se, a.n, b.mean, b.se, b.n, a.ddof, b.ddof, a.mean_res, b.mean_res, a.se_res, b.se_res)))
    ma, sa, na, mb, sb, nb, da, db, mra, mrb, sra, srb = arrs
    ca, cb = _ddof1_factor(da, na), _ddof1_factor(db, nb)  # ddof-0 SE → ddof-1 SE
    delta = ma - mb
    r = (mra + mrb) / 2  # Δ's rounding half-width
    ok = np.isfinite(sa) & np.isfinite(sb) & (na >= 2) & (nb >= 2)
    # zero variance (dganalysis.stats.ttests.zero_variance): an arm whose trial SD, at the upper edge of its SE's
    # rounding box, is 0 to the records' resolution has no variance estimate — no test, like n < 2
    zero = ok & (zero_variance((sa + sra / 2) * ca * np.sqrt(na)) | zero_variance((sb + srb / 2) * cb * np.sqrt(nb)))
    ok = ok & ~zero
    na_ok, nb_ok = np.where(ok, na, np.nan), np.where(ok, nb, np.nan)
    # nominal: the printed numbers at face value, the same calibrated test
    se_n, df_n = np.sqrt((sa * ca) ** 2 + (sb * cb) ** 2), bf.welch_df((sa * ca) ** 2, (sb * cb) ** 2, na, nb)
    p_nom = np.where(ok, bf.calibrate(bf.welch_p(delta, se_n, df_n), na_ok, nb_ok), np.nan)
    pe_nom = (np.where(ok, bf.calibrate_one_sided(tost_p(np.abs(delta), se_n, df_n, rope), na_ok, nb_ok), np.nan)
              if rope > 0 else np.full(delta.shape, np.nan))
    # conservative: worst case over the rounding box, bounded from above (module docstring, *Published rounding*)
    se_lo, se_hi, df_lo, df_hi = box_cells(sa * ca, sb * cb, sra / 2 * ca, srb / 2 * cb, na, nb, grid)
    d_lo = np.maximum(np.abs(delta) - r, 0.0)[..., None]
    d_hi = (np.abs(delta) + r)[..., None]
    # Welch's p rises with SE_Δ and falls with df (|t_ν| is stochastically decreasing in ν); the TOST's p likewise
    # while |Δ| < rope, and the reverse (falls with SE_Δ, rises with df) from |Δ| = rope on
    p_welch = np.where(ok, bf.welch_p(d_lo, se_hi, df_lo).max(axis=-1), np.nan)
    p = np.where(ok, bf.calibrate(p_welch, na_ok, nb_ok), np.nan)
    if rope > 0:
        below = d_hi < rope
        pe_box = tost_p(d_hi, np.where(below, se_hi, se_lo), np.where(below, df_lo, df_hi), rope).max(axis=-1)
        pe = np.where(ok, bf.calibrate_one_sided(pe_box, na_ok, nb_ok), np.nan)
    else:
        pe = np.full(delta.shape, np.nan)
    m = np.maximum(ok.sum(axis=-1, keepdims=True), 1)
    w_ci = bf.calibrated_level(np.full(delta.shape, 1 - confidence), na_ok, nb_ok)
    w_sim = bf.calibrated_level(np.broadcast_to((1 - confidence) / m, delta.shape), na_ok, nb_ok)
    with np.errstate(invalid="ignore"):
        half = np.where(ok, (special.stdtrit(df_lo, 1 - w_ci[..., None] / 2) * se_hi).max(axis=-1), np.nan)
        half_sim = np.where(ok, (special.stdtrit(df_lo, 1 - w_sim[..., None] / 2) * se_hi).max(axis=-1), np.nan)
    se_out = np.where(ok, se_hi.max(axis=-1), np.nan)
    df_out = np.where(ok, df_lo.min(axis=-1), np.nan)
    lo_ci, hi_ci = delta - r - half, delta + r + half
    lo_sim, hi_sim = delta - r - half_sim, delta + r + half_sim
    is_paired = np.zeros(delta.shape, dtype=bool)
    if paired is not None:
        pm, ps, pn = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (paired.mean, paired.se, paired.n)))
        is_paired = np.isfinite(pm) & np.isfinite(ps) & (pn >= 2)
        zero_p = is_paired & zero_variance(ps * np.sqrt(np.where(is_paired, pn, 1.0)))
        zero = np.where(is_paired, zero_p, zero)
        ok = np.where(is_paired, ~zero_p, ok)
        dfp = np.where(is_paired, pn - 1, 1.0)
        pp = bf.welch_p(pm, ps, dfp)  # the two-sided t p on n − 1 df (exact for paired differences)
        ppe = tost_p(np.abs(pm), ps, dfp, rope) if rope > 0 else np.full(delta.shape, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            mp = np.maximum(ok.sum(axis=-1, keepdims=True), 1)
            hp = special.stdtrit(dfp, 1 - (1 - confidence) / 2) * ps
            hsp = special.stdtrit(dfp, 1 - (1 - confidence) / (2 * mp)) * ps
        delta = np.where(is_paired, pm, delta)
        p_welch = np.where(is_paired, np.nan, p_welch)
        p, p_nom = np.where(is_paired, pp, p), np.where(is_paired, pp, p_nom)
        pe, pe_nom = np.where(is_paired, ppe, pe), np.where(is_paired, ppe, pe_nom)
        se_out, df_out = np.where(is_paired, ps, se_out), np.where(is_paired, dfp, df_out)
        lo_ci, hi_ci = np.where(is_paired, pm - hp, lo_ci), np.where(is_paired, pm + hp, hi_ci)
        lo_sim, hi_sim = np.where(is_paired, pm - hsp, lo_sim), np.where(is_paired, pm + hsp, hi_sim)
    p_welch, p, p_nom, pe, pe_nom = (np.where(ok, x, np.nan) for x in (p_welch, p, p_nom, pe, pe_nom))
    lo_ci, hi_ci, lo_sim, hi_sim = (np.where(ok, x, np.nan) for x in (lo_ci, hi_ci, lo_sim, hi_sim))
    p_adj, pe_adj = joint_step_down(p, pe)
    pn_adj, pen_adj = joint_step_down(p_nom, pe_nom)
    verdict = np.where(ok, _verdicts(delta, p_adj, pe_adj, alpha), 3).astype(np.int8)
    verdict_nom = np.where(ok, _verdicts(delta, pn_adj, pen_adj, alpha), 3).astype(np.int8)
    return Decision(delta, se_out, df_out, lo_ci, hi_ci, lo_sim, hi_sim, p_welch, p, p_adj, pe, pe_adj, verdict,
                    p_nom, verdict_nom, is_paired, zero)


def claims(cells: pd.DataFrame, baseline: str = "ERM", alpha: float = 0.05, rope: float = 1.0,
           confidence: float = 0.95, family: str = DEFAULT_FAMILY, pairs: pd.DataFrame | None = None,
           plan: bool = True) -> pd.DataFrame:
    """One row per (board, selection, dataset, algorithm ≠ ``baseline``) of the dataset-average cells (``env ==
    ""``) of a cells frame (:mod:`dganalysis.audit.published` or
    :func:`dganalysis.audit.sweep_cells.cells_from_trials`), columns :data:`CLAIM_COLUMNS`. ``family``: a key of
    :data:`FAMILIES`. ``pairs``: a sweep's paired differences with the baseline
    (:func:`dganalysis.audit.sweep_cells.pairs_from_trials`); claims whose arms share ≥ 2 trial seeds are tested
    paired on the shared ones (:func:`dganalysis.stats.pairing.use_pairs`; ``n_paired``, ``dropped``,
    ``baseline_dropped`` count them). ``plan``: compute the planning figures of undecided claims. A dataset without a baseline cell gives no
    claims. Families of equal size are decided together (one vectorised call). See the module docstring."""
    if family not in FAMILIES:
        raise ConfigError(f"family={family!r}: expected one of {sorted(FAMILIES)}")
    _check_cells(cells, baseline)
    avg = cells[cells["env"].fillna("") == ""] if "env" in cells else cells
    base = avg[avg["algorithm"] == baseline].set_index(["board", "selection", "dataset"])
    other = avg[avg["algorithm"] != baseline]
    rows = other.join(base, on=["board", "selection", "dataset"], rsuffix="_b", how="inner")
    if rows.empty:
        return pd.DataFrame(columns=CLAIM_COLUMNS)
    rows = rows.reset_index(drop=True)
    if pairs is not None and not pairs.empty:
        rows = rows.merge(pairs, on=["board", "selection", "dataset", "algorithm"], how="left")
    else:
        rows = rows.assign(d_mean=np.nan, d_se=np.nan, n_pair=np.nan, dropped_a=0, dropped_b=0)
    rows[["n_pair", "dropped_a", "dropped_b"]] = rows[["n_pair", "dropped_a", "dropped_b"]].fillna(0)
    keys = FAMILIES[family]
    fam_id = rows.groupby(keys, sort=False).ngroup().to_numpy()
    d = _decide_grouped(rows, fam_id, alpha, rope, confidence)
    strict = (d["verdict"] if family == "table" else
              _decide_grouped(rows, rows.groupby(FAMILIES["table"], sort=False).ngroup().to_numpy(), alpha, rope,
                              confidence)["verdict"])
    m = pd.Series(np.isfinite(d["p"])).groupby(fam_id).transform("sum").to_numpy().astype(int)
    where = rows[keys].astype(str).agg(lambda r: ", ".join(x for x in r if x), axis=1)
    verdict = np.asarray(CLAIM_VERDICTS)[d["verdict"]]
    tested = np.isfinite(d["p"])
    test = np.where(d["paired"], TEST_PAIRED, np.where(tested, TEST, "none (no SE or n < 2)")).astype(object)
    test = np.where(d["zero_variance"], "none (zero variance)", test).astype(object)
    if rope > 0:
        test = np.where(tested, test + f" + {TOST}, rope ±{rope:g}", test)
    words = FAMILY_WORDS[family].format(b=baseline)
    result = pd.DataFrame({
        "board": rows["board"], "selection": rows["selection"], "dataset": rows["dataset"],
        "algorithm": rows["algorithm"], "baseline": baseline, "mean": rows["mean"], "baseline_mean": rows["mean_b"],
        **{c: d[c] for c in ("delta", "se", "df", "ci_low", "ci_high", "sim_low", "sim_high", "p_welch", "p", "p_adj",
                             "p_equiv", "p_equiv_adj")},
        "verdict": verdict, "verdict_nominal": np.asarray(CLAIM_VERDICTS)[d["verdict_nominal"]],
        "verdict_table": np.asarray(CLAIM_VERDICTS)[strict], "family": family, "m": m, "n": rows["n"],
        "baseline_n": rows["n_b"], "paired": d["paired"], "test": test,
        "correction": [f"joint step-down over {k} claims ({words}: {w})" for k, w in zip(m, where, strict=True)],
    })
    result["rounding_changed"] = result["verdict"] != result["verdict_nominal"]
    _add_plans(result, rows, d, alpha, rope, plan)
    result["n_paired"] = np.where(d["paired"], rows["n_pair"], 0).astype(int)
    result["dropped"] = np.where(d["paired"], rows["dropped_a"], 0).astype(int)
    result["baseline_dropped"] = np.where(d["paired"], rows["dropped_b"], 0).astype(int)
    result["why"] = why_undecided(result, rows, alpha, rope, confidence)
    return result[CLAIM_COLUMNS]


_DECISION_FIELDS = ("delta", "se", "df", "ci_low", "ci_high", "sim_low", "sim_high", "p_welch", "p", "p_adj",
                    "p_equiv", "p_equiv_adj", "verdict", "p_nominal", "verdict_nominal", "paired", "zero_variance")


def _decide_grouped(rows: pd.DataFrame, fam_id: np.ndarray, alpha: float, rope: float, confidence: float,
                    res_scale: float = 1.0) -> dict[str, np.ndarray]:
    """:func:`decide` over every family (``fam_id`` per row), families of equal size stacked into one batch; the
    Decision's fields as arrays in row order."""
    cols = ["mean", "se", "n", "se_ddof", "mean_res", "se_res"]
    out = {f: np.empty(len(rows), dtype=bool if f in ("paired", "zero_variance") else np.int8 if f.startswith("verdict") else float)
           for f in _DECISION_FIELDS}
    size = np.bincount(fam_id)[fam_id]
    for m in np.unique(size):
        idx = np.flatnonzero(size == m)
        idx = idx[np.argsort(fam_id[idx], kind="stable")].reshape(-1, m)  # (families, m), each row one family

        def arr(col, idx=idx):
            return rows[col].to_numpy(dtype=float)[idx]

        a = Summaries(*(arr(c) for c in cols))
        b = Summaries(*(arr(c + "_b") for c in cols))
        if res_scale != 1.0:
            a = Summaries(a.mean, a.se, a.n, a.ddof, a.mean_res * res_scale, a.se_res * res_scale)
            b = Summaries(b.mean, b.se, b.n, b.ddof, b.mean_res * res_scale, b.se_res * res_scale)
        dec = decide(a, b, alpha=alpha, rope=rope, confidence=confidence,
                     paired=Paired(arr("d_mean"), arr("d_se"), arr("n_pair")))
        for f in _DECISION_FIELDS:
            out[f][idx.ravel()] = np.asarray(getattr(dec, f)).ravel()
    return out


def trial_sds(rows: pd.DataFrame, suffix: str = "_b") -> tuple[np.ndarray, np.ndarray]:
    """Trial SDs (ddof 1) of both arms of joined cells — the columns ``se, se_res, se_ddof, n`` and the same with
    ``suffix`` — at the upper edge of the SE rounding box: the cautious SDs the planning figures use."""
    out = []
    for sfx in ("", suffix):
        n = rows["n" + sfx].to_numpy(dtype=float)
        c = _ddof1_factor(rows["se_ddof" + sfx].to_numpy(), n)
        out.append((rows["se" + sfx] + rows["se_res" + sfx] / 2).to_numpy() * c * np.sqrt(n))
    return out[0], out[1]


PLAN_COLUMNS = ["trials_needed", "trials_needed_low", "trials_needed_high", "trials_equivalence",
                "trials_equivalence_low", "trials_equivalence_high"]


def _add_plans(frame: pd.DataFrame, rows: pd.DataFrame, d: dict[str, np.ndarray], alpha: float, rope: float,
               plan: bool) -> None:
    """The planning columns of the undecided claims, at each family's first-step level α/m (one call per m)."""
    for c in PLAN_COLUMNS:
        frame[c] = np.nan
    if not plan or rope <= 0:
        return
    sd_a, sd_b = trial_sds(rows)
    m = frame["m"].to_numpy()
    und = (d["verdict"] == CLAIM_VERDICTS.index("undecided")) & np.isfinite(d["p"]) & (m > 0)
    for k in np.unique(m[und]):
        level = alpha / k
        unp = und & (m == k) & ~d["paired"] & (sd_a > 0) & (sd_b > 0)
        if unp.any():
            n_a, n_b = rows["n"].to_numpy()[unp], rows["n_b"].to_numpy()[unp]
            got = planning.trials_to_decide(sd_a[unp], sd_b[unp], n_a, n_b, rope, level)
            eq = planning.trials_for_equivalence(sd_a[unp], sd_b[unp], n_a, n_b, rope, level)
            frame.loc[unp, PLAN_COLUMNS] = np.column_stack([*got, *eq])
        par = und & (m == k) & d["paired"] & (d["se"] > 0)
        if par.any():
            n = rows["n_pair"].to_numpy()[par]
            sd_d = d["se"][par] * np.sqrt(n)
            got = planning.paired_trials(sd_d, n, rope, level, "difference")
            eq = planning.paired_trials(sd_d, n, rope, level, "equivalence")
            frame.loc[par, PLAN_COLUMNS] = np.column_stack([*got, *eq])


def why_undecided(cl: pd.DataFrame, rows: pd.DataFrame, alpha: float, rope: float, confidence: float) -> list[str]:
    """Per claim, for an undecided one: what stands between it and a verdict, with the number that would change it
    (empty for decided claims). Reasons, each checked by recomputing: the published rounding (decided at face value;
    decided with means and SEs printed to one more decimal), the family (decided alone or in a smaller family), the
    variance ratio (Welch's uncalibrated p would decide it), too few trials (the planning figure)."""
    out = []
    finer = np.full(len(rows), np.inf)
    if (rows["mean_res"] > 0).any() or (rows["se_res"] > 0).any():
        d1 = _decide_grouped(rows, rows.groupby(FAMILIES["table"], sort=False).ngroup().to_numpy(), alpha, rope,
                             confidence, res_scale=0.1)
        with np.errstate(invalid="ignore"):
            finer = np.fmin(d1["p"], d1["p_equiv"])
    for i, (_, r) in enumerate(cl.iterrows()):
        if r["verdict"] != "undecided":
            out.append("")
            continue
        if not np.isfinite(r["p"]):
            text = (_why_zero_variance(r, rows.iloc[i], alpha, rope) if r["test"] == "none (zero variance)"
                    else "no test: the cell has no standard error or fewer than 2 trials")
            if r["paired"] and r["dropped"] + r["baseline_dropped"] > 0:
                text += "; " + pairing_words(r)
            out.append(text)
            continue
        reasons = []
        best = min(r["p"], r["p_equiv"]) if np.isfinite(r["p_equiv"]) else r["p"]
        kind = "equivalent" if np.isfinite(r["p_equiv"]) and r["p_equiv"] <= r["p"] else (
            "better" if r["delta"] > 0 else "worse")
        if r["verdict_nominal"] != "undecided":
            reasons.append(f"the published rounding: at face value it would be {r['verdict_nominal']}")
        if finer[i] < alpha / max(int(r["m"]), 1):
            reasons.append("the printed precision: with means and SEs printed to one more decimal it would be "
                           "decided")
        if best < alpha:
            k = int(np.floor(alpha / best))
            reasons.append(f"the family: alone it would be {kind} (p = {best:.2g}); decided in a family of up to "
                           f"{k} claims, this one has {int(r['m'])}")
        if not r["paired"] and np.isfinite(r["p_welch"]) and r["p_welch"] < r["p"] and r["p_welch"] * r["m"] < alpha:
            reasons.append(f"the variance ratio: Welch's uncalibrated p = {r['p_welch']:.2g} would pass, but at "
                           f"n = {int(r['n'])} vs {int(r['baseline_n'])} it can exceed its level when the SDs differ")
        if np.isfinite(r["trials_needed"]):
            reasons.append(f"too few trials: about {_n(r['trials_needed'])} per arm (80% interval "
                           f"{_n(r['trials_needed_low'])}–{_n(r['trials_needed_high'])}) would decide a difference "
                           f"of ±{rope:g} points, {_n(r['trials_equivalence'])} would show equivalence if Δ were 0")
        elif not reasons:
            reasons.append(f"too few trials for this noise (p = {r['p']:.2g}, CI [{r['ci_low']:+.1f}, "
                           f"{r['ci_high']:+.1f}])")
        if r["paired"] and r["dropped"] + r["baseline_dropped"] > 0:
            reasons.append(pairing_words(r))
        out.append("; ".join(reasons))
    return out


ZERO_SD_GRID = np.geomspace(1e-4, 1e3, 281)  #: trial SDs (points) searched for the one that would decide


def _why_zero_variance(r: pd.Series, row: pd.Series, alpha: float, rope: float) -> str:
    """The ``why`` of a claim left untested for zero variance (:func:`dganalysis.stats.ttests.zero_variance`): which
    arm (or the paired differences), and the number that would change it — the largest trial SD of the zero-variance
    arm(s) (the SD of the differences when paired) at which the claim, alone (a family of 1), would be decided by the
    audit's own test, the other arm as observed; searched over :data:`ZERO_SD_GRID`."""
    g = ZERO_SD_GRID[:, None]
    if r["paired"]:
        n = float(row["n_pair"])
        dec = decide(Summaries(np.nan, np.nan, 2), Summaries(np.nan, np.nan, 2), alpha=alpha, rope=rope,
                     paired=Paired(row["d_mean"], standard_error_from_sd(g, n), n))
        what = (f"the {int(n)} paired differences over shared trial seeds are identical ({row['d_mean']:+.2f} points "
                f"each; SD ≤ {ZERO_SD:g} points, the records' resolution)")
        whose = "their SD"
    else:
        arms = []
        sides = []
        for sfx, name in (("", r["algorithm"]), ("_b", r["baseline"])):
            n = float(row["n" + sfx])
            sd = (row["se" + sfx] + row["se_res" + sfx] / 2) * float(_ddof1_factor(row["se_ddof" + sfx], n)) * np.sqrt(n)
            zero = bool(zero_variance(sd))
            if zero:
                arms.append(f"{name}'s {int(n)} trials")
            se = standard_error_from_sd(g, n) if zero else row["se" + sfx]
            sides.append(Summaries(row["mean" + sfx], se, n, 1 if zero else row["se_ddof" + sfx],
                                   row["mean_res" + sfx], 0.0 if zero else row["se_res" + sfx]))
        dec = decide(*sides, alpha=alpha, rope=rope)
        what = (f"{' and '.join(arms)} are identical (trial SD ≤ {ZERO_SD:g} points, the records' resolution), so "
                f"{'its' if len(arms) == 1 else 'their'} variance is not estimated and a test would take "
                f"{'that mean' if len(arms) == 1 else 'those means'} as exact")
        whose = "that trial SD" if len(arms) == 1 else "those trial SDs"
    v = np.asarray(dec.verdict)[:, 0]
    hit = np.flatnonzero(v != CLAIM_VERDICTS.index("undecided"))
    if hit.size == 0:
        tail = f"no spread of {ZERO_SD_GRID[0]:g} points or more would decide it alone (Δ = {r['delta']:+.2f} points)"
    else:
        k = hit.max()
        tail = (f"alone it would be {CLAIM_VERDICTS[v[k]]} if {whose} were at most {ZERO_SD_GRID[k]:.2g} points (at "
                f"{ZERO_SD_GRID[min(k + 1, len(ZERO_SD_GRID) - 1)]:.2g} it would not)")
    return f"no test: zero variance — {what}; {tail}"


REFERENCE_VERDICTS = {"better": "higher", "worse": "lower", "equivalent": "consistent", "undecided": "undecided"}
REF_COLUMNS = ["reference_board", "selection", "dataset", "algorithm", "mean", "reference_mean", "delta", "ci_low",
               "ci_high", "p_adj", "p_equiv_adj", "verdict", "n", "reference_n", "trials_needed", "test",
               "correction"]


def compare_with_reference(ours: pd.DataFrame, reference: pd.DataFrame, alpha: float = 0.05, rope: float = 1.0,
                           confidence: float = 0.95) -> pd.DataFrame:
    """The reproduction check (see the module docstring): cell-by-cell comparison of two cells frames (dataset
    averages, ``env == ""``), decided by :func:`decide` with one joint step-down per selection and reference board;
    columns :data:`REF_COLUMNS`. Raises when no (selection, dataset, algorithm) is shared."""
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


def pairing_words(r: pd.Series) -> str:
    """How a paired claim was paired: the shared trial seeds used and the trials of each arm dropped."""
    return (f"paired on the {int(r['n_paired'])} trial seeds both arms ran, dropping {int(r['dropped'])} trial(s) of "
            f"{r['algorithm']} and {int(r['baseline_dropped'])} of {r['baseline']} without a partner")


def _n(x: float) -> str:
    return "more than 2000" if not np.isfinite(x) else f"{int(x)}"


def _check_cells(cells: pd.DataFrame, baseline: str) -> None:
    need = ["board", "selection", "dataset", "algorithm", "mean", "se", "n", "se_ddof", "mean_res", "se_res"]
    missing = [c for c in need if c not in cells]
    if missing:
        raise ValueError(f"cells lack column(s) {missing}; expected the frame of dganalysis.audit.published/inputs")
    algs = sorted(cells["algorithm"].unique())
    if baseline not in algs:
        import difflib

        close = [a for a in algs if a.lower() == baseline.lower()] or difflib.get_close_matches(baseline, algs, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"baseline {baseline!r} is not among the algorithms {algs}{hint}")
