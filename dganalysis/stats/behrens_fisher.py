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
n − 1 df exactly and h(w) = w. Its power, against Welch's (whose level it does not share) at equal variances: at
n = 3, a 6-SD effect, 0.55 at α = 0.01 (Welch 0.77, Hsu 0.31); at n = 3 in a family of 91 claims (Holm's first
step at 0.05/91) and an 8-SD effect, 0.035 against Welch's 0.377 — at small n and small levels most of Welch's power
is lost, the price of validity for every variance ratio; at n = 10 in a family of 5 it is within 0.01 of Welch's
(simulated; table in docs/audit.md).

**How h is computed (by one-dimensional quadrature, then padded to an upper bound).** With U_a = (n_a − 1)s_a²/σ_a² ~ χ²(n_a − 1),
U_b likewise, B = U_a/(U_a + U_b) ~ Beta((n_a − 1)/2, (n_b − 1)/2) is independent of S = U_a + U_b ~ χ²(m),
m = n_a + n_b − 2. The estimated variance of Δ is S·g(B) with g linear in B, the share r of s_a²/n_a in it is a
function of B alone (logit r = logit B + log(k_a/k_b), k = σ²/((n − 1)n)), and Δ ⊥ (B, S). Hence, given B,
``|T|`` > c  ⟺  ``|t_m|`` > c·√(m·g(B))/τ, τ² = Var(Δ), and

    P_θ(p_W ≤ w) = E_B[ 2·F̄_{t,m}( c_w(r(B))·√(m·g(B))/τ ) ],   c_w(r) = t⁻¹_{ν(r)}(1 − w/2),

an integral over the logit of B, computed on a fine grid; θ only shifts that logit. The mass of the grid's
truncated tails counts as rejection, and h is the maximum over a grid of log θ spanning variance ratios
10⁻¹¹–10¹¹ (refined around the best). h is tabulated per (n_a, n_b) on a log grid of w and interpolated log–log
(monotone); below the grid's smallest w the smallest tabulated value is used (conservative). Three steps can each
land a little below the true supremum: the Riemann sum over logit B, a peak between points of the θ grid, and the
log–log interpolation between tabulated levels. :func:`calibrate` and :func:`calibrated_level` therefore use
(1 + :data:`H_MARGIN`)·h, which is an upper bound of h where checked: against h recomputed at 200 levels between
the knots (10⁻⁸–0.5), on a θ grid 8× finer over the whole range and with a logit step of 0.05 instead of 0.2, the
tabulated h fell short by at most 7.6·10⁻⁶ relative (n = (2, 2), (3, 3), (2, 5), (3, 10), (4, 10), (5, 5)), 130×
less than the margin (``tests/stats/test_behrens_fisher.py`` repeats the check at (2, 2) and (2, 5)). The bound is
thus a verified one, not a proof; :func:`level_for`, the planning figures' forecast, keeps the unpadded supremum. The tables
are computed once per process per (n_a, n_b), about 1 s each on a shared 2-core AMD EPYC (0.9–1.1 s measured).
:func:`level_for` (one target, any n: the planning figures) evaluates each size only over the cells of the logit
grid that hold all but 10⁻¹² × the level of the Beta weight, the rest counting as rejection (so the size stays an
upper bound and moves by less than 10⁻¹² relative), 12–25 ms a call on that machine once the level-free arrays of
its (n_a, n_b) are built (the first call).

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
#: relative margin on the tabulated h that makes it an upper bound of the supremum (module docstring: the largest
#: shortfall measured on denser grids was 7.6e-6)
H_MARGIN = 1e-3


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
    n_a)). ``delta``: the true difference in units of √Var(Δ) (0: the size; an array broadcasting like ``log_shift``).
    Tails beyond the grid count as rejections (an upper bound on the size). With a nonzero ``delta`` (a power), each
    item's grid cells outside the window that holds all but 10⁻¹³ of its Beta weight are left out (the power moves by
    less than that).
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
    lead = np.broadcast_shapes(x_crit.shape[:-1], w.shape[:-1], delta.shape)
    xc = np.broadcast_to(x_crit, (*lead, grid.size)).reshape(-1, grid.size)
    wt = np.broadcast_to(w, (*lead, grid.size)).reshape(-1, grid.size)
    nc = np.broadcast_to(delta, lead).reshape(-1, 1)
    # per row, only the cells inside its Beta window: the rest hold < POWER_TOL of the weight (not counted)
    rows, cols = window_cells(wt, POWER_TOL)
    pr = _noncentral_two_sided(xc[rows, cols], m, nc)
    return (pr * wt[rows, cols]).sum(axis=-1).reshape(lead) + beyond


def logit_grid(n_a: int, n_b: int) -> np.ndarray:
    """The quadrature grid over logit r for (n_a, n_b) trials (r: arm A's share of the estimated variance of Δ): step
    0.2 over [−60, 60], finer for large n (a quarter of logit B's SD) so the density is resolved."""
    sd = np.sqrt(special.polygamma(1, (n_a - 1) / 2) + special.polygamma(1, (n_b - 1) / 2))
    step = min(_L_STEP, 0.25 * float(sd))
    return np.arange(-_L_MAX, _L_MAX + step / 2, step)


