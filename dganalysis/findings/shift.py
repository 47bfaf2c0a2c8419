"""Ye et al. (2022), *OoD-Bench*, Table 3: two findings on coloured digits, decided over estimator runs.

Table 3 (Colored MNIST, one training environment with ρ_tr = 0.1) reports the diversity and correlation shift
estimates (dimensionless, in [0, 1]) of a test environment whose colour–label flip probability is ρ_te:
correlation 0.67 / 0.48 / 0.34 / 0.18 / 0.00 at ρ_te 0.9 / 0.7 / 0.5 / 0.3 / 0.1 with diversity 0.00 throughout,
and, with a new colour (blue) at test time, diversity 0.93 and correlation 0.00 (the † row).

A unit is one **estimator run** (:func:`dganalysis.shift.study.table3`: a fresh coloured data set and environment
classifier per run, about a second each on a CPU, so the runs are cheap enough to decide over). The runs of one
setting are numbered ``trial`` 0, 1, …; runs of two settings with the same number are paired by the engine's rule
(ids alone). Their data are drawn independently, for which the paired t is exact too (the differences are i.i.d.).

**ROPE ±0.05** (:data:`ROPE`, in the estimate's units): Table 3 reads a printed 0.00 as "no shift", and 0.05 is about
a third of its smallest step between neighbouring ρ_te (0.48 → 0.34: 0.14), so equivalence within ±0.05 separates
"no shift" from the smallest change the paper shows.

* :func:`correlation_shift_finding` — (a) "correlation shift grows with |ρ_te − ρ_tr| while diversity stays 0":
  for each pair of neighbouring red/green settings (ordered by |ρ_te − ρ_tr|), ``correlation(farther) −
  correlation(nearer)`` > 0 (direction +1); for each setting, ``diversity`` within ±ROPE of 0 (direction 0,
  one-sample TOST). Family: all these claims.
* :func:`new_colour_finding` — (b) "a new colour is diversity shift, not correlation shift": the blue setting's
  ``diversity`` > 0 (direction +1, one-sample) and its ``correlation`` within ±ROPE of 0 (direction 0). Family: the
  two claims.

An estimate that is identical over runs (e.g. a diversity clipped to exactly 0 by the estimator's threshold in every
run) has no variance: its claim is undecided and ``why`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.findings import engine
from dganalysis.validation import ConfigError, check_frame

ROPE = 0.05  #: in the estimate's units (module docstring)
PAPER = "Ye et al. 2022 (OoD-Bench)"
COLUMNS = ("rho_te", "blue", "trial", "diversity", "correlation")
RHO_TR = 0.1
#: Ye et al. (2022) Table 3: correlation shift at each ρ_te (ρ_tr = 0.1), and the † row (blue at test time)
PAPER_CORRELATION = {0.9: 0.67, 0.7: 0.48, 0.5: 0.34, 0.3: 0.18, 0.1: 0.00}
PAPER_BLUE_DIVERSITY = 0.93
#: the named pilot behind the designs' noise: the quick profile's run in docs/executed/06_shift_estimation.ipynb
#: (Table 3, 2 runs per setting): correlation 0.69 ± 0.09 / 0.43 ± 0.01 / 0.04 ± 0.01 (mean ± SE) at ρ_te 0.9 / 0.5 /
#: 0.1, diversity 0.00 ± 0.00; blue: diversity 1.02 ± 0.02, correlation 0.00 ± 0.00
PILOT = "pilot: quick run in docs/executed/06_shift_estimation.ipynb (Table 3, 2 estimator runs per setting)"
PILOT_SD_CORRELATION = float(np.sqrt(np.mean(np.square([0.09, 0.01, 0.01]))) * np.sqrt(2))  #: RMS of SE·√2
PILOT_SD_BLUE = 0.02 * float(np.sqrt(2))  #: the blue row's diversity SE · √2
#: printed "0.00 ± 0.00" in the pilot: an SE below 0.005, taken at that bound (SD 0.005·√2)
PILOT_SD_ZERO = 0.005 * float(np.sqrt(2))
ONE_ROW = "one row per estimator run: dganalysis.shift.study.table3(...).attrs['trials']"


def _runs(f: pd.DataFrame, col: str) -> pd.Series:
    return f.set_index("trial")[col].astype(float)


def correlation_shift_finding(frame: pd.DataFrame, *, rho_tr: float = RHO_TR, alpha: float = engine.ALPHA,
                              rope: float = ROPE) -> engine.FindingResult:
    """Finding (a) decided (module docstring). ``frame``: one row per estimator run — ``rho_te``, ``blue`` (the
    blue rows are ignored here), ``trial`` (the unit id within a setting), ``diversity``, ``correlation``. Needs at
    least two red/green settings."""
    check_frame(frame, COLUMNS, "frame", func="correlation_shift_finding", what=ONE_ROW)
    rg = frame[~frame["blue"].astype(bool)]
    rhos = sorted(set(rg["rho_te"].astype(float)), key=lambda r: (abs(r - rho_tr), r))
    if len(rhos) < 2:
        raise ConfigError(f"correlation_shift_finding: red/green settings ρ_te {rhos}; expected at least two")
    at = {r: rg[rg["rho_te"].astype(float) == r] for r in rhos}
    claims: list[engine.Claim] = []
    for near, far in zip(rhos[:-1], rhos[1:]):
        claims.append(engine.Claim(f"correlation: ρ_te {far:g} − ρ_te {near:g}", _runs(at[far], "correlation"),
                                   _runs(at[near], "correlation"), direction=1, rope=rope, units="estimator runs",
                                   unit_of_measure="(shift)"))
    for r in rhos:
        claims.append(engine.Claim(f"diversity at ρ_te {r:g}", _runs(at[r], "diversity"), None, direction=0,
                                   rope=rope, units="estimator runs", unit_of_measure="(shift)"))
    return engine.decide_finding(claims, alpha)


def new_colour_finding(frame: pd.DataFrame, *, alpha: float = engine.ALPHA, rope: float = ROPE) -> engine.FindingResult:
    """Finding (b) decided (module docstring). ``frame``: as :func:`correlation_shift_finding`'s; its rows with
    ``blue`` true are the new-colour setting's runs."""
    check_frame(frame, COLUMNS, "frame", func="new_colour_finding", what=ONE_ROW)
    blue = frame[frame["blue"].astype(bool)]
    if blue.empty:
        raise ConfigError("new_colour_finding: no row with blue = True (the Table 3 † setting)")
    return engine.decide_finding([
        engine.Claim("blue: diversity > 0", _runs(blue, "diversity"), None, direction=1, rope=rope,
                     units="estimator runs", unit_of_measure="(shift)"),
        engine.Claim("blue: correlation ≈ 0", _runs(blue, "correlation"), None, direction=0, rope=rope,
                     units="estimator runs", unit_of_measure="(shift)")], alpha)


