"""V-REx (Krueger et al., 2021, "Out-of-Distribution Generalization via Risk Extrapolation", Eq. 8):
``mean_e R_e + β · Var_e(R_e)`` (population variance of the per-domain risks).
β is 1 for ``vrex_penalty_anneal_iters`` steps, then ``vrex_lambda`` (the objective is not divided by β;
optimiser reset at the switch), and all domains go through the network in one pooled forward pass, as
DomainBed (β = 10, 10^U(−1, 5); anneal 500, int(10^U(0, 4))). ``nll`` in the returned dict is the mean
per-domain risk (DomainBed reports the last domain's).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import reset_optimizer_state
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, log10_uniform_int


def vrex_penalty(losses: torch.Tensor) -> torch.Tensor:
    """Variance (1/n) of the per-domain losses ``losses`` [n_domains]."""
    return (losses - losses.mean()).pow(2).mean()


@register_algorithm("VREx", tags=("domainbed",))
class VREx(Algorithm):
    """Variance Risk Extrapolation."""

    HPARAMS = {
        "vrex_lambda": HParam(1e1, log10_uniform(-1, 5), "variance penalty weight β"),
        "vrex_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with weight 1 before β"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        anneal = self.hparams["vrex_penalty_anneal_iters"]
        w = float(self.hparams["vrex_lambda"]) if step >= anneal else 1.0
        x = torch.cat([x for x, _ in minibatches])
        logits = self.predict(x).split([len(y) for _, y in minibatches])
        losses = torch.stack([F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, minibatches)])
        mean, penalty = losses.mean(), vrex_penalty(losses)
        loss = mean + w * penalty
        if step == anneal:
            reset_optimizer_state(self.optimizer)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": mean.item(), "penalty": penalty.item()}
