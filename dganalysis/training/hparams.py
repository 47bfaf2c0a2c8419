"""Hyperparameters: defaults plus random-search distributions, drawn exactly as DomainBed draws them.

DomainBed (Gulrajani & Lopez-Paz, 2021; ``hparams_registry.py`` and ``scripts/train.py``):

* ``hparams_seed == 0`` gives the defaults, whatever the trial;
* otherwise the draw is seeded by ``random_seed = seed_hash(hparams_seed, trial_seed)`` and every hyperparameter
  ``name`` is drawn by its *own* ``np.random.RandomState(seed_hash(random_seed, name))``, so a hyperparameter's value
  depends only on (hparams_seed, trial_seed, name, its distribution): our extra hyperparameters (featurizer,
  schedule, augment, ...) never change the values drawn for DomainBed's;
* defaults and distributions depend on the dataset: DomainBed's small-image datasets (``SMALL_IMAGES``) use one
  regime (lr 1e-3, batch 64, no weight decay), every other dataset another (lr 5e-5, batch 32, weight decay drawn),
  with a few per-dataset exceptions (DomainNet's batch size). See :class:`HParam` and :func:`is_small_images`.

So ``resolve(specs, hparams_seed, trial_seed, dataset=...)`` on DomainBed's names returns DomainBed's very dict for
the same (algorithm, dataset, hparams_seed, trial_seed); ``tests/reference/test_domainbed_hparams.py`` checks this
against ``hparams_registry`` for every algorithm both projects have.

Search spaces can be overridden from a params YAML with small specs such as ``{"log10_uniform": [-2, 0]}``
(Yu et al. 2024: MMD γ ∈ 10^U(−2,0)); see :func:`parse_distribution`.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dganalysis.validation import Check, ConfigError, LazyCheck, UnknownKeyError, like

Sampler = Callable[[np.random.RandomState], Any]

#: Version of the rule that turns a job spec into hyperparameters (defaults, distributions, seeding). Bump it when a
#: change draws different values for an existing (algorithm, dataset, hparams_seed, trial_seed, overrides): from
#: version 2 on it enters every job's hash (:attr:`dganalysis.training.job.Job.job_id`), so a store's jobs drawn under the
#: old rule are not reused (they stay on disk; the new ones get new folders). Version 1 (the rule since DomainBed's
#: per-name, per-(hparams_seed, trial_seed) draws) is left out of the hash so that existing stores keep their ids;
#: records drawn under an even older rule are caught instead by :func:`dganalysis.training.job_draw.recorded_draw_problem`.
#: Version 2: DomainBed's remaining base names (resnet18, resnet50_augmix, dinov2, vit, vit_attn_tune, vit_dropout,
#: lars, linear_steps, class_balanced) joined every job's hparams, and DomainBed's datasets default to
#: ``featurizer: domainbed`` with ``pretrained: domainbed`` (DomainBed's network and ImageNet weights).
DRAW_VERSION = 2

#: Every dataset DomainBed has (``datasets.DATASETS``, in its order: the row order of its tables): their default
#: featurizer is DomainBed's own rule (``featurizer: domainbed``, :mod:`dganalysis.nets.domainbed`) with DomainBed's
#: ImageNet weights (``pretrained: domainbed``); our own datasets keep ``featurizer: auto`` and no weights (the named
#: departure).
DOMAINBED_DATASETS: tuple[str, ...] = (
    "Debug28", "Debug224", "ColoredMNIST", "RotatedMNIST", "VLCS", "PACS", "OfficeHome", "TerraIncognita", "DomainNet",
    "SVIRO", "WILDSCamelyon", "WILDSFMoW", "SpawriousO2O_easy", "SpawriousO2O_medium", "SpawriousO2O_hard",
    "SpawriousM2M_easy", "SpawriousM2M_medium", "SpawriousM2M_hard",
)


def _on_domainbed_datasets(value: Any) -> dict[str, tuple[Any, Sampler]]:
    return {name: (value, fixed(value)) for name in DOMAINBED_DATASETS}


@dataclass(frozen=True)
class HParam:
    """A hyperparameter: its default and a sampler for random search.

    ``default`` and ``sample`` are DomainBed's values for its small-image datasets (``SMALL_IMAGES``: Debug28,
    RotatedMNIST, ColoredMNIST); ``large``, when given, is the ``(default, sample)`` pair DomainBed uses for every
    other dataset (Gulrajani & Lopez-Paz, 2021, ``hparams_registry.py``). Without ``large`` both regimes agree.
    ``datasets`` holds per-dataset exceptions ``{dataset name: (default, sample)}`` that win over both regimes
    (DomainBed's DomainNet batch size).
    """

    default: Any
    sample: Sampler
    doc: str = ""
    large: tuple[Any, Sampler] | None = None
    datasets: Mapping[str, tuple[Any, Sampler]] = field(default_factory=dict)
    #: optional constraint on values (e.g. ``dganalysis.validation.Check("float", low=0)``); without one a value
    #: must be of the default's kind (see :func:`hparam_check`)
    check: Callable[[Any, str], Any] | None = None

    def regime(self, small_images: bool, dataset: str | None = None) -> tuple[Any, Sampler]:
        """``(default, sample)`` for a small-image (True) or large-image (False) dataset named ``dataset``."""
        if dataset is not None and dataset in self.datasets:
            return self.datasets[dataset]
        if small_images or self.large is None:
            return self.default, self.sample
        return self.large


def seed_hash(*args: Any) -> int:
    """DomainBed's ``misc.seed_hash``: an integer in [0, 2^31) from the MD5 of ``str(args)``."""
    return int(hashlib.md5(str(args).encode("utf-8")).hexdigest(), 16) % (2**31)


def draw_seed(hparams_seed: int, trial_seed: int) -> int:
    """The seed of a random-search draw: ``seed_hash(hparams_seed, trial_seed)`` as DomainBed's ``train.py``."""
    return seed_hash(int(hparams_seed), int(trial_seed))


_STATES = threading.local()


def name_state(random_seed: int, name: str) -> np.random.RandomState:
    """The random state hyperparameter ``name`` is drawn from (``hparams_registry._hparam``): in the state of
    ``np.random.RandomState(seed_hash(random_seed, name))``.

    One state per thread is reseeded and returned (legacy seeding, the Gaussian cache cleared: the same draws as a
    new ``RandomState``, pinned by a test) because constructing a generator costs ~0.2 ms, which made the hparam
    checks of a paper-size grid (half a million draws) take a minute. Draw from it before the next call in the
    same thread."""
    state = getattr(_STATES, "state", None)
    if state is None:
        state = _STATES.state = np.random.RandomState()
    state.seed(seed_hash(random_seed, name))
    return state


# ---------------------------------------------------------------- distributions (each DomainBed's expression)


def _py(value: Any) -> Any:
    """A numpy scalar as the Python scalar of the same value (JSON-friendly)."""
    return value.item() if isinstance(value, np.generic) else value


def log10_uniform(low: float, high: float) -> Sampler:
    """10^U(low, high) — DomainBed's ``10**r.uniform(low, high)``."""
    return lambda r: float(10 ** r.uniform(low, high))


def log10_uniform_int(low: float, high: float) -> Sampler:
    """int(10^U(low, high)) — DomainBed's anneal-iteration distributions."""
    return lambda r: int(10 ** r.uniform(low, high))


def uniform(low: float, high: float) -> Sampler:
    """U(low, high)."""
    return lambda r: float(r.uniform(low, high))


def uniform_int(low: float, high: float) -> Sampler:
    """int(U(low, high)) — e.g. Fishr's ``penalty_anneal_iters``."""
    return lambda r: int(r.uniform(low, high))


def choice(options: list[Any]) -> Sampler:
    """One of ``options`` uniformly — DomainBed's ``r.choice(options)``, returned as a Python scalar."""
    opts = list(options)
    if not opts:
        raise ConfigError("choice: expected at least one option")
    return lambda r: _py(r.choice(opts))


def log2_uniform_int(low: float, high: float) -> Sampler:
    """int(2^U(low, high)) — DomainBed's batch-size distribution."""
    return lambda r: int(2 ** r.uniform(low, high))


def fixed(value: Any) -> Sampler:
    """Always ``value`` (draws nothing)."""
    return lambda r: value


_DISTS: dict[str, Callable[..., Sampler]] = {
    "log10_uniform": log10_uniform,
    "log10_uniform_int": log10_uniform_int,
    "uniform": uniform,
    "uniform_int": uniform_int,
    "choice": lambda *opts: choice(list(opts)),
    "log2_uniform_int": log2_uniform_int,
    "fixed": fixed,
}


def parse_distribution(spec: Any, name: str = "?") -> Sampler:
    """Turn a YAML spec into a sampler.

    ``{"log10_uniform": [lo, hi]}``, ``{"log10_uniform_int": [lo, hi]}``, ``{"uniform": [lo, hi]}``,
    ``{"uniform_int": [lo, hi]}``, ``{"choice": [a, b, ...]}``, ``{"log2_uniform_int": [lo, hi]}``; a plain scalar
    means a fixed value.
    """
    if not isinstance(spec, Mapping):
        return fixed(spec)
    if len(spec) != 1:
        raise ConfigError(f"hparam {name!r}: a distribution spec has exactly one key, got {dict(spec)}")
    (kind, args), = spec.items()
    if kind not in _DISTS:
        raise ConfigError(f"hparam {name!r}: unknown distribution {kind!r}; known: {sorted(_DISTS)}")
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    try:
        return _DISTS[kind](*args)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"hparam {name!r}: bad arguments {args} for {kind!r} ({err})") from None


