"""CAD and CondCAD, contrastive adversarial domain bottlenecks (Ruan et al., 2022, "Optimal Representations for
Covariate Shift", arXiv:2201.00057), as DomainBed (b93c22a) implements them. The paper was not at hand here: the
formulas below are DomainBed's code, written out (no equation numbers are claimed).

Objective: ``CE(h(z), y) + lmbda · B(z)`` with z = g(x), one Adam over g and h (lr, weight_decay). The bottleneck B
is a supervised-contrastive (Khosla et al., 2020) estimate of I(D; Z) (CAD) or I(D; Z | Y) (CondCAD). With
s_ij = z_i·z_j / τ (z L2-normalised first when ``is_normalized``), the self-pair zeroed and each row shifted by
its (detached) maximum:

- CAD: ``log p_ij = s_ij − logsumexp_{k≠i} s_ik``; rows i with at least one other example of the same *label*
  (DomainBed's choice, although CAD itself needs no labels) are kept;
- CondCAD: ``log p_ij = s_ij − logsumexp_{k≠i, y_k=y_i} s_ik``; rows with at least one same-label example in
  another domain (``is_flipped``) or in the same domain (not flipped) are kept.

``is_flipped`` (DomainBed's default, the only value its search draws): B_i = −(τ/0.07) · logsumexp of log p_ij over
j in *other* domains (CondCAD: other domains and same label), i.e. maximise the probability of picking a
cross-domain partner; otherwise B_i = (τ/0.07) · logsumexp over the *same* domain (CondCAD: and same label).
B is the mean of the finite B_i (0 when none). The reported ``loss`` is the total objective.

Departure, in a case where DomainBed cannot run: ``is_project=True`` (a projection head) raises ``NameError`` in
DomainBed's constructor (``feature_dim`` is undefined; its search never draws it), so ours refuses it with a
``ValueError`` instead of inventing the head. Precision: the whole update runs with autocast off (as MMD's): the
logits z·z/τ of unnormalised features reach tens, so bf16 rounding of z moves them by tenths (measured on
tests/algorithms/test_precision.py's data with bf16 features: B 8% off fp32 at step 2, even with B itself in fp32).
Hyperparameters (DomainBed's names and spaces): ``lmbda`` 0.1 ∈ {1e-4, …, 1e2}; ``temperature`` 0.1 ∈ {0.05, 0.1};
``is_normalized`` False, ``is_project`` False, ``is_flipped`` True (never searched).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import concat, domain_index, no_autocast, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice, fixed

BASE_TEMPERATURE = 0.07  # DomainBed's (and SupCon's) reference temperature τ_0 in the τ/τ_0 scale of B


def _log_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """0 where ``mask`` holds, −inf elsewhere (``log`` of the 0/1 mask), in ``like``'s dtype."""
    return mask.to(like.dtype).log()


def finite_mean(x: torch.Tensor) -> torch.Tensor:
    """Mean of the finite entries of the 1-D ``x``; 0 when there are none."""
    finite = torch.isfinite(x)
    count = finite.sum()
    if count == 0:
        return x.new_zeros(())
    return torch.where(finite, x, torch.zeros_like(x)).sum() / count


def cad_bottleneck(
    z: torch.Tensor,
    y: torch.Tensor,
    d: torch.Tensor,
    temperature: float,
    conditional: bool,
    flipped: bool = True,
    normalized: bool = False,
) -> torch.Tensor:
    """The contrastive domain bottleneck B(z) of CAD (``conditional=False``) or CondCAD (see the module docstring)
    for features ``z`` [n, k], labels ``y`` [n] and domain indices ``d`` [n]."""
    n = len(z)
    if normalized:
        z = F.normalize(z, dim=1)
    same_y = y.view(-1, 1) == y.view(1, -1)
    same_d = d.view(-1, 1) == d.view(1, -1)
    not_self = ~torch.eye(n, dtype=torch.bool, device=z.device)
    pos = same_y & not_self
    pos_other_d, pos_same_d = pos & ~same_d, pos & same_d
    logits = (z @ z.T) / temperature * not_self.to(z.dtype)
    logits = logits - logits.max(dim=1, keepdim=True).values.detach()
    scale = temperature / BASE_TEMPERATURE
    if not conditional:
        log_prob = logits - torch.logsumexp(logits + _log_mask(not_self, logits), dim=1, keepdim=True)
        keep = pos.any(dim=1)
        target = ~same_d[keep] if flipped else same_d[keep]
        per_row = torch.logsumexp(log_prob[keep] + _log_mask(target, logits), dim=1)
    else:
        partners = pos_other_d if flipped else pos_same_d
        keep = partners.any(dim=1)
        rows = logits[keep]
        log_prob = rows - torch.logsumexp(rows + _log_mask(pos[keep], rows), dim=1, keepdim=True)
        per_row = torch.logsumexp(log_prob + _log_mask(partners[keep], rows), dim=1)
    per_row = -scale * per_row if flipped else scale * per_row
    return finite_mean(per_row)


class _CADBase(Algorithm):
    conditional = False
    HPARAMS = {
        "lmbda": HParam(0.1, choice([1e-4, 1e-3, 1e-2, 1e-1, 1, 1e1, 1e2]), "weight of the bottleneck loss"),
        "temperature": HParam(0.1, choice([0.05, 0.1]), "temperature τ of the contrastive logits"),
        "is_normalized": HParam(False, fixed(False), "L2-normalise z before the dot products"),
        "is_project": HParam(False, fixed(False), "projection head (crashes in DomainBed; refused here)"),
        "is_flipped": HParam(True, fixed(True), "maximise cross-domain log-probability (else minimise same-domain)"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        if bool(self.hparams["is_project"]):
            raise ValueError(f"{type(self).__name__}: hparam 'is_project' must be False: DomainBed's projection head "
                             "references an undefined feature_dim (NameError) and has no behaviour to reproduce")
        self.optimizer, self.scheduler = self.configure_optimizer()

    def bottleneck(self, z: torch.Tensor, y: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        with no_autocast(z):
            hp = self.hparams
            return cad_bottleneck(upcast(z), y, d, float(hp["temperature"]), self.conditional,
                                  bool(hp["is_flipped"]), bool(hp["is_normalized"]))

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):  # fp32 features too: see the module docstring
            return self._update(minibatches, step)

    def _update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x, y = concat(minibatches)
        z = self.featurizer(x)
        bn = self.bottleneck(z, y, domain_index(minibatches))
        clf = F.cross_entropy(self.classifier(z), y)
        total = clf + float(self.hparams["lmbda"]) * bn
        self.step(total, self.optimizer, self.scheduler)
        return {"loss": total.item(), "clf_loss": clf.item(), "bn_loss": bn.item(), "total_loss": total.item()}


@register_algorithm("CAD", tags=("domainbed",))
class CAD(_CADBase):
    """CAD: ERM + lmbda · contrastive bottleneck on I(D; Z) (Ruan et al., 2022; see the module docstring)."""

    conditional = False


@register_algorithm("CondCAD", tags=("domainbed",))
class CondCAD(_CADBase):
    """CondCAD: ERM + lmbda · contrastive bottleneck on I(D; Z | Y) (Ruan et al., 2022)."""

    conditional = True
