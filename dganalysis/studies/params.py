"""Each study notebook's parameters as one frozen, validated object.

A study notebook keeps a papermill ``parameters`` cell (papermill injects values after it); right after it the
notebook builds its parameter object once (``P = WorstCaseParams.from_namespace(globals())``) and passes it whole to
its planner (:mod:`dganalysis.studies.plans`) and helpers. ``dganalysis run``, its dry run and its smoke run build the same
object from a profile's YAML (:func:`dganalysis.studies.study.build_params`), so a parameter of the wrong kind, or two parameters that
disagree (``rho_small`` not among ``rhos``), fail with a :class:`~dganalysis.validation.ConfigError` naming the
parameter before anything runs.

Each class's fields are its notebook's parameter names, with the parameters cell's defaults (a test compares them
with what papermill's ``inspect_notebook`` reads from the cell). Every value must be of the kind of its default
(:func:`dganalysis.validation.like`: an integer stays an integer, a boolean a boolean; a ``None`` default takes
anything), as the runner has always checked; the class's ``check`` adds the consistency checks of its study.

A notebook that runs a sweep takes its shape as one nested mapping parameter, ``sweep`` (and a second sweep as another:
the leakage study's ``oracle``, the shift study's ``ranking``): ``sweep = {"dataset": ..., "n_hparams": 2, "steps":
10, ...}``. The class turns it into a :class:`dganalysis.sweep.Sweep` (keys the mapping leaves out take the parameters
cell's values; an unknown key fails with "did you mean"), which checks each of its values once, as it does for a
sweep file.

The objects are frozen (no attribute can be reassigned); the lists and mappings they hold are the values given, not
copies, so the jobs planned from an object are the jobs planned from the same values passed one by one.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from dganalysis.sweep.spec import Sweep, sweep_field
from dganalysis.validation import Check, ConfigError, like

P = TypeVar("P", bound="NotebookParams")

def _default(value: Any, nullable: bool = False) -> Any:
    """A dataclass field whose default is ``value`` (a fresh copy per object when it is a list or a mapping); with
    ``nullable`` it also takes ``None``."""
    meta = {"nullable": True} if nullable else {}
    if isinstance(value, (list, dict)):
        return field(default_factory=lambda: copy.deepcopy(value), metadata=meta)
    return field(default=value, metadata=meta)


def _nullable(value: Any) -> Any:
    """A field with default ``value`` that also takes ``None``."""
    return field(default=value, metadata={"nullable": True})


def _own_check(value: Any) -> Any:
    """A field with default ``value`` whose value (``None`` included) the class's ``check`` checks in full."""
    return field(default_factory=lambda: copy.deepcopy(value), metadata={"nullable": True, "own_check": True})


