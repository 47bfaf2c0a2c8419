"""Worst-case loss at Wasserstein-2 distance ρ from the source, through the dual (the WC-DG poster; Sinha et al., 2017).

The poster's quantity, in the representation space z = g(x) with classifier h:

    WC(ρ) = sup_{P: W2(P, g#Q) ≤ ρ} E_P[ℓ(h(z), y)]
          = inf_{γ ≥ 0} γρ² + E_{(z0, y) ~ g#Q}[ψ(γ; z0, y)],   ψ = sup_z ℓ(h(z), y) − γ‖z − z0‖²

(transport moves z only; labels stay). How we solve it (choices the poster leaves open):

- **Inner sup** per sample: :mod:`dganalysis.dro.inner` — monotone batched gradient ascent with step
  ``1/(2γ + L)`` for ``ce`` (and any callable loss or non-affine head); the exact closed forms for the
  hinge and the 0-1 loss with an affine head.
- **Outer inf over γ** (a 1-D convex problem: ``Ψ(γ) = E ψ`` is a supremum of affine functions of γ,
  with slope ``Ψ'(γ) = −E‖z*(γ) − z0‖² = −T(γ)²``). Ψ does not depend on ρ, so one path serves all ρ:
  (1) a geometric grid ``γ_k = γ_max / r^k`` walked from large to small γ, each inner problem warm
  started at the previous solution, until the transport T(γ) exceeds the largest ρ; this brackets every
  ρ's minimiser (where ``T(γ*) = ρ``); (2) optionally ``refine_iters`` bisection steps on log γ of the
  sign of ``φ'(γ) = ρ² − T(γ)²``, batched over all ρ. Every evaluated γ serves every ρ (the curve is a
  minimum of functions non-decreasing in ρ, so it is non-decreasing by construction), and ρ = 0 gives
  the nominal loss. ``γ_max = G/ρ_min + L`` with G the RMS
  gradient norm at z0 (for large γ, T ≈ G/(2γ)).
- **Bundle**: each sample keeps every maximiser found along the path (its loss and cost), and the
  reported dual uses ``ψ̂_i(γ) = max_k ℓ_ik − γ d²_ik`` over all of them, minimised over the evaluated γ
  and geometric points between them (:func:`_restricted_dual`). By LP duality this equals the best
  transport plan supported on the found points, so the value is *attained* by a feasible distribution
  (a lower bound on the true WC(ρ), exact when the inner sups are: γ > L/2, or the closed forms), and
  it is robust to warm-started ascents that land in different local maxima (non-concave heads, input
  space). ``primal_loss``/``transport_distance``: the best mixture of two plans at adjacent γ, the
  primal side of the same certificate (equal to the dual value up to the γ grid).
- **Scale** (the one place that states it; every function of :mod:`dganalysis.dro` defers here): the poster's
  ρ is a raw Euclidean W2 distance in z, but z's scale is arbitrary (g·c with h(·/c) is the same model, with
  the same predictions and losses, yet every raw distance multiplied by c), so a raw ρ is not comparable across
  models. The default everywhere is therefore ``scale="std"``: ρ in units of the representation's spread
  ``s = sqrt(E‖z − E z‖²)`` (ρ = 0.1 is 10% of it), computed on the z given; the curve of a model is then the
  same whatever c. ``scale="none"`` gives the poster's raw distance (ρ in z's own units), ``scale=c`` a fixed
  unit c; both are comparable only between models whose z share one scale.
- **0-1 loss** (affine head): exact. Cost to flip sample i is its squared distance d_i² to the
  misclassification region; the dual is piecewise linear in γ with breakpoints 1/d_i², and its minimum
  is the fractional-knapsack primal: flip correctly classified samples in order of d_i² while
  ``E[cost] ≤ ρ²`` (the last one fractionally).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from dganalysis import threads
from dganalysis.dro import inner
from dganalysis.dro.inner import Head
from dganalysis.dro.losses import LOSSES, LossFn, get_loss, loss_name
from dganalysis.validation import (
    ConfigError,
    check_callable,
    check_choice,
    check_features,
    check_labels,
    check_rhos,
    check_scalar,
    describe,
    did_you_mean,
)

log = logging.getLogger(__name__)
StatsFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
#: distance units: the representation's spread (the default), or the WC-DG poster's raw distance (module docstring)
SCALES = ("std", "none")


@dataclass
class DualConfig:
    """Solver settings. ``grid_ratio``: γ_k/γ_{k+1}; ``first_steps``/``steps``: inner ascent iterations at
    the first / every later γ (warm started); ``refine_iters``: bisection steps per ρ; ``tol``: inner stop.

    Defaults chosen on the benchmark problem (bench/worst_case_speed.py): against a reference with ratio 1.1,
    40 steps and 3 bisection steps, the excess loss WC(ρ) − nominal is within ~1%; the error there comes
    from the inner ascent (warm-started, few steps, slightly low), not from the γ grid, so bisection is off
    by default (each bisection step costs one inner solve per ρ, while a grid point serves every ρ).
    """

    grid_ratio: float = 1.2
    max_grid: int = 120
    first_steps: int = 100
    steps: int = 6
    refine_iters: int = 0
    tol: float = 1e-5
    smoothness: float | None = None  # L; None = estimate (see inner.estimate_smoothness)
    max_rows: int = 20_000  # rows (samples × ρ) per batched refinement solve

    def __post_init__(self) -> None:
        where = "DualConfig"
        check_scalar(self.grid_ratio, "grid_ratio", func=where, low=1.0, low_open=True)
        for name in ("max_grid", "first_steps", "max_rows"):
            check_scalar(getattr(self, name), name, func=where, kind="int", low=1)
        for name in ("steps", "refine_iters"):
            check_scalar(getattr(self, name), name, func=where, kind="int", low=0)
        check_scalar(self.tol, "tol", func=where, low=0.0)
        check_scalar(self.smoothness, "smoothness", func=where, low=0.0, nullable=True)


class _Problem:
    """The inner problems of one data set: ψ_i(γ) for replicated rows (one γ per row)."""

    def __init__(self, z0: torch.Tensor, y: torch.Tensor, head: Head, loss: str | LossFn, cfg: DualConfig,
                 project: Callable[[torch.Tensor], torch.Tensor] | None = None, stats_fn: StatsFn | None = None):
        self.z0, self.y, self.head, self.cfg, self.project, self.stats_fn = z0, y, head, cfg, project, stats_fn
        self.loss_fn = get_loss(loss)
        self.lin = inner.linear_params(head) if project is None else None
        self.closed_hinge = self.lin is not None and not callable(loss) and loss_name(loss) == "hinge"
        with torch.no_grad():
            self.loss0 = self.loss_fn(head(z0), y).detach()
        if self.closed_hinge:
            W = self.lin[0]
            gram = W @ W.T
            sq = gram.diagonal()
            a2 = (sq[None, :] + sq[y][:, None] - 2 * gram[y]).clamp_min(0)
            self.grad_rms = float(a2.max(1).values.mean().sqrt())
            self.smoothness = 0.0
        else:
            _, g0 = inner.loss_and_grad(head, self.loss_fn, z0, y)
            self.grad_rms = float(g0.flatten(1).square().sum(1).mean().sqrt())
            self.smoothness = cfg.smoothness if cfg.smoothness is not None else inner.estimate_smoothness(
                head, self.loss_fn, z0, y)

    def solve(self, gammas: torch.Tensor, z_init: torch.Tensor | None, steps: int):
        """ψ for γ = ``gammas[r]`` on every sample; per-sample (psi, loss, ‖z* − z0‖², extra) [R, n] and z* [R, n, ...]."""
        R, n = len(gammas), len(self.z0)
        z0 = self.z0.repeat(R, *([1] * (self.z0.dim() - 1)))
        y = self.y.repeat(R)
        g = gammas.repeat_interleave(n)
        if self.closed_hinge:
            psi, loss, d2, z = inner.hinge_linear(z0, y, *self.lin, g, return_z=self.stats_fn is not None)
        else:
            zi = None if z_init is None else z_init.reshape(z0.shape)
            psi, loss, d2, z = inner.gradient_ascent(self.head, self.loss_fn, z0, y, g, self.smoothness, zi, steps,
                                                     self.cfg.tol, self.project)
        extra = None
        if self.stats_fn is not None:
            with torch.no_grad():
                extra = self.stats_fn(z, z0).reshape(R, n)
        zz = None if z is None else z.reshape(R, *self.z0.shape)
        return psi.reshape(R, n), loss.reshape(R, n), d2.reshape(R, n), extra, zz


def _dual_curve(prob: _Problem, rhos: np.ndarray, progress: bool = False) -> dict[str, np.ndarray]:
    """Minimise γρ² + Ψ(γ) for every ρ (grid bracketing + batched bisection); see the module docstring."""
    cfg = prob.cfg
    n = len(prob.z0)
    # every maximiser found, per sample: loss ℓ_ik and cost d²_ik (k = candidate γ); z0 itself is k = 0
    pts_loss = [prob.loss0.double().cpu()]
    pts_d2 = [torch.zeros(n, dtype=torch.float64)]
    pts_extra = [torch.zeros(n, dtype=torch.float64)]
    evaluated: list[float] = []

    def add(gs, psi, loss, d2, extra):
        for i in range(len(gs)):
            evaluated.append(float(gs[i]))
            pts_loss.append(loss[i].double().cpu())
            pts_d2.append(d2[i].double().cpu())
            pts_extra.append(extra[i].double().cpu() if extra is not None else torch.full((n,), float("nan")))
        return d2.mean(1)

    pos = rhos[rhos > 0]
    R = len(pos)
    if R:
        rho_min, rho_max = float(pos.min()), float(pos.max())
        g_hi = max(prob.grad_rms / rho_min, 1e-8) + prob.smoothness
        lo = np.full(R, np.nan)
        hi = np.full(R, np.nan)
        z_store: list[torch.Tensor | None] = [None] * R
        z = None
        bar = tqdm(range(cfg.max_grid), desc="worst-case γ grid", disable=not progress, leave=False)
        prev = g_hi * cfg.grid_ratio
        for k in bar:
            gamma = g_hi / cfg.grid_ratio**k
            psi, loss, t2, extra, zz = prob.solve(torch.tensor([gamma], dtype=prob.z0.dtype, device=prob.z0.device),
                                                  z, cfg.first_steps if k == 0 else cfg.steps)
            t2 = add([gamma], psi, loss, t2, extra)
            z = None if zz is None else zz[0]
            newly = np.isnan(lo) & (float(t2[0]) >= pos**2)
            for r in np.flatnonzero(newly):
                lo[r], hi[r], z_store[r] = gamma, prev, z
            prev = gamma
            bar.set_postfix(gamma=f"{gamma:.3g}", T=f"{math.sqrt(float(t2[0])):.3g}")
            if not np.isnan(lo).any():
                break
        if np.isnan(lo).any():
            log.warning("worst-case dual: transport at the smallest γ (%.3g) stays below ρ = %.3g; the values for "
                        "the largest ρ are upper bounds from that γ (raise DualConfig.max_grid)", gamma, rho_max)
        act = np.flatnonzero(~np.isnan(lo))
        if len(act) and cfg.refine_iters > 0:
            chunk = max(1, cfg.max_rows // len(prob.z0))  # ρ solved together (bounded memory)
            for start in range(0, len(act), chunk):
                a = act[start:start + chunk]
                zi = None if prob.closed_hinge else torch.stack([z_store[r] for r in a])
                for _ in range(cfg.refine_iters):
                    mid = np.sqrt(lo[a] * hi[a])
                    psi, loss, t2, extra, zz = prob.solve(
                        torch.tensor(mid, dtype=prob.z0.dtype, device=prob.z0.device), zi, cfg.steps)
                    t2 = add(mid, psi, loss, t2, extra)
                    above = t2.double().cpu().numpy() > pos[a] ** 2
                    lo[a] = np.where(above, mid, lo[a])
                    hi[a] = np.where(above, hi[a], mid)
                    zi = zz
    return _restricted_dual(torch.stack(pts_loss), torch.stack(pts_d2), torch.stack(pts_extra), evaluated, rhos)


def _restricted_dual(loss: torch.Tensor, d2: torch.Tensor, extra: torch.Tensor, evaluated: list[float],
                     rhos: np.ndarray, refine: int = 8) -> dict[str, np.ndarray]:
    """The dual with each ψ_i(γ) taken over *all* maximisers found for sample i (``loss``, ``d2``: [K, n]).

    ``Ψ̂(γ) = mean_i max_k ℓ_ik − γ d²_ik`` is a lower estimate of Ψ that uses every inner solve for every
    γ (warm-started ascents can end in different local maxima in non-concave problems). Its dual
    ``min_γ γρ² + Ψ̂(γ)`` is the value of the best transport plan supported on the found points (LP
    duality), so primal and dual agree; we minimise over the evaluated γ plus ``refine`` geometric points
    between neighbours, and take the best mixture of two adjacent plans for the primal side.
    """
    nominal = float(loss[0].mean())
    g = np.unique(np.asarray(evaluated, dtype=float))
    if len(g) > 1:
        fine = np.exp(np.linspace(np.log(g[0]), np.log(g[-1]), (len(g) - 1) * (refine + 1) + 1))
        g = np.unique(np.concatenate([g, fine]))
    G = len(g)
    psi = np.empty(G)
    t2 = np.empty(G)
    lmean = np.empty(G)
    xmean = np.empty(G)
    gt = torch.as_tensor(g, dtype=torch.float64)
    chunk = max(1, 4_000_000 // max(1, loss.numel()))
    for s in range(0, G, chunk):
        gg = gt[s:s + chunk, None, None]
        val = loss[None] - gg * d2[None]  # [g, K, n]
        best, k = val.max(1)
        psi[s:s + chunk] = best.mean(1).numpy()
        t2[s:s + chunk] = d2.gather(0, k).mean(1).numpy()
        lmean[s:s + chunk] = loss.gather(0, k).mean(1).numpy()
        xmean[s:s + chunk] = extra.gather(0, k).mean(1).numpy()
    # γ → ∞ keeps z0
    t2_all, l_all, x_all = np.append(t2, 0.0), np.append(lmean, nominal), np.append(xmean, 0.0)
    out = {key: np.empty(len(rhos)) for key in ("worst_case_loss", "gamma", "transport_distance", "primal_loss",
                                                "extra")}
    for i, rho in enumerate(rhos):
        if rho <= 0 or G == 0:
            out["worst_case_loss"][i], out["gamma"][i], out["transport_distance"][i] = nominal, np.inf, 0.0
            out["primal_loss"][i], out["extra"][i] = nominal, 0.0
            continue
        vals = g * rho**2 + psi
        j = int(np.argmin(vals))
        out["worst_case_loss"][i], out["gamma"][i] = vals[j], g[j]
        out["primal_loss"][i], tt, out["extra"][i] = _primal_mixture(t2_all, l_all, x_all, rho**2)
        out["transport_distance"][i] = math.sqrt(max(tt, 0.0))
    out["nominal"] = np.full(len(rhos), nominal)
    return out


def _primal_mixture(t2: np.ndarray, loss: np.ndarray, extra: np.ndarray, budget: float) -> tuple[float, float, float]:
    """Best feasible primal value from the computed maximisers: each candidate γ gave a distribution at
    transport² ``t2`` with mean loss ``loss``; a mixture of two (each sample randomised between its two
    maximisers) has transport² and loss the same mixture, so the best feasible value at ``budget`` = ρ² is
    the upper concave envelope of the points (t2, loss) at ρ². Returns (loss, transport², extra) of it.
    A lower bound on WC(ρ) that matches the dual value when the inner problems are solved exactly; the
    dual's minimiser can fall on a jump of T(γ) (non-concave inner problems), where only a mixture is tight.
    """
    ok = t2 <= budget
    k = int(np.argmax(np.where(ok, loss, -np.inf)))
    best = (float(loss[k]), float(t2[k]), float(extra[k]))
    lo, hi = np.flatnonzero(ok), np.flatnonzero(~ok)
    if len(lo) and len(hi):
        a, b = lo[:, None], hi[None, :]
        theta = (t2[b] - budget) / np.maximum(t2[b] - t2[a], 1e-300)  # weight of a
        val = theta * loss[a] + (1 - theta) * loss[b]
        ia, ib = np.unravel_index(int(np.argmax(val)), val.shape)
        if val[ia, ib] > best[0]:
            th = theta[ia, ib]
            best = (float(val[ia, ib]), budget, float(th * extra[lo[ia]] + (1 - th) * extra[hi[ib]]))
    return best


def zero_one_curve(z: torch.Tensor, y: torch.Tensor, W: torch.Tensor, b: torch.Tensor, rhos: Sequence[float],
                   ) -> dict[str, np.ndarray]:
    """Exact worst-case 0-1 loss of the affine head ``z ↦ W z + b`` (fractional knapsack = the dual's minimum; see
    the module docstring), in raw distance units (no scale).

    ``z`` [n, d] representations, ``y`` [n] integer labels in [0, C), ``W`` [C, d], ``b`` [C], ``rhos`` radii ≥ 0.
    Returns arrays of length len(rhos): ``worst_case_loss`` (fraction of samples misclassified in the worst case,
    in [0, 1]), ``gamma`` (the dual minimiser), ``transport_distance`` (W2 distance used, ≤ ρ), ``primal_loss``
    (= worst_case_loss: exact here), ``extra`` (NaN) and ``nominal`` (the error at ρ = 0).
    """
    f = "zero_one_curve"
    z = check_features(z, "z", func=f, to="torch")
    W = check_features(W, "W", func=f, d=z.shape[1], to="torch").to(z)
    b = check_features(b, "b", func=f, ndim=1, n=len(W), to="torch").to(z)
    y = check_labels(y, len(z), "y", func=f, to="torch", n_classes=len(W), device=z.device)
    rhos = check_rhos(rhos, func=f)
    d2, _ = inner.zero_one_linear_distance(z, y, W, b)
    d2 = d2.double().cpu().numpy()
    n = len(d2)
    wrong = d2 <= 0
    err = wrong.mean()
    cost = np.sort(d2[~wrong])
    csum = np.concatenate([[0.0], np.cumsum(cost)])
    out = {k: np.empty(len(rhos)) for k in ("worst_case_loss", "gamma", "transport_distance", "primal_loss", "extra")}
    for i, rho in enumerate(rhos):
        budget = n * rho**2
        k = int(np.searchsorted(csum, budget, side="right") - 1)  # samples fully flipped
        if k >= len(cost):
            val, gamma, used = 1.0, 0.0, csum[-1]
        elif rho <= 0:
            val, gamma, used = err, np.inf, 0.0
        else:
            frac = (budget - csum[k]) / cost[k]
            val, gamma, used = err + (k + frac) / n, 1.0 / cost[k], budget
        out["worst_case_loss"][i], out["gamma"][i] = val, gamma
        out["transport_distance"][i] = math.sqrt(used / n)
        out["primal_loss"][i], out["extra"][i] = val, np.nan
    out["nominal"] = np.full(len(rhos), err)
    return out


def check_scale(scale: object, name: str = "scale", func: str | None = None) -> str | float:
    """``"std"``, ``"none"`` or a positive finite number (the distance unit; see :func:`representation_scale`)."""
    if isinstance(scale, str):
        return check_choice(scale, SCALES, name, func=func)
    return check_scalar(scale, name, func=func, low=0.0, low_open=True)


def representation_scale(z: torch.Tensor, scale: str | float) -> float:
    """The unit of distance for representations ``z`` [n, ...]: 1 (``"none"``), the spread
    ``s = sqrt(E‖z − E z‖²)`` (``"std"``), or a given positive number (returned as is)."""
    scale = check_scale(scale, func="representation_scale")
    if not isinstance(scale, str):
        return float(scale)
    if scale == "none":
        return 1.0
    z = check_features(z, "z", func="representation_scale", ndim=None, min_ndim=2, to="torch")
    zf = z.detach().flatten(1)
    return float((zf - zf.mean(0)).square().sum(1).mean().sqrt().clamp_min(1e-12))


def check_inputs(func: str, z: object, y: object, head: object, loss: object, *, z_name: str = "z",
                 probe: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The checks every public function of :mod:`dganalysis.dro` runs before any work (:mod:`dganalysis.validation`).

    ``z`` [n, ...] numbers (numpy array, tensor or nested lists; a numpy array becomes a float32 tensor, a float
    tensor is kept as is with its device and graph); ``head`` a callable; ``loss`` a known name or a callable. With
    a named loss ``y`` must be integer class labels [n] (or [n, 1]; whole-number floats accepted) in
    ``[0, C)``, C the number of the head's outputs (found by calling ``head`` on two rows when ``probe``); with a
    callable loss ``y`` holds its targets (any numbers, one per sample). Returns ``(z, y)`` as tensors, y on z's
    device. ``probe=False`` (the training loss, called every step) checks types and shapes only: no pass over the
    data that would synchronise a GPU.
    """
    z = check_features(z, z_name, func=func, ndim=None, min_ndim=2, to="torch", finite=probe)
    check_callable(head, "head", func=func, what="a head h: z → logits (a callable such as nn.Linear)")
    if not callable(loss):
        if not isinstance(loss, str):
            raise ConfigError(f"{func}: parameter 'loss': expected one of {sorted(LOSSES)} or a callable "
                              f"(outputs, y) -> [n], got {describe(loss)}")
        try:
            loss_name(loss)
        except ValueError:
            raise ConfigError(f"{func}: parameter 'loss': expected one of {sorted(LOSSES)} or a callable "
                              f"(outputs, y) -> [n], got {loss!r}{did_you_mean(loss, LOSSES)}") from None
    n_classes = None
    if probe:
        try:
            with torch.no_grad():
                out = head(z[:2].detach())
        except Exception as exc:  # noqa: BLE001 - any failure here means z and head do not fit
            raise ConfigError(f"{func}: parameters {z_name!r} and 'head' do not fit: head({z_name}[:2]) with "
                              f"{z_name}[:2] of shape {tuple(z[:2].shape)} raised {type(exc).__name__}: {exc}") from exc
        if not callable(loss):
            if not isinstance(out, torch.Tensor) or out.dim() != 2:
                raise ConfigError(f"{func}: parameter 'head': expected logits of shape [n, C] from head({z_name}), got "
                                  f"{describe(out)}")
            n_classes = out.shape[1]
    if callable(loss):
        t = check_features(y, "y", func=func, ndim=None, min_ndim=1, n=len(z), to="torch", finite=probe)
        return z, t.to(z.device)
    return z, check_labels(y, len(z), "y", func=func, to="torch", n_classes=n_classes, device=z.device,
                           rows_of=repr(z_name), values=probe)


