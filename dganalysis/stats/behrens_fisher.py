"""Welch's statistic with a p-value that keeps its level for every variance ratio (the Behrens–Fisher problem).

**The problem.** Two independent normal samples (n_a, n_b trials) with unknown, possibly unequal variances: no
exact test of equal means exists that uses Welch's statistic T = Δ / √(s_a²/n_a + s_b²/n_b) with a fixed rule
(Behrens–Fisher; Welch 1947). Welch's approximate test — T against Student's t with the Welch–Satterthwaite df
ν̂ — is conservative at equal variances but *exceeds its level* when the variances differ and n is small: at
n_a = n_b = 3 its size reaches 1.2× α at α = 0.05, 1.7× at 0.01 and 4.6× at 0.05/91 (Holm's first step over
DomainBed's table), peaking near an SD ratio of 10–20 (computed by :func:`rejection_probability`; Scheffé 1970 and
Best & Rayner 1987 report the same pattern). Hsu's rule (Hsu 1938; Mickey & Brown 1966), df = min(n) − 1, is valid
for every ratio but gives up much power: at n = 3, α = 0.01 and a 6-SD effect, 0.31 against Welch's 0.77.

**The test used here: Welch's p-value calibrated to its worst case over the variance ratio.** Let p_W be Welch's
two-sided p-value. Its null distribution depends only on (n_a, n_b) and the unknown ratio θ = σ_a²/σ_b², so

    p = h(p_W),   h(w) = sup_θ P_θ(p_W ≤ w),

is a valid p-value: h is non-decreasing, so P_θ(h(p_W) ≤ u) ≤ P_θ(p_W ≤ h⁻¹(u)) ≤ u for every θ (the supremum
p-value over a nuisance parameter; Berger & Boos 1994, Silvapulle 1996). Under the null the size of every level-α
decision is at most α for all variance ratios — including the limits θ → 0, ∞ where T follows Student's t on
n − 1 df exactly and h(w) = w. It keeps most of Welch's power: at n = 3, equal variances, a 6-SD effect, power 0.55
at α = 0.01 (Welch 0.77, Hsu 0.31); at n = 10 it is within 0.01 of Welch's (table in docs/audit.md).

**How h is computed (exactly, by one-dimensional quadrature).** With U_a = (n_a − 1)s_a²/σ_a² ~ χ²(n_a − 1),
U_b likewise, B = U_a/(U_a + U_b) ~ Beta((n_a − 1)/2, (n_b − 1)/2) is independent of S = U_a + U_b ~ χ²(m),
m = n_a + n_b − 2. The estimated variance of Δ is S·g(B) with g linear in B, the share r of s_a²/n_a in it is a
function of B alone (logit r = logit B + log(k_a/k_b), k = σ²/((n − 1)n)), and Δ ⊥ (B, S). Hence, given B,
``|T|`` > c  ⟺  ``|t_m|`` > c·√(m·g(B))/τ, τ² = Var(Δ), and

    P_θ(p_W ≤ w) = E_B[ 2·F̄_{t,m}( c_w(r(B))·√(m·g(B))/τ ) ],   c_w(r) = t⁻¹_{ν(r)}(1 − w/2),

an integral over the logit of B, computed on a fine grid; θ only shifts that logit. The mass of the grid's
truncated tails counts as rejection (so the computed size is an upper bound), and h is the maximum over a grid of
log θ spanning variance ratios 10⁻¹¹–10¹¹. h is tabulated per (n_a, n_b) on a log grid of w and interpolated
log–log (monotone); below the grid's smallest w the smallest tabulated value is used (conservative). The tables
are computed once per process per (n_a, n_b), about 0.3 s each.

Tested: the integral against Monte-Carlo simulation of Welch's test, the calibrated test's size on simulated nulls
at SD ratios 1–100 and n = 3, 5, 10 (≤ α within Monte-Carlo error), and its power at equal variances.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import special

_L_STEP, _L_MAX = 0.2, 60.0  # grid over logit(r)
_S_GRID = np.arange(-25.0, 25.0 + 1e-9, 0.5)  # log of the variance-ratio shift, searched for the supremum
_W_GRID = np.logspace(-12, 0, 97)  # levels at which h is tabulated


def welch_df(va: np.ndarray, vb: np.ndarray, n_a: np.ndarray, n_b: np.ndarray) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom from the squared standard errors ``va = s_a²/n_a``, ``vb``
    (Welch 1947): (va + vb)² / (va²/(n_a − 1) + vb²/(n_b − 1)); ``inf`` when both are zero."""
    va, vb = np.asarray(va, dtype=float), np.asarray(vb, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(va > 0, va**2 / (n_a - 1), 0.0) + np.where(vb > 0, vb**2 / (n_b - 1), 0.0)
        return np.where(den > 0, (va + vb) ** 2 / den, np.inf)


def welch_df_from_share(r, n_a, n_b) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom written through the share ``r = va / (va + vb)`` of arm A's squared
    standard error in their sum: 1 / (r²/(n_a − 1) + (1 − r)²/(n_b − 1)) — :func:`welch_df` divided through by
    (va + vb)², the form the critical values over a grid of shares need (Welch 1947)."""
    r = np.asarray(r, dtype=float)
    return 1.0 / (r**2 / (n_a - 1) + (1 - r) ** 2 / (n_b - 1))


def logit_beta_density(x: np.ndarray, a: float, b: float) -> np.ndarray:
    """Density of logit(B) at ``x``, B ~ Beta(a, b): σ(x)^a σ(−x)^b / Beta(a, b) — the weights of the quadrature over
    the share of the two arms' variance estimates (module docstring)."""
    return np.exp(-a * np.logaddexp(0.0, -x) - b * np.logaddexp(0.0, x) - special.betaln(a, b))


def rejection_probability(crit, n_a: int, n_b: int, log_shift, delta=0.0) -> np.ndarray:
    """P(``|T|`` > crit(r)) for Welch's statistic T, at the variance-ratio shifts ``log_shift``.

    ``crit``: critical values over the grid of logit r (r: the share of s_a²/n_a in the estimated variance of Δ),
    shape ``(..., grid)``, or a callable of r giving them; ``log_shift`` = log(k_a/k_b), k = σ²/((n − 1)·n), an
    array that broadcasts with ``crit``'s leading shape (the variance ratio is θ = e^shift·(n_b − 1)n_b/((n_a − 1)
    n_a)). ``delta``: the true difference in units of √Var(Δ) (0: the size; an array broadcasting like ``log_shift``). Tails beyond the grid count as
    rejections (an upper bound on the size).
    """
    grid = logit_grid(n_a, n_b)
    c = np.asarray(crit(special.expit(grid)) if callable(crit) else crit, dtype=float)
    s = np.asarray(log_shift, dtype=float)[..., None]
    a, b, m = (n_a - 1) / 2, (n_b - 1) / 2, n_a + n_b - 2
    x = grid - s  # logit B
    w = logit_beta_density(x, a, b) * (grid[1] - grid[0])
    beyond = np.maximum(0.0, 1.0 - w.sum(axis=-1))
    bb = special.expit(x)
    es = np.exp(s)
    # Var-estimate/Var(Δ) given B, per unit of S: (e^s B + 1 − B) / (e^s (n_a − 1) + (n_b − 1))
    x_crit = c * np.sqrt(m * (es * bb + 1.0 - bb) / (es * (n_a - 1) + (n_b - 1)))
    delta = np.asarray(delta, dtype=float)
    if not np.any(delta):
        return (2.0 * special.stdtr(m, -x_crit) * w).sum(axis=-1) + beyond
    x_crit, w = np.broadcast_arrays(x_crit, w)
    keep = (w > 1e-12 * w.max(axis=-1, keepdims=True)).any(axis=tuple(range(w.ndim - 1)))  # grid cells that matter
    pr = _noncentral_two_sided(x_crit[..., keep], m, delta[..., None])
    return (pr * w[..., keep]).sum(axis=-1) + beyond


def logit_grid(n_a: int, n_b: int) -> np.ndarray:
    """The quadrature grid over logit r for (n_a, n_b) trials (r: arm A's share of the estimated variance of Δ): step
    0.2 over [−60, 60], finer for large n (a quarter of logit B's SD) so the density is resolved."""
    sd = np.sqrt(special.polygamma(1, (n_a - 1) / 2) + special.polygamma(1, (n_b - 1) / 2))
    step = min(_L_STEP, 0.25 * float(sd))
    return np.arange(-_L_MAX, _L_MAX + step / 2, step)


def _noncentral_two_sided(x: np.ndarray, m: int, nc: float) -> np.ndarray:
    """P(``|t_{m, nc}|`` > x), the noncentral t with m df, by quadrature over S ~ χ²(m) (stable far in the tail)."""
    q = (np.arange(64) + 0.5) / 64
    root = np.sqrt(special.chdtri(m, 1 - q) / m)  # √(S/m) at χ²(m) quantiles
    xs = np.asarray(x)[..., None] * root
    nc = np.asarray(nc, dtype=float)[..., None]
    return (special.ndtr(nc - xs) + special.ndtr(-xs - nc)).mean(axis=-1)


def welch_crit(w: np.ndarray, n_a: int, n_b: int, r: np.ndarray) -> np.ndarray:
    """Welch's two-sided critical values t⁻¹_ν(1 − w/2) at levels ``w`` (rows) over the shares ``r`` (columns), ν
    Welch–Satterthwaite's df at that share (:func:`welch_df_from_share`)."""
    nu = welch_df_from_share(r, n_a, n_b)
    return special.stdtrit(nu[None, :], 1 - np.asarray(w, dtype=float)[:, None] / 2)


@lru_cache(maxsize=256)
def _table(n_a: int, n_b: int) -> np.ndarray:
    """h on :data:`_W_GRID` for (n_a, n_b): the supremum over the variance ratio of Welch's size, found on a grid of
    log-shifts (step 0.5) and refined around each level's maximum by halving steps down to 1/64."""
    grid = logit_grid(n_a, n_b)
    crit = welch_crit(_W_GRID, n_a, n_b, special.expit(grid))  # (levels, grid)
    size = rejection_probability(crit, n_a, n_b, _S_GRID[:, None])  # (shifts, levels)
    best = size.max(axis=0)
    at = _S_GRID[size.argmax(axis=0)]
    step = (_S_GRID[1] - _S_GRID[0]) / 2
    while step >= 1 / 64:
        for cand in (at - step, at + step):
            val = rejection_probability(crit, n_a, n_b, cand)
            better = val > best
            best, at = np.where(better, val, best), np.where(better, cand, at)
        step /= 2
    h = np.maximum(best, _W_GRID)
    return np.minimum(np.maximum.accumulate(h), 1.0)


def _check_n(n_a: np.ndarray, n_b: np.ndarray) -> None:
    if np.any((n_a < 2) | (n_b < 2)) or np.any(n_a != np.round(n_a)) or np.any(n_b != np.round(n_b)):
        raise ValueError("n_a, n_b: expected whole numbers of trials ≥ 2 per arm")


def _by_pair(values, n_a, n_b, fn) -> np.ndarray:
    """``fn(values of one (n_a, n_b) pair, h of that pair)`` applied per pair of trial counts (broadcast; NaN stays)."""
    v, na, nb = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (values, n_a, n_b)))
    out = np.full(v.shape, np.nan)
    ok = np.isfinite(v) & np.isfinite(na) & np.isfinite(nb)
    if ok.any():
        _check_n(na[ok], nb[ok])
        for x, y in {(int(a), int(b)) for a, b in zip(na[ok], nb[ok], strict=True)}:
            sel = ok & (na == x) & (nb == y)
            out[sel] = fn(v[sel], _table(x, y))
    return out


