"""Dynamic DG (Zhang, Zhang & Liu, *Towards Reliable Domain Generalization*, PaHCC, Sec. 4.2–4.3, Figs. 9 and 11):
each of the paper's findings as claims decided by the audit's engine (:mod:`dganalysis.findings.engine`).

**The frame** every decision function takes is the per-unit view of the notebook's ``selected`` frame
(:func:`dganalysis.protocols.dynamic.trial_accuracies`): one row per **unit** = (method, training-domain set,
trial seed), with columns

* ``method`` — the algorithm (``"ERM"``, ``"CORAL"``, …);
* ``train`` — its training domains, comma-separated (``"d0,d1"``; matched as a set, order-free);
* ``trial_seed`` — the trial seed (runs with one seed share their data splits, so contrasts pair on it);
* ``acc`` — the selected accuracy on the one test domain (``hw`` for PaHCC), a fraction in [0, 1].

Contrasts are in **accuracy points** (``acc`` × 100). **ROPE: ±1 point** (:data:`ROPE`): the paper reads its
Figs. 9 and 11 off curves drawn at the resolution of about a point, and DomainBed-style tables (the paper's
Tables 7–8) report per-method SEs over 3 trials of about 0.2–1 point, so a gap under one point is not one the paper
could have seen or claims; a contrast shown to lie within ±1 point is "no practical difference".

Every claim is a :class:`~dganalysis.findings.engine.Claim` on two arms of trials indexed by trial seed: the engine
pairs them on shared seeds (≥ 2 shared; the unshared are dropped and counted) and otherwise uses the calibrated
Welch test; TOST within the ROPE; one joint step-down per finding. Which contrasts a finding tests is fixed by its
arguments (methods, training choices, the added domain) — never by the outcomes.

Findings and their public decision functions:

* **Swap-test reversal** (Fig. 9, "the order of methods reverses with the training-domain choice"):
  :func:`decide_swap_reversal`. An *existential* claim over pre-specified method pairs (see its docstring for the
  rule and the family).
* **Stable advantage** (Sec. 4.3, "CORAL and IB-ERM have a stable advantage"): :func:`decide_stable_advantage`,
  a conjunction: each named method ahead of each comparator under every training choice.
* **Domain+** (Fig. 11a–c: adding d2 helps the named methods / every method; adding d1 or d0 degrades ERM):
  :func:`decide_domain_plus`, a conjunction over the methods, paired over trial seeds (same seed before and after
  adding the domain).

Each has a ``simulate_*`` twin returning a SIMULATED frame of the same columns, used by the designs
(:func:`dganalysis.studies.design.dynamic_dg_design`) and the calibration tests (``tests/findings/test_dynamic.py``).
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.findings import engine
from dganalysis.findings.engine import Claim, FindingResult
from dganalysis.validation import ConfigError, check_frame
from dganalysis.verdicts import Verdict

ROPE = 1.0  #: the region of practical equivalence, ± accuracy points (module docstring)
COLUMNS = ("method", "train", "trial_seed", "acc")  #: the per-unit frame's columns
NAMED = ("CORAL", "IB_ERM")  #: the methods the paper says keep a stable advantage (Sec. 4.3)
#: the comparators of the swap-test findings, pre-specified from the design's pilot (the quick run of 2026-11-22 ran
#: ERM, CORAL, IB_ERM, SagNet and IB_IRM): its methods other than the named two
PILOT_COMPARATORS = ("ERM", "SagNet", "IB_IRM")
#: Fig. 11's statements per added PaHCC domain: d2 (the printed domain nearest handwriting) helps, d1 and d0 degrade ERM
PAPER_DOMAIN_PLUS = {"d2": +1, "d1": -1, "d0": -1}


# ------------------------------------------------------------------------------------------------- the frame
def _split(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


def _key(value: str | Sequence[str]) -> frozenset:
    return frozenset(_split(value))


def _label(value: str | Sequence[str]) -> str:
    return ",".join(_split(value))


def check_units(units: pd.DataFrame, func: str) -> None:
    """Raise a :class:`~dganalysis.validation.ConfigError` naming what is wrong with a per-unit frame."""
    check_frame(units, COLUMNS, "units", func=func,
                what="one row per (method, training set, trial seed): protocols.dynamic.trial_accuracies")


class _Arms:
    """The frame's arms: (method, training set) → accuracy in points indexed by trial seed (built once)."""

    def __init__(self, units: pd.DataFrame, func: str):
        check_units(units, func)
        keys = units["train"].map(_key)
        dup = pd.DataFrame({"m": units["method"], "k": keys, "s": units["trial_seed"]}).duplicated()
        if dup.any():
            row = units[dup.to_numpy()].iloc[0]
            raise ConfigError(f"{func}: parameter 'units': more than one row for (method, train, trial_seed) = "
                              f"({row['method']!r}, {row['train']!r}, {row['trial_seed']!r}); expected one row per "
                              "unit (average repeated runs first, as trial_accuracies does)")
        self.func = func
        self.methods = list(dict.fromkeys(units["method"]))
        self.trains = {k: lab for k, lab in zip(keys, units["train"])}
        self.arms: dict[tuple, pd.Series] = {}
        acc = units["acc"].to_numpy(dtype=float) * 100.0
        seeds = units["trial_seed"].to_numpy()
        for (m, k), idx in pd.DataFrame({"m": units["method"].to_numpy(), "k": keys.to_numpy()}).groupby(
                ["m", "k"], sort=False).indices.items():
            self.arms[(m, k)] = pd.Series(acc[idx], index=seeds[idx])

    def arm(self, method: str, train: frozenset) -> pd.Series:
        return self.arms.get((method, train), pd.Series(dtype=float))

    def methods_in(self, methods: Sequence[str] | None, what: str) -> list[str]:
        if methods is None:
            return list(self.methods)
        unknown = [m for m in methods if m not in self.methods]
        if unknown:
            raise ConfigError(f"{self.func}: parameter '{what}': {unknown} have no rows in the frame "
                              f"(methods there: {self.methods})")
        return list(dict.fromkeys(methods))

    def choices_in(self, choices: Sequence | None) -> list[frozenset]:
        if choices is None:
            return list(self.trains)
        keys = [_key(c) for c in choices]
        absent = [_label(sorted(k)) for k in keys if k not in self.trains]
        if absent:
            raise ConfigError(f"{self.func}: parameter 'choices': no rows trained on {absent} (training sets in the "
                              f"frame: {sorted(self.trains.values())})")
        return list(dict.fromkeys(keys))

    def name(self, train: frozenset) -> str:
        return str(self.trains.get(train, _label(sorted(train))))


