"""MTL, Marginal Transfer Learning (Blanchard et al., 2021, JMLR, Sec. 3–5).

The classifier sees ``[z, μ]``: the example's features z = g(x) and an embedding μ of its domain.

``MTL`` is DomainBed's (Gulrajani & Lopez-Paz, 2021) code: the domain's smoothed mean feature
``μ_d ← ema · mean(z_d) + (1 − ema) · μ_d`` is kept in the ``embeddings`` buffer (``mtl_ema`` weighs the
*current* batch), but the copy handed to the classifier is then overwritten in place by standard normal noise
(``.normal_()``), in training and at test time. So DomainBed's MTL classifies ``[z, ε]``, ε ~ N(0, I) drawn from
torch's global generator, and its prediction is random; the loss is the *sum* of the per-domain cross-entropies.

``MTL_KME`` departs from DomainBed to do what Blanchard et al. describe: the classifier sees the kernel mean
embedding itself (μ_d in training; at test time the mean feature of the predicted batch, the test domain's
sample), and the loss is the mean over domains.

``featurizer`` is the wrapper x ↦ [g(x), μ or ε] (2·D features, so ``classifier(features(x))`` is the
prediction); the plain g is ``featurizer.base``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.nets import build_classifier
from dganalysis.training.hparams import HParam, choice


class MarginalFeaturizer(nn.Module):
    """x ↦ [g(x), μ] with μ the batch mean of g(x) or a given embedding; ``noise=True``: μ replaced by N(0, 1)."""

    def __init__(self, base: nn.Module, noise: bool = False) -> None:
        super().__init__()
        self.base = base
        self.noise = noise
        self.n_outputs = 2 * base.n_outputs

    def forward(self, x: torch.Tensor, embedding: torch.Tensor | None = None) -> torch.Tensor:
        z = self.base(x)
        return self.join(z, z.mean(0) if embedding is None else embedding)

    def join(self, z: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
        emb = mu.view(1, -1).repeat(len(z), 1)
        if self.noise:
            emb = emb.normal_()  # DomainBed's in-place overwrite (same draw order: one [B, D] normal per call)
        return torch.cat([z, emb], dim=1)


class _MTL(Algorithm):
    noise = True
    HPARAMS = {"mtl_ema": HParam(0.99, choice([0.5, 0.9, 0.99, 1.0]), "weight of the current batch mean")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.featurizer = MarginalFeaturizer(self.featurizer, noise=self.noise)
        self.classifier = build_classifier(
            self.featurizer.n_outputs, n_classes, bool(self.hparams["nonlinear_classifier"])
        )
        self.network = nn.Sequential(self.featurizer, self.classifier)
        self.register_buffer("embeddings", torch.zeros(n_domains, self.featurizer.base.n_outputs))
        self.optimizer, self.scheduler = self.configure_optimizer()

    def domain_losses(self, minibatches: Minibatches) -> list[torch.Tensor]:
        if len(minibatches) > self.n_domains:
            raise ValueError(f"{type(self).__name__}.update: got {len(minibatches)} minibatches for n_domains={self.n_domains}")
        ema = float(self.hparams["mtl_ema"])
        losses = []
        for d, (x, y) in enumerate(minibatches):
            z = self.featurizer.base(x)
            mu = ema * z.mean(0) + (1 - ema) * self.embeddings[d]
            self.embeddings[d] = mu.detach()
            losses.append(F.cross_entropy(self.classifier(self.featurizer.join(z, mu)), y))
        return losses


@register_algorithm("MTL", tags=("domainbed",))
class MTL(_MTL):
    """DomainBed's MTL: the domain embedding handed to the classifier is N(0, 1) noise; summed domain losses."""

    noise = True

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        loss = torch.stack(self.domain_losses(minibatches)).sum()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}


@register_algorithm("MTL_KME", tags=("variant",))
class MTL_KME(_MTL):
    """Marginal transfer learning with the domain's mean feature as its embedding (Blanchard et al.), not noise."""

    noise = False

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        loss = torch.stack(self.domain_losses(minibatches)).mean()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
