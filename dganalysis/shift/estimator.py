"""Diversity and correlation shift between two labelled feature samples, as OoD-Bench computes them.

Ye et al. (CVPR 2022), Definition 1, for environments with feature densities p (training) and q (test):

    D_div(p, q) = 1/2 \\int_S |p(z) - q(z)| dz
    D_cor(p, q) = 1/2 \\int_T sqrt(p(z) q(z)) \\sum_y |p(y|z) - q(y|z)| dz

with S where p(z) q(z) is about zero and T where it is not (eq. 3), and the posteriors by Bayes' rule
(eq. 5): p(y|z) = p(y) p(z|y) / p(z). We compute them step by step as OoD-Bench's ``quantify.py`` does
(reference snapshot 0c34a79, the public code of Ye et al.):

1. **Standardisation**: ``sklearn.preprocessing.StandardScaler`` fitted on z_p ∪ z_q, applied to both.
2. **Importance distribution**: the Gaussian KDE of the pooled standardised features (scipy's Scott
   factor ``N ** (-1 / (d + 4))`` on its ``N = n_p + n_q`` points, kernel = factor² × pooled covariance);
   ``n_samples`` points (default 10,000) drawn with ``gaussian_kde.resample(n_samples, seed=seed)`` —
   :func:`dganalysis.shift.kde.kde_resample` reproduces that random stream, so the same ``seed`` gives
   the same points — and ``w(z)``, the pooled KDE's density there.
3. **Densities**: one KDE per density with its own scipy-default kernel (``bandwidth="scott"``): p, q on
   each environment, p(z|y), q(z|y) on each class of each environment. A class whose KDE cannot be built
   (scipy raises: fewer points than dimensions, or a singular covariance) is skipped with a warning, as
   OoD-Bench does (``strict=True`` raises instead).
4. **Thresholds** exactly as ``compute_div``/``compute_cor`` use them: a point counts for D_div where
   ``p < eps_div or q < eps_div``; for D_cor where ``p > eps_cor and q > eps_cor`` (defaults 1e-12 and 5e-4,
   OoD-Bench's). The two sets need not be complementary.
5. **Monte-Carlo sums** ``1/(2m) sum_i integrand_i / w_i`` over the m points, with the integrands of one
   of two formulas (``formula=``):

   - ``"eq5"`` (default; OoD-Bench's ``--legacy_mode``, the paper's Definition 1 with eq. 5):
     div: ``|p - q|``; cor: ``sum_y |p(y) p(z|y) sqrt(q/p) - q(y) q(z|y) sqrt(p/q)|`` — this is
     ``sqrt(pq) |p(y|z) - q(y|z)|`` written without the division by p or q.
   - ``"hellinger"`` (OoD-Bench's current default, "OoD-Bench+"): div: ``(sqrt p - sqrt q)²``; cor:
     ``sum_y [p(y) p(z|y) sqrt(q/p) + q(y) q(z|y) sqrt(p/q) - 2 sqrt(p(y) p(z|y) q(y) q(z|y))]``, i.e.
     ``sqrt(pq) (sqrt p(y|z) - sqrt q(y|z))²``; div + cor is then a squared Hellinger distance.

   Class priors are the class frequencies over the classes whose KDE was built. OoD-Bench requires equal
   class counts in p and q (label-shift-free data; it raises otherwise) and averages per-class sums
   weighted by class size; with equal counts that is the formula above term by term. We also accept
   unequal counts, where eq. 5's priors p(y), q(y) differ.

Our choices beyond OoD-Bench's code:

- **Bandwidth** ``bandwidth="shared"`` (a named option, not the default): one Gaussian kernel for every
  density, covariance ``scott_factor((n_p + n_q) / 2, d)**2`` times the mean of the two environments'
  covariances (within-environment, so separated environments are not smoothed into each other). Then
  p(z) = sum_y p(y) p(z|y) and w = (n_p p + n_q q) / N hold exactly (the eq. 5 posteriors sum to one)
  and one distance matrix serves every density (faster when most points count for D_cor). Its draws
  follow the same scipy random stream with that kernel.
- Estimates are not clipped (OoD-Bench does not clip); each carries its Monte-Carlo standard error.
- Densities come from one batched torch KDE (:func:`dganalysis.shift.kde.grouped_kde_logpdf`, vectorised
  over classes) instead of one ``gaussian_kde`` call per density and Python loops over points; its float32
  densities agree with scipy to about 3e-5 relative (``precision="float64"`` to about 1e-12). With fixed
  thresholds it evaluates the pooled KDE only at points counted for D_div or D_cor and the class KDEs only
  at points counted for D_cor (:func:`fit_densities` ``thresholds=``); every other term is multiplied by 0.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch
from scipy import linalg
from scipy.stats import gaussian_kde
from sklearn.preprocessing import StandardScaler

from dganalysis import threads
from dganalysis.shift.kde import covariance, grouped_kde_logpdf, kde_resample, pack_groups, scott_factor
from dganalysis.shift.regime import check_regime
from dganalysis.stats.moments import standard_error
from dganalysis.validation import (
    ConfigError,
    check_choice,
    check_features,
    check_labels,
    check_random_state,
    check_scalar,
    describe,
)

log = logging.getLogger(__name__)

FORMULAS = ("eq5", "hellinger")
BANDWIDTHS = ("scott", "shared")
EPS_DIV = 1e-12  # OoD-Bench's default thresholds (config.add_quant_arguments)
EPS_COR = 5e-4
N_SAMPLES = 10_000
# Linear-density error allowed from the KDE's float32 exponent clamp; far below any threshold in use.
_KDE_MAX_ABS_ERR = 1e-24


@dataclass
class ShiftEstimate:
    """Result of :func:`estimate_shift` (all densities on standardised features)."""

    diversity: float
    correlation: float
    diversity_se: float  # Monte-Carlo standard error
    correlation_se: float
    share_div: float  # share of Monte-Carlo points counted for D_div (p < eps_div or q < eps_div)
    share_cor: float  # share counted for D_cor (p > eps_cor and q > eps_cor)
    per_class_correlation: np.ndarray  # contribution of each class to D_cor (sums to it; 0 for skipped)
    classes: np.ndarray  # class ids matching per_class_correlation
    skipped_classes: np.ndarray  # classes whose KDE could not be built
    n_samples: int
    eps_div: float
    eps_cor: float
    formula: str
    bandwidth: str
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        """Scalars as a flat dict (for DataFrames)."""
        return {
            "diversity": self.diversity,
            "correlation": self.correlation,
            "diversity_se": self.diversity_se,
            "correlation_se": self.correlation_se,
            "share_div": self.share_div,
            "share_cor": self.share_cor,
            "n_samples": self.n_samples,
            "eps_div": self.eps_div,
            "eps_cor": self.eps_cor,
            "formula": self.formula,
            "bandwidth": self.bandwidth,
        }


@dataclass
class ShiftDensities:
    """The fitted state of one estimate: every density at the Monte-Carlo points (thresholds not applied).

    Built by :func:`fit_densities`; :meth:`estimate` applies thresholds and a formula, so calibration
    re-weights the same densities for many thresholds.
    """

    points: np.ndarray  # [m, d] standardised
    w: np.ndarray  # [m] importance density (pooled KDE)
    p: np.ndarray  # [m]
    q: np.ndarray  # [m]
    p_y: np.ndarray  # [m, C] p(z|y)
    q_y: np.ndarray  # [m, C] q(z|y)
    prior_p: np.ndarray  # [C] p(y) over usable classes (0 for skipped)
    prior_q: np.ndarray  # [C]
    classes: np.ndarray
    skipped: np.ndarray  # [C] bool
    bandwidth: str
    thresholds: tuple[float, float] | None = None  # (eps_div, eps_cor) if fitted for these only, else None

    def estimate(self, *, eps_div: float = EPS_DIV, eps_cor: float = EPS_COR,
                 formula: Literal["eq5", "hellinger"] = "eq5") -> ShiftEstimate:
        """D_div and D_cor at thresholds ``eps_div``/``eps_cor`` with ``formula`` (see module docstring)."""
        check_choice(formula, FORMULAS, "formula", func="ShiftDensities.estimate")
        check_scalar(eps_div, "eps_div", func="ShiftDensities.estimate", low=0.0)
        check_scalar(eps_cor, "eps_cor", func="ShiftDensities.estimate", low=0.0)
        if self.thresholds is not None and (eps_div, eps_cor) != self.thresholds:
            raise ValueError(f"ShiftDensities.estimate: fitted for (eps_div, eps_cor) = {self.thresholds} only; "
                             f"call fit_densities(..., thresholds=None) to estimate at other thresholds")
        t = shift_terms(self, eps_div, eps_cor, formula)
        m = len(self.w)
        cor = t["cor_class"].sum(1)  # div and cor: one term per point (m of them), their SE over the points

        return ShiftEstimate(
            diversity=float(t["div"].mean()),
            correlation=float(cor.mean()),
            diversity_se=standard_error(t["div"]),
            correlation_se=standard_error(cor),
            share_div=float(t["in_div"].mean()),
            share_cor=float(t["in_cor"].mean()),
            per_class_correlation=t["cor_class"].mean(0),
            classes=self.classes,
            skipped_classes=self.classes[self.skipped],
            n_samples=m,
            eps_div=float(eps_div),
            eps_cor=float(eps_cor),
            formula=formula,
            bandwidth=self.bandwidth,
            extra={"share_evaluated": float((t["in_div"] | t["in_cor"]).mean())},
        )


def shift_terms(dens: ShiftDensities, eps_div: float, eps_cor: float, formula: str) -> dict[str, np.ndarray]:
    """Per-point Monte-Carlo terms: ``div`` [m], ``cor_class`` [m, C] (already divided by ``2 w``),
    ``in_div``, ``in_cor`` [m] bool. Their means over the points are the estimates."""
    f = "shift_terms"
    if not isinstance(dens, ShiftDensities):
        raise ConfigError(f"{f}: parameter 'dens': expected ShiftDensities (fit_densities), got {describe(dens)}")
    check_scalar(eps_div, "eps_div", func=f, low=0.0)
    check_scalar(eps_cor, "eps_cor", func=f, low=0.0)
    check_choice(formula, FORMULAS, "formula", func=f)
    p, q, w = dens.p, dens.q, dens.w
    in_div = (p < eps_div) | (q < eps_div)
    in_cor = (p > eps_cor) & (q > eps_cor)
    if formula == "eq5":
        div_int = np.abs(p - q)
    else:
        div_int = (np.sqrt(p) - np.sqrt(q)) ** 2
    div = np.where(in_div, div_int, 0.0) / (2.0 * w)
    safe_p, safe_q = np.where(in_cor, p, 1.0), np.where(in_cor, q, 1.0)
    a = dens.prior_p * dens.p_y * np.sqrt(safe_q / safe_p)[:, None]  # p(y) p(z|y) sqrt(q/p)
    b = dens.prior_q * dens.q_y * np.sqrt(safe_p / safe_q)[:, None]
    if formula == "eq5":
        cor_int = np.abs(a - b)
    else:
        cor_int = a + b - 2.0 * np.sqrt(dens.prior_p * dens.prior_q * dens.p_y * dens.q_y)
    cor_class = np.where(in_cor[:, None], cor_int, 0.0) / (2.0 * w)[:, None]
    return {"div": div, "cor_class": cor_class, "in_div": in_div, "in_cor": in_cor}


def _check(z: object, y: object, z_name: str, y_name: str, func: str) -> tuple[np.ndarray, np.ndarray]:
    z = check_features(z, z_name, func=func, min_samples=2, to="numpy")
    return z, check_labels(y, len(z), y_name, func=func, rows_of=repr(z_name))


def _scipy_kernel(data: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of scipy's default (Scott) kernel for ``data`` [n, d]; raises as scipy does."""
    return gaussian_kde(data.T).cho_cov


