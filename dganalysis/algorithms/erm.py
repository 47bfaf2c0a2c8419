"""ERM: empirical risk minimisation over the pooled training domains (Vapnik, 1998)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm


@register_algorithm("ERM", tags=("domainbed",))
class ERM(Algorithm):
    """Minimise the mean cross-entropy of all training-domain minibatches concatenated."""

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        loss = F.cross_entropy(self.predict(x), y)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
