"""Spectral Decoupling (Pezeshki et al., 2021, "Gradient Starvation", Eq. 8 / Sec. 4):
``CE + λ · mean(ŷ²)``, an L2 penalty on the logits instead of the weights.
λ = ``sd_reg`` (DomainBed: 0.1, 10^U(−5, −1)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform


def sd_penalty(logits: torch.Tensor) -> torch.Tensor:
    """Mean squared logit (in fp32 when the logits are bf16)."""
    return upcast(logits).pow(2).mean()


@register_algorithm("SD", tags=("domainbed",))
class SD(Algorithm):
    """ERM on the pooled batch + spectral-decoupling penalty on the logits."""

    HPARAMS = {"sd_reg": HParam(0.1, log10_uniform(-5, -1), "weight λ of the logit penalty")}
    DOMAINBED_KEYS = {"loss": "nll"}  # DomainBed's SD reports the classification loss as ``loss``

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        logits = self.predict(x)
        nll, penalty = F.cross_entropy(logits, y), sd_penalty(logits)
        loss = nll + self.hparams["sd_reg"] * penalty
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": penalty.item()}