def _class_kernels(z: np.ndarray, y: np.ndarray, classes: np.ndarray, strict: bool, env: str) -> list:
    out = []
    for c in classes:
        try:
            out.append(_scipy_kernel(z[y == c]))
        except (np.linalg.LinAlgError, linalg.LinAlgError, ValueError) as exc:
            if strict:
                raise
            log.warning("estimate_shift: skipping class y=%s (%s: %d points): scipy gaussian_kde failed (%s)",
                        c, env, int(np.sum(y == c)), str(exc).split(".")[0])
            out.append(None)
    return out


def fit_densities(
    z_p: np.ndarray,
    y_p: np.ndarray,
    z_q: np.ndarray,
    y_q: np.ndarray,
    *,
    bandwidth: Literal["scott", "shared"] = "scott",
    n_samples: int = N_SAMPLES,
    seed: int | np.random.RandomState | None = 0,
    points: np.ndarray | None = None,
    strict: bool = False,
    precision: Literal["float32", "float64"] = "float32",
    device: torch.device | str | None = None,
    thresholds: tuple[float, float] | None = None,
) -> ShiftDensities:
    """Steps 1–3 of the module docstring: standardise, draw (or take) the Monte-Carlo points, evaluate
    the importance density, p, q and every class density there with one batched torch KDE per group kind.

    ``points`` (standardised space, ``[m, d]``) replaces the draws, e.g. to compare implementations.
    ``thresholds=(eps_div, eps_cor)`` evaluates only what those thresholds use (the result is identical):
    p and q everywhere, w only where a point counts for D_div or D_cor (elsewhere ``inf``), class densities
    only where it counts for D_cor (elsewhere 0); the returned densities then refuse other thresholds.
    ``None`` (for calibration) evaluates everything. Inputs and the valid regime as :func:`estimate_shift`.

    Threads (:mod:`dganalysis.threads`): numpy/scipy BLAS runs on one thread (its few small products are not
    worth a pool that spins on a busy machine), the KDE on workers chosen from the free cores, each chunk on
    one torch thread; the result does not depend on the machine's load.
    """
    with threads.blas_threads(1):
        return _fit_densities(z_p, y_p, z_q, y_q, dict(bandwidth=bandwidth, n_samples=n_samples, seed=seed,
                                                      points=points, strict=strict, precision=precision,
                                                      device=device, thresholds=thresholds), func="fit_densities")


