"""ERDG, Domain Generalization via Entropy Regularization (Zhao et al., 2020, NeurIPS, Sec. 3, Eq. 9).

Networks: featurizer F, task classifier T (``classifier``), domain discriminator D, and one auxiliary
classifier T'_k per training domain. Our objective for one update (one optimiser, all parameters):

``L = CE(T(F(x)), y)                                   (task loss, all domains)
    + CE(D(R_λ(F(x))), d)                              (adversarial marginal alignment; gradient reversal
                                                       R_λ: D minimises, F maximises with weight λ)
    + mean_k CE(T'_k(sg F(x_k)), y_k)                  (each T'_k fits its own domain; F untouched)
    + β · mean_{k ≠ j} CE(T'_k|frozen(F(x_j)), y_j)``  (entropy regularisation: F must make every other
                                                       domain's features classifiable by T'_k, so
                                                       P_k(Y | F(X)) agree, i.e. conditional invariance;
                                                       T'_k receives no gradient from this term)

The paper's entropy term −H(Y | F(X), domain) is approximated, as the authors do, through the
cross-entropy of the per-domain classifiers on the other domains. λ = ``erdg_adv_weight`` and
β = ``erdg_er_weight`` (our defaults 1 and 1, search 10^U(−2, 1): the paper tunes both per dataset).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from dganalysis.algorithms._utils import domain_index, grad_reverse, mlp
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.nets import build_classifier
from dganalysis.training.hparams import HParam, log10_uniform


@register_algorithm("ERDG")
class ERDG(Algorithm):
    """Adversarial alignment + entropy regularisation through per-domain classifiers."""

    HPARAMS = {
        "erdg_adv_weight": HParam(1.0, log10_uniform(-2, 1), "weight λ of the reversed domain gradient"),
        "erdg_er_weight": HParam(1.0, log10_uniform(-2, 1), "weight β of the entropy regulariser"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        d = self.featurizer.n_outputs
        self.discriminator = mlp(d, n_domains, 256, 3)
        nonlinear = bool(self.hparams["nonlinear_classifier"])
        self.domain_classifiers = nn.ModuleList(build_classifier(d, n_classes, nonlinear) for _ in range(n_domains))
        self.optimizer, self.scheduler = self.configure_optimizer()

    def losses(self, minibatches: Minibatches) -> dict[str, torch.Tensor]:
        """The four terms of the objective (see the module docstring)."""
        if len(minibatches) > self.n_domains:
            raise ValueError(f"ERDG: got {len(minibatches)} minibatches for n_domains={self.n_domains}")
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        sizes = [len(b) for _, b in minibatches]
        z = self.featurizer(x)
        task = F.cross_entropy(self.classifier(z), y)
        adv = F.cross_entropy(
            self.discriminator(grad_reverse(z, float(self.hparams["erdg_adv_weight"]))), domain_index(minibatches)
        )
        zs, ys = z.split(sizes), y.split(sizes)
        aux = torch.stack(
            [F.cross_entropy(self.domain_classifiers[k](zk.detach()), yk) for k, (zk, yk) in enumerate(zip(zs, ys))]
        ).mean()
        er_terms = []
        for k in range(len(sizes)):
            frozen = {n: p.detach() for n, p in self.domain_classifiers[k].named_parameters()}
            for j in range(len(sizes)):
                if j != k:
                    er_terms.append(
                        F.cross_entropy(functional_call(self.domain_classifiers[k], frozen, (zs[j],)), ys[j])
                    )
        er = torch.stack(er_terms).mean() if er_terms else task.new_zeros(())
        return {"task": task, "adv": adv, "aux": aux, "er": er}

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        t = self.losses(minibatches)
        loss = t["task"] + t["adv"] + t["aux"] + float(self.hparams["erdg_er_weight"]) * t["er"]
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), **{k: v.item() for k, v in t.items()}}
