"""A paper's finding as a set of claims, decided by the audit's engine: one test per claim, one step-down per finding.

A **claim** says that a contrast between two sets of units — trials, trial seeds, datasets, models — points the way
the paper says. It names its units, the paper's ``direction`` (+1: ``arm`` above ``base``; −1: below; 0: the paper
says *no* difference) and a region of practical equivalence, the ROPE, in the quantity's own units (points of
accuracy, a ratio, a correlation). A **finding** is a list of claims; :func:`decide_finding` decides them together:

* **the test of each claim** is the audit's (:func:`dganalysis.audit.claims.decide`): where the two arms share at
  least 2 unit ids (trial seeds) the paired t on the shared ones (:func:`dganalysis.stats.pairing.use_pairs`, chosen
  from the ids alone, never from the outcomes; the number paired and dropped is reported); otherwise Welch's
  statistic with its p-value calibrated over the unknown variance ratio (valid for every ratio at any n ≥ 2,
  :mod:`dganalysis.stats.behrens_fisher`); a claim on per-unit differences (``base=None``) is a one-sample t. The
  equivalence hypothesis ``|Δ| ≥ rope`` is tested by TOST from the same statistic (Schuirmann 1987). A claim about
  an *order* or an *association* (:class:`RankClaim`) is tested by a permutation test (exact where the permutations
  can be enumerated, else Monte Carlo with the valid (b + 1)/(R + 1) p-value; Phipson & Smyth 2010).
* **zero variance never decides**: an arm whose values are identical (or identical paired differences) has no
  variance estimate; the claim is untested, undecided, out of the family, and ``why`` says so
  (:func:`dganalysis.stats.ttests.zero_variance`). So is a claim with fewer than 2 units on a side.
* **the family** is the finding's claims: their difference and equivalence hypotheses go through one joint
  step-down (:func:`dganalysis.stats.multiplicity.joint_step_down`; Shaffer 1986), so P(any true hypothesis of the
  finding rejected) ≤ α for every configuration of the effects. A wrong *sign* (a difference decided the opposite
  way to the truth) is outside that guarantee, as in the audit; per claim it is at most α/2 (one tail of the size
  at Δ = 0). The interval shown for each claim is simultaneous over the finding (level 1 − α/m per claim,
  Bonferroni), the one to read beside the verdicts.
* **each claim's outcome**: ``paper`` (decided the paper's way: a difference of the paper's sign, or equivalence
  where the paper says there is no difference), ``against`` (a difference of the other sign, equivalence where the
  paper says there is a difference, or any difference where it says there is none) or ``undecided``.
* **the finding's verdict** (:class:`~dganalysis.verdicts.Verdict`): *reproduced* when every claim is decided the
  paper's way; *not reproduced* when any claim is decided against it; *partly* when some are decided its way and
  none against; *not decided* otherwise. ``why`` gives, in words, what stands between each undecided claim and a
  decision (its p-value against the step's level, the family size, the units, pairing, zero variance).

Nothing is decided from a point estimate, an interval's overlap, a threshold in SE units or a descriptive
bootstrap. A number that is not a test (a recomputed Spearman of a published table, a shift estimate) is a
:class:`Measurement`: its finding's verdict is *measured*, listed, never counted as reproduced.

:func:`pooled` re-decides the claims of several findings as one family (a notebook's summary shows both counts).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.audit import claims as audit_claims
from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.stats.multiplicity import joint_step_down
from dganalysis.stats.pairing import pair_seeds
from dganalysis.stats.ttests import zero_variance
from dganalysis.validation import ConfigError
from dganalysis.verdicts import Verdict

ALPHA = 0.05
MEASURED = Verdict.MEASURED.value  #: the verdict of a finding that holds only measurements
PAPER, AGAINST, UNDECIDED = "paper", "against", "undecided"  #: a claim's outcome
#: verdict rules: the conjunction (every claim the paper's way; the default) and the existential reading of a
#: reversal (some group of contrasts — one pair of methods under several conditions — has one decided above 0 and one
#: decided below 0; every group decided without a reversal: not reproduced)
EVERY_CLAIM, SOME_GROUP_REVERSES = "every claim", "some group reverses"
RULES = (EVERY_CLAIM, SOME_GROUP_REVERSES)
#: permutation tests enumerate every permutation up to this many, else sample this many (Monte Carlo)
EXACT_PERMUTATIONS = 40_320
MC_PERMUTATIONS = 9_999


# ------------------------------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class Claim:
    """``arm − base`` has the paper's sign: a mean contrast over units.

    ``arm``/``base``: one value per unit, indexed by the unit's id (a trial seed: two arms sharing ≥ 2 ids are
    paired on them); ``base=None``: ``arm`` already holds one difference per unit (one-sample t against 0).
    ``direction``: +1 (paper: arm above base), −1 (below), 0 (paper: no difference, decided by equivalence within
    ``rope``). ``rope``: the half-width of the region of practical equivalence in the quantity's units (0: no
    equivalence test; then a claim of direction 0 can never be decided). ``units`` names what the values are
    (``"trials"``, ``"seeds"``, ``"datasets"``, ``"models"``) and ``unit_of_measure`` what the numbers measure
    (e.g. ``"points"``)."""

    name: str
    arm: pd.Series
    base: pd.Series | None = None
    direction: int = 1
    rope: float = 0.0
    units: str = "trials"
    unit_of_measure: str = "points"


@dataclass(frozen=True)
class RankClaim:
    """An association claim between two paired measurements over the same units (e.g. two scores of each model),
    decided by a permutation test of Spearman's ρ: ``direction`` +1 (paper: they agree, ρ > 0), −1 (ρ < 0).
    ``x``/``y``: equal-length sequences, one entry per unit. No equivalence test (a rank correlation's ROPE is
    not defined by the papers here), so a claim of this kind is decided the paper's way or against it, or not."""

    name: str
    x: Sequence[float]
    y: Sequence[float]
    direction: int = 1
    units: str = "models"


