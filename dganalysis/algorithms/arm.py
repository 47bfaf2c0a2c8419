"""ARM-CML, Adaptive Risk Minimization with a context network (Zhang et al., 2021, NeurIPS, Sec. 3.2,
Alg. 2), as DomainBed.

A context network f_ctx (three 5×5 convs, 64 channels, BatchNorm) maps every image of a *support set*
(in training: one domain's minibatch; at test: consecutive chunks of ``batch_size`` images of the
predicted batch) to a one-channel map; their mean over the support set is appended to each image as an
extra channel before the featurizer. Training minimises the CE of the adapted predictions
(the meta-objective of ARM, Eq. 2, with the CML adaptation).

``featurizer`` is the wrapper x ↦ g([x, mean_support f_ctx(x)]) so ``features``/``predict`` are coherent;
z is the representation *after* adaptation to the support set. No extra hyperparameters; on large-image datasets
the batch size is DomainBed's fixed 8.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import BASE_HPARAMS, fixed
from dganalysis.nets import build_featurizer


class ContextFeaturizer(nn.Module):
    """Adapts each support set with the mean context map, then applies the base featurizer."""

    def __init__(self, input_shape: tuple[int, ...], hparams, support_size: int) -> None:
        super().__init__()
        c = input_shape[0]
        self.context_net = nn.Sequential(
            nn.Conv2d(c, 64, 5, padding=2), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 64, 5, padding=2), nn.BatchNorm2d(64), nn.ReLU(),
            nn.Conv2d(64, 1, 5, padding=2),
        )
        self.base = build_featurizer((c + 1, *input_shape[1:]), hparams)
        self.n_outputs = self.base.n_outputs
        self.support_size = max(1, int(support_size))

    def forward(self, x: torch.Tensor, support_size: int | None = None) -> torch.Tensor:
        s = self.support_size if support_size is None else max(1, int(support_size))
        ctx = self.context_net(x)
        means = torch.cat([c.mean(0, keepdim=True).expand_as(c) for c in ctx.split(s)])
        return self.base(torch.cat([x, means], dim=1))


@register_algorithm("ARM")
class ARM(Algorithm):
    """Adaptive risk minimisation with a batch context (CML)."""

    # DomainBed: batch size 8 (not drawn) on every large-image dataset, DomainNet included
    HPARAMS = {"batch_size": replace(BASE_HPARAMS["batch_size"], large=(8, fixed(8)), datasets={})}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.featurizer = ContextFeaturizer(self.input_shape, self.hparams, int(self.hparams.get("batch_size", 64)))
        self.network = nn.Sequential(self.featurizer, self.classifier)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        sizes = [len(b) for _, b in minibatches]
        if len(set(sizes)) == 1:
            z = self.featurizer(x, support_size=sizes[0])
        else:
            z = torch.cat([self.featurizer(xd, support_size=len(xd)) for xd in x.split(sizes)])
        loss = F.cross_entropy(self.classifier(z), y)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
