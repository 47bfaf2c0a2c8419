"""Transfer (Zhang et al., 2021, "Quantifying and Improving Transferability in Domain Generalization",
arXiv:2106.03632, Algorithm 1 as DomainBed's docstring names it), as DomainBed (b93c22a) implements it. The paper
was not at hand here: the steps below are DomainBed's code, written out.

Featurizer g, classifier h and an adversarial classifier h' (same architecture, a copy of h). One update:

1. an optimiser step of g, h on the pooled ``CE(h(g(x)), y)``;
2. an optimiser step on ``t_lambda · gap(h')`` with ``gap(h') = max_e CE_e(h'∘g) − min_e CE_e(h'∘g)`` over the
   training domains (the maximum and minimum taken as DomainBed's running comparisons: ties keep the first domain);
   the gradient reaches g (h' is not in this optimiser, h gets no gradient);
3. h' ← h, then ``d_steps_per_g`` SGD steps (lr ``lr_d``) of h' *ascending* the gap, each followed by the Euclidean
   projection of h' onto the ball of radius ``delta`` around h (distance over all of h's state).

Reported: ``loss`` (step 1's CE) and ``gap`` (the gap at h' before the last ascent step, times ``t_lambda``).

DomainBed's quirk kept under its name: with ``gda=True`` the "main" optimiser is SGD (lr ``lr``) over h' instead of
Adam over g and h, so steps 1–2 never change g or h and the network never trains; DomainBed's random search draws
``gda=True`` for every hparams_seed ≠ 0 (the default, seed 0, is False). ``weight_decay_d`` and ``beta1`` are drawn
by DomainBed but unused; DomainBed's alternative ``update_second`` is not called by its trainer and is not ported.
``Transfer_NoGDA`` is the variant whose search keeps ``gda=False`` (every draw trains).
Hyperparameters (DomainBed's names and spaces): ``t_lambda`` 1, 10^U(−2, 1); ``delta`` 2, U(0.1, 3);
``d_steps_per_g`` 10, {1, 2, 5}; ``weight_decay_d`` 0, 10^U(−6, −2); ``gda`` False, True; ``beta1`` 0.5, {0, 0.5};
``lr_d`` 1e-3, 10^U(−4.5, −2.5) (both image regimes).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms._utils import concat
from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice, fixed, log10_uniform, uniform
from dganalysis.training.optim import make_scheduler


def state_distance(a: nn.Module, b: nn.Module) -> torch.Tensor:
    """Euclidean distance between two modules of one architecture over their whole state (Frobenius per tensor)."""
    sa, sb = a.state_dict(), b.state_dict()
    total = 0.0
    for k in sa:
        total = total + torch.linalg.vector_norm(sa[k] - sb[k]) ** 2
    return torch.sqrt(total)


@torch.no_grad()
def project_to_ball(adv: nn.Module, center: nn.Module, radius: float) -> None:
    """Move ``adv``'s parameters onto the ball of ``radius`` around ``center`` when outside it (in place)."""
    dist = state_distance(adv, center)
    if dist <= radius:
        return
    ratio = radius / dist
    for pc, pa in zip(center.parameters(), adv.parameters()):
        pa.copy_(pc + ratio * (pa - pc))


def domain_loss_gap(loss_fn, minibatches: Minibatches) -> torch.Tensor:
    """``max_e L_e − min_e L_e`` with ``L_e = loss_fn(x_e, y_e)``, first domain winning ties (DomainBed's loop)."""
    hi = lo = None
    for x, y in minibatches:
        loss = loss_fn(x, y)
        if hi is None or loss > hi:
            hi = loss
        if lo is None or loss < lo:
            lo = loss
    return hi - lo


@register_algorithm("Transfer", tags=("domainbed",))
class Transfer(Algorithm):
    """Transferability-regularised ERM with an adversarial classifier in a δ-ball (Zhang et al., 2021, Algorithm 1)."""

    HPARAMS = {
        "t_lambda": HParam(1.0, log10_uniform(-2, 1), "weight of the transferability gap"),
        "delta": HParam(2.0, uniform(0.1, 3.0), "radius of the ball around h the adversarial classifier stays in"),
        "d_steps_per_g": HParam(10, choice([1, 2, 5]), "adversarial-classifier ascent steps per update"),
        "weight_decay_d": HParam(0.0, log10_uniform(-6, -2), "drawn by DomainBed, unused by its Transfer"),
        "gda": HParam(False, fixed(True), "DomainBed's quirk: SGD over h' only, so g and h never train"),
        "beta1": HParam(0.5, choice([0.0, 0.5]), "drawn by DomainBed, unused by its Transfer"),
        "lr_d": HParam(1e-3, log10_uniform(-4.5, -2.5), "SGD learning rate of the adversarial classifier"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.adv_classifier = copy.deepcopy(self.classifier)
        hp = self.hparams
        if bool(hp["gda"]):
            self.optimizer = torch.optim.SGD(self.adv_classifier.parameters(), lr=float(hp["lr"]))
            self.scheduler = make_scheduler(self.optimizer, hp)
        else:
            self.optimizer, self.scheduler = self.configure_optimizer(
                list(self.featurizer.parameters()) + list(self.classifier.parameters()))
        self.adv_opt = torch.optim.SGD(self.adv_classifier.parameters(), lr=float(hp["lr_d"]))
        self.adv_sched = make_scheduler(self.adv_opt, hp)

    def adversarial_gap(self, minibatches: Minibatches) -> torch.Tensor:
        """The loss gap between training domains under the adversarial classifier h'."""
        return domain_loss_gap(lambda x, y: F.cross_entropy(self.adv_classifier(self.featurizer(x)), y), minibatches)

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        hp = self.hparams
        t = float(hp["t_lambda"])
        x, y = concat(minibatches)
        loss = F.cross_entropy(self.predict(x), y)
        self.step(loss, self.optimizer)
        gap = t * self.adversarial_gap(minibatches)
        self.step(gap, self.optimizer)
        reported = -gap.item()  # DomainBed reports −(last gap it stepped on)
        with torch.no_grad():
            self.adv_classifier.load_state_dict(self.classifier.state_dict())
        fresh_casts()
        for _ in range(int(hp["d_steps_per_g"])):
            gap = t * self.adversarial_gap(minibatches)
            self.step(-gap, self.adv_opt)
            reported = gap.item()
            project_to_ball(self.adv_classifier, self.classifier, float(hp["delta"]))
            fresh_casts()
        self.scheduler.step()
        self.adv_sched.step()
        return {"loss": loss.item(), "gap": reported}


@register_algorithm("Transfer_NoGDA", tags=("variant",))
class Transfer_NoGDA(Transfer):
    """DomainBed's Transfer with ``gda`` fixed to False in the search as well: every draw trains g and h with Adam.
    DomainBed's search draws ``gda=True`` for every hparams_seed ≠ 0, and under it g and h never change (see the module
    docstring), so a DomainBed sweep of Transfer trains only its default draw. Everything else is Transfer's."""

    HPARAMS = {**Transfer.HPARAMS,
               "gda": HParam(False, fixed(False), "never drawn True (DomainBed's search draws True: no training)")}