@dataclass(frozen=True)
class NotebookParams:
    """What every study notebook has: the folders ``dganalysis run`` injects per profile."""

    notebook: ClassVar[str] = ""

    output_dir: str = "../outputs/default"
    store_dir: str = "../outputs/default/store"
    data_dir: str = "../outputs/data"

    def __post_init__(self) -> None:
        for f in fields(self):
            default = f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]
            value = getattr(self, f.name)
            if f.metadata.get("sweep"):
                if not isinstance(value, Sweep):
                    object.__setattr__(self, f.name, Sweep.from_mapping(value, f.name, default))
                continue
            if (value is None and f.metadata.get("nullable")) or f.metadata.get("own_check"):
                continue
            like(default)(value, f"parameter {f.name!r} (the notebook's default is {default!r})")
            rule = SHARED_RULES.get(f.name)
            if rule is not None and value is not None:
                rule(self, f.name)
        self.check()

    def check(self) -> None:
        """The study's own checks (none here): its parameters that no other notebook has, and rules across
        parameters; raise :class:`ConfigError`. A parameter name several notebooks share is checked by its one
        rule in :data:`SHARED_RULES` before this runs."""

    @classmethod
    def names(cls) -> list[str]:
        """The parameter names, in the order of the notebook's parameters cell."""
        return [f.name for f in fields(cls)]

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Parameter name -> the parameters cell's default."""
        return {f.name: f.default_factory() if f.default is MISSING else f.default  # type: ignore[misc]
                for f in fields(cls)}

    @classmethod
    def from_mapping(cls: type[P], params: Mapping[str, Any], where: str = "parameters") -> P:
        """The object from ``params`` (name -> value; missing names take their defaults). An unknown name or a bad
        value raises :class:`ConfigError` starting with ``where`` (e.g. the YAML file)."""
        if not isinstance(params, Mapping):
            raise ConfigError(f"{where}: expected a mapping of parameter names to values, got {params!r}")
        unknown = sorted(str(k) for k in set(params) - set(cls.names()))
        if unknown:
            raise ConfigError(f"{where}: unknown parameter(s) {unknown}; {cls.notebook or cls.__name__} has "
                              f"{cls.names()}{cls.sweep_hint(unknown)}")
        try:
            return cls(**params)
        except ConfigError as e:
            raise ConfigError(f"{where}: {e}") from None

    @classmethod
    def from_namespace(cls: type[P], namespace: Mapping[str, Any]) -> P:
        """The object from a notebook's ``globals()`` after its parameters cell (and papermill's injected one)."""
        return cls.from_mapping({n: namespace[n] for n in cls.names() if n in namespace},
                                f"notebook {cls.notebook}")

    @classmethod
    def sweep_names(cls) -> list[str]:
        """The parameters that are nested sweeps (:class:`dganalysis.sweep.Sweep`; a variant merges into them key by
        key, :func:`merge_overrides`)."""
        return [f.name for f in fields(cls) if f.metadata.get("sweep")]

    @classmethod
    def sweep_hint(cls, unknown: Sequence[str]) -> str:
        """Where unknown parameter names that are keys of a sweep belong (``"; ['steps'] are sweep settings: give
        them in the nested mapping 'sweep' (sweep: {steps: ...})"``); "" when none is, or the notebook runs no
        sweep."""
        from dganalysis.sweep.spec import KEYS

        keys, nested = [k for k in unknown if k in KEYS], cls.sweep_names()
        if not keys or not nested:
            return ""
        return (f"; {keys} are sweep settings: give them in the nested mapping {nested[0]!r} "
                f"({nested[0]}: {{{keys[0]}: ...}})")

    def as_dict(self) -> dict[str, Any]:
        """Parameter name -> value (the values themselves, not copies; a nested sweep as its mapping)."""
        return {n: v.as_dict() if isinstance(v := getattr(self, n), Sweep) else v for n in self.names()}


# --------------------------------------------------------------------------- helpers for the checks
def _fail(name: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"parameter {name!r}: expected {expected}, got {value!r}")


def _at_least(obj: NotebookParams, low: int, *names: str) -> None:
    for n in names:
        Check("int", low=low)(getattr(obj, n), f"parameter {n!r}")


def _unit(obj: NotebookParams, *names: str) -> None:
    """Each of ``names`` in the open interval (0, 1) (a significance level)."""
    for n in names:
        Check("float", low=0.0, high=1.0, low_open=True, high_open=True)(getattr(obj, n), f"parameter {n!r}")


def _names(name: str, value: Any, what: str = "a non-empty list of names") -> list[str]:
    if isinstance(value, str) or not isinstance(value, Sequence) or not value:
        raise _fail(name, what, value)
    return list(value)


def _split(name: str, spec: Any) -> None:
    """A split ``{"train": [...], "test": [...]}`` with disjoint, non-empty domain lists."""
    if not isinstance(spec, Mapping) or set(spec) != {"train", "test"}:
        raise _fail(name, '{"train": [domains], "test": [domains]}', spec)
    train, test = _names(f"{name}.train", spec["train"]), _names(f"{name}.test", spec["test"])
    both = sorted(set(map(str, train)) & set(map(str, test)))
    if both:
        raise _fail(name, "training and test domains that do not overlap", f"{both} in both")


def _selection(obj: NotebookParams, name: str = "selection_method") -> None:
    from dganalysis.records.selection_methods import METHODS

    Check(choices=tuple(METHODS))(getattr(obj, name), f"parameter {name!r}")


