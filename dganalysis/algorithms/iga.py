"""IGA, Inter-environmental Gradient Alignment (Koyama & Yamaguchi, 2020, "Out-of-distribution
generalization with maximal invariant predictor", Eq. 7; DomainBed form):
``mean_e R_e + λ Σ_e ‖∇_θ R_e − ∇_θ R̄‖²`` over all network parameters θ (second-order autograd,
create_graph), one forward per domain. λ = ``penalty`` (DomainBed: 1000, 10^U(1, 5)). The recorded ``loss`` is
the mean domain risk (DomainBed's key), ``penalty`` the alignment term.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform


def iga_penalty(env_grads: Sequence[Sequence[torch.Tensor]], mean_grads: Sequence[torch.Tensor]) -> torch.Tensor:
    """Σ_e Σ_params ‖g_e − ḡ‖² (sum of squared entries, accumulated in DomainBed's order)."""
    total = 0
    for grads in env_grads:
        for g, m in zip(grads, mean_grads):
            total = total + (g - m).pow(2).sum()
    return total


@register_algorithm("IGA", tags=("domainbed",))
class IGA(Algorithm):
    """ERM + variance of the per-domain gradients around their mean."""

    HPARAMS = {"penalty": HParam(1000.0, log10_uniform(1, 5), "gradient-alignment weight λ")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        params = [p for p in self.network.parameters() if p.requires_grad]
        losses, env_grads = [], []
        for x, y in minibatches:  # one forward per domain, as DomainBed
            loss = F.cross_entropy(self.network(x), y)
            losses.append(loss)
            env_grads.append(torch.autograd.grad(loss, params, create_graph=True))
        mean_loss = sum(losses) / len(minibatches)
        # ḡ as DomainBed: the (constant) gradient of the mean loss; Σ_e (g_e − ḡ) = 0, so treating ḡ as a
        # constant leaves the penalty's gradient unchanged
        mean_grads = torch.autograd.grad(mean_loss, params, retain_graph=True)
        penalty = iga_penalty(env_grads, mean_grads)
        objective = mean_loss + self.hparams["penalty"] * penalty
        self.step(objective, self.optimizer, self.scheduler)
        return {"loss": mean_loss.item(), "penalty": penalty.item()}
