"""WM: Wasserstein matching of the training domains' representations (baseline of the WC-DG poster).

The poster compares models trained "with WM & G2DM" without specifying WM; we chose a
non-adversarial Wasserstein alignment: the sliced Wasserstein-2 distance (Rabin et al., 2011;
Bonneel et al., 2015) between every pair of training domains' feature distributions,

    L = mean_d CE_d + λ · mean_{d<d'} SW2²(g#Q_d, g#Q_d') / V,
    SW2²(P, P') = E_θ W2²(θ·P, θ·P')  (θ uniform on the sphere; K random directions per step),

with each 1-D W2² computed exactly by sorting (quantile matching; batches of unequal size are
compared at m = min size evenly spaced quantiles). ``V`` = total variance of the pooled batch
features (attached), which makes the penalty invariant to rescaling z; without it the encoder
could shrink all features to reduce the penalty while the linear head compensates. Random
directions come from torch's global generator (seeded by the trainer).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, fixed, log10_uniform


def _quantiles(p: torch.Tensor, m: int) -> torch.Tensor:
    """Sorted projections [n, K] → m evenly spaced quantiles [m, K] (the sorted values when n = m)."""
    s, _ = torch.sort(p, 0)
    if len(s) == m:
        return s
    q = (torch.arange(m, device=p.device, dtype=p.dtype) + 0.5) / m
    return torch.quantile(p, q, dim=0)


def sliced_wasserstein2(a: torch.Tensor, b: torch.Tensor, directions: torch.Tensor) -> torch.Tensor:
    """Monte-Carlo SW2² between samples ``a`` [n, d] and ``b`` [m, d] along unit ``directions`` [d, K]."""
    m = min(len(a), len(b))
    return (_quantiles(a @ directions, m) - _quantiles(b @ directions, m)).square().mean()


def random_directions(d: int, k: int, device, dtype=torch.float32) -> torch.Tensor:
    """``k`` directions uniform on the unit sphere of R^d, as columns [d, k]."""
    v = torch.randn(d, k, device=device, dtype=dtype)
    return v / v.norm(dim=0, keepdim=True).clamp_min(1e-12)


@register_algorithm("WM")
class WM(Algorithm):
    """ERM + λ · mean pairwise sliced-W2² between training domains' features, divided by the pooled variance."""

    HPARAMS = {
        "wm_lambda": HParam(1.0, log10_uniform(-1, 1), "weight λ of the Wasserstein matching penalty"),
        "wm_projections": HParam(64, fixed(64), "random directions K per step"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.optimizer, self.scheduler = self.configure_optimizer()

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        feats = [self.featurizer(x) for x, _ in minibatches]
        nll = torch.stack([F.cross_entropy(self.classifier(z), y) for z, (_, y) in zip(feats, minibatches)]).mean()
        pooled = torch.cat(feats)
        var = (pooled - pooled.mean(0)).square().sum(1).mean().clamp_min(1e-8)
        dirs = random_directions(pooled.shape[1], int(self.hparams["wm_projections"]), pooled.device, pooled.dtype)
        n = len(feats)
        pens = [sliced_wasserstein2(feats[i], feats[j], dirs) for i in range(n) for j in range(i + 1, n)]
        # SW2² averages over directions: × d turns it into the scale of W2² (E‖·‖² sums over d coordinates)
        penalty = torch.stack(pens).mean() * pooled.shape[1] / var if pens else nll.new_zeros(())
        loss = nll + float(self.hparams["wm_lambda"]) * penalty
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item(), "nll": nll.item(), "penalty": penalty.item()}