def _subset(name: str, values: Sequence[Any], of_name: str, of: Sequence[Any]) -> None:
    stray = [v for v in values if v not in of]
    if stray:
        raise ConfigError(f"parameter {name!r}: {stray} are not in {of_name} {list(of)}")


def _positive(obj: NotebookParams, name: str) -> None:
    Check("float", low=0.0, low_open=True)(getattr(obj, name), f"parameter {name!r}")


def _count_rule(low: int) -> Callable[[Any, str], None]:
    return lambda value, name: Check("int", low=low)(value, f"parameter {name!r}")


def _shared(rule: Callable[[Any, str], None]) -> Callable[[NotebookParams, str], None]:
    return lambda obj, name: rule(getattr(obj, name), name)


#: One rule per parameter name that several notebooks share (applied to every class that has the field, after its
#: kind is checked, before the class's own :meth:`NotebookParams.check`): "alpha" means the same in every notebook.
#: The sweep's keys are checked by :class:`dganalysis.sweep.Sweep`. The other shared names are checked by kind alone
#: (``featurizer``, …) or by a rule across parameters in the class's check.
SHARED_RULES: dict[str, Any] = {
    **dict.fromkeys(("n_workers", "batch_size", "image_size"), _shared(_count_rule(1))),
    "seed": _shared(_count_rule(0)),
    "lr": _positive,
    "alpha": lambda obj, name: _unit(obj, name),
    "selection_method": lambda obj, name: _selection(obj, name),
}