@dataclass(frozen=True)
class PermutationClaim:
    """A claim decided by a permutation test the finding defines: ``statistic(values)`` is the observed statistic
    (positive: the paper's way) and ``permute(values, rng)`` draws one relabelling under the null (or
    ``enumerate(values)`` yields every relabelling, used when ``count`` ≤ :data:`EXACT_PERMUTATIONS`). Used for
    order claims (e.g. "one predictor ranks the models better than another": under the null the two are
    exchangeable within each model)."""

    name: str
    values: object
    statistic: Callable[[object], float]
    permute: Callable[[object, np.random.Generator], object]
    count: int = 0  #: number of distinct relabellings (0: unknown, sample)
    enumerate: Callable[[object], Sequence[object]] | None = None
    direction: int = 1
    units: str = "models"
    estimate_words: str = ""
    n: int = 0  #: the number of units (0: ``len(values)``)


@dataclass(frozen=True)
class Measurement:
    """A number that is not a test (a published table's recomputed statistic, a shift estimate): listed with its
    finding, which is then *measured*, never reproduced."""

    name: str
    value: float
    words: str = ""


AnyClaim = Claim | RankClaim | PermutationClaim | Measurement


# ------------------------------------------------------------------------------------------------- results
@dataclass
class ClaimResult:
    """One claim's test inside its finding's family (see the module docstring). ``ci_low``/``ci_high``: the
    simultaneous interval (level 1 − α/m); NaN for rank and permutation claims and measurements."""

    name: str
    kind: str  # "mean", "rank", "permutation", "measurement"
    direction: int
    rope: float
    estimate: float
    ci_low: float
    ci_high: float
    p: float
    p_equiv: float
    p_adj: float = float("nan")
    p_equiv_adj: float = float("nan")
    outcome: str = UNDECIDED
    test: str = ""
    n: int = 0
    n_base: int = 0
    n_paired: int = 0
    dropped: int = 0
    units: str = "trials"
    unit_of_measure: str = "points"
    why: str = ""

    def as_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in self.__dict__.items()}


