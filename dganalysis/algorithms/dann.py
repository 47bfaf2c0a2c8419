"""Domain-adversarial training: DANN (Ganin et al., 2016, JMLR) and CDANN (Li et al., 2018, "Deep Domain
Generalization via Conditional Invariant Adversarial Networks"), as DomainBed (Gulrajani & Lopez-Paz, 2021).

``DANN`` / ``CDANN`` are DomainBed's alternating min–max game. A discriminator D (an MLP on z = g(x), for
CDANN on ``z + e_y`` with a learnt class embedding e) and the generator (featurizer g + classifier h) have
separate Adam optimisers with betas ``(beta1, 0.9)``, learning rates ``lr_d`` / ``lr_g`` and weight decays
``weight_decay_d`` / ``weight_decay_g``. Update number u = step + 1 is a discriminator step when
``u mod (1 + d_steps_per_g_step) < d_steps_per_g_step``, else a generator step:

- discriminator: minimise ``L_D = CE(D(z), d) + grad_penalty · mean_i ‖∂ Σ CE / ∂ z_i‖²`` (a gradient penalty
  on the discriminator's input); CDANN weighs each example's CE by ``1 / (n_{y_i} · (max y + 1))`` (DomainBed's
  class balance, counting classes up to the largest label present);
- generator: minimise ``CE(h(z), y) − λ · L_D`` over g and h only.

``DANN_GRL`` / ``CDANN_GRL`` keep our earlier single-step form, a departure from DomainBed: one optimiser over
everything and a gradient reversal layer R_λ (Ganin et al., Sec. 5.2), ``min CE(h(g(x)), y) + CE(D(R_λ(g(x))), d)``,
optionally with Ganin's warm-up ``λ_p = λ (2 / (1 + exp(−10 p)) − 1)``, p = step / steps
(``dann_lambda_schedule = "ganin"``). It is the paper's formulation, takes one update per step (no idle
generator steps) and needs no discriminator optimiser of its own; the conditional variant balances classes
over the classes present.
"""

from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms._utils import domain_index, grad_reverse, mlp
from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.data.balanced import class_balanced_weights, domainbed_cdann_weights
from dganalysis.training.hparams import HParam, choice, fixed, log2_uniform_int, log10_uniform
from dganalysis.training.optim import make_scheduler

_MLP_HPARAMS = {
    "mlp_width": HParam(256, log2_uniform_int(6, 10), "discriminator width"),
    "mlp_depth": HParam(3, choice([3, 4, 5]), "discriminator depth (linear layers)"),
    "mlp_dropout": HParam(0.0, choice([0.0, 0.1, 0.5]), "discriminator dropout"),
}


