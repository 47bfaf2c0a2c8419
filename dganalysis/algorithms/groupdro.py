"""GroupDRO (Sagawa et al., 2020, "Distributionally Robust Neural Networks", Algorithm 1), groups = domains.

Online mirror ascent on the group weights q ∈ Δ: ``q_g ← q_g · exp(η · R_g)``, renormalised, then a
descent step on ``Σ_g q_g R_g``. η = ``groupdro_eta`` (DomainBed: 1e-2, 10^U(−3, −1)).
As DomainBed, each domain's minibatch goes through the network in its own forward pass (matters for BatchNorm).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform


def groupdro_weights(q: torch.Tensor, losses: torch.Tensor, eta: float) -> torch.Tensor:
    """One exponentiated-gradient step on the simplex: ``q ⊙ exp(η · losses)`` normalised to sum 1."""
    w = q * torch.exp(eta * losses.detach())
    return w / w.sum()


@register_algorithm("GroupDRO", tags=("domainbed",))
class GroupDRO(Algorithm):
    """Worst-group robust optimisation with adaptive domain weights ``self.q`` (a buffer)."""

    HPARAMS = {"groupdro_eta": HParam(1e-2, log10_uniform(-3, -1), "step size η of the group weights")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.register_buffer("q", torch.full((n_domains,), 1.0 / n_domains))
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        n = len(minibatches)
        if self.q.numel() != n:
            self.q = torch.full((n,), 1.0 / n, device=minibatches[0][0].device)
        losses = torch.stack([F.cross_entropy(self.predict(x), y) for x, y in minibatches])
        self.q = groupdro_weights(self.q, losses, float(self.hparams["groupdro_eta"]))
        loss = (self.q * losses).sum()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), **{f"q{i}": float(v) for i, v in enumerate(self.q)}}