# ---------------------------------------------------------------- which regime a dataset uses

#: Datasets drawn in DomainBed's small-image regime: its ``SMALL_IMAGES`` (Debug28, RotatedMNIST, ColoredMNIST) and
#: our digit and Fashion-MNIST datasets built the same way (28×28 or smaller). Every other dataset is large-image (PACS, VLCS,
#: OfficeHome, TerraIncognita, DomainNet, ImageFolder, CSVImages, PaHCC, ...) unless its registered builder carries
#: ``small_images = True`` or a job overrides ``image_regime``.
SMALL_IMAGE_DATASETS: frozenset[str] = frozenset({"Debug28", "RotatedMNIST", "ColoredMNIST", "RotatedDigits",
                                                  "ColoredDigits", "RotatedFashionMNIST",
                                                  "ColoredFashionMNIST", "RotatedMNIST_Fixed",
                                                  "ColoredMNIST_Fixed"})

IMAGE_REGIMES = ("auto", "small", "large")


def is_small_images(dataset: str | None) -> bool:
    """Whether ``dataset`` draws in the small-image regime (see :data:`SMALL_IMAGE_DATASETS`).

    ``None`` (no dataset given, e.g. a unit test building an algorithm directly) counts as small-image, the regime
    our defaults were always in. A registered dataset builder may declare ``small_images = True/False`` as an
    attribute; a name in :data:`SMALL_IMAGE_DATASETS` is small whatever its builder says.
    """
    if dataset is None or dataset in SMALL_IMAGE_DATASETS:
        return True
    from dganalysis.data.registry import DATASETS, _import_builtin

    _import_builtin()
    if dataset in DATASETS:
        flag = getattr(DATASETS.get(dataset), "small_images", None)
        if flag is not None:
            return bool(flag)
    return False