def _check_inputs(z_p, y_p, z_q, y_q, *, bandwidth, n_samples, seed, precision, thresholds, func, points=None,
                  stacklevel=3):
    """Every argument check of :func:`estimate_shift` / :func:`fit_densities`, before any work."""
    z_p, y_p = _check(z_p, y_p, "z_p", "y_p", func)
    z_q, y_q = _check(z_q, y_q, "z_q", "y_q", func)
    if z_p.shape[1] != z_q.shape[1]:
        raise ConfigError(f"{func}: parameters 'z_p', 'z_q': expected the same number of features, got "
                          f"{describe(z_p)} and {describe(z_q)}")
    check_choice(bandwidth, BANDWIDTHS, "bandwidth", func=func)
    check_choice(precision, ("float32", "float64"), "precision", func=func)
    check_scalar(n_samples, "n_samples", func=func, kind="int", low=1)
    if not (seed is None or isinstance(seed, np.random.RandomState)):
        check_random_state(seed, func=func)
    if thresholds is not None:
        if not isinstance(thresholds, (tuple, list)) or len(thresholds) != 2:
            raise ConfigError(f"{func}: parameter 'thresholds': expected None or (eps_div, eps_cor), got "
                              f"{describe(thresholds)}")
        check_scalar(thresholds[0], "eps_div", func=func, low=0.0)
        check_scalar(thresholds[1], "eps_cor", func=func, low=0.0)
    classes = np.unique(y_p)
    if not np.array_equal(classes, np.unique(y_q)):
        raise ConfigError(f"{func}: parameters 'y_p', 'y_q': expected the same classes in both environments (as "
                          f"OoD-Bench requires), got {classes.tolist()[:10]} and {np.unique(y_q).tolist()[:10]}")
    if points is not None:
        check_features(points, "points", func=func, d=z_p.shape[1], to="numpy")
    check_regime(z_p.shape[1], min(len(z_p), len(z_q)), func=func, stacklevel=stacklevel)
    return z_p, y_p, z_q, y_q, classes


