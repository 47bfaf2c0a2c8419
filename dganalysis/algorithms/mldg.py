"""MLDG (Li et al., 2018, "Learning to Generalize: Meta-Learning for Domain Generalization", Alg. 1, Eq. 3),
first-order, as DomainBed (Gulrajani & Lopez-Paz, 2021).

Each step draws a random permutation π of the training domains (torch's global generator) and splits it into
meta-train domains π[:n − n_meta_test] and meta-test domains π[−n_meta_test:]; meta-train domain i is paired with
meta-test domains in turn (cycling). For each pair (i, j), a copy θ' of the network takes one step of a *fresh*
optimiser (the job's, lr and weight decay as the outer one: Adam under DomainBed's settings) on L_i; the outer
gradient accumulates ``(∇_θ L_i(θ) + β ∇_{θ'} L_j(θ')) / n`` (n = number of training domains, first order: the
Hessian term of ∂θ'/∂θ is dropped), then one outer optimiser step. β = ``mldg_beta`` (DomainBed: 1,
10^U(−1, 1)), ``n_meta_test`` (DomainBed: 2, one of {1, 2}). The reported loss is
``Σ_pairs (L_i + β L_j) / n``. Pairs are truncated to the shorter minibatch.

Precision: the whole update runs with autocast off (fp32 under bf16 autocast). The inner step of a fresh Adam
moves every parameter by about ±lr whatever its gradient's size, so bf16 rounding flips the sign of the
small-gradient parameters' moves: measured on tiny data, the meta-test loss under bf16 differed by up to 31% from
fp32 from the same parameters, and the outer update's direction by a cosine down to 0.47.

With ``n_meta_test ≥ n`` there is no meta-train domain: DomainBed then steps on zero gradients (only weight
decay acts); we do the same and log a warning.
"""

from __future__ import annotations

import copy
import logging
from itertools import cycle

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice, log10_uniform
from dganalysis.training.optim import make_optimizer

log = logging.getLogger(__name__)


def meta_train_test_pairs(n_domains: int, n_meta_test: int) -> list[tuple[int, int]]:
    """DomainBed's split: a random permutation π (torch's global generator); meta-train π[:n − k] each paired
    with the meta-test domains π[−k:] in turn."""
    perm = torch.randperm(n_domains).tolist()
    return list(zip(perm[: n_domains - n_meta_test], cycle(perm[-n_meta_test:])))


@register_algorithm("MLDG", tags=("domainbed",))
class MLDG(Algorithm):
    """Meta-learning DG, first-order, DomainBed's update."""

    HPARAMS = {
        "mldg_beta": HParam(1.0, log10_uniform(-1, 1), "weight β of the meta-test loss"),
        "n_meta_test": HParam(2, choice([1, 2]), "number of meta-test domains per step"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer(self.network.parameters())
        if int(self.hparams["n_meta_test"]) >= n_domains:
            log.warning("MLDG: n_meta_test=%s with %d training domains leaves no meta-train domain; as DomainBed, "
                        "the update only applies weight decay", self.hparams["n_meta_test"], n_domains)

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):
            return self._update(minibatches)

    def _update(self, minibatches: Minibatches) -> dict[str, float]:
        n = len(minibatches)
        beta = float(self.hparams["mldg_beta"])
        params = list(self.network.parameters())
        total = [torch.zeros_like(p) for p in params]
        objective = 0.0
        for i, j in meta_train_test_pairs(n, int(self.hparams["n_meta_test"])):
            (xi, yi), (xj, yj) = minibatches[i], minibatches[j]
            m = min(len(yi), len(yj))
            inner = copy.deepcopy(self.network)
            inner_params = list(inner.parameters())
            inner_opt = make_optimizer(inner_params, self.hparams, lr=self.optimizer.param_groups[0]["lr"])
            loss_i = F.cross_entropy(inner(xi[:m]), yi[:m])
            inner_opt.zero_grad(set_to_none=True)
            loss_i.backward()
            for t, q in zip(total, inner_params):
                if q.grad is not None:
                    t.add_(q.grad / n)
            inner_opt.step()
            loss_j = F.cross_entropy(inner(xj[:m]), yj[:m])
            g_j = torch.autograd.grad(loss_j, inner_params, allow_unused=True)
            for t, g in zip(total, g_j):
                if g is not None:
                    t.add_(beta * g / n)
            objective += loss_i.item() + beta * loss_j.item()
        # the accumulated gradient goes through step() with a surrogate loss whose gradient it is, so wrappers
        # that add terms to the loss (WCDG) still see one backward pass
        surrogate = sum((p * t).sum() for p, t in zip(params, total))
        self.step(surrogate, self.optimizer, self.scheduler)
        return {"loss": objective / n}