def _check_alpha_rope(alpha: float, rope: float, func: str) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise ConfigError(f"{func}: parameter 'alpha': expected a level in (0, 1), got {alpha!r}")
    if not (isinstance(rope, (int, float)) and rope >= 0):
        raise ConfigError(f"{func}: parameter 'rope': expected a half-width ≥ 0 in accuracy points, got {rope!r}")


def _contrast(name: str, arm: pd.Series, base: pd.Series, direction: int, rope: float) -> Claim:
    return Claim(name, arm, base, direction=direction, rope=rope, units="trial seeds", unit_of_measure="points")


# ------------------------------------------------------------------------------------------------- swap test
def decide_swap_reversal(units: pd.DataFrame, *, methods: Sequence[str] | None = None,
                         choices: Sequence[str | Sequence[str]] | None = None, alpha: float = engine.ALPHA,
                         rope: float = ROPE) -> FindingResult:
    """Fig. 9: *the order of methods reverses when the training domains are swapped* (same test domain, same number
    of training domains), decided by the engine.

    ``units``: the per-unit frame (module docstring). ``methods``: the methods whose pairs are tested (≥ 2; None:
    every method in the frame) — pre-specified, e.g. :data:`PILOT_COMPARATORS`; ``choices``: the training-domain
    sets swapped (≥ 2; None: every set in the frame).

    **Claims**: for every pair (a, b) of ``methods`` (in the given order) and every choice c, the contrast
    D_c = acc(a) − acc(b) under c, over trial seeds (paired on shared seeds), labelled direction +1 ("a ahead"):
    its outcome ``paper`` reads "a ahead decided", ``against`` "b ahead decided or equivalent within ±``rope``".
    **Family**: all pairs × choices, one joint step-down (difference and equivalence hypotheses).

    **Verdict (existential, the paper's reading)**: a pair *reverses* when some choice has D_c decided > 0 and
    another D_c' decided < 0 (neither equivalent within the ROPE). *reproduced*: at least one pair reverses.
    *not reproduced*: every pair is decided not to reverse — each of its D_c decided of one common sign or
    equivalent within ±``rope`` (a swing inside the ROPE is no practical reversal). *not decided* otherwise.
    False "reproduced" when no pair reverses needs a rejected true null or a wrong sign among the family's
    decisions, so its rate is at most about α (measured in ``tests/findings/test_dynamic.py`` and
    docs/findings/03.md). The rule is the engine's :data:`~dganalysis.findings.engine.SOME_GROUP_REVERSES` (one
    group per pair), so :func:`~dganalysis.findings.engine.pooled` and the report read it the same way.
    """
    f = "decide_swap_reversal"
    _check_alpha_rope(alpha, rope, f)
    arms = _Arms(units, f)
    names = arms.methods_in(methods, "methods")
    chosen = arms.choices_in(choices)
    if len(names) < 2:
        raise ConfigError(f"{f}: parameter 'methods': a reversal needs at least 2 methods, got {names}")
    if len(chosen) < 2:
        raise ConfigError(f"{f}: parameter 'choices': a swap test needs at least 2 training sets, got "
                          f"{[arms.name(c) for c in chosen]}")
    claims, pairs = [], []
    for a, b in itertools.combinations(names, 2):
        pairs.append((a, b, [f"{a} − {b} | {arms.name(c)}" for c in chosen]))
        claims += [_contrast(n, arms.arm(a, c), arms.arm(b, c), +1, rope) for n, c in zip(pairs[-1][2], chosen)]
    groups = [cnames for _, _, cnames in pairs]
    res = engine.decide_finding(claims, alpha, rule=engine.SOME_GROUP_REVERSES, groups=groups)
    by_name = {c.name: c for c in res.claims}
    reversing, open_pairs = [], []
    for a, b, cnames in pairs:
        states = {engine.state(by_name[n], alpha) for n in cnames}
        if {"+", "−"} <= states:
            reversing.append(f"{a}/{b}")
        elif "?" in states:
            open_pairs.append(f"{a}/{b}")
    head = (f"existential over {len(pairs)} pair(s) × {len(chosen)} choices: reversing: {', '.join(reversing) or 'none'}"
            f"; not yet decided either way: {', '.join(open_pairs) or 'none'}")
    why = head + (f"; {res.why}" if res.why and res.verdict != Verdict.REPRODUCED.value else "")
    return dataclasses.replace(res, why=why)


