"""RSC, Representation Self-Challenging (Huang et al., 2020, ECCV, Sec. 3, Eq. 1–5), as DomainBed.

For the pooled batch: g = the gradient of the true-class logit w.r.t. the features z (Eq. 1). Per example, the
feature entries whose gradient reaches the ``(1 − rsc_f_drop_factor)`` quantile of that example's gradients
are muted (Eq. 2–3: mask 0 where g ≥ the quantile, so the largest entry is always muted). The batch part
(Sec. 3.3): the drop of the true-class probability under that muting is computed per example, and only examples
whose drop reaches the ``(1 − rsc_b_drop_factor)`` quantile of the drops keep the feature mask; the others are
left unmuted. The loss is the cross-entropy of the classifier on the masked features (Eq. 4–5).
The masks are computed in fp32 under bf16 autocast. Quantiles interpolate linearly between order statistics (numpy's ``percentile`` default, DomainBed's choice).
Defaults: DomainBed (1/3 and 1/3, U(0, 0.5) each).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, uniform


def below_quantile(scores: torch.Tensor, q: float, dim: int | None = None) -> torch.Tensor:
    """0/1 mask (dtype of ``scores``): 1 where ``scores`` is strictly below its ``q`` quantile (linear
    interpolation) along ``dim`` (all entries when None), 0 where it reaches it."""
    s = scores if scores.dtype == torch.float64 else scores.float()  # quantile needs fp32/fp64 (bf16 under autocast)
    thr = torch.quantile(s, q) if dim is None else torch.quantile(s, q, dim=dim, keepdim=True)
    return s.lt(thr).to(scores.dtype)


def rsc_mask(z_grad: torch.Tensor, changes: torch.Tensor, f_drop: float, b_drop: float) -> torch.Tensor:
    """RSC mask [B, D]: 0 where an entry's gradient reaches its example's ``1 − f_drop`` quantile *and* the
    example's probability drop reaches the batch's ``1 − b_drop`` quantile; 1 elsewhere."""
    mask_f = below_quantile(z_grad, 1.0 - f_drop, dim=1)
    mask_b = below_quantile(changes, 1.0 - b_drop).unsqueeze(1)
    return torch.maximum(mask_f, mask_b)


@register_algorithm("RSC", tags=("domainbed",))
class RSC(Algorithm):
    """Self-challenging: train on features with the most predictive entries muted."""

    HPARAMS = {
        "rsc_f_drop_factor": HParam(1 / 3, uniform(0, 0.5), "fraction of feature entries muted (a quantile)"),
        "rsc_b_drop_factor": HParam(1 / 3, uniform(0, 0.5), "fraction of examples muted (a quantile)"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        z = self.featurizer(x)
        f_drop, b_drop = float(self.hparams["rsc_f_drop_factor"]), float(self.hparams["rsc_b_drop_factor"])
        with no_autocast(z):  # the masks in fp32 under bf16 autocast: quantile cuts are sensitive to rounding
            zf = upcast(z)
            logits = self.classifier(zf)
            onehot = F.one_hot(y, self.n_classes).to(logits.dtype)
            z_grad = torch.autograd.grad((logits * onehot).sum(), zf, retain_graph=True)[0]
            with torch.no_grad():
                mask_f = below_quantile(z_grad, 1.0 - f_drop, dim=1)
                p_true = (F.softmax(logits, 1) * onehot).sum(1)
                p_muted = (F.softmax(self.classifier(zf * mask_f), 1) * onehot).sum(1)
                mask = rsc_mask(z_grad, p_true - p_muted, f_drop, b_drop).to(z.dtype)
        loss = F.cross_entropy(self.classifier(z * mask), y)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}
