"""MLDG (Li et al., 2018, "Learning to Generalize: Meta-Learning for Domain Generalization", Eq. 3–4),
first-order as DomainBed.

For random pairs (i, j) of training domains (meta-train i, meta-test j):
``θ' = θ − α ∇_θ L_i(θ)`` (α = the current lr, plain SGD) and the objective
``mean_pairs [L_i(θ) + β L_j(θ')]``; its gradient is approximated to first order by
``mean_pairs [∇L_i(θ) + β ∇_{θ'} L_j(θ')]`` (the Hessian term of ∂θ'/∂θ is dropped), then one step of
the job's optimiser. β = ``mldg_beta`` (DomainBed: 1, 10^U(−1, 1)).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import apply_grads, random_pairs
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, log10_uniform


@register_algorithm("MLDG")
class MLDG(Algorithm):
    """Meta-learning DG, first-order."""

    HPARAMS = {"mldg_beta": HParam(1.0, log10_uniform(-1, 1), "weight β of the meta-test loss")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.inner = copy.deepcopy(self.network)
        self.optimizer, self.scheduler = self.configure_optimizer(self.network.parameters())

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        params = list(self.network.parameters())
        inner_params = list(self.inner.parameters())
        beta = float(self.hparams["mldg_beta"])
        alpha = float(self.optimizer.param_groups[0]["lr"])
        pairs = random_pairs(len(minibatches))
        total = [torch.zeros_like(p) for p in params]
        objective = 0.0
        for i, j in pairs:
            (xi, yi), (xj, yj) = minibatches[i], minibatches[j]
            loss_i = F.cross_entropy(self.network(xi), yi)
            g_i = torch.autograd.grad(loss_i, params)
            self.inner.load_state_dict(self.network.state_dict())
            with torch.no_grad():
                for q, g in zip(inner_params, g_i):
                    q.sub_(alpha * g)
            loss_j = F.cross_entropy(self.inner(xj), yj)
            g_j = torch.autograd.grad(loss_j, inner_params)
            for t, a, b in zip(total, g_i, g_j):
                t.add_((a + beta * b) / len(pairs))
            objective += (loss_i.item() + beta * loss_j.item()) / len(pairs)
        apply_grads(params, total, self.optimizer, self.scheduler)
        return {"loss": objective}
