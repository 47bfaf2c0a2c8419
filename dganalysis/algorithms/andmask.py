"""Gradient masking by cross-domain agreement: ANDMask and SANDMask.

- ANDMask (Parascandolo et al., 2021, "Learning Explanations that are Hard to Vary", Eq. 5): per
  parameter entry, keep the mean gradient only where the per-domain gradient signs agree,
  ``m = 1[|mean_e sign(∇_e)| ≥ τ]``.
- SANDMask (Shahtalebi et al., 2021, "SAND-mask", Eq. 4): a smooth mask
  ``m = max(0, tanh(k · (|mean_e sign(∇_e)| − τ) / Var_e(∇_e)))``.

As DomainBed, the masked gradient of each parameter tensor is rescaled by 1 / (fraction of mask kept), so
with a full mask (τ = 0 for ANDMask) the update is exactly ERM's on equal-size domain batches.
Defaults as DomainBed: ANDMask τ = 1 (U(0.5, 1)); SANDMask τ = 1 (U(0, 1)), k = 10 (10^U(−3, 5)). DomainBed's
default τ = 1 makes the SAND mask identically 0 (no update at all); ``SANDMask_tau05`` is SANDMask with τ = 0.5.
Per-domain gradients are full-network gradients of each domain's mean loss, one forward per domain (as DomainBed,
so BatchNorm statistics are per domain).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, uniform


def _rescaled(mask: torch.Tensor, avg: torch.Tensor) -> torch.Tensor:
    """``mask · avg`` times ``1 / (1e-10 + mean(mask))``, in DomainBed's order of operations."""
    return (mask * avg) * (1.0 / (1e-10 + mask.sum() / mask.numel()))


def and_mask(grads: torch.Tensor, tau: float) -> torch.Tensor:
    """Masked, rescaled mean gradient from per-domain gradients ``grads`` [n_domains, ...].

    The mask is float32 as DomainBed's (so its kept fraction is a float32 number whatever the gradients' dtype)."""
    mask = (torch.sign(grads).mean(0).abs() >= tau).to(torch.float32)
    return _rescaled(mask, grads.mean(0))


def sand_mask_values(grads: torch.Tensor, tau: float, k: float) -> torch.Tensor:
    """SAND-mask values in [0, 1] for per-domain gradients ``grads`` [n_domains, ...], as DomainBed: an undefined
    variance (one domain) counts as 1e-17, and an undefined mask value (0 · ∞ where the variance is 0 and the
    agreement equals τ) as 1e-17."""
    agree = torch.sign(grads).mean(0).abs()
    # unbiased variance over domains, written out: ``Tensor.var(0)`` takes a slow strided path on CPU (~40× here)
    dev = grads - grads.mean(0)
    var = dev.mul(dev).sum(0) / (len(grads) - 1) if len(grads) > 1 else torch.full_like(grads[0], float("nan"))
    var = torch.where(torch.isnan(var), torch.full_like(var, 1e-17), var)
    mask = torch.tanh(k * var.pow(-1) * (agree - tau))
    mask = torch.max(mask, torch.zeros_like(mask))
    return torch.where(torch.isnan(mask), torch.full_like(mask, 1e-17), mask)


def sand_mask(grads: torch.Tensor, tau: float, k: float) -> torch.Tensor:
    """Masked, rescaled mean gradient with the smooth SAND mask."""
    return _rescaled(sand_mask_values(grads, tau, k), grads.mean(0))


class _GradMask(Algorithm):
    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def combine(self, grads: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        params = [p for p in self.network.parameters() if p.requires_grad]
        mean_loss = 0.0
        per_domain = []
        for x, y in minibatches:  # one forward per domain, as DomainBed (BatchNorm sees one domain at a time)
            loss = F.cross_entropy(self.network(x), y)
            mean_loss += loss.item() / len(minibatches)
            per_domain.append(torch.autograd.grad(loss, params))
        self.optimizer.zero_grad(set_to_none=True)
        for i, p in enumerate(params):
            p.grad = self.combine(torch.stack([g[i] for g in per_domain]))
        self.optimizer.step()
        fresh_casts()
        self.scheduler.step()
        return {"loss": mean_loss}


@register_algorithm("ANDMask", tags=("domainbed",))
class ANDMask(_GradMask):
    """AND-mask: gradient step only along entries whose sign agrees across domains."""

    HPARAMS = {"tau": HParam(1.0, uniform(0.5, 1.0), "agreement threshold τ")}

    def combine(self, grads: torch.Tensor) -> torch.Tensor:
        return and_mask(grads, float(self.hparams["tau"]))


@register_algorithm("SANDMask", tags=("domainbed",))
class SANDMask(_GradMask):
    """SAND-mask: smooth agreement mask scaled by the inverse gradient variance (DomainBed's default τ = 1)."""

    HPARAMS = {
        # DomainBed's default τ = 1 zeroes the mask max(tanh(k(|mean sign| − τ)), 0) everywhere, so the default run
        # never moves; kept for fidelity (its random search draws τ ~ U(0, 1))
        "tau": HParam(1.0, uniform(0.0, 1.0), "agreement threshold τ (DomainBed's default 1 masks every entry)"),
        "k": HParam(10.0, log10_uniform(-3, 5), "steepness k of the tanh"),
    }

    def combine(self, grads: torch.Tensor) -> torch.Tensor:
        return sand_mask(grads, float(self.hparams["tau"]), float(self.hparams["k"]))


@register_algorithm("SANDMask_tau05", tags=("variant",))
class SANDMask_tau05(SANDMask):
    """SANDMask with default τ = 0.5, a departure from DomainBed: at DomainBed's default τ = 1 the mask
    ``max(0, tanh(k (|mean sign| − 1) / Var))`` is zero everywhere, so SANDMask's default run never updates
    (measured: no parameter moves). The search distribution is DomainBed's."""

    HPARAMS = {
        "tau": HParam(0.5, uniform(0.0, 1.0), "agreement threshold τ"),
        "k": HParam(10.0, log10_uniform(-3, 5), "steepness k of the tanh"),
    }
