"""IRM (Arjovsky et al., 2019, IRMv1, Eq. 3) and IB-IRM (Ahuja et al., 2021, Eq. 5).

IRMv1: ``Σ_e R^e(Φ) + λ ‖∇_{w | w=1.0} R^e(w · Φ)‖²`` with a dummy scalar classifier w multiplying the
logits. As DomainBed we use the unbiased estimate of the squared gradient norm: the product of the
gradients on the two halves of each domain's batch (paper Sec. 3.2, "unbiased estimate").
The penalty weight is 1 for the first ``irm_penalty_anneal_iters`` steps and λ afterwards; when λ > 1 the
objective is divided by λ, and the optimiser's moments are reset when the penalty switches on (DomainBed).

IB-IRM adds the information-bottleneck term: the mean over feature dimensions of the per-domain
feature variance, weighted 1 then ``ib_lambda`` after ``ib_penalty_anneal_iters``.
Defaults and search spaces: DomainBed (λ = 100, 10^U(−1, 5); anneal 500, 10^U(0, 4)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import reset_optimizer_state
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, log10_uniform, log10_uniform_int


def irm_penalty(logits: torch.Tensor, y: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Squared gradient of the risk w.r.t. a dummy scale w at w = 1 (IRMv1).

    ``unbiased``: product of the half-batch gradients (DomainBed); otherwise the plain square.
    The result keeps the graph (create_graph) so it can be minimised.
    """
    scale = torch.ones((), device=logits.device, requires_grad=True)
    if unbiased and len(y) >= 2:
        h = len(y) // 2
        g1 = torch.autograd.grad(F.cross_entropy(logits[:h] * scale, y[:h]), scale, create_graph=True)[0]
        g2 = torch.autograd.grad(F.cross_entropy(logits[h : 2 * h] * scale, y[h : 2 * h]), scale, create_graph=True)[0]
        return g1 * g2
    g = torch.autograd.grad(F.cross_entropy(logits * scale, y), scale, create_graph=True)[0]
    return g.pow(2)


def ib_penalty(z: torch.Tensor) -> torch.Tensor:
    """Information-bottleneck penalty (Ahuja et al., 2021): mean over dimensions of the feature variance."""
    return z.var(dim=0).mean() if len(z) > 1 else z.new_zeros(())


def _weight(step: int, anneal: float, lam: float) -> float:
    return float(lam) if step >= anneal else 1.0


@register_algorithm("IRM")
class IRM(Algorithm):
    """Invariant Risk Minimization (IRMv1)."""

    HPARAMS = {
        "irm_lambda": HParam(1e2, log10_uniform(-1, 5), "IRM penalty weight λ"),
        "irm_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with weight 1 before λ"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def _losses(self, minibatches: Minibatches):
        feats = [self.featurizer(x) for x, _ in minibatches]
        logits = [self.classifier(z) for z in feats]
        nll = torch.stack([F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, minibatches)]).mean()
        irm = torch.stack([irm_penalty(lo, y) for lo, (_, y) in zip(logits, minibatches)]).mean()
        return feats, nll, irm

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        w = _weight(step, self.hparams["irm_penalty_anneal_iters"], self.hparams["irm_lambda"])
        if step == self.hparams["irm_penalty_anneal_iters"]:
            reset_optimizer_state(self.optimizer)
        _, nll, irm = self._losses(minibatches)
        loss = nll + w * irm
        if w > 1.0:
            loss = loss / w
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": irm.item()}


@register_algorithm("IB_IRM")
class IB_IRM(IRM):
    """IB-IRM: IRMv1 + information bottleneck on the features (Ahuja et al., 2021, Eq. 5)."""

    HPARAMS = {
        **IRM.HPARAMS,
        "ib_lambda": HParam(1e2, log10_uniform(-1, 5), "IB penalty weight"),
        "ib_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with IB weight 1"),
    }

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        w_irm = _weight(step, self.hparams["irm_penalty_anneal_iters"], self.hparams["irm_lambda"])
        w_ib = _weight(step, self.hparams["ib_penalty_anneal_iters"], self.hparams["ib_lambda"])
        if step in (self.hparams["irm_penalty_anneal_iters"], self.hparams["ib_penalty_anneal_iters"]):
            reset_optimizer_state(self.optimizer)
        feats, nll, irm = self._losses(minibatches)
        ib = torch.stack([ib_penalty(z) for z in feats]).mean()
        loss = nll + w_irm * irm + w_ib * ib
        if w_irm > 1.0:
            loss = loss / w_irm
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "irm_penalty": irm.item(), "ib_penalty": ib.item()}
