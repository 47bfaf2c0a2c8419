"""The shape of one sweep as one frozen, checked object: :class:`Sweep`.

DomainBed's random search (Gulrajani & Lopez-Paz 2021, Sec. 4): ``n_hparams`` hyperparameter draws of each of
``algorithms``, repeated over ``n_trials`` trials, each job trained ``steps`` steps and evaluated every
``checkpoint_freq`` steps, on ``dataset`` (built with ``dataset_kwargs``) over ``splits`` — or on each of
``datasets``, a list of ``{name, kwargs, hparams, steps, train, test}`` entries (only ``name`` required): an entry's
``kwargs`` build it, its ``hparams`` go on top of ``hparams_overrides``, its ``steps`` replace ``steps``, and its one
split ``train`` → ``test`` replaces ``splits`` (an entry without one takes ``splits``, e.g. leave-one-out on each
dataset's domains). ``hparams_overrides`` fix hyperparameters of every job; ``search_overrides`` change the search space (YAML distribution specs,
:func:`dganalysis.training.hparams.parse_distribution`; ``None``: DomainBed's). ``save_model``, ``holdout_fraction`` and
``domainbed_exact`` are the fields every job of the sweep shares.

The same object is read from a sweep YAML file or the flags of ``dganalysis sweep``, from a notebook's nested
``sweep`` parameter (and its profiles' YAML) and from a leaderboard's board; :func:`dganalysis.sweep.grid.make_jobs`
takes it whole. Each value is checked once, when the object is built; the checks that need the dataset's domain
names (a split's domains) or the algorithms' declarations (the hyperparameters) run when the jobs are made.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from dganalysis.validation import Check, ConfigError, like

_NOT_A_KEY = {"key": False}


@dataclass(frozen=True)
class Sweep:
    """The shape of one sweep (see the module doc). Build it with :meth:`from_mapping` from a file's or a notebook's
    mapping, or directly; each value is checked here, a bad one raises :class:`ConfigError` naming the key.

    A notebook's nested sweep parameter takes only the keys its parameters cell names (``keys``; a YAML naming
    another fails); the others keep the defaults here, or the values its plan gives them (:meth:`replace`). The
    lists and mappings held are the values given, not copies."""

    dataset: str | None = None
    dataset_kwargs: dict = field(default_factory=dict)
    splits: Any = "leave_one_out"
    datasets: list = field(default_factory=list)
    algorithms: list = field(default_factory=list)
    n_hparams: int = 1
    n_trials: int = 1
    steps: int = 1
    checkpoint_freq: int | None = None
    hparams_overrides: dict = field(default_factory=dict)
    search_overrides: dict | None = None
    save_model: bool = False
    holdout_fraction: float = 0.2
    domainbed_exact: bool = False
    #: the notebook parameter holding this sweep (``oracle``), for the errors; empty: a sweep file or the flags
    name: str = field(default="", compare=False, repr=False, metadata=_NOT_A_KEY)
    #: the keys this sweep takes (a notebook's parameters cell's), in order; empty: every key of :data:`KEYS`
    keys: tuple[str, ...] = field(default=(), compare=False, repr=False, metadata=_NOT_A_KEY)

    def __post_init__(self) -> None:
        if isinstance(self.algorithms, str):
            object.__setattr__(self, "algorithms", [self.algorithms])
        if self.hparams_overrides is None:
            object.__setattr__(self, "hparams_overrides", {})
        for key in self.keys or KEYS:
            value = getattr(self, key)
            if value is not None or key not in _NULLABLE:
                _RULES[key](value, self.label(key))

    def label(self, key: str) -> str:
        """How an error names ``key``: ``parameter 'oracle.steps'`` in a notebook's sweep, ``steps`` in a file's."""
        return f"parameter '{self.name}.{key}'" if self.name else key

    @classmethod
    def from_mapping(cls, value: Any, where: str, defaults: Mapping[str, Any] | None = None,
                     required: Sequence[str] = ()) -> Sweep:
        """The sweep from ``value`` (key -> value).

        With ``defaults`` (a notebook's parameters cell's mapping), ``where`` is the notebook parameter holding the
        sweep: ``defaults`` names the keys it takes and fills those ``value`` leaves out, each value must be of the
        kind of its default (``search_overrides`` may also be ``None``), and errors read ``parameter 'oracle.steps'
        ...``. Without, ``where`` is the file (or the flags) the mapping came from, every key of :data:`KEYS` may be
        given, ``required`` ones must be, and errors start with ``where``. An unknown key fails with "did you
        mean"."""
        if defaults is None:
            return cls._from_file(value, where, required)
        if not isinstance(value, Mapping):
            raise ConfigError(f"parameter {where!r}: expected a mapping of sweep settings (keys {list(defaults)}), "
                              f"got {value!r}")
        for key in value:
            if key not in defaults:
                raise ConfigError(f"parameter {where!r}: unknown key {key!r}{_hint(key, defaults)} (the keys of "
                                  f"{where!r} are {list(defaults)})")
        merged = {**defaults, **value}
        for key, v in merged.items():
            if v is None and (key == "search_overrides" or defaults[key] is None):
                continue
            like(defaults[key])(v, f"parameter '{where}.{key}' (the notebook's default is {defaults[key]!r})")
        return cls(**merged, name=where, keys=tuple(defaults))

    @classmethod
    def _from_file(cls, value: Any, where: str, required: Sequence[str]) -> Sweep:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping of sweep settings, got {value!r}")
        unknown = [k for k in value if k not in KEYS]
        if unknown:
            hint = _hint(unknown[0], KEYS)
            raise ConfigError(f"{where}: unknown key(s) {unknown}{hint}; allowed: {list(KEYS)}")
        for key in required:
            if key not in value:
                raise ConfigError(f"{where}: missing required key {key!r}")
        try:
            return cls(**value)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None

    def replace(self, **changes: Any) -> Sweep:
        """This sweep with ``changes`` (keys of :data:`KEYS`); only the changed values are checked (the others were
        when this sweep was built). A notebook's sweep keeps its name for the errors and takes the changed keys
        besides its own."""
        unknown = sorted(set(changes) - set(KEYS))
        if unknown:
            raise ConfigError(f"{self.label(unknown[0])}: not a key of a sweep{_hint(unknown[0], KEYS)}")
        if not changes:
            return self
        new = dataclasses.replace(self, keys=tuple(changes), **changes)
        object.__setattr__(new, "keys", tuple(dict.fromkeys([*self.keys, *changes])) if self.keys else ())
        return new

    def per_dataset(self) -> list[Sweep]:
        """One single-dataset sweep per entry of ``datasets`` (its ``kwargs``, its ``hparams`` on top of
        ``hparams_overrides``, its ``steps`` if it has them, its split if it has one, else ``splits``), or ``[self]``
        when the sweep has one ``dataset``."""
        if not self.datasets:
            return [self]
        out = []
        for e in self.datasets:
            own = {"splits": [{"train": e["train"], "test": e["test"]}]} if "train" in e else {}
            out.append(self.replace(dataset=e["name"], dataset_kwargs=e.get("kwargs", {}), datasets=[],
                                    hparams_overrides={**self.hparams_overrides, **e.get("hparams", {})},
                                    **({"steps": e["steps"]} if "steps" in e else {}), **own))
        return out

    def as_dict(self) -> dict[str, Any]:
        """Key -> value of the keys this sweep takes (the values themselves, not copies)."""
        return {k: getattr(self, k) for k in self.keys or KEYS}

    def shrunk(self, steps: int, at_least: Mapping[str, int] | None = None, keep: Sequence[str] = (),
               batch_size: int | None = None,
               one_per_kind: Callable[[list], list] | None = None) -> Sweep:
        """The sweep made minimal (the smoke run): ``steps`` and ``checkpoint_freq`` at most ``steps``, one draw and
        one trial (``at_least``: key -> the least the notebook's cells need), the first two algorithms plus those in
        ``keep``, the first split of a list, ``batch_size`` in ``hparams_overrides``, and ``datasets`` through
        ``one_per_kind``, each entry's own ``steps`` at most ``steps``. Only the keys this sweep takes change."""
        at_least = at_least or {}
        taken = set(self.keys or KEYS)
        out: dict[str, Any] = {}
        for k in ("steps", "checkpoint_freq"):
            if isinstance(getattr(self, k), int):
                out[k] = min(getattr(self, k), steps)
        for k in ("n_hparams", "n_trials"):
            out[k] = at_least.get(k, 1)
        out["algorithms"] = list(dict.fromkeys(self.algorithms[:2] + [a for a in self.algorithms if a in keep]))
        if self.datasets:
            kept = one_per_kind(self.datasets) if one_per_kind is not None else self.datasets
            out["datasets"] = [{**e, "steps": min(e["steps"], steps)} if "steps" in e else e for e in kept]
        if isinstance(self.splits, list):
            out["splits"] = self.splits[:1]
        if batch_size is not None:
            out["hparams_overrides"] = {**self.hparams_overrides, "batch_size": batch_size}
        return self.replace(**{k: v for k, v in out.items() if k in taken})


