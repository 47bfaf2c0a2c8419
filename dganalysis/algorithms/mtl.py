"""MTL, Marginal Transfer Learning (Blanchard et al., 2021, JMLR, Sec. 3–5; DomainBed's form).

The classifier sees ``[z, μ_d]``: the example's features z = g(x) and a kernel mean embedding of its
domain, here the mean feature μ_d of the domain's batch. In training μ_d is smoothed over steps,
``μ_d ← ema · mean(z_d) + (1 − ema) · sg(μ_d)`` (DomainBed's convention: ``mtl_ema`` weighs the *current*
batch; 0.99, choice {0.5, 0.9, 0.99, 1}); at test time μ is the mean feature of the predicted batch
(the test domain's sample).

``featurizer`` is the wrapper x ↦ [g(x), mean_batch g(x)] (2·D features, so
``classifier(features(x)) == predict(x)``); the plain g is ``featurizer.base``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, choice
from dganalysis.nets import build_classifier


class MarginalFeaturizer(nn.Module):
    """x ↦ [g(x), μ] with μ the batch mean of g(x) or a given embedding."""

    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base = base
        self.n_outputs = 2 * base.n_outputs

    def forward(self, x: torch.Tensor, embedding: torch.Tensor | None = None) -> torch.Tensor:
        z = self.base(x)
        mu = z.mean(0) if embedding is None else embedding
        return torch.cat([z, mu.expand_as(z)], dim=1)


@register_algorithm("MTL")
class MTL(Algorithm):
    """Classifier on features plus the domain's mean embedding."""

    HPARAMS = {"mtl_ema": HParam(0.99, choice([0.5, 0.9, 0.99, 1.0]), "weight of the current batch mean")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.featurizer = MarginalFeaturizer(self.featurizer)
        self.classifier = build_classifier(
            self.featurizer.n_outputs, n_classes, bool(self.hparams.get("nonlinear_classifier", False))
        )
        self.network = nn.Sequential(self.featurizer, self.classifier)
        self.register_buffer("embeddings", torch.zeros(n_domains, self.featurizer.base.n_outputs))
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        if len(minibatches) > self.n_domains:
            raise ValueError(f"MTL.update: got {len(minibatches)} minibatches for n_domains={self.n_domains}")
        ema = float(self.hparams["mtl_ema"])
        losses = []
        for d, (x, y) in enumerate(minibatches):
            z = self.featurizer.base(x)
            mu = ema * z.mean(0) + (1 - ema) * self.embeddings[d]
            self.embeddings[d] = mu.detach()
            losses.append(F.cross_entropy(self.classifier(torch.cat([z, mu.expand_as(z)], 1)), y))
        loss = torch.stack(losses).mean()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
