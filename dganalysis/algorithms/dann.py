"""Domain-adversarial training: DANN (Ganin et al., 2016, JMLR, Eq. 18–19) and CDANN
(Li et al., 2018, "Deep Domain Generalization via Conditional Invariant Adversarial Networks").

One optimiser over featurizer, classifier and discriminator, with a gradient reversal layer R_λ
(Ganin et al., Sec. 5.2): ``min CE(h(g(x)), y) + CE(D(R_λ(g(x))), d)``. The discriminator D descends
the domain loss; the featurizer receives −λ times its gradient, i.e. ascends it. (DomainBed instead
alternates discriminator and generator steps; the GRL form is the paper's and keeps one step per update.)
λ may be warmed up with Ganin's schedule ``2 / (1 + exp(−10 p)) − 1`` (p = step / steps) when
``dann_lambda_schedule`` is ``"ganin"``; DomainBed's default is a constant λ.

CDANN makes the domain discriminator class-conditional, as DomainBed: D sees ``g(x) + e_y`` (a learnt
class embedding) and the domain loss is class-balanced (each class weighs the same), approximating the
per-class discriminators of Li et al.
Defaults/search: DomainBed's (``lambda`` = 1, 10^U(−2, 2); discriminator MLP width 256, int(2^U(6, 10)), depth 3,
one of 3/4/5, dropout 0, one of 0/0.1/0.5).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms._utils import domain_index, grad_reverse, mlp
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.hparams import HParam, choice, fixed, log2_uniform_int, log10_uniform


def class_balanced_weights(y: torch.Tensor, n_classes: int) -> torch.Tensor:
    """Per-example weights ``1 / (count(y_i) · n_present)`` summing to 1, each present class weighing the same."""
    counts = torch.bincount(y, minlength=n_classes).float()
    n_present = (counts > 0).sum()
    return 1.0 / (counts[y] * n_present)


class _AbstractDANN(Algorithm):
    conditional = False
    HPARAMS = {
        "lambda": HParam(1.0, log10_uniform(-2, 2), "weight λ of the reversed domain gradient (DomainBed's name)"),
        "dann_lambda_schedule": HParam("constant", fixed("constant"), "constant | ganin (warm-up of λ)"),
        "mlp_width": HParam(256, log2_uniform_int(6, 10), "discriminator width"),
        "mlp_depth": HParam(3, choice([3, 4, 5]), "discriminator depth (linear layers)"),
        "mlp_dropout": HParam(0.0, choice([0.0, 0.1, 0.5]), "discriminator dropout"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        d = self.featurizer.n_outputs
        hp = self.hparams
        self.discriminator = mlp(d, n_domains, int(hp["mlp_width"]), int(hp["mlp_depth"]), float(hp["mlp_dropout"]))
        self.class_embeddings = nn.Embedding(n_classes, d)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def current_lambda(self, step: int) -> float:
        lam = float(self.hparams["lambda"])
        if self.hparams.get("dann_lambda_schedule", "constant") == "ganin":
            p = min(1.0, step / max(1, int(self.hparams.get("steps", 1))))
            lam *= 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0
        return lam

    def domain_loss(self, z: torch.Tensor, y: torch.Tensor, d: torch.Tensor, lam: float) -> torch.Tensor:
        """Discriminator loss on reversed features (its gradient w.r.t. z is −λ × the plain one)."""
        zr = grad_reverse(z, lam)
        if not self.conditional:
            return F.cross_entropy(self.discriminator(zr), d)
        out = self.discriminator(zr + self.class_embeddings(y))
        w = class_balanced_weights(y, self.n_classes)
        return (w * F.cross_entropy(out, d, reduction="none")).sum()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        d = domain_index(minibatches)
        z = self.featurizer(x)
        nll = F.cross_entropy(self.classifier(z), y)
        disc = self.domain_loss(z, y, d, self.current_lambda(step))
        loss = nll + disc
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "disc_loss": disc.item()}


@register_algorithm("DANN")
class DANN(_AbstractDANN):
    """Domain-Adversarial Neural Network with a gradient reversal layer."""

    conditional = False


@register_algorithm("CDANN")
class CDANN(_AbstractDANN):
    """Conditional DANN: class-conditional, class-balanced domain discriminator."""

    conditional = True