def decide_stable_advantage(units: pd.DataFrame, *, named: Sequence[str] = NAMED,
                            others: Sequence[str] | None = None,
                            choices: Sequence[str | Sequence[str]] | None = None, alpha: float = engine.ALPHA,
                            rope: float = ROPE) -> FindingResult:
    """Sec. 4.3 (ST criterion): *CORAL and IB-ERM have a stable advantage* — each ``named`` method ahead of each
    method of ``others`` under every training-domain choice, decided by the engine.

    ``units``: the per-unit frame (module docstring). ``named``: the methods claimed stable (present in the frame);
    ``others``: their comparators (None: every other method in the frame; the notebook and the design pass
    :data:`PILOT_COMPARATORS` that were run); ``choices``: the swapped training sets (None: all in the frame).

    **Claims**: for each named m, comparator o and choice c, acc(m) − acc(o) under c > 0 (direction +1), paired
    over shared trial seeds, ROPE ±``rope`` points (equivalence decides against the paper: no advantage).
    **Family**: all of them, one joint step-down. **Verdict**: the engine's conjunction — *reproduced* only when
    every named method is decided ahead of every comparator under every choice."""
    f = "decide_stable_advantage"
    _check_alpha_rope(alpha, rope, f)
    arms = _Arms(units, f)
    top = arms.methods_in(list(named), "named")
    rest = arms.methods_in(others, "others") if others is not None else [m for m in arms.methods if m not in top]
    rest = [m for m in rest if m not in top]
    chosen = arms.choices_in(choices)
    if not top or not rest:
        raise ConfigError(f"{f}: parameters 'named'/'others': need at least one named method and one comparator, "
                          f"got named={top}, others={rest}")
    claims = [_contrast(f"{m} − {o} | {arms.name(c)}", arms.arm(m, c), arms.arm(o, c), +1, rope)
              for m in top for o in rest for c in chosen]
    return engine.decide_finding(claims, alpha)