# ---------------------------------------------------------------- constraints on values


def _featurizer_check() -> Check:
    """The featurizer rule of :mod:`dganalysis.nets.registry` (imported when a featurizer is checked: nets loads torch,
    this module does not)."""
    from dganalysis.nets.registry import FeaturizerCheck

    return FeaturizerCheck()


#: constraints of the hyperparameters every algorithm has (:data:`BASE_HPARAMS`)
BASE_CHECKS: dict[str, Check] = {
    "lr": Check("float", low=0.0, high=10.0, low_open=True),
    "batch_size": Check("int", low=1, high=1 << 16),
    "weight_decay": Check("float", low=0.0, high=1.0),
    "optimizer": Check(choices=("adam", "adamw", "sgd")),
    "schedule": Check(choices=("constant", "step", "cosine")),
    "featurizer": LazyCheck(_featurizer_check),
    "conv1_3x3": Check("bool"),
    "nonlinear_classifier": Check("bool"),
    "resnet_dropout": Check("float", low=0.0, high=1.0, high_open=True),
    "augment": Check("bool"),
    "pretrained": Check("str", nullable=True),
    "pretrained_layout": Check("str"),
    "linear_probe": Check("bool"),
    "freeze_stages": Check("int", low=0),
    "steps": Check("int", low=1),
}


