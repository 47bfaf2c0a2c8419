"""IGA, Inter-environmental Gradient Alignment (Koyama & Yamaguchi, 2020, "Out-of-distribution
generalization with maximal invariant predictor", Eq. 7; DomainBed form):
``mean_e R_e + λ Σ_e ‖∇_θ R_e − ∇_θ R̄‖²`` over all network parameters θ (second-order autograd,
create_graph). λ = ``penalty`` (DomainBed: 1000, 10^U(1, 5)).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, log10_uniform


def iga_penalty(env_grads: Sequence[Sequence[torch.Tensor]], mean_grads: Sequence[torch.Tensor]) -> torch.Tensor:
    """Σ_e Σ_params ‖g_e − ḡ‖² (sum of squared entries)."""
    return sum((g - m).pow(2).sum() for grads in env_grads for g, m in zip(grads, mean_grads))


@register_algorithm("IGA")
class IGA(Algorithm):
    """ERM + variance of the per-domain gradients around their mean."""

    HPARAMS = {"penalty": HParam(1000.0, log10_uniform(1, 5), "gradient-alignment weight λ")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        params = [p for p in self.network.parameters() if p.requires_grad]
        x = torch.cat([x for x, _ in minibatches])
        logits = self.predict(x).split([len(y) for _, y in minibatches])
        losses = [F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, minibatches)]
        env_grads = [torch.autograd.grad(loss, params, create_graph=True) for loss in losses]
        mean_loss = torch.stack(losses).mean()
        mean_grads = [torch.stack(gs).mean(0) for gs in zip(*env_grads)]
        penalty = iga_penalty(env_grads, mean_grads)
        loss = mean_loss + self.hparams["penalty"] * penalty
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": mean_loss.item(), "penalty": penalty.item()}
