"""The worst-case objective as a differentiable training loss (WCDG; the WC-DG poster "can be easily incorporated into training").

Penalty form (Sinha et al. 2017, Eq. (2)/(4), "robust surrogate"), in the representation space:

    φ_γ(θ) = E[ sup_u ℓ(h_θ(z0 + s·u), y) − γ‖u‖² ],   z0 = g_θ(x),

with u the displacement in units of the batch's representation spread ``s`` (``scale="std"``; this makes
the objective invariant to rescaling g by c and h by 1/c, which would otherwise let training shrink the
penalty by inflating the feature norm). By Danskin's theorem the gradient is that of
``ℓ(h_θ(z0 + s·u*), y) − γ‖u*‖²`` at the maximiser u* held fixed, which is what we back-propagate:
u* is found on detached tensors (gradient ascent, or the exact hinge closed form), then the loss is
re-evaluated with z0, s and h attached.

Constraint form (the worst-case loss at a chosen ρ): ``WC(ρ) = min_γ γρ² + φ_γ``. Per batch we pick
γ* with the dual solver of :mod:`dganalysis.dro.worst_case` (coarse settings, no gradient) and
back-propagate ``γ*ρ² + φ_{γ*}`` (envelope theorem: γ* held fixed).
"""

from __future__ import annotations

import numpy as np
import torch

from dganalysis.dro import inner
from dganalysis.dro.losses import LossFn, get_loss, loss_name
from dganalysis.dro.worst_case import DualConfig, Head, _dual_curve, _Problem, check_config, check_inputs, check_scale
from dganalysis.validation import ConfigError, check_scalar

#: Coarse dual settings for choosing γ* on a training batch.
TRAIN_CONFIG = DualConfig(grid_ratio=2.0, max_grid=30, first_steps=20, steps=5, refine_iters=2, tol=1e-4)


def _scale(z0: torch.Tensor, scale: str | float) -> torch.Tensor:
    scale = check_scale(scale)
    if scale == "std":
        return (z0 - z0.mean(0)).square().sum(1).mean().sqrt().clamp_min(1e-6)
    if scale == "none":
        return torch.ones((), device=z0.device, dtype=z0.dtype)
    if isinstance(scale, (int, float)) and scale > 0:
        return torch.tensor(float(scale), device=z0.device, dtype=z0.dtype)
    raise ValueError(f"parameter 'scale': expected 'std', 'none' or a positive number, got {scale!r}")


def robust_surrogate(z0: torch.Tensor, y: torch.Tensor, head: Head, gamma: float, loss: str | LossFn = "ce",
                     scale: str | float = "std", steps: int = 10, smoothness: float | None = None,
                     ) -> tuple[torch.Tensor, dict[str, float]]:
    """Differentiable ``φ_γ`` (mean over the batch) and diagnostics (Sinha et al. 2017, Eq. (4)).

    ``z0`` [n, d] float tensor of representations (keeps its autograd graph: the gradient flows to g and h),
    ``y`` [n] integer labels in [0, C), ``head`` z → logits [n, C], ``gamma`` > 0 the penalty (loss per squared unit
    of ``scale``), ``loss`` ``"ce"``/``"hinge"``/``"01"`` or a callable, ``scale`` ``"std"`` (default: units of the
    batch's representation spread, as in training) / ``"none"`` / a positive number, ``steps`` inner ascent
    iterations (from z0), ``smoothness`` L (None: estimated).
    Returns ``(value, info)``: the scalar tensor φ_γ, and ``wc_loss`` (mean loss at the maximisers),
    ``wc_transport`` (RMS displacement, units of ``scale``), ``wc_gamma`` (γ).
    """
    f = "robust_surrogate"
    z0, y = check_inputs(f, z0, y, head, loss, z_name="z0", probe=False)
    gamma = check_scalar(gamma, "gamma", func=f, low=0.0, low_open=True)
    check_scale(scale, func=f)
    steps = check_scalar(steps, "steps", func=f, kind="int", low=0)
    check_scalar(smoothness, "smoothness", func=f, low=0.0, nullable=True)
    loss_fn = get_loss(loss)
    s = _scale(z0, scale)
    zd, sd = z0.detach().float(), float(s.detach())
    g_raw = torch.full((len(zd),), gamma / sd**2, dtype=zd.dtype, device=zd.device)
    lin = inner.linear_params(head)
    with torch.autocast(device_type=zd.device.type, enabled=False):  # the inner solve in fp32 even under bf16 training
        if lin is not None and not callable(loss) and loss_name(loss) == "hinge":
            zs = inner.hinge_linear(zd, y, *[t.float() for t in lin], g_raw, return_z=True)[3]
        else:
            L = smoothness if smoothness is not None else inner.estimate_smoothness(head, loss_fn, zd, y)
            zs = inner.gradient_ascent(head, loss_fn, zd, y, g_raw, L, None, steps, tol=1e-6)[3]
    u = ((zs - zd) / sd).detach().to(z0.dtype)
    adv_loss = loss_fn(head(z0 + s * u), y)
    d2 = u.flatten(1).square().sum(1)
    value = (adv_loss - gamma * d2).mean()
    return value, {"wc_loss": float(adv_loss.detach().mean()), "wc_transport": float(d2.mean().sqrt()), "wc_gamma": gamma}


