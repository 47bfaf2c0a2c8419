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
    """DomainBed's per-example weights ``1 / (n_classes · count(y))`` (float64, on the labels' device)."""
    y = torch.as_tensor(labels).long()
    if y.ndim != 1 or len(y) == 0:
        raise ValueError(f"class_balanced: expected a non-empty 1-D label vector, got shape {tuple(y.shape)}")
    classes, inverse, counts = torch.unique(y, return_inverse=True, return_counts=True)
    return 1.0 / (counts.double() * len(classes))[inverse]


def use_class_balanced(splits: Iterable) -> None:
    """Make each training split's ``sample`` draw class-balanced minibatches (sets ``sample_weights``)."""
    for split in splits:
        split.sample_weights = class_balanced_weights(split.labels)
