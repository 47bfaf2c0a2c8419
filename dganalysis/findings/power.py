"""Designs from the decision: the power of a finding's own decision function, by simulation.

A finding's design asks "with n trials, how often does the decision say *reproduced* when the paper's effect is
true?". Planning from a formula for one contrast answers a different question whenever the decision has several
claims (a conjunction: every claim must be decided), a family (the joint step-down divides α), an equivalence arm or
a rank test. Here the answer comes from the decision itself: :func:`simulated_power` draws ``reps`` data sets of the
finding's frame at the design's effect and noise (``simulate(rng, n)``, written once per finding beside its decision
function), runs the decision function on each, and counts verdicts — the same test, family and conjunction as a real
run. The effect and SD come from the paper or a named pilot, never from the run being judged (post-hoc power at an
observed effect says nothing new; Hoenig & Heisey 2001).

The same machinery measures a decision's error rates (:func:`verdict_rates` at null effects): the calibration tests
and the docs' table call it with effect 0 and with the opposite effect at the ROPE's edge.

Monte-Carlo error: a rate p over R draws has SE √(p(1 − p)/R) (0.02 at p = 0.8, R = 400), reported beside it.
:func:`simulated_trials_for_power` searches the smallest n whose simulated power reaches the target, assuming power grows with
n (true of every decision here: each test's power grows with n at a fixed effect); its answer carries that n's own
Monte-Carlo error.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dganalysis.findings.engine import PAPER, FindingResult
from dganalysis.stats.planning import POWER
from dganalysis.validation import ConfigError
from dganalysis.verdicts import Verdict

REPS = 400  #: simulated data sets per design point (Monte-Carlo SE 0.02 at power 0.8)
N_MAX = 64

Decide = Callable[[pd.DataFrame], FindingResult]
Simulate = Callable[[np.random.Generator, int], pd.DataFrame]


@dataclass
class PowerResult:
    """Verdict rates of a decision over ``reps`` simulated data sets of ``n`` units per arm: ``rates`` (verdict →
    share), ``power`` (share *reproduced*), its Monte-Carlo SE ``mc_se``, and per claim the share decided the
    paper's way (``claim_power``)."""

    n: int
    reps: int
    rates: dict[str, float]
    claim_power: dict[str, float] = field(default_factory=dict)

    @property
    def power(self) -> float:
        return self.rates.get(Verdict.REPRODUCED.value, 0.0)

    @property
    def mc_se(self) -> float:
        return mc_se(self.power, self.reps)

    def rate(self, verdict: str) -> float:
        return self.rates.get(verdict, 0.0)


def mc_se(rate: float, reps: int) -> float:
    """The Monte-Carlo standard error of a rate estimated from ``reps`` independent draws."""
    return math.sqrt(max(rate * (1 - rate), 0.0) / max(reps, 1))


def verdict_rates(decide: Decide, simulate: Simulate, n: int, reps: int = REPS, seed: int = 0) -> PowerResult:
    """Run ``decide`` on ``reps`` data sets ``simulate(rng, n)`` (one generator, seeded by ``seed``) and count."""
    if n < 2:
        raise ConfigError(f"n={n!r}: a t-test needs at least 2 units per arm")
    if reps < 1:
        raise ConfigError(f"reps={reps!r}: expected at least 1 simulated data set")
    rng = np.random.default_rng(seed)
    counts: dict[str, int] = {v.value: 0 for v in Verdict}
    claim_hits: dict[str, int] = {}
    for _ in range(reps):
        res = decide(simulate(rng, n))
        counts[res.verdict] = counts.get(res.verdict, 0) + 1
        for c in res.claims:
            claim_hits[c.name] = claim_hits.get(c.name, 0) + (c.outcome == PAPER)
    return PowerResult(n, reps, {k: v / reps for k, v in counts.items()}, {k: v / reps for k, v in claim_hits.items()})


def simulated_power(decide: Decide, simulate: Simulate, n: int, reps: int = REPS, seed: int = 0) -> PowerResult:
    """The share of simulated data sets the decision calls *reproduced* (see :func:`verdict_rates`)."""
    return verdict_rates(decide, simulate, n, reps, seed)