# --------------------------------------------------------------------------- one class per notebook
@dataclass(frozen=True)
class QuickstartParams(NotebookParams):
    """DomainBed's protocol on rotated digits or on ``datasets`` (Gulrajani & Lopez-Paz 2021)."""

    notebook: ClassVar[str] = "00_quickstart"

    #: the sweep on each of its ``datasets`` (leave-one-out and two held-out domains on each; an entry's ``hparams``
    #: go on top of ``hparams_overrides`` for that dataset)
    sweep: Sweep = sweep_field({
        "datasets": [{"name": "RotatedDigits", "kwargs": {"image_size": 16, "angles": [0, 45, 75]}}],
        "algorithms": ["ERM"], "n_hparams": 2, "n_trials": 2, "steps": 40, "checkpoint_freq": 20,
        "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}})
    n_workers: int = 2

    def check(self) -> None:
        if not self.sweep.datasets:
            raise _fail("sweep.datasets", "a non-empty list of datasets", self.sweep.datasets)
        for i, entry in enumerate(self.sweep.datasets):
            angles = entry.get("kwargs", {}).get("angles")
            if "train" in entry or (angles is not None and len(angles) < 3):
                raise _fail(f"sweep.datasets[{i}]", "a dataset with at least 3 domains and no split of its own "
                            "(leave-one-out with two held-out domains needs 3)", entry)


@dataclass(frozen=True)
class DatasetConstructionParams(NotebookParams):
    """The PaHCC build (Zhang, Zhang & Liu, Sec. 3)."""

    notebook: ClassVar[str] = "01_dataset_construction"

    n_classes: int = 8
    image_size: int = 32
    writers: int = 6
    seed: int = 0

    def check(self) -> None:
        _at_least(self, 1, "n_classes", "writers")


@dataclass(frozen=True)
class BinarizationParams(NotebookParams):
    """Gray vs binary PaHCC, Tables 7-8 and Fig. 8 of Zhang, Zhang & Liu (Sec. 4.1)."""

    notebook: ClassVar[str] = "02_binarization_study"

    #: the sweep of each arm (its splits are ``train_sets``', its dataset_kwargs gray or binarized)
    sweep: Sweep = sweep_field({
        "dataset": "PaHCC", "dataset_kwargs": {"size": 10, "image_size": 32, "writers": 4}, "algorithms": ["ERM"],
        "n_hparams": 1, "n_trials": 1, "steps": 20, "checkpoint_freq": 10,
        "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}})
    full_dataset_kwargs: dict = _default({})
    train_sets: list = _default([["d0", "d1"], ["d0", "d2"], ["d1", "d2"], ["d0", "d1", "d2"]])
    table7_tasks: list = _default([[["d0", "d1"], "d2"], [["d0", "d2"], "d1"], [["d1", "d2"], "d0"],
                                   [["d0", "d1", "d2"], "hw"]])
    extra_bars_csv: str = ""
    extra_bars_label: str = "DomainNet"
    selection_method: str = "training_domain"
    n_workers: int = 2

    def check(self) -> None:
        sets = [tuple(_names(f"train_sets[{i}]", t)) for i, t in enumerate(_names("train_sets", self.train_sets,
                                                                                  "a non-empty list of domain lists"))]
        for i, task in enumerate(_names("table7_tasks", self.table7_tasks, "a non-empty list of [train, test]")):
            if not isinstance(task, Sequence) or isinstance(task, str) or len(task) != 2:
                raise _fail(f"table7_tasks[{i}]", "[[training domains], test domain]", task)
            train, test = task
            if tuple(_names(f"table7_tasks[{i}][0]", train)) not in sets:
                raise ConfigError(f"parameter 'table7_tasks[{i}]': training set {list(train)} is not among "
                                  f"train_sets {self.train_sets}")
            if test in train:
                raise _fail(f"table7_tasks[{i}]", "a test domain outside its training set", task)


@dataclass(frozen=True)
class DynamicDGParams(NotebookParams):
    """The swap test and the Domain+ chains of Zhang, Zhang & Liu (Sec. 4.2-4.3)."""

    notebook: ClassVar[str] = "03_dynamic_dg"

    #: the sweep (its splits are the training sets of the swap test and the Domain+ chains)
    sweep: Sweep = sweep_field({
        "dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16}, "algorithms": ["ERM", "CORAL"],
        "n_hparams": 1, "n_trials": 2, "steps": 20, "checkpoint_freq": 10,
        "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}})
    test_domain: str = "75"
    swap_choices: list = _default([["0", "15"], ["0", "30"]])
    domain_plus_chains: list = _default([[["0", "15"], ["0", "15", "30"]]])
    evaluate_on: str = "rest"
    selection_method: str = "training_domain"
    alpha: float = 0.05
    correction: str = "holm"
    n_workers: int = 2

    def check(self) -> None:
        Check(choices=("rest", "test_domain"))(self.evaluate_on, "parameter 'evaluate_on'")
        swaps = [] if isinstance(self.swap_choices, list) and not self.swap_choices else _names(
            "swap_choices", self.swap_choices, "a list of domain lists ([] = no swap test)")
        sets = [("swap_choices", i, t) for i, t in enumerate(swaps)]
        for c, chain in enumerate(self.domain_plus_chains):
            sets += [(f"domain_plus_chains[{c}]", i, t) for i, t in enumerate(_names(
                f"domain_plus_chains[{c}]", chain, "a non-empty list of domain lists"))]
        for name, i, train in sets:
            if self.test_domain in _names(f"{name}[{i}]", train):
                raise ConfigError(f"parameter '{name}[{i}]': trains on the test domain {self.test_domain!r}")


@dataclass(frozen=True)
class LeakageOracleParams(NotebookParams):
    """Test-information leakage through pretraining and oracle selection (Yu et al. 2024, Tables 1-4, Fig. 1)."""

    notebook: ClassVar[str] = "04_leakage_oracle"

    #: the LP/FT sweep (its splits, e.g. each domain held out; the first split's training domains are the own
    #: pretrainings' too; its hyperparameters ``featurizer``, ``batch_size``, ``lr`` and each pretraining's)
    sweep: Sweep = sweep_field({"dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16},
                                "splits": [{"train": ["0", "15", "30"], "test": ["45", "60", "75"]}],
                                "algorithms": ["ERM"], "steps": 10, "checkpoint_freq": 5, "n_trials": 1})
    featurizer: str = "smallcnn"
    test_like_angles: list = _default([45, 90])
    source_copies: int = 1
    pretrain_steps: int = 15
    pretrain_batch_size: int = 64
    pretrain_lr: float = 2e-3
    batch_size: int = 32
    lr: float = 3e-3
    frozen_stages: list = _default([])
    #: Table 4's oracle sweep (search_overrides None: DomainBed's search space; checkpoints every steps // 2)
    oracle: Sweep = sweep_field({
        "dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16},
        "splits": [{"train": ["0", "30", "45"], "test": ["15", "60", "75"]}], "n_hparams": 2,
        "search_overrides": {"augment": {"choice": [True, False]}}, "steps": 10, "n_trials": 2})
    inception_weights: Any = None
    published_weights: dict = _default({})
    fid_reference: Any = None
    fid_n_samples: int = 16
    n_workers: int = 1

    def check(self) -> None:
        _at_least(self, 1, "source_copies", "pretrain_batch_size")
        _at_least(self, 2, "fid_n_samples")
        _at_least(self, 0, "pretrain_steps")
        _positive(self, "pretrain_lr")
        for i, s in enumerate(self.sweep.splits):
            _split(f"sweep.splits[{i}]", s)
        if len(self.test_like_angles) != 2 or self.test_like_angles[0] > self.test_like_angles[1]:
            raise _fail("test_like_angles", "[low, high] rotation range", self.test_like_angles)
        for i, k in enumerate(self.frozen_stages):
            Check("int", low=0)(k, f"parameter 'frozen_stages[{i}]'")
        for label, spec in self.published_weights.items():
            if not isinstance(spec, Mapping) or set(spec) != {"path", "featurizer"}:
                raise _fail(f"published_weights[{label!r}]", "{path: <file>, featurizer: <arch>}", spec)
        if self.pretrain_steps == 0 and len(self.published_weights) < 2:
            raise ConfigError("parameter 'published_weights': with pretrain_steps = 0 the notebook pretrains "
                              "nothing, so it needs two published weights (a supervised and a self-supervised one) "
                              f"to compare; got {list(self.published_weights)}")

    @property
    def pretrain_domains(self) -> list:
        """The domains the own pretrainings read (the SimCLR images, the digits of the supervised source): the
        training domains of the LP/FT sweep's first split."""
        return list(self.sweep.splits[0]["train"])


@dataclass(frozen=True)
class LeaderboardsParams(NotebookParams):
    """LODO vs LOGO leaderboards, per board (Yu et al. 2024, Table 5, App. C)."""

    notebook: ClassVar[str] = "05_leaderboards"

    #: the sweep on each of its ``datasets`` and each board (an entry's ``hparams`` go on top of
    #: ``hparams_overrides``, its ``steps`` replace ``steps`` for that dataset; a board's settings go on top)
    sweep: Sweep = sweep_field({"datasets": [{"name": "RotatedDigits",
                                              "kwargs": {"image_size": 16, "angles": [0, 20, 40, 60]}}],
                                "algorithms": ["ERM", "CORAL", "Mixup"], "n_hparams": 1, "n_trials": 1, "steps": 20,
                                "checkpoint_freq": 10,
                                "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32},
                                "search_overrides": {}})
    logo_groups: dict = _default({"RotatedDigits": [["0", "20"], ["40", "60"]]})
    #: dataset -> the domains LODO holds out, one at a time (a dataset not named: every domain)
    lodo_domains: dict = _default({})
    selection_method: str = "training_domain"
    alpha: float = 0.05
    n_bootstrap: int = 2000
    n_workers: int = 2
    leaderboards: dict = _own_check({})  # checked by leaderboard_boards (None: no boards)
    #: "domainbed" (every draw in every trial) or "yu2024" (dganalysis.sweep.search_protocol)
    search_protocol: str = "domainbed"
    #: True: train nothing when the study's design (dganalysis.studies.design) computes that the claim on our runs
    #: cannot be decided (e.g. too few algorithms for a rank test)
    skip_undecidable: bool = False

    def check(self) -> None:
        from dganalysis.sweep.search_protocol import SEARCH_PROTOCOLS

        if self.search_protocol not in SEARCH_PROTOCOLS:
            raise _fail("search_protocol", f"one of {list(SEARCH_PROTOCOLS)}", self.search_protocol)
        _at_least(self, 1, "n_bootstrap")
        names = [e["name"] for e in self.sweep.datasets]
        if not names or len(set(names)) < len(names) or any("train" in e for e in self.sweep.datasets):
            raise _fail("sweep.datasets", "a non-empty list of datasets, each named once, without a split of its own "
                        "(the splits are LODO's and LOGO's)", self.sweep.datasets)
        for name, groups in self.logo_groups.items():  # entries for datasets not run are ignored
            for i, g in enumerate(_names(f"logo_groups[{name!r}]", groups, "a list of domain groups")):
                _names(f"logo_groups[{name!r}][{i}]", g, "a non-empty list of domains")
        for name, held in self.lodo_domains.items():
            _names(f"lodo_domains[{name!r}]", held, "a non-empty list of domains")
        try:
            self.boards()
        except ValueError as e:
            raise ConfigError(f"parameter 'leaderboards': {e}") from None

    def boards(self) -> dict[str, dict[str, Any]]:
        """Each board with its settings in full (:func:`dganalysis.protocols.leaderboard.leaderboard_boards`)."""
        from dganalysis.protocols.leaderboard import leaderboard_boards

        return leaderboard_boards(self.leaderboards, sweep=self.sweep)


_MAP_KEYS = {"label", "name", "kwargs", "train", "test"}


@dataclass(frozen=True)
class ShiftEstimationParams(NotebookParams):
    """Diversity and correlation shift (Ye et al. 2022, OoD-Bench: Figs. 3-4, Tables 1-3)."""

    notebook: ClassVar[str] = "06_shift_estimation"

    seed: int = 0
    env_steps: int = _nullable(60)
    z_dim: int = 2
    n_samples: int = 2000
    bandwidth: str = "scott"
    calibrate: bool = False
    eps_div: float = 1e-12
    eps_cor: float = 5e-4
    fig4_rho: list = _default([0.1, 0.9])
    fig4_mu: list = _default([0.0, 1.0])
    fig4_trials: int = 1
    table3_rho_te: list = _default([0.9, 0.1])
    table3_trials: int = 2
    baseline_max_points: int = 400
    map_datasets: list = _default([
        {"label": "ColoredDigits +90%→-90%", "name": "ColoredDigits", "kwargs": {"image_size": 14},
         "train": ["+90%"], "test": ["-90%"]},
        {"label": "RotatedDigits 0°→75°", "name": "RotatedDigits", "kwargs": {"image_size": 14},
         "train": ["0"], "test": ["75"]},
    ])
    map_trials: int = 1
    map_max_per_env: int = 600
    folder_root: Any = None
    folder_train: Any = None
    folder_test: Any = None
    folder_image_size: int = 32
    #: Tables 1-2's ranking sweep: one split per dataset (an entry's ``hparams`` go on top of ``hparams_overrides``)
    ranking: Sweep = sweep_field({
        "datasets": [
            {"name": "ColoredDigits", "kwargs": {"image_size": 14}, "train": ["+90%", "+80%"], "test": ["-90%"]},
            {"name": "RotatedDigits", "kwargs": {"image_size": 14}, "train": ["0", "15", "30"], "test": ["75"]},
        ],
        "algorithms": ["ERM", "VREx"], "n_hparams": 1, "n_trials": 2, "steps": 10, "checkpoint_freq": 5,
        "hparams_overrides": {"featurizer": "smallcnn", "batch_size": 32}})
    ranking_dominant: dict = _default({})
    selection_method: str = "oracle"
    n_workers: int = 2

    def check(self) -> None:
        _at_least(self, 1, "z_dim", "n_samples", "fig4_trials", "table3_trials", "baseline_max_points", "map_trials",
                  "map_max_per_env", "folder_image_size")
        if self.env_steps is not None:
            _at_least(self, 1, "env_steps")
        Check(choices=("scott", "shared"))(self.bandwidth, "parameter 'bandwidth'")
        for n in ("eps_div", "eps_cor"):
            Check("float", low=0.0)(getattr(self, n), f"parameter {n!r}")
        for n in ("fig4_rho", "table3_rho_te"):
            for i, r in enumerate(_names(n, getattr(self, n), "a non-empty list of probabilities")):
                Check("float", low=0.0, high=1.0)(r, f"parameter '{n}[{i}]'")
        _names("fig4_mu", self.fig4_mu, "a non-empty list of means")
        required = _MAP_KEYS - {"kwargs"}
        for i, spec in enumerate(self.map_datasets):
            if not isinstance(spec, Mapping) or not required <= set(spec) or not set(spec) <= _MAP_KEYS:
                raise _fail(f"map_datasets[{i}]", f"a mapping with keys {sorted(required)} (optional: "
                            f"{sorted(_MAP_KEYS - required)})", spec)
            _split(f"map_datasets[{i}]", {"train": spec["train"], "test": spec["test"]})
        for name, shift in self.ranking_dominant.items():
            Check(choices=("diversity", "correlation"))(shift, f"parameter 'ranking_dominant[{name!r}]'")


@dataclass(frozen=True)
class WorstCaseParams(NotebookParams):
    """Worst-case loss at Wasserstein radius ρ around the source (the WC-DG poster; Sinha et al. 2017's dual)."""

    notebook: ClassVar[str] = "07_worst_case"

    #: one model per (algorithm, draw) on its one split (training domains -> test domains), one trial
    sweep: Sweep = sweep_field({"dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16},
                                "splits": [{"train": ["15", "30", "45", "60"], "test": ["0", "75"]}],
                                "algorithms": ["ERM", "CORAL", "WM", "G2DM", "ERM_WC"], "n_hparams": 1, "steps": 20,
                                "checkpoint_freq": 10})
    featurizer: str = "mlp"
    batch_size: int = 32
    lr: float = 3e-3
    wc_rho: float = 0.1
    rhos: list = _default([0.0, 0.05, 0.1, 0.2, 0.4])
    rho_small: float = 0.05
    n_eval: int = 150
    loss_models: list = _default(["WM"])
    compare_models: list = _default(["WM", "G2DM"])
    input_rhos: list = _default([0.0, 0.5, 1.0])
    n_input: int = 16
    n_workers: int = 1
    n_threads: int = 1

    def check(self) -> None:
        _at_least(self, 1, "n_eval", "n_input", "n_threads")
        Check("float", low=0.0)(self.wc_rho, "parameter 'wc_rho'")
        if len(self.sweep.splits) != 1 or "val" in self.sweep.splits[0]:
            raise _fail("sweep.splits", "one split {train, test} (the models' source and test domains)",
                        self.sweep.splits)
        for n in ("rhos", "input_rhos"):
            for i, r in enumerate(_names(n, getattr(self, n), "a non-empty list of radii")):
                Check("float", low=0.0)(r, f"parameter '{n}[{i}]'")
        if 0.0 not in self.rhos:
            raise _fail("rhos", "a list of radii holding 0 (the nominal loss)", self.rhos)
        Check("float", low=0.0, low_open=True)(self.rho_small, "parameter 'rho_small'")
        if self.rho_small not in self.rhos:
            raise ConfigError(f"parameter 'rho_small': {self.rho_small!r} is not among rhos {self.rhos}; the "
                              "curves are computed at rhos only")
        _subset("loss_models", self.loss_models, "sweep.algorithms", self.sweep.algorithms)
        _subset("compare_models", self.compare_models, "sweep.algorithms", self.sweep.algorithms)


@dataclass(frozen=True)
class AuditParams(NotebookParams):
    """Verdicts on results the notebook did not train (sweep folders, published tables, the profile's store)."""

    notebook: ClassVar[str] = "08_audit"

    inputs: list = _default(["shipped:domainbed"])
    baseline: str = "ERM"
    selections: Any = _own_check("training_domain")
    alpha: float = 0.05
    rope: float = 1.0
    family: str = "algorithm"
    reference: str = ""
    reps: int = 500

    def check(self) -> None:
        from dganalysis.audit.claims import FAMILIES
        from dganalysis.audit.inputs import parse_selections

        _names("inputs", self.inputs, 'a non-empty list of sweep folders, tables, "shipped:<name>" or "store"')
        if not isinstance(self.baseline, str) or not self.baseline:
            raise _fail("baseline", "an algorithm name", self.baseline)
        try:
            parse_selections(self.selections)
        except ValueError as e:
            raise ConfigError(f"parameter 'selections': {e}") from None
        Check("float", low=0.0)(self.rope, "parameter 'rope'")
        if self.family not in FAMILIES:
            raise _fail("family", f"one of {sorted(FAMILIES)}", self.family)
        _at_least(self, 1, "reps")
