"""Hyperparameters: defaults plus random-search distributions, one RNG per name.

Follows DomainBed's convention (Gulrajani & Lopez-Paz, 2021): ``hparams_seed == 0``
gives the defaults; any other seed draws every hyperparameter from its search
distribution with its *own* random state, seeded from ``(hparams_seed, name)``, so
adding a hyperparameter never changes the values drawn for the others.

Search spaces can be overridden from a params YAML with small specs such as
``{"log10_uniform": [-2, 0]}`` (seed 002: MMD γ ∈ 10^U(−2,0)); see :func:`parse_distribution`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Sampler = Callable[[np.random.RandomState], Any]


@dataclass(frozen=True)
class HParam:
    """A hyperparameter: its default and a sampler for random search.

    ``default`` and ``sample`` are DomainBed's values for its small-image datasets (``SMALL_IMAGES``: Debug28,
    RotatedMNIST, ColoredMNIST); ``large``, when given, is the ``(default, sample)`` pair DomainBed uses for every
    other dataset (Gulrajani & Lopez-Paz, 2021, ``hparams_registry.py``). Without ``large`` both regimes agree.
    """

    default: Any
    sample: Sampler
    doc: str = ""
    large: tuple[Any, Sampler] | None = None
    #: optional constraint on values (e.g. ``dganalysis.validation.Check("float", low=0)``); without one a value
    #: must be of the default's kind (see :func:`dganalysis.validation.hparam_check`)
    check: Callable[[Any, str], Any] | None = None

    def regime(self, small_images: bool) -> tuple[Any, Sampler]:
        """``(default, sample)`` for a small-image (True) or large-image (False) dataset."""
        if small_images or self.large is None:
            return self.default, self.sample
        return self.large


def seed_hash(*args: Any) -> int:
    """DomainBed's ``misc.seed_hash``: an integer in [0, 2^31) from the MD5 of ``str(args)``."""
    return int(hashlib.md5(str(args).encode("utf-8")).hexdigest(), 16) % (2**31)


def log10_uniform(low: float, high: float) -> Sampler:
    """10^U(low, high)."""
    return lambda r: float(10 ** r.uniform(low, high))


def uniform(low: float, high: float) -> Sampler:
    """U(low, high)."""
    return lambda r: float(r.uniform(low, high))


def choice(options: list[Any]) -> Sampler:
    """One of ``options`` uniformly."""
    opts = list(options)
    return lambda r: opts[int(r.randint(len(opts)))]


def log2_uniform_int(low: float, high: float) -> Sampler:
    """int(2^U(low, high)) — DomainBed's batch-size distribution."""
    return lambda r: int(2 ** r.uniform(low, high))


def fixed(value: Any) -> Sampler:
    """Always ``value``."""
    return lambda r: value


_DISTS: dict[str, Callable[..., Sampler]] = {
    "log10_uniform": log10_uniform,
    "uniform": uniform,
    "choice": lambda *opts: choice(list(opts)),
    "log2_uniform_int": log2_uniform_int,
    "fixed": fixed,
}


def parse_distribution(spec: Any, name: str = "?") -> Sampler:
    """Turn a YAML spec into a sampler.

    ``{"log10_uniform": [lo, hi]}``, ``{"uniform": [lo, hi]}``, ``{"choice": [a, b, ...]}``,
    ``{"log2_uniform_int": [lo, hi]}``; a plain scalar means a fixed value.
    """
    if not isinstance(spec, Mapping):
        return fixed(spec)
    if len(spec) != 1:
        raise ValueError(f"hparam {name!r}: a distribution spec has exactly one key, got {dict(spec)}")
    (kind, args), = spec.items()
    if kind not in _DISTS:
        raise ValueError(f"hparam {name!r}: unknown distribution {kind!r}; known: {sorted(_DISTS)}")
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    return _DISTS[kind](*args)


def _seed_for(hparams_seed: int, name: str) -> int:
    digest = hashlib.md5(f"{hparams_seed}:{name}".encode()).hexdigest()
    return int(digest[:8], 16)


# Hyperparameters every algorithm has (DomainBed's defaults and search spaces, adjusted
# for the optimiser/schedule choices of seed 002).
BASE_HPARAMS: dict[str, HParam] = {
    "lr": HParam(1e-3, log10_uniform(-4.5, -2.5), "learning rate"),
    "batch_size": HParam(64, log2_uniform_int(3, 9), "examples per training domain per step"),
    "weight_decay": HParam(0.0, log10_uniform(-6, -2), "L2 weight decay"),
    "optimizer": HParam("adam", fixed("adam"), "adam | adamw | sgd (momentum 0.9)"),
    "schedule": HParam("constant", fixed("constant"), "constant | step | cosine (annealing to 0 over the job)"),
    "featurizer": HParam("auto", fixed("auto"), "auto | cnn | smallcnn | smallcnn_bn | resnet18 | resnet50 | mlp"),
    "conv1_3x3": HParam(False, fixed(False), "ResNet stem: 3x3 stride-1 conv1 without max-pool (PaHCC paper)"),
    "nonlinear_classifier": HParam(False, fixed(False), "MLP head instead of linear"),
    "resnet_dropout": HParam(0.0, choice([0.0, 0.1, 0.5]), "dropout before the head (ResNets)"),
    "augment": HParam(False, fixed(False), "batched random-affine augmentation on the device"),
    "pretrained": HParam(None, fixed(None), "featurizer checkpoint path (None = random init); see nets.pretrained"),
    "pretrained_layout": HParam("auto", fixed("auto"), "auto | torchvision | timm | moco_v2 | moco_v3 | simclr"),
    "linear_probe": HParam(False, fixed(False), "LP: freeze the whole featurizer (params + BatchNorm stats)"),
    "freeze_stages": HParam(0, fixed(0), "freeze the first k featurizer stages (0 = fine-tune all); see nets.freeze"),
}


def resolve(
    specs: Mapping[str, HParam],
    hparams_seed: int,
    overrides: Mapping[str, Any] | None = None,
    search_overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Concrete hyperparameters for one job.

    ``specs``: base plus algorithm hyperparameters. ``search_overrides`` replaces search
    distributions (YAML specs, see :func:`parse_distribution`) and is used for seeds ≠ 0;
    ``overrides`` fixes values outright, whatever the seed.
    """
    search_overrides = dict(search_overrides or {})
    overrides = dict(overrides or {})
    unknown = (set(search_overrides) | set(overrides)) - set(specs)
    if unknown:
        raise KeyError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(specs)}")
    out: dict[str, Any] = {}
    for name, hp in specs.items():
        if hparams_seed == 0:
            value = hp.default
        else:
            sampler = parse_distribution(search_overrides[name], name) if name in search_overrides else hp.sample
            value = sampler(np.random.RandomState(_seed_for(hparams_seed, name)))
        out[name] = overrides.get(name, value)
    return out