def calibrate(p_welch, n_a, n_b) -> np.ndarray:
    """The valid p-value h(p_W) for Welch two-sided p-values ``p_welch`` with ``n_a``, ``n_b`` trials (broadcast);
    NaN stays NaN. See the module docstring."""
    logw = np.log(_W_GRID)

    def apply(p, h):
        val = np.exp(np.interp(np.log(np.clip(p, _W_GRID[0], 1.0)), logw, np.log(h)))
        return np.minimum(np.maximum(val, p), 1.0)

    return _by_pair(p_welch, n_a, n_b, apply)


def calibrate_one_sided(p_one_sided, n_a, n_b) -> np.ndarray:
    """The valid one-sided p-value for Welch one-sided p-values ``p_one_sided`` (e.g. each side of a TOST,
    :func:`dganalysis.stats.ttests.tost_p`): h(2p)/2 below ½, the p-value itself from ½ on — Welch's statistic is
    symmetric at the boundary of a one-sided null, so the one-sided test at level α is the two-sided one at 2α on
    its side (Schuirmann 1987 for the TOST; the calibration h as in :func:`calibrate`). NaN stays NaN."""
    p1 = np.asarray(p_one_sided, dtype=float)
    return np.where(p1 < 0.5, calibrate(np.minimum(2 * p1, 1.0), n_a, n_b) / 2, p1)