# ------------------------------------------------------------------------------------------------- Domain+
def decide_domain_plus(units: pd.DataFrame, *, base: str | Sequence[str], extended: str | Sequence[str],
                       methods: Sequence[str] | None = None, direction: int = +1, alpha: float = engine.ALPHA,
                       rope: float = ROPE) -> FindingResult:
    """Fig. 11: *adding a training domain helps* (``direction=+1``; d2, the printed domain nearest handwriting,
    for the named methods or for every method) *or degrades* (``-1``; d1 or d0 for ERM), decided by the engine.

    ``units``: the per-unit frame (module docstring); ``base`` ⊂ ``extended``: the training sets before and after
    adding the domain(s); ``methods``: the methods the claim is about (None: every method in the frame).

    **Claims**: per method, acc(extended) − acc(base) on the test domain with the paper's sign, **paired over
    trial seeds** (the same trial seed before and after: shared splits of the common domains), ROPE ±``rope``
    points. **Family**: the methods' claims, one joint step-down. **Verdict**: the engine's conjunction."""
    f = "decide_domain_plus"
    _check_alpha_rope(alpha, rope, f)
    if direction not in (-1, 1):
        raise ConfigError(f"{f}: parameter 'direction': expected +1 (helps) or -1 (degrades), got {direction!r}")
    b, e = _key(base), _key(extended)
    if not b < e:
        raise ConfigError(f"{f}: parameters 'base'/'extended': expected base ⊂ extended (a domain added), got "
                          f"{sorted(b)} → {sorted(e)}")
    arms = _Arms(units, f)
    arms.choices_in([base, extended])
    names = arms.methods_in(methods, "methods")
    added = ",".join(sorted(e - b))
    claims = [_contrast(f"{m}: {arms.name(b)} +{added}", arms.arm(m, e), arms.arm(m, b), direction, rope)
              for m in names]
    return engine.decide_finding(claims, alpha)


def domain_plus_step(chains: Sequence[Sequence[str | Sequence[str]]], added: str) -> tuple[str, str] | None:
    """The first step of ``chains`` (each a list of training sets, each containing the one before) that adds
    exactly the domain ``added``: ``(base, extended)`` as comma-separated labels, or None when no step adds it."""
    for chain in chains:
        for c0, c1 in zip(chain, chain[1:]):
            if _key(c1) - _key(c0) == {added} and _key(c0) < _key(c1):
                return _label(c0), _label(c1)
    return None


# ------------------------------------------------------------------------------------------------- simulation
#: the Domain+ findings: design key → (the domain added, which methods, the paper's direction); ``None`` for the
#: methods: the named ones (:data:`NAMED`) for "D+d2-named", every method run for "D+d2-all"
DOMAIN_PLUS = {"D+d2-named": ("d2", "named", +1), "D+d2-all": ("d2", "all", +1), "D+d1-ERM": ("d1", ("ERM",), -1),
               "D+d0-ERM": ("d0", ("ERM",), -1)}


def decide_all(units: pd.DataFrame, run: Sequence[str], *, methods: Sequence[str],
               choices: Sequence[str | Sequence[str]], chains: Sequence[Sequence[str | Sequence[str]]],
               alpha: float = engine.ALPHA, rope: float = ROPE) -> dict[str, FindingResult]:
    """Every Sec. 4.3 finding whose design key is in ``run`` (the keys the design runs), decided on ``units``:
    the swap-test findings over ``choices`` against the pilot's comparators (:data:`PILOT_COMPARATORS` among
    ``methods``), and each Domain+ finding of :data:`DOMAIN_PLUS` whose added domain is a step of ``chains``.
    Returns design key → result (a finding without the runs it needs is left out)."""
    named = [m for m in NAMED if m in methods]
    comparators = [m for m in PILOT_COMPARATORS if m in methods]
    out: dict[str, FindingResult] = {}
    if "ST-reversal" in run:
        out["ST-reversal"] = decide_swap_reversal(units, methods=comparators, choices=choices, alpha=alpha, rope=rope)
    if "ST-stable" in run:
        out["ST-stable"] = decide_stable_advantage(units, named=named, others=comparators, choices=choices,
                                                   alpha=alpha, rope=rope)
    for key, (added, which, direction) in DOMAIN_PLUS.items():
        step = domain_plus_step(chains, added)
        if key not in run or step is None:
            continue
        chosen = named if which == "named" else list(methods) if which == "all" else list(which)
        out[key] = decide_domain_plus(units, base=step[0], extended=step[1], methods=chosen, direction=direction,
                                      alpha=alpha, rope=rope)
    return out


