"""Step-by-step comparison of one of our algorithms with DomainBed's of the same name.

Both are built on the same input shape and hyperparameters, in float64 (Adam amplifies float32 rounding into
visible differences), DomainBed's initial weights are copied into ours, and both receive identical minibatches.
Where an algorithm draws random numbers inside ``update()`` both sides start each step from the same seeded
global generators (torch, numpy, random), so identical draws in the same order give identical numbers.

Weights are matched by name after :func:`default_key_map` (DomainBed's MNIST-CNN layer names → ours); an
algorithm whose extra modules are named differently passes its own ``key_map``.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from dganalysis.algorithms import create, default_hparams

#: Python for a subprocess that runs DomainBed's unmodified scripts: the CPU-torch shim, then empty stand-ins for
#: the optional packages DomainBed imports at module level (timm, gdown, wilds) where they are not installed
SCRIPT_PRELUDE = """
import runpy, sys, types
import dganalysis.compat  # before torchvision: the CPU-torch shim
dganalysis.compat.install()
for name, attrs in {"timm": {}, "gdown": {}, "wilds": {}, "wilds.datasets": {},
                    "wilds.datasets.camelyon17_dataset": {"Camelyon17Dataset": object},
                    "wilds.datasets.fmow_dataset": {"FMoWDataset": object}}.items():
    try:
        __import__(name)
    except ImportError:
        mod = types.ModuleType(name); mod.__dict__.update(attrs); mod.__path__ = []; sys.modules[name] = mod
"""
INPUT_SHAPE = (2, 28, 28)  # DomainBed picks its MNIST-CNN featurizer for 28×28 inputs; ours is "cnn"
N_CLASSES = 3
N_DOMAINS = 3
SMALL_DATASET = "RotatedMNIST"

_CNN = [(rf"(featurizer|network\.0)\.conv{i + 1}\.", rf"\1.body.{3 * i}.") for i in range(4)]
_CNN += [(rf"(featurizer|network\.0)\.bn{i}\.", rf"\1.body.{3 * i + 2}.") for i in range(4)]


def default_key_map(name: str) -> str:
    """DomainBed parameter name → ours: the MNIST-CNN layers (conv1..4, bn0..3) of any module called
    ``featurizer``; ``network.0``/``network.1`` are the featurizer/classifier seen through ``nn.Sequential``."""
    for pat, rep in _CNN:
        name = re.sub(pat, rep, name)
    return name


@contextlib.contextmanager
def default_float64():
    """torch's default dtype float64 inside: DomainBed builds some tensors without a dtype (``torch.zeros(n)``
    for per-domain losses in VREx/GroupDRO, the dummy IRM scale, RSC's percentile thresholds); in float32 they
    would round a float64 comparison at 1e-7."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def seed_all(seed: int) -> None:
    """Seed every global generator an ``update()`` may draw from."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


@dataclass
class Pair:
    """DomainBed's algorithm and ours, same weights, float64."""

    theirs: nn.Module
    ours: nn.Module
    db_hparams: dict[str, Any]
    our_hparams: dict[str, Any]
    copied: list[str] = field(default_factory=list)


def build_pair(
    domainbed: Any,
    name: str,
    *,
    our_name: str | None = None,
    hparams: Mapping[str, Any] | None = None,
    input_shape: tuple[int, ...] = INPUT_SHAPE,
    n_classes: int = N_CLASSES,
    n_domains: int = N_DOMAINS,
    dataset: str = SMALL_DATASET,
    our_extra: Mapping[str, Any] | None = None,
    key_map: Callable[[str], str] = default_key_map,
    seed: int = 0,
    ignore: Sequence[str] = (),
) -> Pair:
    """Build DomainBed's ``name`` with its default hparams for ``dataset`` updated by ``hparams``, and ours
    (``our_name``, default ``name``) with the same values for every hparam both know, plus ``our_extra``;
    copy DomainBed's weights into ours (every floating parameter and buffer must find its partner, except the
    mapped names in ``ignore``: state both sides build lazily, e.g. GroupDRO's ``q``)."""
    db_hp = dict(domainbed.hparams_registry.default_hparams(name, dataset))
    db_hp.update(hparams or {})
    ours_hp = default_hparams(our_name or name)
    ours_hp.update({k: v for k, v in db_hp.items() if k in ours_hp})
    ours_hp.update({"featurizer": "cnn", "steps": 1000, "optimizer": "adam", "schedule": "constant"})
    ours_hp.update(our_extra or {})
    seed_all(seed)
    theirs = domainbed.algorithms.get_algorithm_class(name)(input_shape, n_classes, n_domains, db_hp).double()
    seed_all(seed + 1)
    ours = create(our_name or name, input_shape, n_classes, n_domains, ours_hp).double()
    copied = copy_weights(theirs, ours, key_map, ignore)
    return Pair(theirs, ours, db_hp, ours_hp, copied)


