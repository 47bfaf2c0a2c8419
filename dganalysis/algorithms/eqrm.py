"""EQRM: empirical quantile risk minimisation (Eastwood, Robey, Singh, von Kügelgen, Hassani, Pappas & Schölkopf,
2022, "Probable Domain Generalization via Quantile Risk Minimization", NeurIPS; Algorithm 1), as DomainBed (b93c22a).

Each training domain goes through the network on its own (matters for BatchNorm), giving the domain risks
R_1 … R_n. For the first ``eqrm_burnin_iters`` steps the loss is their mean (ERM burn-in); from then on it is the
α-quantile (α = ``eqrm_quantile``) of a Gaussian kernel density estimate of the risks, bandwidth
``1.06 · std(R) · n^(-1/5)`` (the "Gauss-optimal" rule, std unbiased), found by 32 steps of bisection on the KDE's CDF
between the α-quantiles of the kernels centred on the smallest and on the largest risk
(:func:`kde_quantile`). As DomainBed (Algorithm 1 leaves the estimator's gradient open) the bisection's midpoints
are differentiated as they are computed, so the gradient reaches the network through the smallest and largest
risk and the bandwidth only. At the step equal to ``eqrm_burnin_iters`` the optimiser restarts (moments
forgotten) at the learning rate ``eqrm_lr``.

DomainBed's quirk kept: ``eqrm_burnin_iters`` is drawn as a float, ``10^U(2.5, 3.5)`` (2500, an int, only by
default), and the restart is tested by equality with the integer step, so in a random search it never fires:
those runs keep Adam's moments and the learning rate ``lr`` throughout, and ``eqrm_lr`` is unused (the burn-in
itself ends at ⌈eqrm_burnin_iters⌉ as it should). ``EQRM_restart`` is the variant that restarts at the first
quantile step, ⌈eqrm_burnin_iters⌉, whatever the type of the value: Algorithm 1's switch from the ERM
initialisation to the quantile objective at its own learning rate, in every run of a search (identical to EQRM
when the burn-in is an integer). Hyperparameters: ``eqrm_quantile`` 0.75, U(0.5, 0.99);
``eqrm_burnin_iters`` 2500, 10^U(2.5, 3.5); ``eqrm_lr`` 1e-6, 10^U(−7, −5). Precision: the quantile is computed
in float64 from the risks (DomainBed's α is a float64 buffer, which promotes the quantile) with autocast off.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.distributions import Normal

from dganalysis.algorithms._utils import no_autocast, restart_optimizer, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform, uniform
from dganalysis.validation import Check


def gauss_optimal_bandwidth(x: torch.Tensor) -> torch.Tensor:
    """Silverman's Gaussian-reference bandwidth ``1.06 · std(x) · n^(-1/5)`` (std unbiased)."""
    return 1.06 * x.std() * len(x) ** -0.2


def kde_quantile(x: torch.Tensor, q: float, n_steps: int = 32) -> torch.Tensor:
    """The ``q``-quantile of a Gaussian KDE of the 1-D sample ``x`` (see the module docstring), by bisection.

    The search starts between the ``q``-quantiles of the kernels on min(x) and max(x); each step moves the end on
    the side of the midpoint whose KDE-CDF exceeds ``q`` (stopping early when the midpoint no longer moves).
    """
    data = torch.sort(x).values
    bw = gauss_optimal_bandwidth(data)
    qt = torch.as_tensor(q, dtype=torch.float64, device=x.device)
    ends = [Normal(data[0], bw).icdf(qt), Normal(data[-1], bw).icdf(qt)]
    kernels = Normal(data, bw * torch.ones_like(data))
    k = 0.5 * (ends[0] + ends[1])
    for _ in range(n_steps):
        ends[int(bool(kernels.cdf(k.detach()).mean() > qt))] = k
        nxt = 0.5 * (ends[0] + ends[1])
        if bool(nxt == k):
            break
        k = nxt
    return k


@register_algorithm("EQRM", tags=("domainbed",))
class EQRM(Algorithm):
    """Empirical Quantile Risk Minimization: the α-quantile of the domain risks after an ERM burn-in."""

    HPARAMS = {
        "eqrm_quantile": HParam(0.75, uniform(0.5, 0.99), "α: the quantile of the domain risks minimised"),
        "eqrm_burnin_iters": HParam(2500, log10_uniform(2.5, 3.5), "steps of ERM before the quantile loss (drawn "
                                    "as a float, as DomainBed)", check=Check("float", low=0.0)),
        "eqrm_lr": HParam(1e-6, log10_uniform(-7, -5), "learning rate after the restart at eqrm_burnin_iters"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        burnin = self.hparams["eqrm_burnin_iters"]
        risks = torch.stack([F.cross_entropy(self.predict(x), y) for x, y in minibatches])
        if step < burnin:
            loss = risks.mean()
        else:
            with no_autocast(risks):
                loss = kde_quantile(upcast(risks), float(self.hparams["eqrm_quantile"]))
        if self.restarts_at(step, burnin):
            restart_optimizer(self.optimizer, self.scheduler, float(self.hparams["eqrm_lr"]))
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "mean_risk": risks.mean().item()}

    @staticmethod
    def restarts_at(step: int, burnin: float) -> bool:
        """DomainBed's test: equality with the step, never true for a drawn (float) burn-in (see the module docstring)."""
        return step == burnin


@register_algorithm("EQRM_restart", tags=("variant",))
class EQRM_restart(EQRM):
    """EQRM whose optimiser restart (at ``eqrm_lr``) happens at the first quantile step even for a float burn-in
    (DomainBed's EQRM never restarts then); the same as EQRM for an integer burn-in."""

    @staticmethod
    def restarts_at(step: int, burnin: float) -> bool:
        return step == math.ceil(burnin)

