"""G2DM: "Generalizing to unseen domains via distribution matching" (Albuquerque et al., 2019).

Representation alignment with **one-vs-all domain discriminators**: for each training domain i a
discriminator D_i: z → logit tells domain i from the others; the encoder makes them fail, which
(their bound, Sec. 3) lowers the pairwise divergences between the training domains' representations.
The exact objective we implement:

- discriminators (ascend their accuracy): ``L_D = mean_i BCE_bal(D_i(g(x)), 1[d = i])``, where
  ``BCE_bal`` averages the positive and the negative part separately (one-vs-all is imbalanced 1 : K−1);
- encoder + classifier: ``mean_d CE_d − λ · L_D`` (maximise the discriminators' loss).

The two are updated alternately as DomainBed's DANN (``g2dm_d_steps`` discriminator steps, then one
encoder step), each with Adam (β1 = 0.5 as DomainBed's adversarial methods). Choices we made where
the paper differs or is silent: the K heads share one MLP trunk (width/depth as DANN's discriminator)
with K outputs; we omit the paper's random projection layer in front of the discriminators.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import domain_index, mlp
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice, log10_uniform


def one_vs_all_loss(logits: torch.Tensor, domains: torch.Tensor) -> torch.Tensor:
    """Mean over heads i of the class-balanced BCE of head i for 'domain == i' (logits [n, K])."""
    target = F.one_hot(domains, logits.shape[1]).to(logits.dtype)
    bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    pos = (bce * target).sum(0) / target.sum(0).clamp_min(1)
    neg = (bce * (1 - target)).sum(0) / (1 - target).sum(0).clamp_min(1)
    return (0.5 * (pos + neg)).mean()


@register_algorithm("G2DM")
class G2DM(Algorithm):
    """Adversarial distribution matching with one-vs-all domain discriminators (Albuquerque et al., 2019)."""

    HPARAMS = {
        "g2dm_lambda": HParam(1.0, log10_uniform(-2, 1), "weight λ of the adversarial alignment term"),
        "g2dm_d_steps": HParam(1, choice([1, 2, 4]), "discriminator steps per encoder step"),
        "g2dm_lr_d": HParam(1e-3, log10_uniform(-4.5, -2.5), "discriminator learning rate"),
        "mlp_width": HParam(256, choice([256, 512]), "discriminator width"),
        "mlp_depth": HParam(3, choice([2, 3, 4]), "discriminator depth (linear layers)"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        hp = self.hparams
        self.discriminator = mlp(self.featurizer.n_outputs, n_domains, int(hp["mlp_width"]), int(hp["mlp_depth"]))
        wd = float(hp["weight_decay"])
        self.d_optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=float(hp["g2dm_lr_d"]),
                                            weight_decay=wd, betas=(0.5, 0.9))
        self.optimizer, self.scheduler = self.configure_optimizer(self.network.parameters())

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        d = domain_index(minibatches)
        z = self.featurizer(x)
        d_steps = int(self.hparams["g2dm_d_steps"])
        if step % (d_steps + 1) < d_steps:
            disc = one_vs_all_loss(self.discriminator(z.detach()), d)
            self.step(disc, self.d_optimizer)
            return {"disc_loss": disc.item()}
        nll = F.cross_entropy(self.classifier(z), y)
        disc = one_vs_all_loss(self.discriminator(z), d)
        loss = nll - float(self.hparams["g2dm_lambda"]) * disc
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "disc_loss": disc.item()}