def copy_weights(
    src: nn.Module, dst: nn.Module, key_map: Callable[[str], str] = default_key_map, ignore: Sequence[str] = ()
) -> list[str]:
    """Copy ``src``'s floating parameters/buffers into ``dst`` by mapped name; both sides must be covered exactly
    (names in ``ignore``, after mapping, are left out on both sides)."""
    dst_state = dst.state_dict()
    src_state = {key_map(k): v for k, v in src.state_dict().items() if v.is_floating_point() and key_map(k) not in ignore}
    dst_float = {k for k, v in dst_state.items() if v.is_floating_point() and k not in ignore}
    # names of one tensor (a module reachable by two paths, e.g. ``featurizer`` and ``network.0``) form one group;
    # a group is covered when any of its names has a partner
    alias = _alias_groups(dst_state, dst_float)
    missing = sorted(k for k in dst_float if k not in src_state and not (alias[k] & set(src_state)))
    extra = sorted(set(src_state) - dst_float)
    assert not missing and not extra, f"weights do not line up: ours only {missing}; DomainBed only {extra}"
    with torch.no_grad():
        for k in dst_float:
            partner = k if k in src_state else sorted(alias[k] & set(src_state))[0]
            assert dst_state[k].shape == src_state[partner].shape, (
                f"{k}: ours {tuple(dst_state[k].shape)} vs {tuple(src_state[partner].shape)}")
            dst_state[k].copy_(src_state[partner])
    return sorted(dst_float)


def _alias_groups(state: Mapping[str, torch.Tensor], names: set[str]) -> dict[str, set[str]]:
    """For each name, every name of ``state`` sharing its storage (same data pointer, shape and strides)."""
    by_ptr: dict[tuple, set[str]] = {}
    for k in names:
        v = state[k]
        by_ptr.setdefault((v.data_ptr(), tuple(v.shape), tuple(v.stride())), set()).add(k)
    return {k: by_ptr[(state[k].data_ptr(), tuple(state[k].shape), tuple(state[k].stride()))] for k in names}


def make_minibatches(
    n_domains: int = N_DOMAINS,
    batch_size: int = 8,
    input_shape: tuple[int, ...] = INPUT_SHAPE,
    n_classes: int = N_CLASSES,
    seed: int = 0,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One float64 minibatch per domain, each domain with its own input shift so penalties are non-trivial."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for d in range(n_domains):
        x = torch.rand((batch_size, *input_shape), generator=g, dtype=torch.float64) * (0.5 + 0.25 * d)
        y = torch.randint(0, n_classes, (batch_size,), generator=g)
        out.append((x, y))
    return out


def max_param_diff(pair: Pair, key_map: Callable[[str], str] = default_key_map) -> tuple[float, str]:
    """Largest absolute difference between corresponding parameters (and its name)."""
    theirs = {key_map(k): v for k, v in pair.theirs.state_dict().items() if v.is_floating_point()}
    worst, where = 0.0, ""
    for k, v in pair.ours.state_dict().items():
        if k in theirs and v.is_floating_point():
            d = float((v - theirs[k]).abs().max()) if v.numel() else 0.0
            if d > worst:
                worst, where = d, k
    return worst, where


def run_steps(
    pair: Pair,
    n_steps: int,
    *,
    batch_size: int = 8,
    loss_keys: Mapping[str, str] | str | None = None,
    atol: float = 1e-9,
    key_map: Callable[[str], str] = default_key_map,
    update_theirs: Callable[[nn.Module, Sequence], dict] | None = None,
    update_ours: Callable[[nn.Module, Sequence, int], dict] | None = None,
) -> list[tuple[dict, dict]]:
    """Feed both the same minibatches for ``n_steps`` steps (same global seeds before each side's update) and
    assert after every step: the losses named in ``loss_keys`` (DomainBed key → our key; default ``loss``; ``"common"``:
    every key DomainBed returns, under the same name, e.g. DANN's alternating ``disc_loss``/``gen_loss``) agree
    and every parameter agrees within ``atol``. Returns the per-step loss dicts."""
    common = loss_keys == "common"
    loss_keys = {} if common else dict(loss_keys or {"loss": "loss"})
    update_theirs = update_theirs or (lambda m, mb: m.update(mb))
    update_ours = update_ours or (lambda m, mb, s: m.update(mb, s))
    pair.theirs.train()
    pair.ours.train()
    history = []
    for step in range(n_steps):
        mb = make_minibatches(len_domains(pair), batch_size, seed=1000 + step)
        seed_all(step)
        lt = update_theirs(pair.theirs, [(x.clone(), y.clone()) for x, y in mb])
        seed_all(step)
        lo = update_ours(pair.ours, [(x.clone(), y.clone()) for x, y in mb], step)
        if common:
            assert lt and set(lt) <= set(lo), f"step {step}: DomainBed returned {sorted(lt)}, ours {sorted(lo)}"
            loss_keys = {k: k for k in lt}
        for kt, ko in loss_keys.items():
            assert abs(float(lt[kt]) - float(lo[ko])) <= atol * max(1.0, abs(float(lt[kt]))), (
                f"step {step}: DomainBed {kt}={lt[kt]!r} vs ours {ko}={lo[ko]!r}")
        diff, where = max_param_diff(pair, key_map)
        assert diff <= atol, f"step {step}: parameters differ by {diff:.3g} at {where}"
        history.append((lt, lo))
    return history


def len_domains(pair: Pair) -> int:
    return int(getattr(pair.ours, "n_domains", N_DOMAINS))


def assert_same_predictions(pair: Pair, atol: float = 1e-9, seed: int = 99) -> None:
    """Eval-mode ``predict`` agrees on a fresh batch."""
    x = make_minibatches(1, 8, seed=seed)[0][0]
    pair.theirs.eval()
    pair.ours.eval()
    with torch.no_grad():
        pt, po = pair.theirs.predict(x), pair.ours.predict(x)
    assert pt.shape == po.shape, (pt.shape, po.shape)
    diff = float((pt - po).abs().max())
    assert diff <= atol, f"predict differs by {diff:.3g}"
