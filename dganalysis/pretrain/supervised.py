"""Supervised pretraining on a labelled source — our analogue of supervised ImageNet weights
(Yu et al., 2024, Sec. 2.1): when the source resembles a test domain, its labels leak test information.

A featurizer + linear head trained with cross-entropy (Adam, uniformly shuffled batches, optional
batched random-affine augmentation from :mod:`dganalysis.pretrain.augment`); saved in the
torchvision layout (backbone keys + ``fc.*`` head, which the loader drops).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm.auto import tqdm

from dganalysis.pretrain._loop import (
    PretrainConfig,
    PretrainResult,
    as_uint8_tensor,
    batches,
    fixed_threads,
    make_featurizer,
    reuse_checkpoint,
)
from dganalysis.pretrain.augment import random_view
from dganalysis.pretrain.checkpoint import save_checkpoint

log = logging.getLogger(__name__)


def pretrain_supervised(
    images: Any, labels: Any, config: PretrainConfig | None = None, *, n_classes: int | None = None,
    augment: bool = False, out_path: str | Path | None = None, overwrite: bool = False, progress: bool = True,
) -> PretrainResult:
    """Cross-entropy pretraining on (``images`` uint8[N, C, H, W], ``labels`` int[N]); saves to ``out_path``.

    ``config``: the featurizer and the optimisation (:class:`~dganalysis.pretrain.PretrainConfig`; default: its
    defaults). ``n_classes`` defaults to ``max(labels) + 1``; ``augment`` adds a batched random affine view.
    An existing ``out_path`` is reused (loaded, not retrained) unless ``overwrite``.
    """
    c = PretrainConfig() if config is None else config
    featurizer, featurizer_hparams, steps, batch_size, lr, seed, device = (
        c.featurizer, c.featurizer_hparams, c.steps, c.batch_size, c.lr, c.seed, c.device)
    x_all = as_uint8_tensor(images)
    y_all = torch.as_tensor(np.asarray(labels), dtype=torch.int64)
    if y_all.shape != (len(x_all),):
        raise ValueError(f"labels: expected shape ({len(x_all)},), got {list(y_all.shape)}")
    n_classes = int(n_classes or int(y_all.max()) + 1)
    reused = reuse_checkpoint(tuple(x_all.shape[1:]), featurizer, featurizer_hparams, out_path, overwrite, "torchvision")
    if reused is not None:
        return reused
    with fixed_threads(device) as n_threads:  # the checkpoint must not depend on the machine's load (see fixed_threads)
        torch.manual_seed(seed)
        net = make_featurizer(tuple(x_all.shape[1:]), featurizer, featurizer_hparams).to(device)
        head = nn.Linear(net.n_outputs, n_classes).to(device)
        opt = torch.optim.Adam(list(net.parameters()) + list(head.parameters()), lr=lr)
        g = torch.Generator().manual_seed(seed)
        x_dev, y_dev = x_all.to(device), y_all.to(device)
        losses: list[float] = []
        net.train()
        for idx in tqdm(batches(len(x_all), batch_size, steps, g), total=steps, desc="supervised", disable=not progress):
            idx = idx.to(device)
            x = x_dev[idx].float() / 255.0
            if augment:
                x = random_view(x, g)
            loss = F.cross_entropy(head(net(x)), y_dev[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
        net.eval()
    path = None
    if out_path is not None:
        meta = {"kind": "supervised", "featurizer": featurizer, "steps": steps, "batch_size": batch_size, "lr": lr,
                "augment": augment, "seed": seed, "n_images": len(x_all), "n_classes": n_classes,
                "final_loss": losses[-1], "threads": n_threads or None}
        path = save_checkpoint(net.cpu(), out_path, "torchvision", head.cpu(), meta)
    return PretrainResult(path, net, losses)
