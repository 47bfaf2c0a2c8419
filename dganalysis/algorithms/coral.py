"""Distribution matching of features across training domains: CORAL and MMD.

- CORAL (Sun & Saenko, 2016, "Deep CORAL", Eq. 1): distance between the feature covariances of
  two domains; as DomainBed we also match the means:
  ``P(x, y) = mean((μ_x − μ_y)²) + mean((C_x − C_y)²)`` (means over entries, not the paper's 1/4d² Frobenius).
- MMD (Li et al., 2018, "Domain Generalization with Adversarial Feature Learning", MMD-AAE Eq. 3; as
  DomainBed without the adversarial autoencoder): biased squared MMD with a sum of Gaussian kernels,
  bandwidths γ ∈ {1e-3, …, 1e3} (k(a, b) = Σ_γ exp(−γ‖a − b‖²)).

Objective (both): ``mean_d CE_d + γ_pen · mean_{d<d'} P(z_d, z_{d'})`` over all pairs of training domains.
Precision: the penalty is computed in fp32 under bf16 autocast (the kernel's ‖a‖² + ‖b‖² − 2ab cancels badly; in
bf16 the MMD penalty even came out negative). MMD's whole update runs with autocast off: with bf16 features the
narrow kernels (γ = 100, 1000) see the features' rounding as distance, and on tiny data the bf16 penalty differed
by 0.14 from fp32 at the same parameters and the update's direction by a cosine of 0.47 on average.
Hyperparameter ``mmd_gamma`` (DomainBed: 1, 10^U(−1, 1)); Yu et al. (2024) searches 10^U(−2, 0) through the
protocol's ``search_overrides``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform

MMD_BANDWIDTHS = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)


def coral_penalty(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean-squared difference of the means plus of the (unbiased) covariances of ``x`` [n, d] and ``y`` [m, d]."""
    mx, my = x.mean(0, keepdim=True), y.mean(0, keepdim=True)
    dx, dy = x - mx, y - my  # centred once, as DomainBed: the same autograd graph, the same gradient sums
    cx = dx.T @ dx / max(len(x) - 1, 1)
    cy = dy.T @ dy / max(len(y) - 1, 1)
    return (mx - my).pow(2).mean() + (cx - cy).pow(2).mean()


def gaussian_kernel(a: torch.Tensor, b: torch.Tensor, bandwidths=MMD_BANDWIDTHS) -> torch.Tensor:
    """Σ_γ exp(−γ‖a_i − b_j‖²), an [n, m] matrix; ‖a − b‖² summed as DomainBed's ``my_cdist`` does,
    (‖b‖² − 2ab) + ‖a‖² with a fused multiply-add, so that the rounding is the same as DomainBed's."""
    d2 = torch.addmm(b.pow(2).sum(1, keepdim=True).T, a, b.T, alpha=-2).add(a.pow(2).sum(1, keepdim=True))
    d2 = d2.clamp_min(1e-30)
    return sum(torch.exp(-g * d2) for g in bandwidths)


def mmd_penalty(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Biased estimate of MMD²(x, y) with :func:`gaussian_kernel`."""
    return gaussian_kernel(x, x).mean() + gaussian_kernel(y, y).mean() - 2 * gaussian_kernel(x, y).mean()


class _DistributionMatching(Algorithm):
    HPARAMS = {"mmd_gamma": HParam(1.0, log10_uniform(-1, 1), "weight of the matching penalty (DomainBed)")}
    DOMAINBED_KEYS = {"loss": "nll"}
    kernel_type = "coral"

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def penalty(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """The matching penalty, in fp32 under bf16 autocast (the kernel's ‖a‖² + ‖b‖² − 2ab cancels badly)."""
        with no_autocast(a):
            a, b = upcast(a), upcast(b)
            return coral_penalty(a, b) if self.kernel_type == "coral" else mmd_penalty(a, b)

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        feats = [self.featurizer(x) for x, _ in minibatches]
        n = len(feats)
        # running sums divided at the end, in DomainBed's order: the same floats as its update, so that exact mode's
        # records equal DomainBed's (Adam turns a last-bit difference in the penalty into visible drift)
        nll = sum(F.cross_entropy(self.classifier(z), y) for z, (_, y) in zip(feats, minibatches)) / n
        pens = [self.penalty(feats[i], feats[j]) for i in range(n) for j in range(i + 1, n)]
        penalty = sum(pens) / (n * (n - 1) / 2) if pens else nll.new_zeros(())
        loss = nll + self.hparams["mmd_gamma"] * penalty
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": penalty.item()}


@register_algorithm("CORAL", tags=("domainbed",))
class CORAL(_DistributionMatching):
    """Deep CORAL (Sun & Saenko, 2016): ERM + γ · (mean + covariance) matching between domain pairs."""

    kernel_type = "coral"


@register_algorithm("MMD", tags=("domainbed",))
class MMD(_DistributionMatching):
    """MMD matching (Li et al., 2018): ERM + γ · Gaussian-kernel MMD² between domain pairs."""

    kernel_type = "gaussian"

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):  # fp32 features too: see the module docstring
            return super().update(minibatches, step)