def check_config(config: object, func: str, name: str = "config") -> None:
    """``config`` is None or a :class:`DualConfig`."""
    if config is not None and not isinstance(config, DualConfig):
        raise ConfigError(f"{func}: parameter {name!r}: expected a DualConfig or None, got {describe(config)}")


def worst_case_curve(z: torch.Tensor, y: torch.Tensor, head: Head, rhos: float | Sequence[float],
                     loss: str | LossFn = "ce", scale: str | float = "std", config: DualConfig | None = None,
                     progress: bool = False) -> pd.DataFrame:
    """Worst-case loss vs radius ρ in the representation space (the WC-DG poster; Sinha et al. 2017, Eq. (2)).

    ``WC(ρ) = sup_{P: W2(P, Q) ≤ ρ} E_P ℓ(h(z), y)``: the largest mean loss of the head over all distributions of
    representations within Wasserstein-2 distance ρ of the sample's (labels stay), computed through the dual
    ``inf_γ≥0 γρ² + E ψ_γ`` (see the module docstring).

    Parameters
    ----------
    z : [n, d] (or [n, ...]) array or tensor of floats
        Representations z = g(x) of the source samples (numpy arrays, tensors or nested lists; converted to a
        float tensor; a tensor keeps its device).
    y : [n] integer class labels in [0, C)
        ``[n, 1]`` is squeezed; floats must be whole numbers. With a callable ``loss``: its targets, any numbers.
    head : callable z → logits [n, C]
        The classifier h (e.g. ``model.classifier``); an ``nn.Linear`` uses the exact closed forms for hinge / 0-1.
    rhos : float or 1-D sequence of floats ≥ 0
        Radii, in units of ``scale`` (ρ = 0.1 with ``scale="std"`` is 10% of the representation's spread).
    loss : ``"ce"`` (cross-entropy, nats), ``"hinge"`` (Crammer–Singer), ``"01"`` (error; affine heads only) or a
        callable ``(outputs, y) -> [n]`` per-sample loss.
    scale : ``"std"`` (default), ``"none"`` or a positive number
        The unit of distance (why ``"std"`` is the default: the module docstring's *Scale*): ``"std"`` is
        ``s = sqrt(E‖z − E z‖²)`` computed on ``z``, the unit of the worst-case study (dganalysis.dro.study) and
        of training (:func:`dganalysis.dro.robust_surrogate`); ``"none"`` is the WC-DG poster's raw Euclidean
        distance in z; a number is a fixed unit.
    config : :class:`DualConfig` or None — solver settings (defaults are tested on bench/worst_case_speed.py).
    progress : bool — a tqdm bar over the γ grid.

    Returns
    -------
    pandas.DataFrame, one row per ρ (in the order given), columns:

    - ``rho``: the radius (units of ``scale``);
    - ``worst_case_loss``: WC(ρ), the mean loss under the worst distribution found (dual value; the loss's unit);
    - ``gamma``: the dual minimiser γ* (loss per squared unit of ``scale``; ``inf`` at ρ = 0);
    - ``primal_loss``, ``transport_distance``: mean loss and W2 distance (units of ``scale``, ≤ ρ) of the best
      feasible distribution found — a lower bound on WC(ρ), equal to it up to the γ grid;
    - ``nominal``: mean loss of the unperturbed sample (= worst_case_loss at ρ = 0);
    - ``loss``: the loss's name (``"custom"`` for a callable); ``scale``: s, the unit in raw z distances.

    Example: ``worst_case_curve(z, y, model.classifier, [0, 0.05, 0.1], loss="ce")``.
    Bad input raises :class:`dganalysis.validation.ConfigError` (a ValueError) naming the parameter.
    """
    f = "worst_case_curve"
    z, y = check_inputs(f, z, y, head, loss)
    r = check_rhos(rhos, func=f)
    scale = check_scale(scale, func=f)
    check_config(config, f)
    cfg = config or DualConfig()
    z = z.detach().float()
    s = representation_scale(z, scale)
    name = "custom" if callable(loss) else loss_name(loss)
    # a fixed count (the caller's, or $DGANALYSIS_THREADS), never the load: float32 sums depend on it
    n_threads = threads.fixed_count() if z.device.type == "cpu" else torch.get_num_threads()
    with torch.no_grad(), threads.torch_threads(n_threads):
        if name == "01":
            lin = inner.linear_params(head)
            if lin is None:
                raise ConfigError(f"{f}: parameter 'loss': the 0-1 worst case needs an affine head (nn.Linear), got "
                                  f"{describe(head)}; use loss='hinge' or 'ce' for other heads")
            res = zero_one_curve(z, y, *lin, r * s)
        else:
            res = _dual_curve(_Problem(z, y, head, loss, cfg), r * s, progress)
    return pd.DataFrame({
        "rho": r, "worst_case_loss": res["worst_case_loss"], "gamma": res["gamma"] * s**2,
        "transport_distance": res["transport_distance"] / s, "primal_loss": res["primal_loss"],
        "nominal": res["nominal"], "loss": name, "scale": s,
    })


