"""Per-sample losses for the worst-case evaluation (the WC-DG poster, "Effectiveness of using different loss functions").

Every loss takes ``logits[..., n, C]`` and integer labels ``y[n]`` (broadcast over leading dims) and
returns one value per sample, shape ``logits.shape[:-1]``.

- ``ce``: cross-entropy ``logsumexp(f) − f_y``.
- ``hinge``: the multi-class hinge of Crammer & Singer (2001), ``max(0, 1 + max_{j≠y} f_j − f_y)``
  (we chose this variant over the one-vs-all sum: it upper-bounds the 0-1 loss and, for a linear head,
  its inner supremum has a closed form, see :mod:`dganalysis.dro.worst_case`).
- ``01``: the misclassification indicator ``1[max_{j≠y} f_j ≥ f_y]`` (ties count as errors: the inner
  supremum of the worst-case problem is then attained on the decision boundary).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def _true_and_rival(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``f_y`` and ``max_{j≠y} f_j`` per sample."""
    yy = y.expand(logits.shape[:-1]).unsqueeze(-1)
    true = logits.gather(-1, yy).squeeze(-1)
    other = logits.scatter(-1, yy, float("-inf")).amax(-1)
    return true, other


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample cross-entropy ``logsumexp_j f_j − f_y``."""
    yy = y.expand(logits.shape[:-1]).unsqueeze(-1)
    return torch.logsumexp(logits, -1) - logits.gather(-1, yy).squeeze(-1)


def multiclass_hinge(logits: torch.Tensor, y: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """Per-sample Crammer–Singer hinge ``max(0, margin + max_{j≠y} f_j − f_y)``."""
    true, other = _true_and_rival(logits, y)
    return torch.clamp(margin + other - true, min=0.0)


def zero_one(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-sample misclassification ``1[max_{j≠y} f_j ≥ f_y]`` as float (ties are errors)."""
    true, other = _true_and_rival(logits, y)
    return (other >= true).to(logits.dtype)


LOSSES: dict[str, LossFn] = {"ce": cross_entropy, "hinge": multiclass_hinge, "01": zero_one}
ALIASES = {"cross_entropy": "ce", "xent": "ce", "multiclass_hinge": "hinge", "zero_one": "01", "0-1": "01", "01": "01"}


def loss_name(loss: str) -> str:
    """Canonical name (``ce``, ``hinge`` or ``01``) of ``loss``."""
    key = ALIASES.get(loss, loss)
    if key not in LOSSES:
        raise ValueError(f"parameter 'loss': unknown {loss!r}; expected one of {sorted(LOSSES)} or a callable")
    return key


def get_loss(loss: str | LossFn) -> LossFn:
    """The loss function named ``loss`` (a callable is returned unchanged)."""
    return loss if callable(loss) else LOSSES[loss_name(loss)]