def _frame(rng: np.random.Generator, n: int, methods: Sequence[str], trains: Sequence[str], shift: dict,
           sd: float, mean: float) -> pd.DataFrame:
    """SIMULATED units: acc (points) = mean + u[train, seed] + shift[method, train] + e, with u ~ N(0, sd) shared
    by the methods of one (train, seed) (their shared split) and e ~ N(0, sd/√2), so that a paired difference of
    two methods under one training set has SD sd (one method's two training sets, whose u differ: sd·√3)."""
    if n < 1:
        raise ConfigError(f"simulate: parameter 'n': expected at least 1 trial, got {n!r}")
    if not sd >= 0:
        raise ConfigError(f"simulate: parameter 'sd': expected an SD ≥ 0 in points, got {sd!r}")
    k, m = len(trains), len(methods)
    u = rng.normal(0.0, sd, size=(k, 1, n))
    e = rng.normal(0.0, sd / np.sqrt(2.0), size=(k, m, n))
    s = np.array([[shift.get((mm, t), 0.0) for mm in methods] for t in trains])[:, :, None]
    acc = (mean + u + s + e) / 100.0
    ti, mi, si = np.meshgrid(np.arange(k), np.arange(m), np.arange(n), indexing="ij")
    return pd.DataFrame({"method": np.asarray(methods, dtype=object)[mi.ravel()],
                         "train": np.asarray(trains, dtype=object)[ti.ravel()],
                         "trial_seed": si.ravel(), "acc": acc.ravel()})


def _choices(n_choices: int) -> list[str]:
    if n_choices < 2:
        raise ConfigError(f"simulate: parameter 'n_choices': expected at least 2 training sets, got {n_choices!r}")
    return [f"s{i},t" for i in range(n_choices)]


def simulate_swap_reversal(rng: np.random.Generator, n: int, *, effect: float, sd: float,
                           methods: Sequence[str] = PILOT_COMPARATORS, n_choices: int = 3, offset: float = 0.0,
                           mean: float = 60.0) -> pd.DataFrame:
    """A SIMULATED per-unit frame for :func:`decide_swap_reversal`: ``n`` trial seeds per (method, choice);
    methods[0] − methods[1] = ``offset`` + ``effect`` under the first choice and ``offset`` − ``effect`` under
    the others (a reversal of half-swing ``effect`` points when |effect| > |offset|); every other contrast 0.
    ``offset`` = ±rope with ``effect`` = 0 is the stable order at the ROPE's edge (a null of the finding)."""
    trains = _choices(n_choices)
    shift = {(methods[0], t): offset + (effect if i == 0 else -effect) for i, t in enumerate(trains)}
    return _frame(rng, n, methods, trains, shift, sd, mean)


def simulate_stable_advantage(rng: np.random.Generator, n: int, *, effect: float, sd: float,
                              named: Sequence[str] = NAMED, others: Sequence[str] = PILOT_COMPARATORS,
                              n_choices: int = 3, mean: float = 60.0) -> pd.DataFrame:
    """A SIMULATED per-unit frame for :func:`decide_stable_advantage`: every ``named`` method ``effect`` points
    ahead of every one of ``others`` under each of ``n_choices`` training sets, ``n`` trial seeds each."""
    trains = _choices(n_choices)
    shift = {(m, t): effect for m in named for t in trains}
    return _frame(rng, n, [*named, *others], trains, shift, sd, mean)


def simulate_domain_plus(rng: np.random.Generator, n: int, *, effect: float, sd: float,
                         methods: Sequence[str] = NAMED, effects: dict[str, float] | None = None,
                         base: str = "d0,d1", extended: str = "d0,d1,d2", mean: float = 60.0) -> pd.DataFrame:
    """A SIMULATED per-unit frame for :func:`decide_domain_plus`: each method's accuracy changes by ``effect``
    points (or ``effects[method]``) from ``base`` to ``extended``; ``n`` trial seeds each, the per-seed difference
    of one method having SD ``sd``."""
    effects = effects or {}
    shift = {(m, extended): effects.get(m, effect) for m in methods}
    # u (the split) differs between the two sets here: var(difference) = 2 s² + 2 (s/√2)² = 3 s², so s = sd/√3
    return _frame(rng, n, methods, [base, extended], shift, sd / np.sqrt(3.0), mean)
