"""CausIRL (Chevalley, Bunne, Krause & Bauer, 2022, "Invariant Causal Mechanisms through Distribution Matching",
arXiv:2206.11646) with a CORAL or a Gaussian-MMD distance, as DomainBed (b93c22a, ``AbstractCausIRL``).

Where CORAL/MMD match every *pair of domains*, CausIRL matches the feature distributions of two random halves of
the batch that mix the domains: each training domain's minibatch is cut at a random point s_d ~ U{0, …, B_d − 1}
(numpy's global generator, as DomainBed's ``np.random.randint``), its first s_d feature rows go to one pool A and the
rest to pool B, and the penalty is the distance between A and B:

``L = mean_d CE(h(z_d) + 1e-16, y_d) + γ · nan_to_num(P(A, B))``, P = :func:`coral_penalty` (CausIRL_CORAL) or
:func:`mmd_penalty` (CausIRL_MMD, bandwidths 10^-3 … 10^3); the penalty is 0 when A or B has fewer than two rows.

The paper states the objective for a split of the data; how the batch is split is DomainBed's (the cut per domain,
above), kept as is, as is its ``+ 1e-16`` on the logits (a no-op for the cross-entropy up to rounding). Each domain
goes through the featurizer on its own (matters for BatchNorm). Precision: as CORAL/MMD (``coral.py``): the penalty
in fp32 under bf16 autocast, and CausIRL_MMD's whole update with autocast off. Hyperparameter ``mmd_gamma`` (γ;
DomainBed: 1, 10^U(−1, 1)).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from dganalysis.algorithms._utils import no_autocast
from dganalysis.algorithms.base import Minibatches
from dganalysis.algorithms.coral import _DistributionMatching
from dganalysis.algorithms.registry import register_algorithm


def random_halves(features: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pools A and B: the first ``s_d`` rows of each domain's features in A, the rest in B,
    ``s_d = np.random.randint(0, len(z_d))`` drawn per domain in order (DomainBed's split)."""
    cuts = [int(np.random.randint(0, len(z))) for z in features]
    first = torch.cat([z[:s] for z, s in zip(features, cuts)])
    second = torch.cat([z[s:] for z, s in zip(features, cuts)])
    return first, second


class _CausIRL(_DistributionMatching):
    """CORAL/MMD's penalty (same hparam ``mmd_gamma``, same optimizer, fp32 penalty) between two random halves of the
    batch instead of between domain pairs."""

    def penalty(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """P(A, B) (fp32 under bf16 autocast), NaN read as 0 as DomainBed's ``torch.nan_to_num``."""
        return torch.nan_to_num(super().penalty(a, b))

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        feats = [self.featurizer(x) for x, _ in minibatches]
        nll = torch.stack([F.cross_entropy(self.classifier(z) + 1e-16, y) for z, (_, y) in zip(feats, minibatches)])
        nll = nll.mean()
        first, second = random_halves(feats)
        if len(first) > 1 and len(second) > 1:
            penalty = self.penalty(first, second)
        else:
            penalty = nll.new_zeros(())
        loss = nll + self.hparams["mmd_gamma"] * penalty
        self.step(loss, self.optimizer, self.scheduler)
        # DomainBed reports the cross-entropy as ``loss`` (not the penalised objective); so do we
        return {"loss": nll.item(), "penalty": penalty.item(), "objective": loss.item()}


@register_algorithm("CausIRL_CORAL", tags=("domainbed",))
class CausIRL_CORAL(_CausIRL):
    """CausIRL with the CORAL distance (means + covariances) between two random domain-mixing halves of the batch."""

    kernel_type = "coral"


@register_algorithm("CausIRL_MMD", tags=("domainbed",))
class CausIRL_MMD(_CausIRL):
    """CausIRL with the Gaussian-kernel MMD² between two random domain-mixing halves of the batch."""

    kernel_type = "gaussian"

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        with no_autocast(minibatches[0][0]):  # fp32 features too, as MMD (coral.py)
            return super().update(minibatches, step)