@dataclass
class FindingResult:
    """A finding's claims, decided together: ``verdict`` (a :class:`~dganalysis.verdicts.Verdict` value or
    :data:`MEASURED`), ``why`` (for every claim not decided the paper's way), the family size ``m`` and ``alpha``."""

    claims: list[ClaimResult]
    verdict: str
    why: str
    m: int
    alpha: float
    measurements: list[Measurement] = field(default_factory=list)
    rule: str = EVERY_CLAIM
    groups: list[list[str]] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        return {o: sum(c.outcome == o for c in self.claims) for o in (PAPER, AGAINST, UNDECIDED)}

    def ours(self, digits: int = 2) -> str:
        """The numbers behind the verdict, one clause per claim: estimate, simultaneous interval, the test, n and
        the adjusted p."""
        parts = []
        for c in self.claims:
            if c.kind == "mean":
                ci = (f" [{c.ci_low:+.{digits}f}, {c.ci_high:+.{digits}f}]" if np.isfinite(c.ci_low) else "")
                parts.append(f"{c.name}: Δ = {c.estimate:+.{digits}f}{ci} {c.unit_of_measure}, {c.test}, "
                             f"n = {_n_words(c)}, p_adj = {_p(c.p_adj)} → {c.outcome}")
            else:
                parts.append(f"{c.name}: {c.test} {c.estimate:+.{digits}f} (n = {c.n} {c.units}), p_adj = "
                             f"{_p(c.p_adj)} → {c.outcome}")
        parts += [f"{m.name}: {m.words or f'{m.value:.{digits}f}'} (measured)" for m in self.measurements]
        return "; ".join(parts)

    def as_record(self) -> dict:
        """The JSON-ready part of a findings record: claims, family size, α, why."""
        return {"claims": [c.as_dict() for c in self.claims], "m": self.m, "alpha": self.alpha, "why": self.why,
                "measurements": [{"name": m.name, "value": m.value, "words": m.words} for m in self.measurements],
                "rule": self.rule, "groups": [list(g) for g in self.groups]}

    @classmethod
    def from_record(cls, decision: dict) -> FindingResult:
        """The result back from :meth:`as_record` (e.g. read from a findings JSON record): JSON ``null`` becomes
        NaN again, fields the engine does not know are ignored, and the verdict is re-read from the claims by the
        finding's rule."""
        names = {f.name: f for f in dataclasses.fields(ClaimResult)}
        claims = []
        for c in decision.get("claims") or []:
            kw = {k: (float("nan") if v is None and names[k].type in ("float", float) else v)
                  for k, v in c.items() if k in names}
            claims.append(ClaimResult(**kw))
        ms = [Measurement(str(m.get("name", "")), _num(m.get("value")), str(m.get("words") or ""))
              for m in decision.get("measurements") or []]
        alpha = float(decision.get("alpha") or ALPHA)
        rule = str(decision.get("rule") or EVERY_CLAIM)
        groups = [list(g) for g in decision.get("groups") or []]
        verdict = verdict_by(claims, rule, groups, alpha) if claims else MEASURED
        return cls(claims, verdict, str(decision.get("why") or ""), int(decision.get("m") or 0), alpha, ms, rule,
                   groups)


def _num(v: object) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _p(p: float) -> str:
    if not np.isfinite(p):
        return "—"
    return "<0.0001" if p < 1e-4 else f"{p:.2g}"


def _n_words(c: ClaimResult) -> str:
    if c.n_paired:
        extra = f", {c.dropped} unpaired dropped" if c.dropped else ""
        return f"{c.n_paired} paired {c.units}{extra}"
    if c.n_base:
        return f"{c.n} vs {c.n_base} {c.units}"
    return f"{c.n} {c.units}"


# ------------------------------------------------------------------------------------------------- tests
def _series(x, name: str, what: str) -> pd.Series:
    if isinstance(x, pd.Series):
        s = x.astype(float)
    else:
        s = pd.Series(np.asarray(x, dtype=float))
    if s.index.has_duplicates:
        raise ConfigError(f"claim {name!r}: {what} has duplicate unit ids {sorted(set(s.index[s.index.duplicated()]))}"
                          "; expected one value per unit (average repeated runs first)")
    return s[np.isfinite(s.to_numpy())]