def choose_gamma(z0: torch.Tensor, y: torch.Tensor, head: Head, rho: float, loss: str | LossFn = "ce",
                 scale: str | float = "std", config: DualConfig | None = None) -> float:
    """γ* minimising γρ² + φ_γ on this batch (no gradient; units of ``scale``).

    ``z0`` [n, d], ``y`` [n] labels, ``head`` z → logits, ``rho`` > 0 the radius (units of ``scale``).
    """
    f = "choose_gamma"
    z0, y = check_inputs(f, z0, y, head, loss, z_name="z0", probe=False)
    rho = check_scalar(rho, "rho", func=f, low=0.0)
    check_scale(scale, func=f)
    check_config(config, f)
    z = z0.detach().float()
    with torch.no_grad(), torch.autocast(device_type=z.device.type, enabled=False):
        s = float(_scale(z, scale))
        res = _dual_curve(_Problem(z, y, head, loss, config or TRAIN_CONFIG), np.array([rho * s]))
    return float(res["gamma"][0]) * s**2


def worst_case_penalty(z0: torch.Tensor, y: torch.Tensor, head: Head, rho: float | None = None,
                       gamma: float | None = None, loss: str | LossFn = "ce", scale: str | float = "std",
                       steps: int = 10) -> tuple[torch.Tensor, dict[str, float]]:
    """The WCDG term: ``γ*ρ² + φ_{γ*}`` when ``rho`` is given (constraint form), else ``φ_gamma`` (penalty form).

    ``z0`` [n, d] float tensor (with its graph), ``y`` [n] integer labels, ``head`` z → logits [n, C]; exactly one of
    ``rho`` ≥ 0 (radius, units of ``scale``) or ``gamma`` > 0; ``scale`` default ``"std"`` (the batch's spread).
    Returns ``(value, info)`` as :func:`robust_surrogate`.
    """
    f = "worst_case_penalty"
    z0, y = check_inputs(f, z0, y, head, loss, z_name="z0", probe=False)
    if (rho is None) == (gamma is None):
        raise ConfigError(f"{f}: parameters 'rho', 'gamma': give exactly one of 'rho' (constraint form) or 'gamma' "
                          f"(penalty form), got rho={rho!r}, gamma={gamma!r}")
    if rho is not None:
        rho = check_scalar(rho, "rho", func=f, low=0.0)
    check_scale(scale, func=f)
    if rho is not None:
        if rho <= 0:
            value = get_loss(loss)(head(z0), y).mean()
            return value, {"wc_loss": float(value.detach()), "wc_transport": 0.0, "wc_gamma": float("inf")}
        g = choose_gamma(z0, y, head, rho, loss, scale)
        g = g if np.isfinite(g) and g > 0 else 1e-3
        value, info = robust_surrogate(z0, y, head, g, loss, scale, steps)
        return value + g * rho**2, info
    return robust_surrogate(z0, y, head, float(gamma), loss, scale, steps)
