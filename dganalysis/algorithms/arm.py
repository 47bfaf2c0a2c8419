"""ARM-CML, Adaptive Risk Minimization with a context network (Zhang et al., 2021, NeurIPS, Sec. 3.2, Alg. 2).

A context network f_ctx (three 5×5 convs, 64 channels, BatchNorm) maps every image of a *support set* to a
one-channel map; their mean over the support set is appended to each image as an extra channel before the
featurizer, and the cross-entropy of the adapted predictions is minimised.

``ARM`` is DomainBed's (Gulrajani & Lopez-Paz, 2021) code, quirks included: support sets are consecutive chunks
of ``batch_size`` images when the batch size is a multiple of it (in training: one domain's minibatch each),
otherwise the whole batch is one support set; and its Adam optimiser covers only featurizer and classifier —
the context network is created after the optimiser, so its weights keep their initial values (its BatchNorm
running statistics do move). Predictions depend on how the evaluated images are batched, so the trainer
evaluates ARM in DomainBed's evaluation batches of 64 (``EVAL_BATCH_SIZE``).

``ARM_CML`` departs from DomainBed to train the context network jointly, as Zhang et al.'s Alg. 2 does, and
at test time chunks the batch into support sets of ``batch_size`` (the last one smaller).

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
from dganalysis.nets import build_featurizer
from dganalysis.training.hparams import BASE_HPARAMS, fixed


class ContextFeaturizer(nn.Module):
    """Adapts each support set with the mean context map, then applies the base featurizer.

    ``ragged=False`` (DomainBed): chunks of ``support_size`` when the batch divides evenly, else one support set;
    ``ragged=True``: chunks of ``support_size``, the last one possibly smaller."""

    def __init__(self, input_shape: tuple[int, ...], hparams, support_size: int, ragged: bool = False) -> None:
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
        self.ragged = ragged

    def forward(self, x: torch.Tensor, support_size: int | None = None) -> torch.Tensor:
        s = self.support_size if support_size is None else max(1, int(support_size))
        if not self.ragged and len(x) % s:
            s = len(x)
        ctx = self.context_net(x)
        means = torch.cat([c.mean(0, keepdim=True).expand_as(c) for c in ctx.split(s)])
        return self.base(torch.cat([x, means], dim=1))


class _ARM(Algorithm):
    train_context = False
    #: predictions depend on the batch (its support sets): evaluate in DomainBed's evaluation batches of 64
    EVAL_BATCH_SIZE = 64

    # DomainBed: batch size 8 (not drawn) on every large-image dataset, DomainNet included
    HPARAMS = {"batch_size": replace(BASE_HPARAMS["batch_size"], large=(8, fixed(8)), datasets={})}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.featurizer = ContextFeaturizer(
            self.input_shape, self.hparams, int(self.hparams["batch_size"]), ragged=self.train_context
        )
        self.network = nn.Sequential(self.featurizer, self.classifier)
        if self.train_context:
            self.optimizer, self.scheduler = self.configure_optimizer()
        else:
            self.featurizer.context_net.requires_grad_(False)
            self.optimizer, self.scheduler = self.configure_optimizer(
                list(self.featurizer.base.parameters()) + list(self.classifier.parameters())
            )

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


@register_algorithm("ARM", tags=("domainbed",))
class ARM(_ARM):
    """DomainBed's ARM: batch-context adaptation; the context network stays at its initial weights."""

    train_context = False


@register_algorithm("ARM_CML", tags=("variant",))
class ARM_CML(_ARM):
    """ARM-CML with the context network trained jointly (Zhang et al., Alg. 2), unlike DomainBed's ARM."""

    train_context = True