def simulated_trials_for_power(decide: Decide, simulate: Simulate, power: float = POWER, n_min: int = 2,
                               n_max: int = N_MAX, reps: int = REPS, seed: int = 0,
                               progress: Callable[[int, float], None] | None = None) -> PowerResult | None:
    """The smallest n in [``n_min``, ``n_max``] whose simulated power reaches ``power`` (its :class:`PowerResult`),
    or None when even ``n_max`` does not. Doubling from ``n_min``, then bisection (power is taken to grow with n);
    each n is simulated with the same ``seed``. ``progress(n, power)`` is called after each n tried."""
    if not 0 < power < 1:
        raise ConfigError(f"power={power!r}: expected a target in (0, 1)")
    cache: dict[int, PowerResult] = {}

    def at(n: int) -> PowerResult:
        if n not in cache:
            cache[n] = simulated_power(decide, simulate, n, reps, seed)
            if progress is not None:
                progress(n, cache[n].power)
        return cache[n]

    lo, hi = n_min, n_min
    while at(hi).power < power:
        if hi >= n_max:
            return None
        lo, hi = hi, min(2 * hi, n_max)
    if hi == n_min:
        return at(hi)
    while hi - lo > 1:  # at(lo) < power <= at(hi)
        mid = (lo + hi) // 2
        if at(mid).power >= power:
            hi = mid
        else:
            lo = mid
    return at(hi)


# ------------------------------------------------------------------------------------------------- a design's power
@dataclass(frozen=True)
class DesignPower:
    """The simulated power of one finding's decision at a profile's size, and the smallest size reaching
    :data:`POWER`: ``power`` ± ``mc_se`` at ``n``; ``n_for_target`` (None: not within :data:`N_MAX`) with its own
    power and Monte-Carlo SE."""

    n: int
    power: float
    mc_se: float
    n_for_target: int | None
    power_at_target: float | None
    reps: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def design_power(decide: Decide, simulate: Simulate, n: int, reps: int = REPS, seed: int = 0,
                 cache_key: str | None = None, n_max: int = N_MAX) -> DesignPower:
    """:class:`DesignPower` of ``decide`` on ``simulate`` at ``n``: the power there and the trials for
    :data:`POWER`. ``cache_key`` (a string naming the finding, its effect, SD and family — everything the
    simulation depends on besides ``n``, ``reps`` and ``seed``) reuses a result computed before: from the table
    shipped with the package (``dganalysis/findings/data/design_power.json``, written by
    ``bench/findings_design.py``) or the user's cache (``$DGANALYSIS_CACHE`` or ``~/.cache/dganalysis``)."""
    n_max = max(n_max, n)  # the search reaches at least the profile's own size
    key = None if cache_key is None else f"{cache_key}|n={n}|reps={reps}|seed={seed}|n_max={n_max}"
    if key is not None:
        hit = _cache_get(key)
        if hit is not None:
            return DesignPower(**hit)
    at = simulated_power(decide, simulate, n, reps, seed)
    need = simulated_trials_for_power(decide, simulate, POWER, 2, n_max, reps, seed)
    out = DesignPower(n, at.power, at.mc_se, None if need is None else need.n,
                      None if need is None else need.power, reps)
    if key is not None:
        _cache_put(key, out.as_dict())
    return out


DESIGN_POWER_FILE = "design_power.json"


def _user_cache() -> Path:
    root = os.environ.get("DGANALYSIS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "dganalysis")
    return Path(root) / DESIGN_POWER_FILE


def _shipped() -> dict:
    try:
        text = resources.files("dganalysis.findings").joinpath("data", DESIGN_POWER_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    return json.loads(text)


def _cache_get(key: str) -> dict | None:
    hit = _shipped().get(key)
    if hit is not None:
        return hit
    path = _user_cache()
    try:
        return json.loads(path.read_text(encoding="utf-8")).get(key)
    except (FileNotFoundError, OSError, json.JSONDecodeError):
        return None


def _cache_put(key: str, value: dict) -> None:
    from dganalysis import io

    path = _user_cache()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, json.JSONDecodeError):
        data = {}
    data[key] = value
    try:
        io.write_json(path, data)
    except OSError:  # a read-only home: the result is simply not kept
        pass
