"""Shared pieces of the pretraining loops: building the featurizer, sampling batches, results."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from dganalysis import threads
from dganalysis.nets import build_featurizer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PretrainConfig:
    """What both pretrainings share: the ``featurizer`` (a registered name, with ``featurizer_hparams`` on top of its
    defaults), Adam for ``steps`` steps of ``batch_size`` images at learning rate ``lr``, the ``seed`` of the weights
    and the batches, and the torch ``device``."""

    featurizer: str = "smallcnn"
    featurizer_hparams: dict[str, Any] | None = None
    steps: int = 200
    batch_size: int = 128
    lr: float = 1e-3
    seed: int = 0
    device: str = "cpu"

    def __post_init__(self) -> None:
        from dganalysis.validation import Check

        Check("int", low=1)(self.steps, "steps")
        Check("int", low=1)(self.batch_size, "batch_size")
        Check("float", low=0.0, low_open=True)(self.lr, "lr")
        Check("int", low=0)(self.seed, "seed")


@dataclass
class PretrainResult:
    """A pretraining run: the checkpoint ``path`` (None when not saved), per-step ``losses``, the ``featurizer``."""

    path: Path | None
    featurizer: nn.Module
    losses: list[float] = field(default_factory=list)
    reused: bool = False


def as_uint8_tensor(images: Any, name: str = "images") -> torch.Tensor:
    """uint8[N, C, H, W] as a CPU tensor (numpy or torch input)."""
    t = torch.as_tensor(np.asarray(images)) if not isinstance(images, torch.Tensor) else images
    if t.ndim != 4 or t.dtype != torch.uint8:
        raise ValueError(f"{name}: expected uint8[N, C, H, W], got {t.dtype}{list(t.shape)}")
    if len(t) == 0:
        raise ValueError(f"{name}: no images")
    return t


def make_featurizer(input_shape: tuple[int, ...], featurizer: str, extra: dict[str, Any] | None) -> nn.Module:
    """A fresh (randomly initialised, unfrozen) featurizer."""
    hp = {"featurizer": featurizer, **(extra or {})}
    for k in ("pretrained", "linear_probe", "freeze_stages"):
        hp.pop(k, None)
    return build_featurizer(tuple(input_shape), hp)


def reuse_checkpoint(input_shape: tuple[int, ...], featurizer: str, extra: dict[str, Any] | None,
                     out_path: str | Path | None, overwrite: bool, fmt: str) -> PretrainResult | None:
    """The featurizer saved at ``out_path`` (format ``fmt`` of :func:`dganalysis.nets.pretrained.load_pretrained`)
    when it exists and ``overwrite`` is False; None means: train."""
    if out_path is None or overwrite or not Path(out_path).exists():
        return None
    from dganalysis.nets.pretrained import load_pretrained

    net = make_featurizer(tuple(input_shape), featurizer, extra)
    load_pretrained(net, out_path, fmt)
    log.info("reusing %s checkpoint %s", fmt, out_path)
    return PretrainResult(Path(out_path), net, [], reused=True)


def fixed_threads(device: str | torch.device):
    """The pretraining loop's thread setting: ONE torch thread on CPU, whatever the load or the core count.

    oneDNN sums a convolution's weight gradient from per-thread partial sums, so 1 and 2 threads give gradients
    that differ in the last bits, and 150 Adam steps turn that into different weights (measured on the quick
    profile's supervised pretraining: another checkpoint, and LP/FT accuracies 0.5-4.6 points apart). A count
    that followed the load (as the former thread governor did) would make the checkpoint depend on what else ran
    on the machine, and one that followed the core count would make it depend on the machine; one thread makes it
    a function of the inputs and the seed (recorded as ``threads: 1`` in the checkpoint's meta). Cost on the quick
    profile's two pretrainings (idle 2-core EPYC): 8.9 s on one thread against 5.6 s on two.
    """
    return threads.torch_threads(1) if torch.device(device).type == "cpu" else contextlib.nullcontext(0)


def batches(n: int, batch_size: int, steps: int, generator: torch.Generator):
    """``steps`` index batches: shuffled epochs without replacement."""
    perm = torch.randperm(n, generator=generator)
    pos = 0
    for _ in range(steps):
        if pos + batch_size > n:
            perm, pos = torch.randperm(n, generator=generator), 0
        idx = perm[pos:pos + min(batch_size, n)]
        pos += len(idx)
        yield idx