def calibrated_level(target, n_a, n_b) -> np.ndarray:
    """The Welch level w with h(w) = ``target``: Welch's test at level w has size ≤ target for every variance ratio
    (the inverse of :func:`calibrate`; it gives the critical values of the simultaneous intervals)."""
    logw = np.log(_W_GRID)

    def invert(t, h):  # h is non-decreasing: the smallest w reaching t (conservative)
        w = np.exp(np.interp(np.log(np.clip(t, h[0], 1.0)), np.log(np.maximum(h, 1e-300)), logw, left=logw[0]))
        return np.minimum(w, t)

    return _by_pair(target, n_a, n_b, invert)


def welch_p(delta, se, df) -> np.ndarray:
    """The two-sided t p-value of ``|Δ|``/SE on ``df`` (zero SE: p = 0 for Δ ≠ 0, 1 for Δ = 0): Welch's own
    (uncalibrated) p with Welch's df, the paired t-test's with n − 1."""
    delta, se, df = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (delta, se, df)))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * special.stdtr(df, -np.abs(delta) / se)
    return np.where(se > 0, p, np.where(np.abs(delta) > 0, 0.0, 1.0))


@lru_cache(maxsize=4096)
def level_for(target: float, n_a: int, n_b: int) -> float:
    """The Welch level w whose worst-case size over the variance ratio is ``target`` (one value; root-found on the
    supremum rather than read from the table — what :mod:`dganalysis.stats.planning` needs for arbitrary n)."""
    from scipy.optimize import brentq

    if n_a < 2 or n_b < 2:
        raise ValueError(f"n_a={n_a}, n_b={n_b}: expected at least 2 trials per arm")
    grid = special.expit(logit_grid(n_a, n_b))

    def sup(logw: float) -> float:
        crit = welch_crit(np.array([np.exp(logw)]), n_a, n_b, grid)[0]
        size = rejection_probability(crit, n_a, n_b, _S_GRID[:, None])
        best, at, step = size.max(), _S_GRID[size.argmax()], (_S_GRID[1] - _S_GRID[0]) / 2
        while step >= 1 / 64:
            for cand in (at - step, at + step):
                val = float(rejection_probability(crit, n_a, n_b, cand))
                if val > best:
                    best, at = val, cand
            step /= 2
        return max(best, np.exp(logw))

    hi = np.log(target)
    if sup(hi) <= target * (1 + 1e-9):  # Welch already keeps the level (large n)
        return float(target)
    lo = hi - 25.0
    return float(np.exp(brentq(lambda x: np.log(sup(x)) - np.log(target), lo, np.log(target), xtol=1e-4)))