def hparam_check(name: str, spec: Any) -> Check:
    """The check of hyperparameter ``name``: the HParam's own ``check``, else :data:`BASE_CHECKS`, else the
    default's kind (so ``mmd_gamma: "1.0e6"`` or ``irm_penalty_anneal_iters: 40.9`` fail)."""
    own = getattr(spec, "check", None)
    if own is not None:
        return own
    if name in BASE_CHECKS:
        return BASE_CHECKS[name]
    return like(getattr(spec, "default", None))


# ---------------------------------------------------------------- the base hyperparameters

# DomainBed's base hyperparameters (names, defaults and spaces of ``hparams_registry._hparams``) plus ours under
# names DomainBed does not use (optimizer, schedule, featurizer, ...); the DomainBed names we do not implement are
# listed with a reason in tests/reference/test_domainbed_hparams.py.
BASE_HPARAMS: dict[str, HParam] = {
    "lr": HParam(1e-3, log10_uniform(-4.5, -2.5), "learning rate", large=(5e-5, log10_uniform(-5, -3.5))),
    "batch_size": HParam(
        64, log2_uniform_int(3, 9), "examples per training domain per step",
        large=(32, log2_uniform_int(3, 5.5)), datasets={"DomainNet": (32, log2_uniform_int(3, 5))},
    ),
    "weight_decay": HParam(0.0, fixed(0.0), "L2 weight decay", large=(0.0, log10_uniform(-6, -2))),
    "resnet_dropout": HParam(0.0, choice([0.0, 0.1, 0.5]), "dropout before the head (ResNets)"),
    # DomainBed's network switches, read by ``featurizer: domainbed`` (nets.domainbed); drawn as DomainBed draws them
    "resnet18": HParam(False, fixed(False), "featurizer domainbed at 224 px: torchvision ResNet-18 (when "
                       "resnet50_augmix is False, as in DomainBed)"),
    "resnet50_augmix": HParam(True, fixed(True), "featurizer domainbed at 224 px: timm's resnet50.ram_in1k"),
    "dinov2": HParam(False, fixed(False), "featurizer domainbed at 224 px with vit: DINOv2 ViT-B/14"),
    "vit": HParam(False, fixed(False), "featurizer domainbed at 224 px: a ViT (only DINOv2, as in DomainBed)"),
    "vit_attn_tune": HParam(False, fixed(False), "DINOv2: train only the attention parameters"),
    "vit_dropout": HParam(0.0, choice([0.0, 0.1, 0.5]), "DINOv2: dropout after the features"),
    "lars": HParam(False, fixed(False), "ERMPlusPlus: DomainBed's LARS optimiser instead of Adam (optim.LARS)"),
    "linear_steps": HParam(500, fixed(500), "ERMPlusPlus: steps of linear probing before full fine-tuning"),
    "class_balanced": HParam(False, fixed(False), "training minibatches drawn with DomainBed's class-balanced "
                             "weights 1/(n_classes * count(y)) (data.balanced)"),
    # DomainBed draws ``bool(r.choice([False, False]))``: always False, but it consumes the draw like DomainBed
    "nonlinear_classifier": HParam(False, lambda r: bool(r.choice([False, False])),
                                   "MLP head instead of linear (never drawn True, as DomainBed)"),
    "image_regime": HParam(
        "auto", fixed("auto"),
        "auto | small | large: DomainBed's small- or large-image defaults and spaces; auto = by dataset "
        "(dganalysis.training.hparams.is_small_images); the resolved dict records the regime used",
    ),
    "optimizer": HParam("adam", fixed("adam"), "adam | adamw | sgd (momentum 0.9)"),
    "schedule": HParam("constant", fixed("constant"), "constant | step | cosine (annealing to 0 over the job)"),
    "featurizer": HParam("auto", fixed("auto"), "a registered featurizer (dganalysis.nets.registry.featurizer_names()): "
                         "domainbed on DomainBed's datasets, auto on ours", datasets=_on_domainbed_datasets("domainbed")),
    "conv1_3x3": HParam(False, fixed(False), "ResNet stem: 3x3 stride-1 conv1 without max-pool (PaHCC paper)"),
    "freeze_bn": HParam(False, fixed(False), "ResNets: BatchNorm layers kept in eval mode while training (DomainBed's)"),
    "augment": HParam(False, fixed(False), "batched random-affine augmentation on the device"),
    "pretrained": HParam(None, fixed(None), "featurizer checkpoint path (None = random init; 'domainbed' = "
                         "DomainBed's ImageNet weights from local files, see nets.domainbed_weights); see nets.pretrained",
                         datasets=_on_domainbed_datasets("domainbed")),
    "pretrained_layout": HParam("auto", fixed("auto"), "auto | torchvision | timm | moco_v2 | moco_v3 | simclr"),
    "linear_probe": HParam(False, fixed(False), "LP: freeze the whole featurizer (params + BatchNorm stats)"),
    "freeze_stages": HParam(0, fixed(0), "freeze the first k featurizer stages (0 = fine-tune all); see nets.freeze"),
    "data_augmentation": HParam(True, fixed(True), "DomainBed's training augmentation on its image benchmarks "
                                "(data.pipeline; other datasets use 'augment')"),
}


