"""Fish (Shi et al., 2022, "Gradient Matching for Domain Generalization", Alg. 1).

Each update clones the network to θ̃ = θ, takes one inner optimiser step on each training domain in turn
(domains in a random order), then moves θ toward the result: ``θ ← θ + ε (θ̃ − θ)``; to first order this
ascends the inner product of the domain gradients (the paper's gradient-matching objective, Eq. 3).
The inner optimiser is the job's (``configure_optimizer`` on the clone; DomainBed uses Adam) and keeps its
state across updates; buffers are interpolated like parameters. ε = ``meta_lr`` (DomainBed: 0.5,
choice {0.05, 0.1, 0.5}).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, choice


@torch.no_grad()
def interpolate_(target: torch.nn.Module, source: torch.nn.Module, eps: float) -> None:
    """``target ← target + eps (source − target)`` for every floating parameter and buffer."""
    for t, s in zip(
        list(target.parameters()) + list(target.buffers()), list(source.parameters()) + list(source.buffers())
    ):
        if t.is_floating_point():
            t.add_(s - t, alpha=eps)


@register_algorithm("Fish")
class Fish(Algorithm):
    """Sequential inner steps over domains, then a Reptile-style meta step."""

    HPARAMS = {"meta_lr": HParam(0.5, choice([0.05, 0.1, 0.5]), "meta step size ε")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.inner = copy.deepcopy(self.network)
        self.inner_optimizer, self.inner_scheduler = self.configure_optimizer(self.inner.parameters())

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        self.inner.load_state_dict(self.network.state_dict())
        losses = []
        for i in torch.randperm(len(minibatches)).tolist():
            x, y = minibatches[i]
            loss = F.cross_entropy(self.inner(x), y)
            self.step(loss, self.inner_optimizer)
            losses.append(loss.item())
        self.inner_scheduler.step()
        interpolate_(self.network, self.inner, float(self.hparams["meta_lr"]))
        return {"loss": sum(losses) / len(losses)}
