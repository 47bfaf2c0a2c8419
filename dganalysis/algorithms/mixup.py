"""Inter-domain Mixup (Yan et al., 2020, "Improve Unsupervised Domain Adaptation with Mixup Training";
Wang et al., 2020, "Heterogeneous Domain Generalization via Domain Mixup"), as in DomainBed.

Domains are paired at random (π_k, π_{k+1}); for each pair, λ ~ Beta(α, α),
``x̃ = λ x_i + (1 − λ) x_j`` and the loss is ``λ CE(f(x̃), y_i) + (1 − λ) CE(f(x̃), y_j)``;
the objective is the mean over pairs. α = ``mixup_alpha`` (DomainBed: 0.2, 10^U(−1, 1)).
Pairs are truncated to the shorter minibatch. As DomainBed, the pairing permutation comes from torch's global
generator and λ from numpy's global generator (``np.random.beta``), in the same order, so a seeded run draws
DomainBed's numbers.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms._utils import random_pairs
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform


def mixup_loss(
    network: nn.Module, xi: torch.Tensor, yi: torch.Tensor, xj: torch.Tensor, yj: torch.Tensor, lam: float
) -> torch.Tensor:
    """The Mixup loss of one pair of minibatches at mixing weight ``lam``."""
    n = min(len(yi), len(yj))
    logits = network(lam * xi[:n] + (1 - lam) * xj[:n])
    return lam * F.cross_entropy(logits, yi[:n]) + (1 - lam) * F.cross_entropy(logits, yj[:n])


@register_algorithm("Mixup", tags=("domainbed",))
class Mixup(Algorithm):
    """Inter-domain Mixup."""

    HPARAMS = {"mixup_alpha": HParam(0.2, log10_uniform(-1, 1), "Beta(α, α) of the mixing weight")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def sample_lambda(self) -> float:
        """λ ~ Beta(α, α) from numpy's global generator (DomainBed's draw)."""
        a = float(self.hparams["mixup_alpha"])
        return float(np.random.beta(a, a))

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        pairs = random_pairs(len(minibatches))
        loss = torch.stack([
            mixup_loss(self.network, *minibatches[i], *minibatches[j], self.sample_lambda()) for i, j in pairs
        ]).mean()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
