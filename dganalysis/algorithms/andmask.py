"""Gradient masking by cross-domain agreement: ANDMask and SANDMask.

- ANDMask (Parascandolo et al., 2021, "Learning Explanations that are Hard to Vary", Eq. 5): per
  parameter entry, keep the mean gradient only where the per-domain gradient signs agree,
  ``m = 1[|mean_e sign(∇_e)| ≥ τ]``.
- SANDMask (Shahtalebi et al., 2021, "SAND-mask", Eq. 4): a smooth mask
  ``m = max(0, tanh(k · (|mean_e sign(∇_e)| − τ) / Var_e(∇_e)))``.

As DomainBed, the masked gradient of each parameter tensor is rescaled by 1 / (fraction of mask kept), so
with a full mask (τ = 0 for ANDMask) the update is exactly ERM's on equal-size domain batches.
Defaults: ANDMask τ = 1 (U(0.5, 1)) as DomainBed. SANDMask k = 10 (10^U(−3, 5)) as DomainBed, but
τ = 0.5 (U(0, 1)): DomainBed's default τ = 1 makes the mask identically 0 (no update at all).
Per-domain gradients are full-network gradients of each domain's mean loss (autograd, one pass per domain).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, log10_uniform, uniform


def _rescaled(mask: torch.Tensor, avg: torch.Tensor) -> torch.Tensor:
    return mask * avg / (1e-10 + mask.mean())


def and_mask(grads: torch.Tensor, tau: float) -> torch.Tensor:
    """Masked, rescaled mean gradient from per-domain gradients ``grads`` [n_domains, ...]."""
    mask = (torch.sign(grads).mean(0).abs() >= tau).to(grads.dtype)
    return _rescaled(mask, grads.mean(0))


def sand_mask_values(grads: torch.Tensor, tau: float, k: float) -> torch.Tensor:
    """SAND-mask values in [0, 1] for per-domain gradients ``grads`` [n_domains, ...]."""
    agree = torch.sign(grads).mean(0).abs()
    var = grads.var(0) if len(grads) > 1 else torch.zeros_like(grads[0])
    inv = 1.0 / var.clamp_min(1e-17)
    mask = torch.tanh(k * inv * (agree - tau)).clamp_min(0.0)
    return torch.nan_to_num(mask, nan=0.0)


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
        x = torch.cat([x for x, _ in minibatches])
        logits = self.predict(x).split([len(y) for _, y in minibatches])
        losses = [F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, minibatches)]
        per_domain = [torch.autograd.grad(loss, params, retain_graph=True) for loss in losses]
        self.optimizer.zero_grad(set_to_none=True)
        for i, p in enumerate(params):
            p.grad = self.combine(torch.stack([g[i] for g in per_domain]))
        self.optimizer.step()
        self.scheduler.step()
        return {"loss": torch.stack(losses).mean().item()}


@register_algorithm("ANDMask")
class ANDMask(_GradMask):
    """AND-mask: gradient step only along entries whose sign agrees across domains."""

    HPARAMS = {"tau": HParam(1.0, uniform(0.5, 1.0), "agreement threshold τ")}

    def combine(self, grads: torch.Tensor) -> torch.Tensor:
        return and_mask(grads, float(self.hparams["tau"]))


@register_algorithm("SANDMask")
class SANDMask(_GradMask):
    """SAND-mask: smooth agreement mask scaled by the inverse gradient variance."""

    HPARAMS = {
        # DomainBed's default τ = 1 zeroes the mask max(tanh(k(|mean sign| − τ)), 0) everywhere, so the default run
        # never moves; kept for fidelity (its random search draws τ ~ U(0, 1))
        "tau": HParam(1.0, uniform(0.0, 1.0), "agreement threshold τ (DomainBed's default 1 masks every entry)"),
        "k": HParam(10.0, log10_uniform(-3, 5), "steepness k of the tanh"),
    }

    def combine(self, grads: torch.Tensor) -> torch.Tensor:
        return sand_mask(grads, float(self.hparams["tau"]), float(self.hparams["k"]))
