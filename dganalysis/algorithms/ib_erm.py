"""IB-ERM (Ahuja et al., 2021, "Invariance principle meets information bottleneck", Sec. 4), as DomainBed:
``mean_e R_e + w · mean_e mean_k Var_e(Φ_k(x))``, the per-domain risks averaged plus the information-bottleneck
penalty (mean feature variance per domain), with w = 0 for ``ib_penalty_anneal_iters`` steps and ``ib_lambda``
afterwards (optimiser reset at the switch); one pooled forward pass. Defaults and search spaces: DomainBed
(100, 10^U(−1, 5); 500, int(10^U(0, 4))).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast, reset_optimizer_state, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.irm import annealed, ib_penalty, per_domain
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, log10_uniform_int


@register_algorithm("IB_ERM", tags=("domainbed",))
class IB_ERM(Algorithm):
    """ERM with the information-bottleneck penalty on the features."""

    HPARAMS = {
        "ib_lambda": HParam(1e2, log10_uniform(-1, 5), "IB penalty weight (0 before ib_penalty_anneal_iters)"),
        "ib_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with IB weight 0"),
    }
    DOMAINBED_KEYS = {"IB_penalty": "penalty"}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        anneal = self.hparams["ib_penalty_anneal_iters"]
        w = annealed(step, anneal, self.hparams["ib_lambda"], 0.0)
        z = self.featurizer(torch.cat([x for x, _ in minibatches]))
        logits = per_domain(minibatches, self.classifier(z))
        nll = torch.stack([F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, minibatches)]).mean()
        with no_autocast(z):
            ib = torch.stack([ib_penalty(upcast(zd)) for zd in per_domain(minibatches, z)]).mean()
        loss = nll + w * ib
        if step == anneal:
            reset_optimizer_state(self.optimizer)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": ib.item()}
