"""RDM: risk distribution matching (Nguyen, Do, Duong & Nguyen, 2024, "Domain Generalisation via Risk
Distribution Matching", WACV; arXiv:2310.18598), as DomainBed (b93c22a).

All domains go through the network in one pooled forward pass. With r_d the per-example cross-entropies of domain
d, R_d their mean and w = argmax_d R_d the worst domain (first on ties):

``L = mean_d R_d + λ_t · MMD²(r_w, r_all) + v_t · (Var(r_all) + Var(r_w))``

r_all the per-example risks of all domains, MMD² the biased estimate with a sum of Gaussian kernels of bandwidths
10^-4 … 10^3 (eight; one more than MMD's, as DomainBed), Var unbiased. Before ``rdm_penalty_anneal_iters`` steps
λ_t = v_t = 0 (plain ERM over the domain-mean risk); from that step on λ_t = ``rdm_lambda``, v_t =
``variance_weight``, and at that step the optimiser restarts (moments forgotten) at the learning rate ``rdm_lr``
(DomainBed builds a new Adam there).

DomainBed's quirks kept: r_all is built as a [n_domains, B] matrix and ``squeeze``d, so with a single training
domain (or B = 1) r_w is one example's risk, not the domain's, and its variance is NaN, which makes the loss NaN
even before the anneal step (0 · NaN); its update calls ``.cuda()`` (ours runs on any
device). Where DomainBed would crash, ours goes on: minibatches of unequal sizes are pooled by concatenation (the
same numbers as DomainBed's matrix when the sizes agree). Hyperparameters (dataset-dependent, as DomainBed):
``rdm_lambda`` 5, U(0.1, 10) (DomainNet 0.5, U(0.1, 1); PACS, TerraIncognita U(1, 10)); ``rdm_penalty_anneal_iters``
1500, int U(800, 2700) (DomainNet 2400, int U(1500, 3000)); ``variance_weight`` 0.004, U(0.001, 0.007) (0 on
TerraIncognita, OfficeHome, DomainNet); ``rdm_lr`` 1.5e-5, U(8e-6, 2e-5); the large-image ``batch_size`` 88,
int U(70, 100) (DomainNet, TerraIncognita 40, int U(30, 60)).

Precision: the whole update runs with autocast off (as MMD's, ``coral.py``): the narrow kernels (γ up to 1000) on
per-example risks see bf16's rounding of the logits as distance; with only the penalties in fp32, a bf16 step's
direction had a cosine of 0.28–0.70 with the fp32 step's in the first steps after the anneal on tiny data
(``tests/algorithms/test_precision.py``), and 0.99 or more without the matching penalty.
"""

from __future__ import annotations

from dataclasses import replace

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast, restart_optimizer
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.coral import gaussian_kernel
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import BASE_HPARAMS, HParam, choice, uniform, uniform_int

RDM_BANDWIDTHS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)

_BIG_STEP = (5.0, uniform(1.0, 10.0))
_NO_VARIANCE = (0.0, choice([0.0]))
_SMALL_BATCH = (40, uniform_int(30, 60))


def rdm_mmd(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Biased MMD² between the samples ``x`` [n, k] and ``y`` [m, k] with RDM's eight Gaussian bandwidths."""
    k = lambda a, b: gaussian_kernel(a, b, RDM_BANDWIDTHS).mean()  # noqa: E731
    return k(x, x) + k(y, y) - 2 * k(x, y)


def worst_and_all_risks(per_example: list[torch.Tensor], worst: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(r_w, r_all) flattened, as DomainBed builds them: a squeezed [n_domains, B] matrix when the sizes agree
    (so one domain, or B = 1, makes r_w a single entry), else our concatenation of the ragged rows."""
    if len({len(r) for r in per_example}) == 1:
        confs = torch.stack(per_example).squeeze()
        return confs[worst].flatten(), confs.flatten()
    return per_example[worst].flatten(), torch.cat(per_example)


@register_algorithm("RDM", tags=("domainbed",))
class RDM(Algorithm):
    """Risk Distribution Matching: ERM + the worst domain's risk distribution matched to the pooled one."""

    HPARAMS = {
        "rdm_lambda": HParam(5.0, uniform(0.1, 10.0), "weight λ of the risk-distribution MMD",
                             datasets={"DomainNet": (0.5, uniform(0.1, 1.0)), "PACS": _BIG_STEP,
                                       "TerraIncognita": _BIG_STEP}),
        "rdm_penalty_anneal_iters": HParam(1500, uniform_int(800, 2700), "steps of plain ERM before the penalties",
                                           datasets={"DomainNet": (2400, uniform_int(1500, 3000))}),
        "variance_weight": HParam(0.004, uniform(0.001, 0.007), "weight of the risk-variance penalty",
                                  datasets={d: _NO_VARIANCE for d in ("TerraIncognita", "OfficeHome", "DomainNet")}),
        "rdm_lr": HParam(1.5e-5, uniform(8e-6, 2e-5), "learning rate from rdm_penalty_anneal_iters on"),
        "batch_size": replace(BASE_HPARAMS["batch_size"], large=(88, uniform_int(70, 100)),
                              datasets={"DomainNet": _SMALL_BATCH, "TerraIncognita": _SMALL_BATCH}),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):  # fp32 throughout: see the module docstring
            return self._update(minibatches, step)

    def _update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        anneal = self.hparams["rdm_penalty_anneal_iters"]
        on = step >= anneal
        lam = float(self.hparams["rdm_lambda"]) if on else 0.0
        var_w = float(self.hparams["variance_weight"]) if on else 0.0
        logits = self.predict(torch.cat([x for x, _ in minibatches])).split([len(y) for _, y in minibatches])
        ys = [y for _, y in minibatches]
        risks = torch.stack([F.cross_entropy(lo, y) for lo, y in zip(logits, ys)])
        erm = risks.mean()
        worst = int(torch.argmax(risks.detach()))
        per_example = [F.cross_entropy(lo, y, reduction="none") for lo, y in zip(logits, ys)]
        r_w, r_all = worst_and_all_risks(per_example, worst)
        matching = rdm_mmd(r_w.unsqueeze(1), r_all.unsqueeze(1))
        variance = torch.var(r_all) + torch.var(r_w)
        loss = erm + lam * matching + var_w * variance
        if step == anneal:
            restart_optimizer(self.optimizer, self.scheduler, float(self.hparams["rdm_lr"]))
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "total_loss": loss.item(), "erm_loss": erm.item(),
                "matching_penalty": matching.item(), "variance_penalty": variance.item(),
                "rdm_lambda": float(self.hparams["rdm_lambda"])}  # DomainBed reports the hparam, not λ_t