_FIT_KEYS = ("bandwidth", "n_samples", "seed", "points", "strict", "precision", "device", "thresholds")


def _fit_densities(z_p, y_p, z_q, y_q, kw: dict, *, func: str, checked: bool = False) -> ShiftDensities:
    """Steps 1–3 with the settings ``kw`` (the keywords of :func:`fit_densities`, :data:`_FIT_KEYS`)."""
    bandwidth, n_samples, seed, points, strict, precision, device, thresholds = (kw[k] for k in _FIT_KEYS)
    if checked:
        classes = np.unique(y_p)
    else:
        z_p, y_p, z_q, y_q, classes = _check_inputs(z_p, y_p, z_q, y_q, bandwidth=bandwidth, n_samples=n_samples,
                                                    seed=seed, precision=precision, thresholds=thresholds,
                                                    func=func, points=points, stacklevel=4)
    n_p, n_q, d = len(z_p), len(z_q), z_p.shape[1]
    pooled = np.concatenate([z_p, z_q])
    scaler = StandardScaler().fit(pooled)
    pooled = scaler.transform(pooled)
    zp, zq = pooled[:n_p], pooled[n_p:]
    C = len(classes)
    if bandwidth == "scott":
        kde_w = gaussian_kde(pooled.T)  # OoD-Bench's sampling_pdf
        chol_w, cov_w = kde_w.cho_cov, kde_w.covariance
        env_chols = np.stack([_scipy_kernel(zp), _scipy_kernel(zq)])
        kp = _class_kernels(zp, y_p, classes, strict, "p")
        kq = _class_kernels(zq, y_q, classes, strict, "q")
        skipped = np.array([a is None or b is None for a, b in zip(kp, kq)])
        eye = np.eye(d)
        class_chols = np.stack([k if k is not None else eye for k in kp + kq])
    else:
        within = 0.5 * (covariance(zp) + covariance(zq))
        try:
            chol_w = np.linalg.cholesky(within) * scott_factor((n_p + n_q) / 2, d)
            cov_w = chol_w @ chol_w.T
        except np.linalg.LinAlgError as exc:
            raise ValueError("estimate_shift: bandwidth='shared' needs a non-singular within-environment "
                             "covariance of the features") from exc
        env_chols = class_chols = chol_w
        counts = np.array([[np.sum(y_p == c), np.sum(y_q == c)] for c in classes])
        skipped = counts.min(1) < 1
    if points is None:
        points = kde_resample(pooled, cov_w, n_samples, seed)
    else:
        points = check_features(points, "points", func=func, d=d, to="numpy")
    kw = dict(device=device, chunk_elems=2**20, max_abs_err=_KDE_MAX_ABS_ERR,
              dtype=torch.float64 if precision == "float64" else torch.float32)
    inv = np.searchsorted(classes, np.concatenate([y_p, y_q]))
    groups = inv.copy()
    groups[n_p:] += C
    env = (np.arange(n_p + n_q) >= n_p).astype(np.int64)
    m = len(points)
    if bandwidth == "scott":
        packed, valid, _ = pack_groups(pooled, env, 2)
        pq = np.exp(grouped_kde_logpdf(points, packed, valid, env_chols, **kw))
        need_w, need_c = _needed(pq, thresholds)
        w = np.full(m, np.inf)
        if need_w.any():
            packed, valid, _ = pack_groups(pooled, np.zeros(n_p + n_q, dtype=np.int64), 1)
            w[need_w] = np.exp(grouped_kde_logpdf(points[need_w], packed, valid, chol_w[None], **kw))[:, 0]
        dens_c = np.zeros((m, 2 * C))
        if need_c.any():
            packed, valid, _ = pack_groups(pooled, groups, 2 * C)
            dens_c[need_c] = np.exp(grouped_kde_logpdf(points[need_c], packed, valid, class_chols, **kw))
    else:  # one kernel: class densities give p, q and w as exact mixtures
        packed, valid, _ = pack_groups(pooled, groups, 2 * C)
        dens_c = np.exp(grouped_kde_logpdf(points, packed, valid, chol_w, **kw))
        counts_g = np.bincount(groups, minlength=2 * C).astype(np.float64)
        pq = np.stack([dens_c[:, :C] @ (counts_g[:C] / n_p), dens_c[:, C:] @ (counts_g[C:] / n_q)], 1)
        w = (n_p * pq[:, 0] + n_q * pq[:, 1]) / (n_p + n_q)
    dens_c[:, np.r_[skipped, skipped]] = 0.0
    cnt_p = np.array([np.sum(y_p == c) for c in classes], dtype=np.float64) * ~skipped
    cnt_q = np.array([np.sum(y_q == c) for c in classes], dtype=np.float64) * ~skipped
    if cnt_p.sum() == 0:
        raise ValueError(f"estimate_shift: no class has a KDE in both environments (scipy needs more than d = {d} "
                         f"points per class and a non-singular covariance; class counts in p: "
                         f"{[int(np.sum(y_p == c)) for c in classes][:20]}); use fewer feature dimensions or more data")
    return ShiftDensities(points=points, w=w, p=pq[:, 0], q=pq[:, 1], p_y=dens_c[:, :C], q_y=dens_c[:, C:],
                          prior_p=cnt_p / cnt_p.sum(), prior_q=cnt_q / cnt_q.sum(), classes=classes,
                          skipped=skipped, bandwidth=bandwidth,
                          thresholds=None if thresholds is None else (float(thresholds[0]), float(thresholds[1])))


