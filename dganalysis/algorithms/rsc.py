"""RSC, Representation Self-Challenging (Huang et al., 2020, ECCV, Sec. 3, channel-wise muting).

For the pooled batch: the gradient of the true-class logit w.r.t. the features z; per example, the
``rsc_f_drop_factor`` fraction of feature entries with the largest gradient are muted (set to 0);
muting is applied only to the ``rsc_b_drop_factor`` fraction of examples whose true-class probability drops
the most under it; the loss is CE on the classifier applied to the (partly) muted features.
We drop exactly ``floor(f · D)`` entries and ``floor(b · B)`` examples (DomainBed uses percentiles, which
always mutes the maximum entry), so factors of 0 give ERM.
Defaults: DomainBed (1/3 and 1/3, U(0, 0.5) each).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, uniform


def top_fraction_mask(scores: torch.Tensor, frac: float, dim: int = -1) -> torch.Tensor:
    """A 0/1 mask that is 0 at the ``floor(frac · n)`` largest ``scores`` along ``dim`` and 1 elsewhere."""
    k = int(frac * scores.shape[dim])
    mask = torch.ones_like(scores)
    if k > 0:
        mask.scatter_(dim, scores.topk(k, dim=dim).indices, 0.0)
    return mask


def rsc_mask(z_grad: torch.Tensor, changes: torch.Tensor, f_drop: float, b_drop: float) -> torch.Tensor:
    """RSC mask [B, D]: feature mask where an example is among the top ``b_drop`` ``changes``, 1 elsewhere."""
    mask_f = top_fraction_mask(z_grad, f_drop, dim=1)
    muted = 1.0 - top_fraction_mask(changes, b_drop, dim=0)  # 1 for the examples that get muted
    return torch.where(muted.bool().unsqueeze(1), mask_f, torch.ones_like(mask_f))


@register_algorithm("RSC")
class RSC(Algorithm):
    """Self-challenging: train on features with the most predictive entries muted."""

    HPARAMS = {
        "rsc_f_drop_factor": HParam(1 / 3, uniform(0, 0.5), "fraction of feature entries muted"),
        "rsc_b_drop_factor": HParam(1 / 3, uniform(0, 0.5), "fraction of examples muted"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        z = self.featurizer(x)
        logits = self.classifier(z)
        onehot = F.one_hot(y, self.n_classes).to(logits.dtype)
        z_grad = torch.autograd.grad((logits * onehot).sum(), z, retain_graph=True)[0]
        with torch.no_grad():
            mask_f = top_fraction_mask(z_grad, float(self.hparams["rsc_f_drop_factor"]), dim=1)
            p_true = (F.softmax(logits, 1) * onehot).sum(1)
            p_muted = (F.softmax(self.classifier(z * mask_f), 1) * onehot).sum(1)
            mask = rsc_mask(z_grad, p_true - p_muted, float(self.hparams["rsc_f_drop_factor"]),
                            float(self.hparams["rsc_b_drop_factor"]))
        loss = F.cross_entropy(self.classifier(z * mask), y)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