#: the keys of a sweep, in order: what a sweep file, a notebook's sweep mapping and the flags may set
KEYS: tuple[str, ...] = tuple(f.name for f in fields(Sweep) if f.metadata.get("key", True))
#: keys whose value may be ``None`` (not checked then): one dataset or ``datasets``; ``checkpoint_freq`` when the
#: planner derives it; DomainBed's search space
_NULLABLE = {"dataset", "checkpoint_freq", "search_overrides"}


def sweep_field(value: Mapping[str, Any]) -> Any:
    """A notebook parameter holding a nested :class:`Sweep` whose keys and defaults are ``value``'s (a mapping as
    the parameters cell writes it; the parameter class turns it into a :class:`Sweep`)."""
    return field(default_factory=lambda: copy.deepcopy(dict(value)), metadata={"sweep": True})


# --------------------------------------------------------------------------- the checks, one per key
def _hint(key: Any, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _fail(label: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{label}: expected {expected}, got {value!r}")


def _domains(label: str, value: Any, what: str) -> list:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, Sequence) or not value:
        raise _fail(label, f"a non-empty list of {what}", value)
    return list(value)


def _split(label: str, spec: Any, keys: set[str]) -> None:
    """``{"train": [...], "test": [...]}`` (``val`` too where ``keys`` has it) with non-empty training and test
    domains, no domain in two roles."""
    if not isinstance(spec, Mapping) or not {"train", "test"} <= set(spec) or not set(spec) <= keys:
        raise _fail(label, f"a mapping with keys train, test{' (and optional val)' if 'val' in keys else ''}", spec)
    train = _domains(f"{label}.train", spec["train"], "training domains")
    test = _domains(f"{label}.test", spec["test"], "test domains")
    both = sorted(set(map(str, train)) & set(map(str, test)))
    if both:
        raise ConfigError(f"{label}: domains {both} in two roles (training and test)")


def _splits(value: Any, label: str) -> None:
    if isinstance(value, str):
        if value != "leave_one_out":
            raise ConfigError(f"{label}: unknown protocol {value!r}; expected 'leave_one_out', "
                              "{'leave_one_group_out': k} or a list of {train, test, val} dicts")
    elif isinstance(value, Mapping):
        if set(value) == {"leave_one_group_out"}:
            Check("int", low=1)(value["leave_one_group_out"], f"{label}.leave_one_group_out")
        elif set(value) != {"leave_one_out"}:
            raise _fail(label, "{'leave_one_group_out': k}", dict(value))
    else:
        for i, s in enumerate(_domains(label, value, "splits")):
            _split(f"{label}[{i}]", s, {"train", "test", "val"})


_ENTRY_KEYS = ("name", "kwargs", "hparams", "steps", "train", "test")


def _datasets(value: Any, label: str) -> None:
    """``[]`` (one ``dataset``) or a list of ``{name}`` entries, each with optional ``kwargs``, ``hparams`` (on top
    of the sweep's ``hparams_overrides`` for that dataset), ``steps`` and one split ``train`` → ``test`` (both or
    neither)."""
    if isinstance(value, list) and not value:
        return
    for i, spec in enumerate(_domains(label, value, "datasets")):
        if (not isinstance(spec, Mapping) or "name" not in spec or not set(spec) <= set(_ENTRY_KEYS)
                or ("train" in spec) != ("test" in spec)):
            raise _fail(f"{label}[{i}]", f"a mapping with keys {list(_ENTRY_KEYS)} (only 'name' required; 'train' "
                        "and 'test' together)", spec)
        _dataset(spec["name"], f"{label}[{i}].name")
        if "train" in spec:
            _split(f"{label}[{i}]", {"train": spec["train"], "test": spec["test"]}, {"train", "test"})
        for key in ("kwargs", "hparams"):
            if not isinstance(spec.get(key, {}), Mapping):
                raise _fail(f"{label}[{i}].{key}", "a mapping", spec[key])
        if "steps" in spec:
            Check("int", low=1)(spec["steps"], f"{label}[{i}].steps")


def _algorithms(value: Any, label: str) -> None:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise _fail(label, "a non-empty list of algorithm names", value)
    from dganalysis.algorithms import get_algorithm

    for a in value:
        try:
            get_algorithm(a)
        except KeyError as e:
            raise ConfigError(f"{label}: {e.args[0]}") from None


def _dataset(value: Any, label: str) -> None:
    if not isinstance(value, str) or not value:
        raise _fail(label, "a dataset name", value)


def _mapping(value: Any, label: str) -> None:
    if not isinstance(value, Mapping):
        raise _fail(label, "a mapping", value)


def _check(check: Check) -> Callable[[Any, str], None]:
    return lambda value, label: check(value, label)


_RULES: dict[str, Callable[[Any, str], None]] = {
    "dataset": _dataset,
    "dataset_kwargs": _mapping,
    "splits": _splits,
    "datasets": _datasets,
    "algorithms": _algorithms,
    "n_hparams": _check(Check("int", low=1)),
    "n_trials": _check(Check("int", low=1)),
    "steps": _check(Check("int", low=1)),
    "checkpoint_freq": _check(Check("int", low=1)),
    "hparams_overrides": _mapping,
    "search_overrides": _mapping,
    "save_model": _check(Check("bool")),
    "holdout_fraction": _check(Check("float", low=0.0, high=1.0, high_open=True)),
    "domainbed_exact": _check(Check("bool")),
}
