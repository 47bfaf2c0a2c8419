"""IRM (Arjovsky et al., 2019, IRMv1, Eq. 3) and IB-IRM (Ahuja et al., 2021, Eq. 5), as DomainBed.

IRMv1: ``mean_e R^e(Φ) + λ · mean_e ‖∇_{w | w=1.0} R^e(w · Φ)‖²`` with a dummy scalar classifier w multiplying
the logits. As DomainBed (Gulrajani & Lopez-Paz, 2021) the squared gradient norm is estimated without bias by
the product of the gradients on the even- and odd-indexed examples of each domain's batch (Arjovsky et al.,
2019, Sec. 3.2). The penalty weight is 1 for the first ``irm_penalty_anneal_iters`` steps and λ afterwards; the
objective is *not* divided by λ (DomainBed does not), and the optimiser's moments are reset at the step the
penalty switches on. All domains go through the network in one pooled forward pass (matters for BatchNorm).

IB-IRM adds the information-bottleneck term, the mean over feature dimensions of each domain's feature variance
(averaged over domains), weighted 0 for the first ``ib_penalty_anneal_iters`` steps and ``ib_lambda`` afterwards.
Defaults and search spaces: DomainBed (λ = 100, 10^U(−1, 5); anneal 500, int(10^U(0, 4))).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast, reset_optimizer_state, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, log10_uniform_int


def irm_penalty(logits: torch.Tensor, y: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Squared gradient of the risk w.r.t. a dummy scale w at w = 1 (IRMv1).

    ``unbiased``: the product of the gradients on the even- and odd-indexed examples (DomainBed); otherwise the
    plain square. The result keeps the graph (create_graph) so it can be minimised.
    """
    scale = torch.ones((), device=logits.device, dtype=logits.dtype, requires_grad=True)
    if unbiased:
        g1 = torch.autograd.grad(F.cross_entropy(logits[::2] * scale, y[::2]), scale, create_graph=True)[0]
        g2 = torch.autograd.grad(F.cross_entropy(logits[1::2] * scale, y[1::2]), scale, create_graph=True)[0]
        return g1 * g2
    g = torch.autograd.grad(F.cross_entropy(logits * scale, y), scale, create_graph=True)[0]
    return g.pow(2)


def ib_penalty(z: torch.Tensor) -> torch.Tensor:
    """Information-bottleneck penalty (Ahuja et al., 2021): mean over dimensions of the feature variance
    (unbiased, as ``Tensor.var``)."""
    return z.var(dim=0).mean()


def annealed(step: int, anneal: float, lam: float, before: float) -> float:
    """``lam`` from step ``anneal`` on, ``before`` until then."""
    return float(lam) if step >= anneal else float(before)


def per_domain(minibatches: Minibatches, t: torch.Tensor) -> list[torch.Tensor]:
    """Rows of the pooled tensor ``t`` split back into the training domains."""
    return list(t.split([len(y) for _, y in minibatches]))


@register_algorithm("IRM", tags=("domainbed",))
class IRM(Algorithm):
    """Invariant Risk Minimization (IRMv1), DomainBed's update."""

    HPARAMS = {
        "irm_lambda": HParam(1e2, log10_uniform(-1, 5), "IRM penalty weight λ"),
        "irm_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with weight 1 before λ"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def _terms(self, minibatches: Minibatches):
        """Pooled forward; per-domain features, mean CE and mean IRM penalty."""
        z = self.featurizer(torch.cat([x for x, _ in minibatches]))
        logits = per_domain(minibatches, self.classifier(z))
        ys = [y for _, y in minibatches]
        nll = torch.stack([F.cross_entropy(lo, y) for lo, y in zip(logits, ys)]).mean()
        with no_autocast(z):  # fp32 under bf16 autocast: a product of two small gradients
            irm = torch.stack([irm_penalty(upcast(lo), y) for lo, y in zip(logits, ys)]).mean()
        return per_domain(minibatches, z), nll, irm

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        anneal = self.hparams["irm_penalty_anneal_iters"]
        w = annealed(step, anneal, self.hparams["irm_lambda"], 1.0)
        _, nll, irm = self._terms(minibatches)
        loss = nll + w * irm
        if step == anneal:
            reset_optimizer_state(self.optimizer)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": irm.item()}


@register_algorithm("IB_IRM", tags=("domainbed",))
class IB_IRM(IRM):
    """IB-IRM: IRMv1 + information bottleneck on the features (Ahuja et al., 2021, Eq. 5), DomainBed's update."""

    HPARAMS = {
        **IRM.HPARAMS,
        "ib_lambda": HParam(1e2, log10_uniform(-1, 5), "IB penalty weight (0 before ib_penalty_anneal_iters)"),
        "ib_penalty_anneal_iters": HParam(500, log10_uniform_int(0, 4), "steps with IB weight 0"),
    }
    DOMAINBED_KEYS = {"IRM_penalty": "irm_penalty", "IB_penalty": "ib_penalty"}

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        w_irm = annealed(step, self.hparams["irm_penalty_anneal_iters"], self.hparams["irm_lambda"], 1.0)
        w_ib = annealed(step, self.hparams["ib_penalty_anneal_iters"], self.hparams["ib_lambda"], 0.0)
        feats, nll, irm = self._terms(minibatches)
        with no_autocast(nll):
            ib = torch.stack([ib_penalty(upcast(z)) for z in feats]).mean()
        loss = nll + w_irm * irm + w_ib * ib
        if step in (self.hparams["irm_penalty_anneal_iters"], self.hparams["ib_penalty_anneal_iters"]):
            reset_optimizer_state(self.optimizer)
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "irm_penalty": irm.item(), "ib_penalty": ib.item()}