def _noncentral_two_sided(x: np.ndarray, m: int, nc: float) -> np.ndarray:
    """P(``|t_{m, nc}|`` > x), the noncentral t with m df, by quadrature over S ~ χ²(m) (stable far in the tail;
    normal tail terms below Φ(−11.5) ≈ 6·10⁻³¹ count as 0, so the result is exact to 10⁻³⁰ absolute)."""
    xs = np.asarray(x)[..., None] * np.sqrt(chi_square_nodes(m, 64) / m)  # √(S/m)
    nc = np.asarray(nc, dtype=float)[..., None]
    return (_ndtr_above(nc - xs) + _ndtr_above(-xs - nc)).mean(axis=-1)


def _ndtr_above(z: np.ndarray, floor: float = -11.5) -> np.ndarray:
    """Φ(z), evaluated only where z > ``floor`` (0 elsewhere: Φ(−11.5) ≈ 6·10⁻³¹); at n = 2–3 trials most of a power's
    terms lie below it, the critical values being large."""
    out = np.zeros(z.shape)
    keep = z > floor
    out[keep] = special.ndtr(z[keep])
    return out


@lru_cache(maxsize=128)
def chi_square_nodes(m: int, k: int) -> np.ndarray:
    """S ~ χ²(m) at its k midpoint quantiles, (j + ½)/k for j < k, largest first (read-only): the nodes of a
    quadrature over S — √(S/m) in :func:`_noncentral_two_sided` (64), √S in the TOST's power
    (:func:`dganalysis.stats.planning.power_equivalence`, 100)."""
    nodes = special.chdtri(m, 1 - (np.arange(k) + 0.5) / k)
    nodes.flags.writeable = False
    return nodes


POWER_TOL = 1e-13  #: Beta weight a power computation may leave out per item (its value moves by less than this)
_SIZE_TOL = 1e-12  # weight a size may move to ``beyond``, relative to the level (so h moves by < 1e-12 relative)