class HParams(Mapping[str, Any]):
    """Resolved hyperparameters of one model, read-only: the values given (defaults, draws and overrides, resolved
    once by :func:`resolve`), and for a name declared in ``specs`` but not given, its declared
    :attr:`HParam.default` — so readers write ``hp["resnet_dropout"]`` and never restate a default. Iteration and
    ``len`` see the given values only (a record of them is unchanged); a name neither given nor declared is a
    KeyError naming it."""

    __slots__ = ("_specs", "_values")

    def __init__(self, values: Mapping[str, Any], specs: Mapping[str, HParam] | None = None) -> None:
        self._values = dict(values._values if isinstance(values, HParams) else values)
        self._specs = BASE_HPARAMS if specs is None else specs

    @classmethod
    def of(cls, hparams: Mapping[str, Any]) -> HParams:
        """``hparams`` itself when it is already resolved, else a view with the base hyperparameters' defaults."""
        return hparams if isinstance(hparams, HParams) else cls(hparams)

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        spec = self._specs.get(name)
        if spec is None:
            raise KeyError(f"hyperparameter {name!r} is neither set nor declared (declared: {sorted(self._specs)})")
        return spec.default

    def __contains__(self, name: object) -> bool:
        return name in self._values or name in self._specs

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"HParams({self._values!r})"



def resolve(
    specs: Mapping[str, HParam],
    hparams_seed: int,
    overrides: Mapping[str, Any] | None = None,
    search_overrides: Mapping[str, Any] | None = None,
    *,
    trial_seed: int = 0,
    dataset: str | None = None,
) -> dict[str, Any]:
    """Concrete hyperparameters for one job: DomainBed's dict for (algorithm, dataset, hparams_seed, trial_seed).

    ``specs``: base plus algorithm hyperparameters. ``hparams_seed == 0`` gives the defaults; any other seed draws
    every hyperparameter from its own random state (see the module docstring). The regime (small or large images)
    comes from ``overrides["image_regime"]`` when it is "small" or "large", else from ``dataset``
    (:func:`is_small_images`). ``search_overrides`` replaces search distributions (YAML specs, see
    :func:`parse_distribution`) and matters for seeds ≠ 0; ``overrides`` fixes values outright, whatever the seed
    (DomainBed's ``--hparams`` JSON).
    """
    search_overrides = dict(search_overrides or {})
    overrides = dict(overrides or {})
    unknown = (set(search_overrides) | set(overrides)) - set(specs)
    if unknown:
        raise UnknownKeyError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(specs)}")
    if int(hparams_seed) < 0 or int(trial_seed) < 0:
        raise ConfigError(f"resolve: hparams_seed and trial_seed must be ≥ 0, got {hparams_seed}, {trial_seed}")
    regime = overrides.get("image_regime", "auto")
    if regime not in IMAGE_REGIMES:
        raise ConfigError(f"hparam 'image_regime': expected one of {IMAGE_REGIMES}, got {regime!r}")
    small = is_small_images(dataset) if regime == "auto" else regime == "small"
    random_seed = draw_seed(hparams_seed, trial_seed)
    out: dict[str, Any] = {}
    for name, hp in specs.items():
        default, sampler = hp.regime(small, dataset)
        if name in overrides:
            value = overrides[name]
        elif int(hparams_seed) == 0:
            value = default
        else:
            if name in search_overrides:
                sampler = parse_distribution(search_overrides[name], name)
            value = sampler(name_state(random_seed, name))
        out[name] = value
    if "image_regime" in out:
        out["image_regime"] = "small" if small else "large"
    return out
