"""Class-balanced training minibatches, DomainBed's ``class_balanced`` hparam (Gulrajani & Lopez-Paz, 2021).

DomainBed's ``scripts/train.py`` gives every example of a split the weight ``1 / (n_classes · count(y))``
(``lib/misc.make_weights_for_balanced_classes``; ``n_classes`` = the classes present in that split) and draws each
training minibatch with ``WeightedRandomSampler(weights, replacement=True)``: every class present is equally
likely, examples within a class uniformly. Evaluation is unweighted. We draw the same distribution on the device
(``torch.multinomial`` with replacement, the sampler's own draw) from the split's labels.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch


def class_balanced_weights(labels: torch.Tensor | np.ndarray) -> torch.Tensor:
    """DomainBed's per-example weights ``1 / (n_classes · count(y))``, ``n_classes`` the classes present (float64,
    on the labels' device): each present class weighs the same, the weights sum to 1. The one class-balance rule:
    the sampler's weights and the conditional ``CDANN_GRL`` loss use it (for every integer count · classes below 2^24,
    float64 rounded to float32 equals the float32 quotient, so float32 callers get the same weights)."""
    y = torch.as_tensor(labels).long()
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"class_balanced: expected a non-empty 1-D label vector, got shape {tuple(y.shape)}")
    classes, inverse, counts = torch.unique(y, return_inverse=True, return_counts=True)
    return 1.0 / (counts.double() * len(classes))[inverse]


def domainbed_cdann_weights(y: torch.Tensor) -> torch.Tensor:
    """DomainBed's CDANN weights ``1 / (count(y_i) · (max y + 1))`` in the default dtype (its ``CDANN.update``
    counts classes with ``F.one_hot``, i.e. 0..max y, not the classes present): a departure from
    :func:`class_balanced_weights` when a class below the largest label is absent, kept under DomainBed's name for
    DomainBed's CDANN (``tests/reference/test_domainbed_dann.py`` pins it)."""
    counts = torch.nn.functional.one_hot(y).sum(dim=0)
    return 1.0 / (counts[y] * counts.shape[0]).to(torch.get_default_dtype())


def use_class_balanced(splits: Iterable) -> None:
    """Make each training split's ``sample`` draw class-balanced minibatches (sets ``sample_weights``)."""
    for split in splits:
        split.sample_weights = class_balanced_weights(split.labels)