def _cumulative_masses(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of the quadrature weights ``w`` (rows, grid): the weight left of each cell boundary, ``left[:, j]`` =
    Σ_{k<j} w_k, and right of it, ``right[:, j]`` = Σ_{k≥j} w_k (each summed from its own end, so tiny tails keep
    their relative precision); both (rows, grid + 1)."""
    zero = np.zeros((w.shape[0], 1))
    left = np.concatenate([zero, np.cumsum(w, axis=1)], axis=1)
    right = np.concatenate([np.cumsum(w[:, ::-1], axis=1)[:, ::-1], zero], axis=1)
    return left, right


def _windows(masses: tuple[np.ndarray, np.ndarray], tol) -> tuple[np.ndarray, int]:
    """Per row, the first cell of a window of ``length`` cells (the same for all rows) outside which each tail holds
    at most ``tol``/2 of the weight (``tol`` a scalar or one value per row): the cells worth evaluating."""
    left, right = masses
    half = np.broadcast_to(np.asarray(tol, dtype=float) / 2, (left.shape[0],))[:, None]
    n_cells = left.shape[1] - 1
    lo = (left <= half).sum(axis=1) - 1  # the most cells from the left whose total is ≤ tol/2
    hi = n_cells + 1 - (right <= half).sum(axis=1)  # likewise from the right: the window is [lo, hi)
    length = int(max(1, (hi - lo).max()))
    return np.minimum(lo, n_cells - length), length


def window_cells(w: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays ``(rows, cols)`` selecting, in each row of the quadrature weights ``w`` (rows, grid), the window
    of cells outside which each tail holds at most ``tol``/2 of the row's weight (one window length for all rows):
    ``w[rows, cols]`` is what a power's quadrature needs to evaluate to within ``tol``."""
    start, length = _windows(_cumulative_masses(w), tol)
    return np.arange(w.shape[0])[:, None], start[:, None] + np.arange(length)


class _SizeRows:
    """The level-free parts of the size integral of :func:`rejection_probability` at fixed log-shifts for (n_a,
    n_b): quadrature weights, the factor turning critical values into t quantiles, the truncated tails' mass and the
    cumulative weights that bound the windows (computed once per shift; the same expressions as the direct sum)."""

    def __init__(self, n_a: int, n_b: int, shifts: np.ndarray):
        grid = logit_grid(n_a, n_b)
        self.shifts = np.asarray(shifts, dtype=float)
        s = self.shifts[:, None]
        x = grid - s
        self.w = logit_beta_density(x, (n_a - 1) / 2, (n_b - 1) / 2) * (grid[1] - grid[0])
        self.beyond = np.maximum(0.0, 1.0 - self.w.sum(axis=-1))
        bb, es = special.expit(x), np.exp(s)
        self.scale = np.sqrt((n_a + n_b - 2) * (es * bb + 1.0 - bb) / (es * (n_a - 1) + (n_b - 1)))
        self.masses = _cumulative_masses(self.w)
        self.m = n_a + n_b - 2

    def size(self, crit: np.ndarray, tol: float) -> np.ndarray:
        """P(``|T|`` > crit) per shift (``crit`` over the grid), evaluating only each shift's window of cells that
        hold all but ``tol`` of the weight; the weight left out counts as rejection, as the truncated tails do (so
        the result is an upper bound on the direct sum, above it by less than ``tol``)."""
        start, length = _windows(self.masses, tol)
        rows, cols = np.arange(self.w.shape[0])[:, None], start[:, None] + np.arange(length)
        inside = (2.0 * special.stdtr(self.m, -crit[cols] * self.scale[rows, cols]) * self.w[rows, cols]).sum(axis=-1)
        left, right = self.masses
        return inside + (left[rows[:, 0], start] + right[rows[:, 0], start + length]) + self.beyond


@lru_cache(maxsize=32)
def _grid_rows(n_a: int, n_b: int) -> _SizeRows:
    """The rows of the shift grid :data:`_S_GRID`; with n_a = n_b only its shifts ≥ 0: the size at −s is the size at
    s then (swapping the arms maps B to 1 − B, and Beta(a, a) and Welch's df are symmetric in it). 1–8 MB each."""
    return _SizeRows(n_a, n_b, _S_GRID[_S_GRID >= 0] if n_a == n_b else _S_GRID)


@lru_cache(maxsize=1024)
def _pair_rows(n_a: int, n_b: int, lower: float, upper: float) -> _SizeRows:
    """The two neighbours of one refinement step (the same steps recur across a root search's levels; one audit
    visits about 400 pairs, 40–150 kB each)."""
    return _SizeRows(n_a, n_b, np.array([lower, upper]))


def _sup_size(crit: np.ndarray, n_a: int, n_b: int, tol: float) -> float:
    """Welch's largest size over the variance ratio for critical values ``crit`` (over the grid): the grid of
    log-shifts :data:`_S_GRID` (its half ≥ 0 when n_a = n_b, :func:`_grid_rows`), then halving steps down to 1/64
    around the best, both neighbours of a step in one evaluation (as :func:`_table` does per level). Each size is
    computed by :meth:`_SizeRows.size` with ``tol``."""
    rows = _grid_rows(n_a, n_b)
    size = rows.size(crit, tol)
    best, at, step = float(size.max()), float(rows.shifts[size.argmax()]), float(_S_GRID[1] - _S_GRID[0]) / 2
    while step >= 1 / 64:
        below, above = at - step, at + step
        val = _pair_rows(n_a, n_b, below, above).size(crit, tol)
        if val[0] > best:
            best, at = float(val[0]), below
        if val[1] > best:
            best, at = float(val[1]), above
        step /= 2
    return best


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
    """The valid p-value for Welch two-sided p-values ``p_welch`` with ``n_a``, ``n_b`` trials (broadcast): an upper
    bound of h(p_W), the tabulated h padded by :data:`H_MARGIN` (at least p_W, at most 1); NaN stays NaN. See the
    module docstring."""
    logw = np.log(_W_GRID)

    def apply(p, h):
        val = (1 + H_MARGIN) * np.exp(np.interp(np.log(np.clip(p, _W_GRID[0], 1.0)), logw, np.log(h)))
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
    """The Welch level w with (1 + :data:`H_MARGIN`)·h(w) = ``target``: Welch's test at level w has size ≤ target for
    every variance ratio (the inverse of :func:`calibrate`, padded alike; it gives the critical values of the
    simultaneous intervals)."""
    logw = np.log(_W_GRID)

    def invert(t, h):  # h is non-decreasing: the smallest w reaching t (conservative)
        h = np.minimum((1 + H_MARGIN) * h, 1.0)
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
    supremum rather than read from the table — what :mod:`dganalysis.stats.planning` needs for arbitrary n).

    Brent's method (tolerance 10⁻⁴ in log w) on the supremum of :func:`_sup_size`, whose sizes leave out grid cells
    holding less than 10⁻¹²·w of the Beta weight and count that weight as rejection (module docstring)."""
    from scipy.optimize import brentq

    if n_a < 2 or n_b < 2:
        raise ValueError(f"n_a={n_a}, n_b={n_b}: expected at least 2 trials per arm")
    grid = special.expit(logit_grid(n_a, n_b))

    def sup(logw: float) -> float:
        w = np.exp(logw)
        crit = welch_crit(np.array([w]), n_a, n_b, grid)[0]
        return max(_sup_size(crit, n_a, n_b, _SIZE_TOL * w), w)

    hi = np.log(target)
    if sup(hi) <= target * (1 + 1e-9):  # Welch already keeps the level (large n)
        return float(target)
    lo = hi - 25.0
    return float(np.exp(brentq(lambda x: np.log(sup(x)) - np.log(target), lo, np.log(target), xtol=1e-4)))
