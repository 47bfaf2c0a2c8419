"""SelfReg (Kim et al., 2021, "SelfReg: Self-supervised Contrastive Regularization for Domain Generalization",
Sec. 3, Eq. 1–5), as DomainBed (Gulrajani & Lopez-Paz, 2021).

The pooled batch is sorted by label; within each class block two random permutations pick partners ·₂, ·₃ of
the same class; λ ~ Beta(0.5, 0.5) (numpy's global generator, as DomainBed) mixes them: ·̃ = λ·₂ + (1 − λ)·₃.
With features z = g(x), logits o = h(z) and the class-different projection p = P(z) (Linear–BN–ReLU–Linear–BN–
ReLU–Linear–BN, hidden width 2·D, or D when D = 2048), the loss is

``L = CE + c · [λ (‖o − o₂‖² + 0.3 ‖z − p₂‖²) + (1 − λ)(‖o − õ‖² + 0.3 ‖z − p̃‖²)]``

where ‖·‖² is the mean squared error and c = min(CE, 1). As DomainBed, the feature terms compare an example's
raw feature z with its partners' *projections*, and the projection P is never trained (DomainBed creates its
optimiser before P; P's BatchNorm statistics still move). Class blocks follow DomainBed's scan of the sorted labels,
which starts from label 0 (a batch without class 0 gets an empty first block; no effect on the result).
No hyperparameters beyond the base ones.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm


def class_blocks(sorted_y: torch.Tensor) -> list[int]:
    """End indices of the same-label blocks of ``sorted_y``, scanned as DomainBed does (from label 0)."""
    ends, prev = [], 0
    for i, v in enumerate(sorted_y.tolist()):
        if v != prev:
            ends.append(i)
            prev = v
    ends.append(len(sorted_y))
    return ends


def same_class_partners(sorted_y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two index maps pairing each example of the label-sorted batch with random members of its class
    (``torch.randperm`` per block from the global generator, two per block, in DomainBed's order)."""
    first, second, start = [], [], 0
    for end in class_blocks(sorted_y):
        first.append(torch.randperm(end - start) + start)
        second.append(torch.randperm(end - start) + start)
        start = end
    dev = sorted_y.device
    return torch.cat(first).to(dev), torch.cat(second).to(dev)


def selfreg_penalty(
    logits: torch.Tensor, feat: torch.Tensor, proj: torch.Tensor, idx2: torch.Tensor, idx3: torch.Tensor, lam: float
) -> torch.Tensor:
    """The bracketed regulariser of SelfReg (without the scale c)."""
    out2, proj2 = logits[idx2], proj[idx2]
    out3 = lam * out2 + (1 - lam) * logits[idx3]
    proj3 = lam * proj2 + (1 - lam) * proj[idx3]
    ind = F.mse_loss(logits, out2) + 0.3 * F.mse_loss(feat, proj2)
    hdl = F.mse_loss(logits, out3) + 0.3 * F.mse_loss(feat, proj3)
    return lam * ind + (1 - lam) * hdl


@register_algorithm("SelfReg", tags=("domainbed",))
class SelfReg(Algorithm):
    """ERM + same-class logit and feature consistency with in-batch mixup (DomainBed's form)."""

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        d = self.featurizer.n_outputs
        h = d if d == 2048 else 2 * d
        self.cdpl = nn.Sequential(
            nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(inplace=True),
            nn.Linear(h, h), nn.BatchNorm1d(h), nn.ReLU(inplace=True),
            nn.Linear(h, d), nn.BatchNorm1d(d),
        )
        # DomainBed builds its optimiser (over featurizer + classifier) before the projection: ``cdpl`` keeps
        # its initial weights (only its BatchNorm statistics move)
        self.cdpl.requires_grad_(False)
        self.optimizer, self.scheduler = self.configure_optimizer(self.network.parameters())

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        lam = float(np.random.beta(0.5, 0.5))
        with torch.no_grad():
            y, order = torch.sort(y)
            x = x[order]
        feat = self.featurizer(x)
        proj = self.cdpl(feat)
        logits = self.classifier(feat)
        idx2, idx3 = same_class_partners(y)
        nll = F.cross_entropy(logits, y)
        loss = nll + min(nll.item(), 1.0) * selfreg_penalty(logits, feat, proj, idx2, idx3, lam)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
