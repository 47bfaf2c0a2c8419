"""TRM, Transfer Risk Minimization (Xu et al., 2021, "Learning Representations that Support Robust Transfer of
Predictors", arXiv:2110.09940), as DomainBed (b93c22a) implements it. The paper was not at hand here: the steps
below are DomainBed's code, written out (no equation numbers are claimed).

Featurizer g, linear classifier h (always linear: DomainBed ignores ``nonlinear_classifier`` here) and one linear
head h_e per training domain (``domain_heads``), each with its own SGD (lr 0.1). For the first ``iters`` updates
the step is plain ERM on the pooled batch. From then on, with z = g(x) computed once:

1. each h_e takes 30 SGD steps on its own domain's detached features (the summed CE over domains);
2. for each domain q, with ``α_q`` the normalised weights over the other domains (``α`` is GroupDRO-like,
   ``α_qi ← α_qi · exp(groupdro_eta · α_qi · CE_i)``, renormalised at the start of the next TRM update) and
   ``P_q = Σ_{i≠q} α_qi CE(h_q(z_i), y_i)``: the transfer term ``P_q − cos_lambda · ⟨H_q⁻¹ ∇P_q, ∇CE(h_q(z_q), y_q)⟩``,
   gradients w.r.t. h_q's weight only, H_q⁻¹ v approximated by a truncated Neumann series (:func:`neumann_inverse_hvp`);
3. one Adam step of g and h (two Adams, lr and weight_decay) on ``CE(h(z), y) + (1/E) Σ_q transfer_q``; the
   gradient reaches g through z in every term, second-order through ∇CE(h_q(z_q)).

DomainBed's quirks, kept under its name (pinned by tests/reference/test_domainbed_trm.py):

- the α weights used in the *gradient* of P_q are the updated ones: DomainBed multiplies ``α`` in place after
  building P_q, and the product saved for backward reads the same storage; the forward value (and ∇P_q used in
  the Neumann series) use the old ones (:func:`late_weighted`);
- the α update exponentiates the α-weighted loss α_qi CE_i, not CE_i (GroupDRO would use CE_i);
- its Neumann series ``Σ_k (I − H)^k v`` overwrites its first term: DomainBed's in-place ``v -= Hv`` also changes
  the running sum it aliased, so the sum is ``2 v_1 + v_2 + … + v_10`` with v_k = (I − H)^k v, not v_0 + … + v_10;
  the loop stops after the first partial sum with an entry above 10 in magnitude (that sum is returned);
- ``class_balanced`` (a DomainBed base hparam, read with default False) copies h's weight into every h_e first.

DomainBed builds E + 1 heads and uses E; ours builds the E it uses (they are registered, so saved and moved with
the model). Precision: the whole update runs with autocast off (as MMD's): the heads, fitted for 30 SGD steps per
update and never reset, grow sharp, and their cross-domain CE amplifies bf16 feature rounding (measured on
tests/algorithms/test_precision.py's data: the transfer term 12% off fp32 after 5 updates with bf16 features).
Hyperparameters (DomainBed's): ``cos_lambda`` 1e-4, 10^U(−5, 0); ``iters`` 200, int(10^U(0, 4));
``groupdro_eta`` 1e-2, 10^U(−3, −1). The reported ``loss`` is the full objective, ``trm_loss`` = loss − nll.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import autograd, nn

from dganalysis.algorithms._utils import concat, minibatch_sizes, multi_step, no_autocast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.nets import build_classifier
from dganalysis.training.hparams import HParam, log10_uniform, log10_uniform_int

HEAD_LR = 0.1  # DomainBed's SGD learning rate of the per-domain heads
HEAD_STEPS = 30  # SGD steps of the per-domain heads per TRM update
NEUMANN_TERMS = 10
NEUMANN_BOUND = 10.0


def head_hvp(head: nn.Linear, z: torch.Tensor, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """H v with H the Hessian of ``CE(head(z), y)`` w.r.t. ``head.weight`` (flattened), z and y held fixed."""
    loss = F.cross_entropy(head(z.detach()), y.detach())
    (g,) = autograd.grad(loss, head.weight, create_graph=True)
    (hv,) = autograd.grad(g.flatten() @ v, head.weight)
    return hv.flatten()


def neumann_inverse_hvp(head: nn.Linear, z: torch.Tensor, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """DomainBed's truncated Neumann estimate of H⁻¹ v (see the module docstring for its first-term quirk)."""
    v = v.detach()
    total = None
    for k in range(NEUMANN_TERMS):
        v = (v - head_hvp(head, z, y, v)).detach()
        total = v + v if k == 0 else v + total
        if float(total.abs().max()) > NEUMANN_BOUND:
            break
    return total