def table3_rows(frame: pd.DataFrame, *, rho_tr: float = RHO_TR, alpha: float = engine.ALPHA) -> list[dict]:
    """Table 3's two findings decided on ``frame`` (:func:`correlation_shift_finding`, :func:`new_colour_finding`),
    as rows for :func:`dganalysis.studies.findings.replace_findings` (``paper, finding, ours, verdict, decision``)."""
    a = correlation_shift_finding(frame, rho_tr=rho_tr, alpha=alpha)
    b = new_colour_finding(frame, alpha=alpha)
    return [dict(paper=PAPER, finding="correlation shift grows with |ρ_te − ρ_tr| while diversity stays 0 (Table 3; "
                 "paper 0.67 / 0.34 / 0.00 at ρ_te 0.9 / 0.5 / 0.1)", ours=a.ours(3), verdict=a.verdict, decision=a),
            dict(paper=PAPER, finding="a new colour at test time is diversity shift, not correlation shift (Table 3 † "
                 "row; paper 0.93 / 0.00)", ours=b.ours(3), verdict=b.verdict, decision=b)]


def paper_step(rho_tes: Sequence[float], rho_tr: float = RHO_TR) -> float:
    """The mean step of Table 3's correlation between neighbouring settings among ``rho_tes`` (ordered by
    |ρ_te − ρ_tr|), the paper's values interpolated linearly in ρ_te."""
    rhos = sorted(set(float(r) for r in rho_tes), key=lambda r: abs(r - rho_tr))
    xs = sorted(PAPER_CORRELATION)
    vals = np.interp(rhos, xs, [PAPER_CORRELATION[x] for x in xs])
    return float(np.mean(np.diff(vals))) if len(rhos) >= 2 else float("nan")


def simulate_correlation_shift(rng: np.random.Generator, n: int, *, effect: float, sd: float,
                               rho_tes: Sequence[float] = (0.9, 0.5, 0.1), rho_tr: float = RHO_TR,
                               diversity: float = 0.0, sd_diversity: float = PILOT_SD_ZERO,
                               shared: int | None = None) -> pd.DataFrame:
    """A SIMULATED frame for :func:`correlation_shift_finding`: ``n`` runs per red/green setting; the correlation of
    the j-th setting by |ρ_te − ρ_tr| (j = 0, 1, …) ~ N(j·``effect``, ``sd``), its diversity ~ N(``diversity``,
    ``sd_diversity``) (unclipped). ``shared``: how many run numbers the settings share (default all ``n``; the
    rest get setting-specific numbers)."""
    k = n if shared is None else int(shared)
    rhos = sorted(set(float(r) for r in rho_tes), key=lambda r: abs(r - rho_tr))
    rows = []
    for j, r in enumerate(rhos):
        ids = list(range(k)) + [1000 * (j + 1) + i for i in range(n - k)]
        cor = rng.normal(j * effect, sd, n)
        div = rng.normal(diversity, sd_diversity, n)
        rows += [dict(rho_te=r, blue=False, trial=t, diversity=d, correlation=c) for t, d, c in zip(ids, div, cor)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def simulate_new_colour(rng: np.random.Generator, n: int, *, effect: float, sd: float, correlation: float = 0.0,
                        sd_correlation: float = PILOT_SD_ZERO, rho_te: float = RHO_TR) -> pd.DataFrame:
    """A SIMULATED frame for :func:`new_colour_finding`: ``n`` blue runs, diversity ~ N(``effect``, ``sd``),
    correlation ~ N(``correlation``, ``sd_correlation``)."""
    div = rng.normal(effect, sd, n)
    cor = rng.normal(correlation, sd_correlation, n)
    return pd.DataFrame([dict(rho_te=rho_te, blue=True, trial=t, diversity=d, correlation=c)
                         for t, (d, c) in enumerate(zip(div, cor))], columns=list(COLUMNS))
