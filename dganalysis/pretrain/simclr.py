"""SimCLR pretraining on unlabelled images (Chen et al., 2020), as Yu et al. (2024, Sec. 2.1, Table 3)
recommends self-supervised weights because they carry no label information.

Loss: NT-Xent (normalised temperature-scaled cross-entropy, SimCLR Eq. 1): for a batch of N
images and two views, the 2N projections z are L2-normalised, s_ij = z_i·z_j / τ, and each view's
positive is the other view of the same image, its negatives the other 2N − 2 views::

    ℓ(i, j) = −log exp(s_ij) / Σ_{k≠i} exp(s_ik),   L = mean over the 2N anchors.

Choices: projection head Linear(d, d) → ReLU → Linear(d, 64); τ = 0.5; Adam; batches drawn from
the pooled images without labels. The checkpoint uses the SimCLR layout (``backbone.*`` for the
featurizer, ``projector.*`` for the head), which the loader strips.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

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
from dganalysis.pretrain.augment import two_views
from dganalysis.pretrain.checkpoint import save_checkpoint

log = logging.getLogger(__name__)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """NT-Xent loss of two views' projections ``z1``, ``z2`` (both [N, d]); see the module doc."""
    if z1.shape != z2.shape or z1.ndim != 2:
        raise ValueError(f"nt_xent: z1 and z2 must both be [N, d], got {list(z1.shape)} and {list(z2.shape)}")
    n = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool, device=z.device), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, target)


def projection_head(n_features: int, dim: int = 64) -> nn.Module:
    """SimCLR's 2-layer MLP projection head."""
    return nn.Sequential(nn.Linear(n_features, n_features), nn.ReLU(inplace=True), nn.Linear(n_features, dim))


def pretrain_simclr(
    images: Any, config: PretrainConfig | None = None, *, temperature: float = 0.5, proj_dim: int = 64,
    max_rotate: float = 10.0, out_path: str | Path | None = None, overwrite: bool = False, progress: bool = True,
) -> PretrainResult:
    """SimCLR on ``images`` (uint8[N, C, H, W], labels unused); saves to ``out_path`` when given.

    ``config``: the featurizer and the optimisation (:class:`~dganalysis.pretrain.PretrainConfig`; default: its
    defaults); ``temperature`` τ of NT-Xent, ``proj_dim`` the projection's size, ``max_rotate`` (degrees) the views'
    rotation range. An existing ``out_path`` is reused (loaded, not retrained) unless ``overwrite``.
    """
    c = PretrainConfig() if config is None else config
    featurizer, featurizer_hparams, steps, batch_size, lr, seed, device = (
        c.featurizer, c.featurizer_hparams, c.steps, c.batch_size, c.lr, c.seed, c.device)
    x_all = as_uint8_tensor(images)
    reused = reuse_checkpoint(tuple(x_all.shape[1:]), featurizer, featurizer_hparams, out_path, overwrite, "simclr")
    if reused is not None:
        return reused
    with fixed_threads(device) as n_threads:  # the checkpoint must not depend on the machine's load (see fixed_threads)
        torch.manual_seed(seed)
        net = make_featurizer(tuple(x_all.shape[1:]), featurizer, featurizer_hparams).to(device)
        head = projection_head(net.n_outputs, proj_dim).to(device)
        opt = torch.optim.Adam(list(net.parameters()) + list(head.parameters()), lr=lr)
        g = torch.Generator().manual_seed(seed)
        x_dev = x_all.to(device)
        losses: list[float] = []
        net.train()
        for idx in tqdm(batches(len(x_all), batch_size, steps, g), total=steps, desc="SimCLR", disable=not progress):
            x = x_dev[idx.to(device)].float() / 255.0
            v1, v2 = two_views(x, g, max_rotate)
            loss = nt_xent(head(net(v1)), head(net(v2)), temperature)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
        net.eval()
    path = None
    if out_path is not None:
        meta = {"kind": "simclr", "featurizer": featurizer, "steps": steps, "batch_size": batch_size, "lr": lr,
                "temperature": temperature, "seed": seed, "n_images": len(x_all), "final_loss": losses[-1],
                "threads": n_threads or None}
        path = save_checkpoint(net.cpu(), out_path, "simclr", head.cpu(), meta)
    return PretrainResult(path, net, losses)