class _AbstractDANN(Algorithm):
    """DomainBed's alternating discriminator / generator updates (see the module docstring)."""

    conditional = False
    HPARAMS = {
        "lambda": HParam(1.0, log10_uniform(-2, 2), "weight λ of the adversarial term in the generator loss"),
        "weight_decay_d": HParam(0.0, log10_uniform(-6, -2), "discriminator weight decay"),
        "d_steps_per_g_step": HParam(1, log2_uniform_int(0, 3), "discriminator steps per generator step"),
        "grad_penalty": HParam(0.0, log10_uniform(-2, 1), "weight of the discriminator input-gradient penalty"),
        "beta1": HParam(0.5, choice([0.0, 0.5]), "Adam β1 of both optimisers (β2 = 0.9)"),
        **_MLP_HPARAMS,
        "lr_g": HParam(1e-3, log10_uniform(-4.5, -2.5), "generator (featurizer + classifier) learning rate",
                       large=(5e-5, log10_uniform(-5, -3.5))),
        "lr_d": HParam(1e-3, log10_uniform(-4.5, -2.5), "discriminator learning rate",
                       large=(5e-5, log10_uniform(-5, -3.5))),
        "weight_decay_g": HParam(0.0, fixed(0.0), "generator weight decay",
                                 large=(0.0, log10_uniform(-6, -2))),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        d = self.featurizer.n_outputs
        hp = self.hparams
        self.discriminator = mlp(d, n_domains, int(hp["mlp_width"]), int(hp["mlp_depth"]), float(hp["mlp_dropout"]))
        self.class_embeddings = nn.Embedding(n_classes, d)
        kind = hp["optimizer"]
        if kind != "adam":
            raise ValueError(f"{type(self).__name__}: hparam 'optimizer' must be 'adam' (DomainBed's Adam with betas "
                             f"(beta1, 0.9)), got {kind!r}; use DANN_GRL/CDANN_GRL for other optimisers")
        betas = (float(hp["beta1"]), 0.9)
        self.disc_opt = torch.optim.Adam(
            list(self.discriminator.parameters()) + list(self.class_embeddings.parameters()),
            lr=float(hp["lr_d"]), weight_decay=float(hp["weight_decay_d"]), betas=betas)
        self.gen_opt = torch.optim.Adam(
            list(self.featurizer.parameters()) + list(self.classifier.parameters()),
            lr=float(hp["lr_g"]), weight_decay=float(hp["weight_decay_g"]), betas=betas)
        self.disc_sched = make_scheduler(self.disc_opt, hp)
        self.gen_sched = make_scheduler(self.gen_opt, hp)

    def is_disc_step(self, step: int) -> bool:
        """DomainBed counts updates from 1: update ``step + 1`` trains the discriminator when its remainder
        modulo ``1 + d_steps_per_g_step`` is below ``d_steps_per_g_step``."""
        k = int(self.hparams["d_steps_per_g_step"])
        return (step + 1) % (1 + k) < k

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        d = domain_index(minibatches)
        z = self.featurizer(x)
        disc_in = z + self.class_embeddings(y) if self.conditional else z
        disc_out = self.discriminator(disc_in)
        if self.conditional:
            w = domainbed_cdann_weights(y).to(disc_out.dtype)
            disc_loss = (w * F.cross_entropy(disc_out, d, reduction="none")).sum()
        else:
            disc_loss = F.cross_entropy(disc_out, d)
        input_grad = torch.autograd.grad(F.cross_entropy(disc_out, d, reduction="sum"), [disc_in], create_graph=True)[0]
        disc_loss = disc_loss + float(self.hparams["grad_penalty"]) * input_grad.pow(2).sum(dim=1).mean(dim=0)
        if self.is_disc_step(step):
            self.disc_opt.zero_grad(set_to_none=True)
            disc_loss.backward()
            self.disc_opt.step()
            fresh_casts()
            out = {"disc_loss": disc_loss.item()}
        else:
            nll = F.cross_entropy(self.classifier(z), y)
            gen_loss = nll - float(self.hparams["lambda"]) * disc_loss
            self.disc_opt.zero_grad(set_to_none=True)
            self.gen_opt.zero_grad(set_to_none=True)
            gen_loss.backward()
            self.gen_opt.step()
            fresh_casts()
            out = {"gen_loss": gen_loss.item()}
        with warnings.catch_warnings():  # both schedules follow the update count, whichever optimiser stepped
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step", category=UserWarning)
            self.disc_sched.step()
            self.gen_sched.step()
        return out


@register_algorithm("DANN", tags=("domainbed",))
class DANN(_AbstractDANN):
    """DomainBed's DANN: alternating discriminator and generator Adam steps (see the module docstring)."""

    conditional = False


@register_algorithm("CDANN", tags=("domainbed",))
class CDANN(_AbstractDANN):
    """DomainBed's CDANN: class-conditional discriminator input, class-balanced domain loss."""

    conditional = True


class _AbstractDANNGRL(Algorithm):
    """Single-step DANN with a gradient reversal layer (departure from DomainBed; see the module docstring)."""

    conditional = False
    HPARAMS = {
        "lambda": HParam(1.0, log10_uniform(-2, 2), "weight λ of the reversed domain gradient"),
        "dann_lambda_schedule": HParam("constant", fixed("constant"), "constant | ganin (warm-up of λ)"),
        **_MLP_HPARAMS,
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
        if self.hparams["dann_lambda_schedule"] == "ganin":
            p = min(1.0, step / max(1, int(self.hparams.get("steps", 1))))
            lam *= 2.0 / (1.0 + math.exp(-10.0 * p)) - 1.0
        return lam

    def domain_loss(self, z: torch.Tensor, y: torch.Tensor, d: torch.Tensor, lam: float) -> torch.Tensor:
        """Discriminator loss on reversed features (its gradient w.r.t. z is −λ × the plain one)."""
        zr = grad_reverse(z, lam)
        if not self.conditional:
            return F.cross_entropy(self.discriminator(zr), d)
        out = self.discriminator(zr + self.class_embeddings(y))
        w = class_balanced_weights(y).to(out.dtype)
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


@register_algorithm("DANN_GRL", tags=("variant", "grl"))
class DANN_GRL(_AbstractDANNGRL):
    """DANN with a gradient reversal layer, one joint step per update (Ganin et al.'s form, not DomainBed's)."""

    conditional = False


@register_algorithm("CDANN_GRL", tags=("variant", "grl"))
class CDANN_GRL(_AbstractDANNGRL):
    """Conditional DANN with a gradient reversal layer (class-balanced over the classes present)."""

    conditional = True
