"""IB-ERM (Ahuja et al., 2021, "Invariance principle meets information bottleneck", Sec. 4):
ERM + ``w · mean_e Var_e(Φ(x))``, the information-bottleneck penalty (mean feature variance per domain),
with w = 1 for ``ib_penalty_anneal_iters`` steps and ``ib_lambda`` afterwards (optimiser reset at the
switch). Defaults and search spaces: DomainBed (100, 10^U(−1, 5); 500, 10^U(0, 4)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import reset_optimizer_state
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.irm import ib_penalty
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, log10_uniform, log10_uniform_int


@register_algorithm("IB_ERM")
class IB_ERM(Algorithm):
    """ERM with the information-bottleneck penalty on the features."""

    HPARAMS = {
        "ib_lambda": HParam(1e2, log10_uniform(-1, 5), "IB penalty weight"),
        "ib_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with IB weight 1"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        anneal = self.hparams["ib_penalty_anneal_iters"]
        w = float(self.hparams["ib_lambda"]) if step >= anneal else 1.0
        if step == anneal:
            reset_optimizer_state(self.optimizer)
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        z = self.featurizer(x)
        nll = F.cross_entropy(self.classifier(z), y)
        ib = torch.stack([ib_penalty(zd) for zd in z.split([len(b) for _, b in minibatches])]).mean()
        loss = nll + w * ib
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": ib.item()}
