"""SagNet, Style-Agnostic Networks (Nam et al., 2021, CVPR, Sec. 3, Eq. 1–5), in DomainBed's form.

Featurizer g (``featurizer``), content network h_c (``classifier``), style network h_s (``style_net``).
Style randomisation SR (Eq. 1–2) and content randomisation CR (Eq. 3) act on the representation
z = g(x): per-example statistics μ, σ over the feature dimension of the pooled 2-D z (over the spatial
positions for 4-D maps); SR keeps the example's normalised content and interpolates its (μ, σ) with a
random other example's, α ~ U(0, 1); CR keeps (μ, σ) and takes another example's normalised content.
DomainBed applies both to the pooled features as we do (the paper inserts them mid-network).

One update: (1) content loss ``CE(h_c(SR(z)), y)`` updates g and h_c; (2) style loss
``CE(h_s(CR(z)), y)`` updates h_s; (3) adversarial loss ``−w · mean log softmax(h_s(CR(z)))`` (the style
net's output pushed toward uniform) updates g. ``predict = h_c(g(x))``; ``features`` = z = g(x).
w = ``sag_w_adv`` (DomainBed: 0.1, 10^U(−2, 1)).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import multi_step
from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.nets import build_classifier
from dganalysis.training.hparams import HParam, log10_uniform


def _stats(z: torch.Tensor, eps: float):
    flat = z.flatten(2) if z.dim() == 4 else z.unsqueeze(-1).transpose(1, 2)  # [B, C, S] or [B, 1, D]
    mean, var = flat.mean(-1, keepdim=True), flat.var(-1, keepdim=True)
    return flat, mean, var


def sagnet_randomize(
    z: torch.Tensor, what: str, alpha: torch.Tensor, perm: torch.Tensor, eps: float = 1e-5
) -> torch.Tensor:
    """Style (``what='style'``) or content (``'content'``) randomisation of ``z`` [B, D] or [B, C, H, W].

    ``alpha`` [B] mixes an example's style with that of ``perm``'s partner; content swaps take the
    partner's normalised content (detached, as DomainBed).
    """
    flat, mean, var = _stats(z, eps)
    normed = (flat - mean) / (var + eps).sqrt()
    a = alpha.view(-1, 1, 1).to(z.dtype)
    if what == "style":
        mean = a * mean + (1 - a) * mean[perm]
        var = a * var + (1 - a) * var[perm]
    elif what == "content":
        normed = normed[perm].detach()
    else:
        raise ValueError(f"sagnet_randomize: 'what' must be 'style' or 'content', got {what!r}")
    out = normed * (var + eps).sqrt() + mean
    return out.view_as(z) if z.dim() == 4 else out.transpose(1, 2).squeeze(-1)


@register_algorithm("SagNet", tags=("domainbed",))
class SagNet(Algorithm):
    """Content-biased training with adversarial style suppression."""

    HPARAMS = {"sag_w_adv": HParam(0.1, log10_uniform(-2, 1), "weight of the adversarial style loss")}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.style_net = build_classifier(
            self.featurizer.n_outputs, n_classes, bool(self.hparams["nonlinear_classifier"])
        )
        self.opt_f, self.sched_f = self.configure_optimizer(self.featurizer.parameters())
        self.opt_c, self.sched_c = self.configure_optimizer(self.classifier.parameters())
        self.opt_s, self.sched_s = self.configure_optimizer(self.style_net.parameters())

    def _randomize(self, z: torch.Tensor, what: str) -> torch.Tensor:
        return sagnet_randomize(z, what, torch.rand(len(z), device=z.device), torch.randperm(len(z), device=z.device))

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        loss_c = F.cross_entropy(self.classifier(self._randomize(self.featurizer(x), "style")), y)
        multi_step(loss_c, [self.opt_f, self.opt_c])
        loss_s = F.cross_entropy(self.style_net(self._randomize(self.featurizer(x).detach(), "content")), y)
        multi_step(loss_s, [self.opt_s])
        out_s = self.style_net(self._randomize(self.featurizer(x), "content"))
        loss_adv = -float(self.hparams["sag_w_adv"]) * F.log_softmax(out_s, dim=1).mean(1).mean()
        multi_step(loss_adv, [self.opt_f])
        for sched in (self.sched_f, self.sched_c, self.sched_s):
            sched.step()
        return {"loss": loss_c.item(), "loss_c": loss_c.item(), "loss_s": loss_s.item(), "loss_adv": loss_adv.item()}
