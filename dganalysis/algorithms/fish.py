"""Fish (Shi et al., 2022, "Gradient Matching for Domain Generalization", Alg. 1), as DomainBed
(Gulrajani & Lopez-Paz, 2021).

Each update copies the network into an inner clone θ̃ = θ, takes one inner Adam step on each training domain
in the order given (DomainBed's fixed order), then moves θ toward the result: ``θ ← θ + ε (θ̃ − θ)``; to
first order this ascends the inner product of the domain gradients (the paper's gradient-matching objective,
Eq. 3). The inner optimiser (the job's, ``configure_optimizer``; DomainBed's Adam) keeps its state across
updates; buffers are interpolated like parameters. ε = ``meta_lr`` (DomainBed: 0.5, choice {0.05, 0.1, 0.5}).
The recorded ``loss`` is the last domain's inner loss (DomainBed's value).

The clone is not a registered submodule (it is working memory, rebuilt from the network when its dtype or
device changes), so the saved state holds the network only, as DomainBed's.
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice


@torch.no_grad()
def interpolate_(target: torch.nn.Module, source: torch.nn.Module, eps: float) -> None:
    """``target ← target + eps (source − target)`` for every floating parameter and buffer."""
    for t, s in zip(
        list(target.parameters()) + list(target.buffers()), list(source.parameters()) + list(source.buffers())
    ):
        if t.is_floating_point():
            t.copy_(t + eps * (s - t))


@register_algorithm("Fish", tags=("domainbed",))
class Fish(Algorithm):
    """Sequential inner steps over domains, then a Reptile-style meta step."""

    HPARAMS = {"meta_lr": HParam(0.5, choice([0.05, 0.1, 0.5]), "meta step size ε")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self._clone: list = []  # [inner network, optimiser, schedule]; a list keeps it out of the module tree

    def _inner(self):
        p = next(self.network.parameters())
        if not self._clone or next(self._clone[0].parameters()).dtype != p.dtype or \
                next(self._clone[0].parameters()).device != p.device:
            inner = copy.deepcopy(self.network)
            opt, sched = self.configure_optimizer(inner.parameters())
            if self._clone:  # keep the moments across a dtype/device move
                state = self._clone[1].state_dict()
                opt.load_state_dict(state)
            self._clone[:] = [inner, opt, sched]
        return self._clone

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        inner, opt, sched = self._inner()
        inner.load_state_dict(self.network.state_dict())
        inner.train(self.training)
        for x, y in minibatches:
            loss = F.cross_entropy(inner(x), y)
            self.step(loss, opt)
        sched.step()
        interpolate_(self.network, inner, float(self.hparams["meta_lr"]))
        fresh_casts()
        return {"loss": loss.item()}
