"""SelfReg (Kim et al., 2021, "SelfReg: Self-supervised Contrastive Regularization for Domain
Generalization", Sec. 3, Eq. 1–5), in DomainBed's form.

Pooled batch; ``perm1``, ``perm2`` pair each example with a random example of the same class (any
domain); λ ~ Beta(0.5, 0.5) mixes the two partners (in-batch "hidden" Mixup). With logits o = h(z) and
projections p = P(z) (a 2-layer MLP, the paper's class-specific projection simplified to one MLP):

``L = CE + c · [λ (‖o − o₁‖² + 0.3 ‖p − p₁‖²) + (1 − λ)(‖o − õ‖² + 0.3 ‖p − p̃‖²)]``

where ·₁ is the partner by ``perm1``, ·̃ = λ·₁ + (1 − λ)·₂, ‖·‖² means mean squared error, and
c = min(CE, 1) (DomainBed's scaling). We compare projections on both sides (DomainBed compares the raw
feature with the partner's projection). No hyperparameters beyond the base ones.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm


def same_class_permutation(y: torch.Tensor) -> torch.Tensor:
    """A random index map ``perm`` with ``y[perm] == y`` (uniform within each class)."""
    key1 = y.double() + 0.5 * torch.rand(len(y), dtype=torch.float64, device=y.device)
    key2 = y.double() + 0.5 * torch.rand(len(y), dtype=torch.float64, device=y.device)
    o1, o2 = key1.argsort(), key2.argsort()
    perm = torch.empty_like(o1)
    perm[o1] = o2
    return perm


def selfreg_penalty(
    logits: torch.Tensor, proj: torch.Tensor, perm1: torch.Tensor, perm2: torch.Tensor, lam: float
) -> torch.Tensor:
    """The bracketed regulariser of SelfReg (without the scale c)."""
    o1, p1 = logits[perm1], proj[perm1]
    o_mix, p_mix = lam * o1 + (1 - lam) * logits[perm2], lam * p1 + (1 - lam) * proj[perm2]
    ind = F.mse_loss(logits, o1) + 0.3 * F.mse_loss(proj, p1)
    hdl = F.mse_loss(logits, o_mix) + 0.3 * F.mse_loss(proj, p_mix)
    return lam * ind + (1 - lam) * hdl


@register_algorithm("SelfReg")
class SelfReg(Algorithm):
    """ERM + same-class feature and logit consistency with in-batch mixup."""

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        d = self.featurizer.n_outputs
        self.projection = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d))
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        z = self.featurizer(x)
        logits, proj = self.classifier(z), self.projection(z)
        lam = float(torch.distributions.Beta(torch.tensor(0.5), torch.tensor(0.5)).sample())
        nll = F.cross_entropy(logits, y)
        reg = selfreg_penalty(logits, proj, same_class_permutation(y), same_class_permutation(y), lam)
        loss = nll + min(nll.item(), 1.0) * reg
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": reg.item()}
