"""SIMULATED families of claims for the audit's calibration: nulls with unequal variances and planted effects at the
sizes DG uses (n = 3, 5, 10 trials; families of 5 and 91 claims; published rounding on or off). Shared by
tests/audit/test_calibration.py and bench/audit_calibration.py (which runs more simulations for docs/audit.md)."""

from __future__ import annotations

import numpy as np

from dganalysis.audit.claims import CLAIM_VERDICTS, Summaries, decide

ALPHA = 0.05
BETTER, WORSE, EQUIV = CLAIM_VERDICTS.index("better"), CLAIM_VERDICTS.index("worse"), CLAIM_VERDICTS.index("equivalent")
#: baseline trial SDs per dataset, points (DomainBed-like: SE × √3 of its ERM rows)
BASE_SD = np.array([0.17, 0.09, 1.0, 1.4, 0.87, 3.1, 0.35])


def family_shape(m: int) -> tuple[int, int]:
    """(datasets, algorithms) of a family of m claims: 5 = one algorithm over 5 datasets, 91 = 13 × 7."""
    return {5: (5, 1), 7: (7, 1), 91: (7, 13)}[m]


def simulate(sims: int, m: int, n: int, sd_ratio: float, effect: np.ndarray | float = 0.0, seed: int = 0,
             base_sd: np.ndarray | None = None):
    """SIMULATED trials: algorithms (sims, datasets, algorithms, n) with trial SD ``sd_ratio`` × the baseline's, and
    the baseline (sims, datasets, n). ``effect`` broadcasts over (datasets, algorithms)."""
    rng = np.random.default_rng(seed)
    n_ds, n_alg = family_shape(m)
    sd = (BASE_SD[:n_ds] if base_sd is None else np.asarray(base_sd, dtype=float)[:n_ds])[:, None]
    mu = np.linspace(40.0, 95.0, n_ds)[:, None]
    alg = (mu + np.asarray(effect))[..., None] + (sd * sd_ratio)[..., None] * rng.standard_normal((sims, n_ds, n_alg, n))
    base = mu + sd * rng.standard_normal((sims, n_ds, n))
    return alg, base


def decide_sim(alg, base, rope: float = 0.0, rounding: bool = False, grid: int = 9):
    """The audit's decision (:func:`dganalysis.audit.claims.decide`) on simulated trials; ``rounding``: the published
    form (population SE, means and SEs printed to one decimal), else exact sample summaries."""
    sims, n = alg.shape[0], alg.shape[-1]
    ddof = 0 if rounding else 1
    ma, sa = alg.mean(-1), alg.std(-1, ddof=ddof) / np.sqrt(n)
    mb = np.broadcast_to(base.mean(-1)[..., None], ma.shape)
    sb = np.broadcast_to((base.std(-1, ddof=ddof) / np.sqrt(n))[..., None], ma.shape)
    if rounding:
        ma, sa, mb, sb = (np.round(x, 1) for x in (ma, sa, mb, sb))
        a, b = Summaries(ma.reshape(sims, -1), sa.reshape(sims, -1), n, 0, 0.1, 0.1), Summaries(
            mb.reshape(sims, -1), sb.reshape(sims, -1), n, 0, 0.1, 0.1)
        return decide(a, b, alpha=ALPHA, rope=rope, grid=grid)
    return decide(Summaries(ma.reshape(sims, -1), sa.reshape(sims, -1), n),
                  Summaries(mb.reshape(sims, -1), sb.reshape(sims, -1), n), alpha=ALPHA, rope=rope)


def fwer(verdict: np.ndarray, which=(BETTER, WORSE)) -> float:
    """Share of families with at least one verdict in ``which``."""
    return float(np.isin(verdict, which).any(axis=-1).mean())


def mc_bound(sims: int, p: float = ALPHA) -> float:
    """α plus 3 Monte-Carlo standard errors."""
    return p + 3 * np.sqrt(p * (1 - p) / sims)


def null_fwer(sims: int, m: int, n: int, sd_ratio: float, rounding: bool, seed: int = 0, rope: float = 0.0) -> float:
    """Family-wise error of better/worse verdicts when every claim is null."""
    return fwer(decide_sim(*simulate(sims, m, n, sd_ratio, seed=seed), rope=rope, rounding=rounding).verdict)


def planted_power(sims: int, m: int, n: int, effect_sds: float, rounding: bool, seed: int = 0) -> float:
    """Power at equal variances: share of the planted claims (every claim of the family, Δ = ``effect_sds`` trial
    SDs of its dataset) decided better."""
    n_ds, _ = family_shape(m)
    sd = np.full(n_ds, 1.0)
    d = decide_sim(*simulate(sims, m, n, 1.0, effect=effect_sds, seed=seed, base_sd=sd), rounding=rounding)
    return float((d.verdict == BETTER).mean())