def _test_mean(c: Claim, confidence: float) -> ClaimResult:
    """The audit's test of one mean claim, unadjusted (``confidence``: the interval's level)."""
    if c.direction not in (-1, 0, 1):
        raise ConfigError(f"claim {c.name!r}: direction={c.direction!r}; expected +1, -1 or 0")
    if not c.rope >= 0:
        raise ConfigError(f"claim {c.name!r}: rope={c.rope!r}; expected a half-width ≥ 0 in {c.unit_of_measure}")
    a = _series(c.arm, c.name, "arm")
    res = ClaimResult(c.name, "mean", c.direction, float(c.rope), np.nan, np.nan, np.nan, np.nan, np.nan,
                      units=c.units, unit_of_measure=c.unit_of_measure)
    if c.base is None:
        d = a.to_numpy()
        res.n = len(d)
        res.estimate = float(d.mean()) if len(d) else np.nan
        res.test = "one-sample t on per-unit differences"
        if len(d) < 2:
            res.why = f"{len(d)} {c.units}: a t-test needs at least 2"
            return res
        sd = float(d.std(ddof=1))
        res.n_paired = 0
        return _finish_paired(res, d.mean(), sd, len(d), c, confidence, "per-unit differences")
    b = _series(c.base, c.name, "base")
    res.n, res.n_base = len(a), len(b)
    rule = pair_seeds(a.index, b.index)
    if rule.paired:
        d = (a[rule.seeds] - b[rule.seeds]).to_numpy()
        res.n_paired, res.dropped = len(d), rule.dropped_a + rule.dropped_b
        res.estimate = float(d.mean())
        res.test = f"paired t over shared {c.units}"
        return _finish_paired(res, d.mean(), float(d.std(ddof=1)), len(d), c, confidence)
    res.estimate = float(a.mean() - b.mean()) if len(a) and len(b) else np.nan
    res.test = audit_claims.TEST
    if len(a) < 2 or len(b) < 2:
        res.why = f"{len(a)} vs {len(b)} {c.units}: a t-test needs at least 2 on each side"
        return res
    sa, sb = float(a.std(ddof=1)), float(b.std(ddof=1))
    if zero_variance(sa) or zero_variance(sb):
        which = "arm" if zero_variance(sa) else "base"
        res.why = (f"zero variance: the {which}'s {len(a) if which == 'arm' else len(b)} values are identical, so its "
                   "variance is not estimated and no test is made (identical runs, duplicated records or ties of a "
                   "discrete accuracy)")
        res.test = "none (zero variance)"
        return res
    dec = audit_claims.decide(audit_claims.Summaries(np.array([a.mean()]), standard_error_from_sd([sa], len(a)), len(a)),
                              audit_claims.Summaries(np.array([b.mean()]), standard_error_from_sd([sb], len(b)), len(b)),
                              alpha=ALPHA, rope=float(c.rope), confidence=confidence)
    res.p, res.p_equiv = float(dec.p[0]), float(dec.p_equiv[0])
    res.ci_low, res.ci_high = float(dec.ci_low[0]), float(dec.ci_high[0])
    return res


def _finish_paired(res: ClaimResult, mean: float, sd: float, n: int, c: Claim, confidence: float,
                   what: str = "paired differences") -> ClaimResult:
    """The audit's paired route (:func:`dganalysis.audit.claims.decide` with ``paired``): a t on the n − 1 df of
    the differences, TOST from the same statistic."""
    if zero_variance(sd):
        res.test = "none (zero variance)"
        res.why = (f"zero variance: the {n} {what} are identical, so their variance is not estimated and "
                   "no test is made (identical runs, duplicated records or ties of a discrete accuracy)")
        return res
    one = np.ones(1)
    dec = audit_claims.decide(audit_claims.Summaries(one, one, 2), audit_claims.Summaries(one, one, 2), alpha=ALPHA,
                              rope=float(c.rope), confidence=confidence,
                              paired=audit_claims.Paired(np.array([mean]), standard_error_from_sd([sd], n), n))
    res.p, res.p_equiv = float(dec.p[0]), float(dec.p_equiv[0])
    res.ci_low, res.ci_high = float(dec.ci_low[0]), float(dec.ci_high[0])
    return res


