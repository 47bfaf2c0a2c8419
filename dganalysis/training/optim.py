"""Optimisers and learning-rate schedules chosen by hyperparameters.

``optimizer``: ``adam`` (DomainBed's default), ``adamw``, ``sgd`` (momentum 0.9).
``schedule``: ``constant``; ``step`` (×0.1 at 60% and 80% of the job); ``cosine``
(cosine annealing to 0 over ``steps``, as Yu et al. (2024) trains with Adam).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch


def make_optimizer(params: Iterable[torch.nn.Parameter], hparams: Mapping[str, Any], lr: float | None = None) -> torch.optim.Optimizer:
    """The optimiser named by ``hparams['optimizer']``."""
    kind = hparams.get("optimizer", "adam")
    lr = float(hparams["lr"] if lr is None else lr)
    wd = float(hparams.get("weight_decay", 0.0))
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd, momentum=0.9)
    raise ValueError(f"hparam 'optimizer': unknown {kind!r}; expected adam, adamw or sgd")


def make_scheduler(optimizer: torch.optim.Optimizer, hparams: Mapping[str, Any]) -> torch.optim.lr_scheduler.LRScheduler:
    """The schedule named by ``hparams['schedule']``; ``hparams['steps']`` is the job length."""
    kind = hparams.get("schedule", "constant")
    steps = int(hparams.get("steps", 1))
    if kind == "constant":
        return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)
    if kind == "step":
        return torch.optim.lr_scheduler.MultiStepLR(optimizer, [int(0.6 * steps), int(0.8 * steps)], 0.1)
    if kind == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, steps))
    raise ValueError(f"hparam 'schedule': unknown {kind!r}; expected constant, step or cosine")