def _needed(pq: np.ndarray, thresholds: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """Points where w resp. the class densities are used by ``thresholds`` (all points for None)."""
    if thresholds is None:
        return np.ones(len(pq), dtype=bool), np.ones(len(pq), dtype=bool)
    eps_div, eps_cor = thresholds
    in_div = (pq < eps_div).any(1)
    in_cor = (pq > eps_cor).all(1)
    return in_div | in_cor, in_cor


def estimate_shift(
    z_p: np.ndarray,
    y_p: np.ndarray,
    z_q: np.ndarray,
    y_q: np.ndarray,
    *,
    formula: Literal["eq5", "hellinger"] = "eq5",
    eps_div: float = EPS_DIV,
    eps_cor: float = EPS_COR,
    n_samples: int = N_SAMPLES,
    seed: int | np.random.RandomState | None = 0,
    bandwidth: Literal["scott", "shared"] = "scott",
    precision: Literal["float32", "float64"] = "float32",
    device: torch.device | str | None = None,
) -> ShiftEstimate:
    """Diversity and correlation shift between ``z_p`` (training env) and ``z_q`` (test env), Ye et al. 2022, Def. 1.

    Defaults reproduce OoD-Bench's ``quantify.py --legacy_mode`` (Definition 1 with eq. 5) with its default
    thresholds and sample size; ``seed`` gives the same Monte-Carlo points as its ``--seed``.
    ``formula="hellinger"`` is its current default mode. See the module docstring for every step.

    Parameters
    ----------
    z_p, z_q : [n_p, d], [n_q, d] arrays or tensors of floats
        Features of the two environments, the same d. **Valid regime: d ≤ 9** (use the environment classifier's
        8-d features, as OoD-Bench): above, the estimate reports shift on i.i.d. data (0.44 at d = 16), so
        9 < d ≤ 16 warns (:class:`dganalysis.shift.regime.ShiftRegimeWarning`) and d > 16 is refused outside
        ``with dganalysis.shift.allow_high_dim():`` (see :mod:`dganalysis.shift.regime` and docs/validation.md).
    y_p, y_q : [n_p], [n_q] integer class labels (the same classes in both; ``[n, 1]`` squeezed, whole floats ok)
    formula : ``"eq5"`` (Definition 1 with eq. 5) or ``"hellinger"`` (squared-Hellinger form)
    eps_div, eps_cor : density thresholds ≥ 0 (OoD-Bench's 1e-12 and 5e-4; or calibrated,
        :func:`dganalysis.shift.calibrate_thresholds`)
    n_samples : Monte-Carlo points (≥ 1); ``seed``: an integer, a numpy RandomState or None
    bandwidth : ``"scott"`` (scipy's default per density, OoD-Bench) or ``"shared"`` (one kernel)
    precision, device : the KDE's float precision and torch device

    Returns
    -------
    :class:`ShiftEstimate` with ``diversity`` and ``correlation`` (D_div, D_cor: dimensionless, in [0, 1] up to
    Monte-Carlo error; 0 = no shift), ``diversity_se`` / ``correlation_se`` (their Monte-Carlo standard errors),
    ``share_div`` / ``share_cor`` (fraction of Monte-Carlo points counted for each term), ``per_class_correlation``
    (each class's part of D_cor, over ``classes``), ``skipped_classes``, and the settings used (``n_samples``,
    ``eps_div``, ``eps_cor``, ``formula``, ``bandwidth``). ``as_dict()`` gives the scalars.

    :func:`fit_densities` (then :meth:`ShiftDensities.estimate`) does the same in two steps and also takes given
    Monte-Carlo ``points`` and ``strict`` (an error instead of skipping a class too small for a KDE).

    Example: ``estimate_shift(z_train, y_train, z_test, y_test).diversity``.
    """
    f = "estimate_shift"
    check_choice(formula, FORMULAS, "formula", func=f)
    eps_div = check_scalar(eps_div, "eps_div", func=f, low=0.0)
    eps_cor = check_scalar(eps_cor, "eps_cor", func=f, low=0.0)
    z_p, y_p, z_q, y_q, _ = _check_inputs(z_p, y_p, z_q, y_q, bandwidth=bandwidth, n_samples=n_samples, seed=seed,
                                          precision=precision, thresholds=(eps_div, eps_cor),
                                          func=f)
    with threads.blas_threads(1):
        dens = _fit_densities(z_p, y_p, z_q, y_q, dict(bandwidth=bandwidth, n_samples=n_samples, seed=seed, points=None,
                                                      strict=False, precision=precision, device=device,
                                                      thresholds=(eps_div, eps_cor)), func=f, checked=True)
    return dens.estimate(eps_div=eps_div, eps_cor=eps_cor, formula=formula)