def late_weighted(loss: torch.Tensor, w_forward: torch.Tensor, w_backward: torch.Tensor) -> torch.Tensor:
    """``loss · w_forward`` in value whose gradient w.r.t. ``loss`` is ``w_backward`` (DomainBed's in-place α)."""
    return loss * w_forward + (loss - loss.detach()) * (w_backward - w_forward)


@register_algorithm("TRM", tags=("domainbed",))
class TRM(Algorithm):
    """Transfer risk minimisation with per-domain heads (Xu et al., 2021; see the module docstring)."""

    HPARAMS = {
        "cos_lambda": HParam(1e-4, log10_uniform(-5, 0), "weight of the gradient-alignment term"),
        "iters": HParam(200, log10_uniform_int(0, 4), "ERM updates before the transfer risk switches on"),
        "groupdro_eta": HParam(1e-2, log10_uniform(-3, -1), "step size of the α weights over source domains"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        n = self.featurizer.n_outputs
        self.classifier = build_classifier(n, n_classes, False)
        self.network = nn.Sequential(self.featurizer, self.classifier)
        self.domain_heads = nn.ModuleList([nn.Linear(n, n_classes) for _ in range(n_domains)])
        self.head_opts = [torch.optim.SGD(h.parameters(), lr=HEAD_LR) for h in self.domain_heads]
        self.register_buffer("alpha", torch.ones(n_domains, n_domains) - torch.eye(n_domains))
        self.opt_f, self.sched_f = self.configure_optimizer(self.featurizer.parameters())
        self.opt_c, self.sched_c = self.configure_optimizer(self.classifier.parameters())

    def fit_heads(self, zs: list[torch.Tensor], ys: list[torch.Tensor]) -> None:
        """Step 1: 30 SGD steps of every domain head on its domain's detached features."""
        for _ in range(HEAD_STEPS):
            loss = sum(F.cross_entropy(self.domain_heads[j](z.detach()), y) for j, (z, y) in enumerate(zip(zs, ys)))
            for opt in self.head_opts:
                opt.zero_grad(set_to_none=True)
            loss.backward()
            for opt in self.head_opts:
                opt.step()

    def transfer_risk(self, zs: list[torch.Tensor], ys: list[torch.Tensor]) -> torch.Tensor:
        """Step 2: (1/E) Σ_q transfer_q, updating ``alpha`` (see the module docstring)."""
        n = len(zs)
        eta, cos = float(self.hparams["groupdro_eta"]), float(self.hparams["cos_lambda"])
        total = zs[0].new_zeros(())
        for q in range(n):
            head = self.domain_heads[q]
            (g_q,) = autograd.grad(F.cross_entropy(head(zs[q]), ys[q]), head.weight, create_graph=True)
            others = [i for i in range(n) if i != q]
            ce = {i: F.cross_entropy(head(zs[i]), ys[i]) for i in others}
            w_old = {i: self.alpha[q, i].clone() for i in others}
            weighted = {i: ce[i] * w_old[i] for i in others}
            p_q = sum(weighted.values())
            (g_p,) = autograd.grad(p_q, head.weight, create_graph=True)
            v = neumann_inverse_hvp(head, zs[q], ys[q], g_p.flatten().detach())
            w_new = {i: w_old[i] * torch.exp(eta * weighted[i].detach()) for i in others}
            p_late = sum(late_weighted(ce[i], w_old[i], w_new[i]) for i in others)
            total = total + p_late - cos * (v @ g_q.flatten())
            for i in others:
                self.alpha[q, i] = w_new[i]
        return total / n

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):  # fp32 features too: see the module docstring
            return self._update(minibatches, step)

    def _update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x, y = concat(minibatches)
        trm_on = step >= int(self.hparams["iters"])
        if trm_on:
            if bool(self.hparams["class_balanced"]):
                with torch.no_grad():
                    for head in self.domain_heads:
                        head.weight.copy_(self.classifier.weight)
            self.alpha /= self.alpha.sum(dim=1, keepdim=True)
        z = self.featurizer(x)
        nll = F.cross_entropy(self.classifier(z), y)
        loss = nll
        if trm_on:
            zs = list(z.split(minibatch_sizes(minibatches)))
            ys = list(y.split(minibatch_sizes(minibatches)))
            self.fit_heads(zs, ys)
            loss = nll + self.transfer_risk(zs, ys)
        multi_step(loss, [self.opt_f, self.opt_c])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step", category=UserWarning)
            self.sched_f.step()
            self.sched_c.step()
        return {"loss": loss.item(), "nll": nll.item(), "trm_loss": loss.item() - nll.item()}