def _test_rank(c: RankClaim, rng: np.random.Generator) -> ClaimResult:
    x, y = np.asarray(c.x, dtype=float), np.asarray(c.y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ConfigError(f"claim {c.name!r}: x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = len(x)
    res = ClaimResult(c.name, "rank", c.direction, 0.0, np.nan, np.nan, np.nan, np.nan, np.nan, n=n, units=c.units)
    res.test = "Spearman ρ, permutation test"
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        res.why = f"{n} {c.units}{' with a constant score' if n >= 3 else ''}: no rank correlation to test"
        return res
    res.estimate = float(stats.spearmanr(x, y).statistic)
    exact = math.factorial(n) <= EXACT_PERMUTATIONS
    ry = stats.rankdata(y)
    ry = (ry - ry.mean()) / np.linalg.norm(ry - ry.mean())

    def rho(xs, axis=-1):  # Spearman's ρ of each permuted x against y (vectorised over resamples)
        rx = stats.rankdata(xs, axis=axis)
        rx = rx - rx.mean(axis=axis, keepdims=True)
        return (rx * ry).sum(axis=axis) / np.linalg.norm(rx, axis=axis)

    perm = stats.permutation_test((x,), rho, permutation_type="pairings", vectorized=True, axis=-1,
                                  n_resamples=np.inf if exact else MC_PERMUTATIONS, rng=rng)
    res.p = float(perm.pvalue)
    res.test += " (exact)" if exact else f" (Monte Carlo, {MC_PERMUTATIONS:,} permutations)"
    return res


def _test_permutation(c: PermutationClaim, rng: np.random.Generator) -> ClaimResult:
    res = ClaimResult(c.name, "permutation", c.direction, 0.0, np.nan, np.nan, np.nan, np.nan, np.nan, units=c.units)
    res.n = c.n or (len(c.values) if hasattr(c.values, "__len__") else 0)
    obs = float(c.statistic(c.values))
    res.estimate = obs
    if c.enumerate is not None and 0 < c.count <= EXACT_PERMUTATIONS:
        null = np.array([c.statistic(v) for v in c.enumerate(c.values)], dtype=float)
        res.p = float(np.mean(np.abs(null) >= abs(obs) - 1e-12))
        res.test = f"permutation test (exact, {len(null):,} relabellings)"
    else:
        null = np.array([c.statistic(c.permute(c.values, rng)) for _ in range(MC_PERMUTATIONS)], dtype=float)
        res.p = float((1 + np.sum(np.abs(null) >= abs(obs) - 1e-12)) / (1 + len(null)))
        res.test = f"permutation test (Monte Carlo, {MC_PERMUTATIONS:,} relabellings)"
    res.test = f"{c.estimate_words + ', ' if c.estimate_words else ''}{res.test}"
    return res


# ------------------------------------------------------------------------------------------------- decision
def _outcome(c: ClaimResult, alpha: float) -> str:
    diff = np.isfinite(c.p_adj) and c.p_adj < alpha
    equiv = np.isfinite(c.p_equiv_adj) and c.p_equiv_adj < alpha
    if c.direction == 0:
        return PAPER if equiv else AGAINST if diff else UNDECIDED
    if equiv:
        return AGAINST
    if diff:
        return PAPER if np.sign(c.estimate) == c.direction else AGAINST
    return UNDECIDED


def verdict_from_outcomes(outcomes: Sequence[str]) -> str:
    """The finding's verdict from its claims' outcomes (module docstring)."""
    if not outcomes:
        return MEASURED
    if all(o == PAPER for o in outcomes):
        return Verdict.REPRODUCED.value
    if any(o == AGAINST for o in outcomes):
        return Verdict.NOT_REPRODUCED.value
    if any(o == PAPER for o in outcomes):
        return Verdict.PARTLY.value
    return Verdict.NOT_DECIDED.value


def state(c: ClaimResult, alpha: float) -> str:
    """A contrast's decision regardless of the paper's direction: ``"="`` equivalent within its ROPE, ``"+"`` /
    ``"−"`` a difference of that sign, ``"?"`` undecided."""
    if np.isfinite(c.p_equiv_adj) and c.p_equiv_adj < alpha:
        return "="
    if np.isfinite(c.p_adj) and c.p_adj < alpha:
        return "+" if c.estimate > 0 else "−"
    return "?"


def verdict_by(results: Sequence[ClaimResult], rule: str, groups: Sequence[Sequence[str]], alpha: float) -> str:
    """The finding's verdict from its decided claims under ``rule`` (:data:`RULES`): :data:`EVERY_CLAIM` is
    :func:`verdict_from_outcomes`; :data:`SOME_GROUP_REVERSES`: *reproduced* when some group holds a contrast decided above 0
    and one decided below 0, *not reproduced* when every group is decided without a reversal (each contrast decided,
    one sign or equivalent within its ROPE), *not decided* otherwise."""
    if rule == EVERY_CLAIM:
        return verdict_from_outcomes([r.outcome for r in results])
    if rule != SOME_GROUP_REVERSES:
        raise ConfigError(f"rule={rule!r}: expected one of {RULES}")
    by = {r.name: r for r in results}
    states = [{state(by[n], alpha) for n in g} for g in groups]
    if any({"+", "−"} <= s for s in states):
        return Verdict.REPRODUCED.value
    if states and not any("?" in s for s in states):
        return Verdict.NOT_REPRODUCED.value
    return Verdict.NOT_DECIDED.value


def _why(c: ClaimResult, m: int, alpha: float) -> str:
    if c.outcome == PAPER:
        return ""
    if c.outcome == AGAINST:
        what = ("equivalent within ±" + f"{c.rope:g}" if np.isfinite(c.p_equiv_adj) and c.p_equiv_adj < alpha
                else f"a difference of sign {'+' if c.estimate > 0 else '−'}")
        return f"{c.name}: decided against the paper ({what}; p_adj = {_p(min(c.p_adj, c.p_equiv_adj))})"
    if c.why:
        return f"{c.name}: {c.why}"
    best = np.fmin(c.p, c.p_equiv) if np.isfinite(c.p_equiv) else c.p
    words = [f"{c.name}: p = {_p(c.p)}"]
    if np.isfinite(c.p_equiv):
        words.append(f"equivalence p = {_p(c.p_equiv)} (ROPE ±{c.rope:g} {c.unit_of_measure})")
    words.append(f"n = {_n_words(c)}")
    if np.isfinite(best) and best < alpha:
        words.append(f"alone it would be decided; in this family of {m} claims its step needs p < {alpha / m:.2g}"
                     if m > 1 else "")
    else:
        words.append(f"not decided at α = {alpha:g} even alone: more {c.units} would decide it")
    return ", ".join(w for w in words if w)


def decide_finding(claims: Sequence[AnyClaim], alpha: float = ALPHA, *, seed: int = 0, rule: str = EVERY_CLAIM,
           groups: Sequence[Sequence[str]] = ()) -> FindingResult:
    """Decide a finding's claims as one family (module docstring). ``seed`` seeds the Monte-Carlo permutations;
    ``rule`` reads the verdict (:func:`verdict_by`; ``groups``: the claim names of each group, for
    :data:`SOME_GROUP_REVERSES`)."""
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha={alpha!r}: expected a level in (0, 1)")
    names = [c.name for c in claims]
    if len(set(names)) != len(names):
        raise ConfigError(f"claims: duplicate names {sorted({n for n in names if names.count(n) > 1})}")
    if rule not in RULES:
        raise ConfigError(f"rule={rule!r}: expected one of {RULES}")
    unknown = sorted({n for g in groups for n in g} - set(names))
    if unknown or (rule == SOME_GROUP_REVERSES and not groups):
        raise ConfigError(f"groups: {'unknown claim names ' + str(unknown) if unknown else 'none given'}; expected "
                          "lists of the claims' names (one list per group)")
    tests = [c for c in claims if not isinstance(c, Measurement)]
    measurements = [c for c in claims if isinstance(c, Measurement)]
    m_tested = max(len(tests), 1)
    confidence = 1 - alpha / m_tested  # each claim's interval simultaneous over the finding (Bonferroni)
    rng = np.random.default_rng(seed)
    results = []
    for c in tests:
        if isinstance(c, Claim):
            results.append(_test_mean(c, confidence))
        elif isinstance(c, RankClaim):
            results.append(_test_rank(c, rng))
        elif isinstance(c, PermutationClaim):
            results.append(_test_permutation(c, rng))
        else:
            raise ConfigError(f"claims: {type(c).__name__} is not a Claim, RankClaim, PermutationClaim or Measurement")
    return _adjust(results, alpha, measurements, rule, [list(g) for g in groups])


def _adjust(results: list[ClaimResult], alpha: float, measurements: Sequence[Measurement] = (),
            rule: str = EVERY_CLAIM, groups: list[list[str]] | None = None) -> FindingResult:
    p = np.array([r.p for r in results], dtype=float)
    pe = np.array([r.p_equiv for r in results], dtype=float)
    if len(results):
        p_adj, pe_adj = joint_step_down(p, pe)
    else:
        p_adj = pe_adj = np.zeros(0)
    m = int(np.sum(np.isfinite(p) | np.isfinite(pe)))
    for r, a, b in zip(results, p_adj, pe_adj):
        r.p_adj, r.p_equiv_adj = float(a), float(b)
        r.outcome = _outcome(r, alpha)
    why = "; ".join(w for w in (_why(r, m, alpha) for r in results) if w)
    groups = groups or []
    verdict = verdict_by(results, rule, groups, alpha) if results else MEASURED
    return FindingResult(results, verdict, why, m, alpha, list(measurements), rule, groups)


def pooled(findings: Sequence[FindingResult], alpha: float = ALPHA) -> dict[str, int]:
    """The verdict counts when the claims of all ``findings`` (a notebook's) form one family: each claim's
    unadjusted p-values re-adjusted by one joint step-down over all of them, each finding's verdict read again by
    its own rule."""
    fresh = []
    for f in findings:
        fresh.append([ClaimResult(**{**c.__dict__}) for c in f.claims])
    flat = [c for cs in fresh for c in cs]
    _adjust(flat, alpha)
    counts = {v.value: 0 for v in Verdict}
    for f, cs in zip(findings, fresh):
        counts[verdict_by(cs, f.rule, f.groups, alpha) if cs else MEASURED] += 1
    return counts