@dataclass
class WorstCaseSamples:
    """Maximisers of the inner problem at the optimal γ for one ρ (the worst-case distribution's support).

    ``z0`` [n, d] the given representations, ``z`` [n, d] where the worst case moves each one (raw z units),
    ``y`` [n] labels, ``loss0`` / ``loss`` [n] per-sample losses at z0 / z, ``rho`` the radius and ``gamma`` γ*
    (units of the ``scale`` used), ``worst_case_loss`` WC(ρ) from :func:`worst_case_curve`.
    For the 0-1 loss: the correctly classified samples the knapsack flips are moved just past the
    boundary (the fractional last one is not moved); the others stay.
    """

    z0: torch.Tensor
    z: torch.Tensor
    y: torch.Tensor
    loss0: torch.Tensor
    loss: torch.Tensor
    rho: float
    gamma: float
    worst_case_loss: float


def worst_case_samples(z: torch.Tensor, y: torch.Tensor, head: Head, rho: float, loss: str | LossFn = "ce",
                       scale: str | float = "std", config: DualConfig | None = None) -> WorstCaseSamples:
    """The worst-case samples z* at one radius ``rho`` ≥ 0 (γ* from :func:`worst_case_curve`, then a long inner solve).

    Arguments as :func:`worst_case_curve` (``z`` [n, d], ``y`` [n], ``head``, ``loss``, ``scale`` — default
    ``"std"``, the unit of the siblings — and ``config``), with one radius ``rho`` (a number, units of ``scale``).
    Returns a :class:`WorstCaseSamples` (moved samples, per-sample losses before and after).
    """
    f = "worst_case_samples"
    z, y = check_inputs(f, z, y, head, loss)
    rho = check_scalar(rho, "rho", func=f, low=0.0)
    scale = check_scale(scale, func=f)
    check_config(config, f)
    cfg = config or DualConfig()
    curve = worst_case_curve(z, y, head, [rho], loss, scale, cfg)
    row = curve.iloc[0]
    s = float(row["scale"])
    z = z.detach()
    loss_fn = get_loss(loss)
    name = "custom" if callable(loss) else loss_name(loss)
    with torch.no_grad():
        loss0 = loss_fn(head(z), y)
        if rho <= 0:
            zs = z.clone()
        elif name == "01":
            d2, zb = inner.zero_one_linear_distance(z, y, *inner.linear_params(head))
            order = torch.argsort(torch.where(d2 > 0, d2, torch.full_like(d2, float("inf"))))
            budget = len(z) * (rho * s) ** 2
            flip = torch.zeros(len(z), dtype=torch.bool, device=z.device)
            cum = torch.cumsum(d2[order], 0)
            flip[order[(cum <= budget) & (d2[order] > 0)]] = True
            zs = torch.where(flip[:, None], zb, z)
        else:
            g = torch.full((len(z),), float(row["gamma"]) / s**2, dtype=z.dtype, device=z.device)
            prob = _Problem(z, y, head, loss, cfg)
            if prob.closed_hinge:
                zs = inner.hinge_linear(z, y, *prob.lin, g, return_z=True)[3]
            else:
                zs = inner.gradient_ascent(head, prob.loss_fn, z, y, g, prob.smoothness, None,
                                           cfg.first_steps * 2, cfg.tol)[3]
        lz = loss_fn(head(zs), y)
    return WorstCaseSamples(z, zs, y, loss0, lz, float(rho), float(row["gamma"]), float(row["worst_case_loss"]))
