"""One training job: a frozen, JSON-serialisable spec and its hash.

This module sits below both :mod:`dganalysis.training.train` (which runs one job) and :mod:`dganalysis.sweep` (which
builds grids of jobs and runs them into a store); it imports neither.

As in DomainBed (Gulrajani & Lopez-Paz, 2021) a job's folder in the store is named by a
hash of its spec, so the same job requested twice (by two notebooks, or by a resumed
sweep) is trained once. We hash the canonical JSON of every field that changes the
numbers; ``save_model`` is left out (it only adds a file), and so are paths such as
``data_dir`` (they are not part of the spec at all). The version of the hyperparameter-drawing rule
(:data:`dganalysis.training.hparams.DRAW_VERSION`) is hashed too from version 2 on, so that a change of the rule
never reuses results drawn under the old one.

Identity is location-free (:func:`identity_spec`): where the data or a checkpoint lies is not what the job is. A
dataset keyword argument that names a location (:func:`is_location_kwarg`: ``root``, ``mnist_dir``, ``csv_path``, …)
and the ``pretrained`` checkpoint enter the id by their last path component only, and the torch seed
(:attr:`Job.seed_key`) leaves dataset locations out altogether, so the same experiment run with its data, weights or
outputs in another folder gets the same ids and the same random numbers. DomainBed's sweep departs here in the other
direction (its output folder is an MD5 of the arguments, ``data_dir`` included; its seed is location-free, as ours).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import PurePath
from typing import Any

from dganalysis.validation import ConfigError, UnknownKeyError

#: fields that do not change a job's results and so are not hashed
UNHASHED_FIELDS = ("save_model",)
#: fields added later: left out of the spec (and so of the hash) at their default, so older jobs keep their ids
OPTIONAL_FIELDS = {"seed": None, "domainbed_exact": False, "task": "domain_generalization", "uda_holdout_fraction": 0.0,
                   "evaluate_at": "checkpoints", "evaluate_splits": "all"}
#: fields left out of the torch seed (:attr:`Job.seed_key`): ``task`` and ``uda_holdout_fraction`` as DomainBed's sweep
#: leaves them out of its run seed; ``evaluate_at`` and ``evaluate_splits`` because evaluating never changes what is
#: trained
SEED_FREE_FIELDS = ("task", "uda_holdout_fraction", "evaluate_at", "evaluate_splits")
#: :attr:`Job.evaluate_at` values: DomainBed's cadence, or the last step alone
EVALUATE_AT = ("checkpoints", "last")
#: :attr:`Job.evaluate_splits` values: every split (DomainBed), or all but the training domains' ``in`` splits
EVALUATE_SPLITS = ("all", "held_out")
#: DomainBed's datasets that ``domainbed_exact`` replays draw for draw (:mod:`dganalysis.training.exact`); it refuses the others
EXACT_DATASETS = ("Debug28", "Debug224", "RotatedMNIST", "ColoredMNIST")
#: DomainBed's ``train.py --task`` values (:attr:`Job.task`)
TASKS = ("domain_generalization", "domain_adaptation")
#: DomainBed's datasets that DomainBed partitions per run from the run's seed (:mod:`dganalysis.data.domainbed_mnist`);
#: their jobs hash ``partition`` too (a job of the former fixed partition, now ``*_Fixed``, is not reused)
PER_RUN_PARTITION_DATASETS = ("RotatedMNIST", "ColoredMNIST")
#: endings of a dataset keyword argument's name that mark it as a location (besides the name ``root`` itself)
LOCATION_SUFFIXES = ("_dir", "_path", "_root", "_file")
#: the hyperparameters that name a file (the featurizer checkpoint)
LOCATION_HPARAMS = ("pretrained",)


def is_location_kwarg(name: str) -> bool:
    """Whether a dataset keyword argument says where data lies (``root``, or a name ending in
    :data:`LOCATION_SUFFIXES`) rather than what the data is."""
    return name == "root" or name.endswith(LOCATION_SUFFIXES)


def _last_component(value: Any) -> Any:
    return PurePath(value).name if isinstance(value, str) and value else value


def identity_spec(spec: Mapping[str, Any], *, for_seed: bool = False) -> dict[str, Any]:
    """The location-free spec that a job's hashes are taken of (``spec`` as :meth:`Job.to_dict` returns it).

    For the id (``for_seed=False``) every location keeps only its last path component — a folder's or file's name:
    ``root="/home/a/data"`` and ``root="/scratch/b/data"`` hash the same, while two image folders or checkpoints of other names
    stay apart in a store. For the seed (``for_seed=True``) a dataset's locations are left out altogether, since the
    folder's name says nothing about the experiment, and so are :data:`SEED_FREE_FIELDS` (``task``,
    ``uda_holdout_fraction``: a job with an unlabelled split draws what its twin without one draws); the checkpoint
    keeps its file name (which weights a job starts
    from changes the experiment, and the leakage study names its own checkpoints by their digest).
    Caveat: two different files of the same name (one store, same spec otherwise) share an id; name them apart.
    """
    out = dict(spec)
    if for_seed:  # as DomainBed's sweep seeds a run: a domain-adaptation job and its DG twin share their draws
        for name in SEED_FREE_FIELDS:
            out.pop(name, None)
    kwargs = dict(out.get("dataset_kwargs") or {})
    for name in [k for k in kwargs if is_location_kwarg(k)]:
        if for_seed:
            del kwargs[name]
        else:
            kwargs[name] = _last_component(kwargs[name])
    out["dataset_kwargs"] = kwargs
    over = dict(out.get("hparams_overrides") or {})
    for name in LOCATION_HPARAMS:
        if name in over:
            over[name] = _last_component(over[name])
    out["hparams_overrides"] = over
    return out



def _canonical(obj: Any) -> Any:
    """Plain JSON types with sorted dict keys (tuples → lists)."""
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return obj.item()
    return obj


@dataclass(frozen=True)
class Job:
    """Everything needed to train one (dataset, algorithm, split, hparams draw, trial).

    ``train_domains`` / ``test_domains`` / ``val_domains`` are domain names; domains of the
    dataset in none of them are unused (neither trained on nor selected on, but still
    evaluated). ``hparams_overrides`` fix hyperparameters outright; ``search_overrides``
    replace search distributions (see :func:`dganalysis.training.hparams.resolve`).

    ``seed``: DomainBed's ``--seed`` of the run (None, the default: the seed DomainBed's sweep gives it,
    :meth:`domainbed_seed`; 0 reproduces a bare ``train.py`` call). It partitions DomainBed's per-run datasets
    (RotatedMNIST, ColoredMNIST) and seeds everything in ``domainbed_exact`` mode. ``domainbed_exact``: train as
    DomainBed's ``train.py`` does, draw for draw (:mod:`dganalysis.training.exact`); off by default (slower).

    ``uda_holdout_fraction`` and ``task``: DomainBed's ``train.py`` flags of those names. Each test domain's ``in``
    split loses ``int(len(in) * uda_holdout_fraction)`` examples to an unlabelled ``uda`` split (chosen by the
    domain's split seed, :func:`dganalysis.training.train.uda_split`), evaluated as ``env{k}_uda_acc`` (``k`` counts the
    test domains that have one, as DomainBed numbers them); with ``task="domain_adaptation"`` every step also
    draws one batch from each ``uda`` split, which an algorithm whose ``update`` takes ``unlabeled`` receives
    (DomainBed's own algorithms all ignore it). Both left out of the spec at their defaults (DG, 0), and out of
    the torch seed always (:data:`SEED_FREE_FIELDS`).

    ``evaluate_at``: which steps write a checkpoint record (:meth:`records_at`). ``"checkpoints"`` (the default) is
    DomainBed's cadence: every ``checkpoint_freq``-th step and the last. ``"last"`` evaluates and records the last
    step only, for a study that reads nothing else: the oracle selections of Yu et al. (2024, Table 4) and DomainBed's
    ``OracleSelectionMethod`` take the last checkpoint, so the other evaluations cost time and decide nothing. The
    field is a departure from DomainBed (``train.py`` always records at its cadence), so it has its own name and is
    refused in ``domainbed_exact`` mode. It is part of the id (the records differ) but not of the torch seed: the job
    draws and trains what its ``"checkpoints"`` twin does, and its one record holds the accuracies of its twin's last
    record (an algorithm whose ``predict`` changes its state or draws random numbers aside); the losses in it are
    averaged over every step instead of those since the previous checkpoint. ``checkpoint_freq`` still enters the
    id and the seed, so a study that turns this on keeps the random numbers of its runs at DomainBed's cadence.

    ``evaluate_splits``: which splits a checkpoint record holds accuracies of. ``"all"`` (the default) is DomainBed's:
    the ``in`` and ``out`` split of every domain. ``"held_out"`` leaves out the training domains' ``in`` splits, the
    data the job trains on, whose accuracy (the training accuracy) no model selection reads: training-domain
    validation reads the training domains' ``out`` splits, the oracle the test domains' ``out`` splits, and the
    reported accuracy is a test domain's ``in`` split (Gulrajani & Lopez-Paz, 2021, Sec. 3; :mod:`dganalysis.records.selection`).
    Those splits are most of the data of a job with several training domains, so a study that reads only held-out
    accuracies evaluates about half as much (:meth:`unevaluated_in_splits`). A departure from DomainBed, with its own
    name, refused in ``domainbed_exact`` mode; part of the id (the records hold fewer keys), not of the torch seed:
    the job trains what its ``"all"`` twin trains and its records hold the same accuracies on the splits they keep.
    """

    dataset: str
    algorithm: str
    train_domains: tuple[str, ...]
    test_domains: tuple[str, ...]
    val_domains: tuple[str, ...] = ()
    hparams_seed: int = 0
    trial_seed: int = 0
    steps: int = 5000
    checkpoint_freq: int = 500
    holdout_fraction: float = 0.2
    dataset_kwargs: Mapping[str, Any] = field(default_factory=dict)
    hparams_overrides: Mapping[str, Any] = field(default_factory=dict)
    search_overrides: Mapping[str, Any] = field(default_factory=dict)
    save_model: bool = False
    seed: int | None = None
    domainbed_exact: bool = False
    task: str = "domain_generalization"
    uda_holdout_fraction: float = 0.0
    evaluate_at: str = "checkpoints"
    evaluate_splits: str = "all"

    def __post_init__(self) -> None:
        for name in ("train_domains", "test_domains", "val_domains"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise TypeError(f"Job.{name}: expected a list of domain names, got the string {value!r}")
            object.__setattr__(self, name, tuple(str(v) for v in value))
        for name in ("dataset_kwargs", "hparams_overrides", "search_overrides"):
            object.__setattr__(self, name, _canonical(dict(getattr(self, name) or {})))
        if "data_dir" in self.dataset_kwargs:
            raise ConfigError("Job.dataset_kwargs: 'data_dir' is not part of a job; pass data_dir to run_sweep/run_job")
        if not self.train_domains:
            raise ConfigError("Job.train_domains: at least one training domain is needed")
        roles = [*self.train_domains, *self.test_domains, *self.val_domains]
        if len(set(roles)) != len(roles):
            raise ConfigError(
                f"Job: a domain has two roles (train={list(self.train_domains)}, test={list(self.test_domains)}, "
                f"val={list(self.val_domains)})"
            )
        from dganalysis.validation import Check

        for name in ("dataset", "algorithm"):
            Check("str")(getattr(self, name), f"Job.{name}")
        for name, check in (
            ("hparams_seed", Check("int", low=0)),
            ("trial_seed", Check("int", low=0)),
            ("steps", Check("int", low=1)),
            ("checkpoint_freq", Check("int", low=1)),
            ("holdout_fraction", Check("float", low=0.0, high=1.0, high_open=True)),
            ("save_model", Check("bool")),
            ("domainbed_exact", Check("bool")),
            ("task", Check(choices=TASKS)),
            ("uda_holdout_fraction", Check("float", low=0.0, high=1.0, high_open=True)),
            ("evaluate_at", Check(choices=EVALUATE_AT)),
            ("evaluate_splits", Check(choices=EVALUATE_SPLITS)),
        ):
            check(getattr(self, name), f"Job.{name}")
        for name in ("hparams_seed", "trial_seed", "steps", "checkpoint_freq"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "holdout_fraction", float(self.holdout_fraction))
        object.__setattr__(self, "uda_holdout_fraction", float(self.uda_holdout_fraction))
        if self.seed is not None:
            Check("int", low=0)(self.seed, "Job.seed")
            object.__setattr__(self, "seed", int(self.seed))
        if self.domainbed_exact and self.evaluate_at != "checkpoints":
            raise ConfigError(f"Job.evaluate_at: {self.evaluate_at!r} with domainbed_exact; DomainBed's train.py records "
                              f"every checkpoint_freq-th step and the last, so exact mode takes 'checkpoints' only")
        if self.domainbed_exact and self.evaluate_splits != "all":
            raise ConfigError(f"Job.evaluate_splits: {self.evaluate_splits!r} with domainbed_exact; DomainBed's train.py "
                              f"evaluates every domain's in and out split, so exact mode takes 'all' only")

    def records_at(self, step: int) -> bool:
        """Whether the job evaluates and writes a checkpoint record after the updates of ``step`` (0-based): at the
        last step always; with ``evaluate_at="checkpoints"`` also when ``step % checkpoint_freq == 0`` (DomainBed)."""
        if step == self.steps - 1:
            return True
        return self.evaluate_at == "checkpoints" and step % self.checkpoint_freq == 0

    def unevaluated_in_splits(self, train_idx: Sequence[int]) -> tuple[int, ...]:
        """The domains (indices into the dataset's domains) whose ``in`` split the records leave out: the training
        domains ``train_idx`` with ``evaluate_splits="held_out"``, none with ``"all"``."""
        return tuple(train_idx) if self.evaluate_splits == "held_out" else ()

    # ------------------------------------------------------------------ identity
    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON types (:data:`OPTIONAL_FIELDS` only when not at their default)."""
        # _canonical copies every container (the fields' values are plain JSON types after __post_init__), so
        # dataclasses.asdict's deep copy before it would only copy twice
        d = _canonical({f.name: getattr(self, f.name) for f in fields(self)})
        for k, default in OPTIONAL_FIELDS.items():
            if d.get(k) == default and type(d.get(k)) is type(default):
                d.pop(k)
        return d

    def domainbed_seed(self, domain_names: list[str] | tuple[str, ...]) -> int:
        """DomainBed's ``--seed`` for this run: :attr:`seed` when set, else what DomainBed's sweep passes
        (``scripts/sweep.py``: ``seed_hash(dataset, algorithm, test_envs, hparams_seed, trial_seed)``, ``test_envs``
        the list of test-environment indices in the order given; ``domain_names`` is the dataset's domain order)."""
        from dganalysis.training.hparams import seed_hash

        if self.seed is not None:
            return self.seed
        test_envs = [list(domain_names).index(d) for d in self.test_domains]
        return seed_hash(self.dataset, self.algorithm, test_envs, self.hparams_seed, self.trial_seed)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Job:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them (``job_id`` and ``provenance``, which
        ``spec.json`` adds, are ignored)."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known - {"job_id", "provenance"}
        if unknown:
            raise UnknownKeyError(f"Job spec: unknown keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**{k: v for k, v in d.items() if k in known})

    @property
    def job_id(self) -> str:
        """Short hash (16 hex digits of SHA-256) of the canonical, location-free spec (:func:`identity_spec`), minus
        :data:`UNHASHED_FIELDS`, plus ``draw_version`` when :data:`dganalysis.training.hparams.DRAW_VERSION` is above 1
        (version 1 keeps existing ids)."""
        from dganalysis.training.hparams import DRAW_VERSION

        return self._spec_hash(DRAW_VERSION)

    @property
    def seed_key(self) -> str:
        """The spec's hash without the draw version (what :attr:`job_id` is under version 1, for a job whose dataset
        names no location): the job's torch seed
        comes from it (:func:`dganalysis.training.train.job_seed`), so a new hyperparameter-drawing rule gives a job a new
        folder but not new random numbers — a job whose drawn values did not change trains to the same numbers. Dataset
        locations are left out (:func:`identity_spec`): where the data lies never changes the random numbers."""
        return self._spec_hash(1, for_seed=True)

    def _spec_hash(self, draw_version: int, *, for_seed: bool = False) -> str:
        # a Job is frozen: its hashes are computed once per (draw version, purpose) and kept on the instance (a plan
        # or a sweep asks for a job's id many times; a test may change DRAW_VERSION, hence the key)
        cache = self.__dict__.setdefault("_hashes", {})
        key = (draw_version, for_seed)
        if key not in cache:
            cache[key] = self._compute_spec_hash(draw_version, for_seed=for_seed)
        return cache[key]

    def _compute_spec_hash(self, draw_version: int, *, for_seed: bool = False) -> str:
        spec = {k: v for k, v in identity_spec(self.to_dict(), for_seed=for_seed).items() if k not in UNHASHED_FIELDS}
        if self.dataset in PER_RUN_PARTITION_DATASETS:
            spec["partition"] = "domainbed_run_seed"
        if draw_version != 1:
            spec["draw_version"] = draw_version
        text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def __hash__(self) -> int:
        return hash(self.job_id)

    def describe(self) -> str:
        """A one-line human-readable summary."""
        val = f" val={','.join(self.val_domains)}" if self.val_domains else ""
        return (
            f"{self.job_id} {self.dataset} {self.algorithm} train={','.join(self.train_domains)} "
            f"test={','.join(self.test_domains)}{val} hp={self.hparams_seed} trial={self.trial_seed} steps={self.steps}"
        )
