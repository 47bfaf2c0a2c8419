"""Fishr (Rame et al., 2022, "Fishr: Invariant Gradient Variances for OoD Generalization", Eq. 4–6).

``mean CE + λ · (1/|E|) Σ_e ‖v_e − v̄‖²`` where v_e is the per-entry variance over domain e's examples of
the per-sample gradients of the loss w.r.t. the classifier's parameters (computed with
``torch.func.vmap(grad(...))`` on the head, so on CPU without BackPACK), v̄ = mean_e v_e, and ‖·‖² is the
mean of squared entries (DomainBed). v_e is smoothed over steps as DomainBed's ``MovingAverage`` with its
1/(1 − ema) correction: ``m_t = ema · m_{t−1} + (1 − ema) · v_e`` (m_0 = 0, m stored detached) and the penalty
uses ``m_t / (1 − ema)``, whose gradient is exactly that of the current v_e (so its amplitude does not depend on
``ema``). The EMA runs from the first step, also while λ is 0 (the first ``penalty_anneal_iters`` steps); the
optimiser is reset when λ switches on (not at step 0). The reported ``loss`` is the full objective.
Hyperparameter names, defaults and searches: DomainBed's (``lambda`` = 1000, 10^U(1, 4);
``penalty_anneal_iters`` 1500, int(U(0, 5000)); ``ema`` 0.95, U(0.9, 0.99)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from dganalysis.algorithms._utils import no_autocast, reset_optimizer_state, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, uniform, uniform_int


def per_sample_head_grads(head: nn.Module, z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """[B, P] per-example gradients of CE(head(z_i), y_i) w.r.t. the head's parameters (differentiable in z)."""
    params = dict(head.named_parameters())

    def loss_fn(p, zi, yi):
        return F.cross_entropy(functional_call(head, p, (zi.unsqueeze(0),)), yi.unsqueeze(0))

    g = vmap(grad(loss_fn), in_dims=(None, 0, 0))(params, z, y)
    return torch.cat([g[k].reshape(len(z), -1) for k in params], dim=1)


def gradient_variance(g: torch.Tensor) -> torch.Tensor:
    """Per-entry variance (1/n) of per-sample gradients ``g`` [B, P]."""
    return (g - g.mean(0, keepdim=True)).pow(2).mean(0)


def corrected_ema(previous: torch.Tensor | None, current: torch.Tensor, ema: float) -> tuple[torch.Tensor, torch.Tensor]:
    """DomainBed's ``MovingAverage(ema, oneminusema_correction=True)`` step: returns ``(m_t / (1 − ema), m_t
    detached)`` with ``m_t = ema · previous + (1 − ema) · current`` (``previous`` None → 0)."""
    prev = torch.zeros_like(current) if previous is None else previous
    m = ema * prev + (1 - ema) * current
    return m / (1 - ema), m.detach().clone()


def fishr_penalty(variances: torch.Tensor) -> torch.Tensor:
    """``mean_e mean_p (v_e − v̄)²`` for per-domain gradient variances [n_domains, P]."""
    return (variances - variances.mean(0, keepdim=True)).pow(2).mean()


@register_algorithm("Fishr", tags=("domainbed",))
class Fishr(Algorithm):
    """Match the domain-level variances of the classifier's per-sample gradients."""

    HPARAMS = {
        "lambda": HParam(1000.0, log10_uniform(1, 4), "penalty weight λ (DomainBed's name)"),
        "penalty_anneal_iters": HParam(1500, uniform_int(0, 5000), "steps before the penalty"),
        "ema": HParam(0.95, uniform(0.90, 0.99), "moving-average rate of the variances"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.register_buffer("ema_var", torch.empty(0), persistent=False)  # shape known at the first step
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        sizes = [len(b) for _, b in minibatches]
        z = self.featurizer(x)
        nll = F.cross_entropy(self.classifier(z), y)
        with no_autocast(z):  # the penalty in fp32 under bf16 autocast (differences of small variances)
            g = per_sample_head_grads(self.classifier, upcast(z), y)
            var = torch.stack([gradient_variance(gd) for gd in g.split(sizes)])
            previous = self.ema_var if self.ema_var.shape == var.shape else None
            var, self.ema_var = corrected_ema(previous, var, float(self.hparams["ema"]))
            penalty = fishr_penalty(var)
        anneal = self.hparams["penalty_anneal_iters"]
        w = float(self.hparams["lambda"]) if step >= anneal else 0.0
        if step == anneal != 0:
            reset_optimizer_state(self.optimizer)
        loss = nll + w * penalty
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": penalty.item()}
