"""The selection methods, registered once: their keys, the names printed over their tables, DomainBed's class for
each of DomainBed's three, and the columns every selection comes out with.

A method is one :class:`SelectionMethod`. The built-in ones (:data:`BUILT_IN`) are computed by
:mod:`dganalysis.records.rules` and described in :mod:`dganalysis.records.selection`; DomainBed's three
(:data:`DOMAINBED_METHODS`, the tables its ``collect_results`` prints: Gulrajani & Lopez-Paz 2021,
``domainbed/model_selection.py``) carry their DomainBed class and DomainBed's printed name as their title. A user
adds a method scored on the tidy frame with :func:`register_method`. This module imports neither numpy nor pandas:
the commands' option choices and the checks of a method name need none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dganalysis.validation import ConfigError, check_str, describe, did_you_mean

if TYPE_CHECKING:
    import pandas as pd

#: a config: the columns whose values make two runs compete (only ``hparams_seed`` may differ between them)
CONFIG = ["dataset", "algorithm", "train_domains", "test_domains", "val_domains", "setting", "trial_seed"]
#: a selection's columns, in order (:func:`dganalysis.records.select`'s output and the index's kept selections)
OUTPUT = [*CONFIG, "domain", "acc", "val_acc", "hparams_seed", "job_id", "step", "hparams", "selection"]

#: A scoring function: the tidy frame → one row per candidate (job_id, step, val_acc) — or, for a method that
#: chooses per test domain, (job_id, step, domain, val_acc, acc).
Scorer = Callable[["pd.DataFrame"], "pd.DataFrame"]


@dataclass(frozen=True)
class SelectionMethod:
    """One model-selection method, as a class of DomainBed's ``model_selection.py`` is one.

    ``scores``: None for the built-in methods, whose rules :mod:`dganalysis.records.rules` computes; a user's
    scoring function (:func:`register_method`) gives every candidate (job, checkpoint) its score on the tidy frame.
    Either way :func:`dganalysis.records.select` takes the argmax per config with DomainBed's ties
    (:func:`dganalysis.records.rules.argmax`). ``per_test_domain``: the choice is made separately for each test
    domain (DomainBed's oracle), and ``scores`` also returns the candidate's ``domain`` and test accuracy ``acc``.
    ``domainbed``: the name of DomainBed's class for the same method, where it has one.
    """

    key: str
    title: str
    scores: Scorer | None
    per_test_domain: bool = False
    domainbed: str | None = None


#: the built-in methods: (key, title — DomainBed's printed name where it has the method —, DomainBed's class)
_BUILT_IN = (
    ("training_domain", "training-domain validation set", "IIDAccuracySelectionMethod"),
    ("training_domain_last", "training-domain validation set, last checkpoint (no early stopping)", None),
    ("leave_one_out", "leave-one-domain-out cross-validation", "LeaveOneOutSelectionMethod"),
    ("oracle", "test-domain validation set (oracle)", "OracleSelectionMethod"),
    ("oracle_pooled", "test-domain validation set, pooled over test domains (oracle)", None),
    ("ood_validation", "OoD validation set", None),
)
#: the methods :mod:`dganalysis.records.rules` computes, in registration order
BUILT_IN = tuple(key for key, _, _ in _BUILT_IN)
#: DomainBed's three, in the order its ``collect_results`` prints them
DOMAINBED_METHODS = tuple(key for key, _, domainbed in _BUILT_IN if domainbed)
#: the built-in methods that choose separately for each test domain
PER_TEST_DOMAIN = ("oracle",)

_METHODS: dict[str, SelectionMethod] = {
    key: SelectionMethod(key, title, None, key in PER_TEST_DOMAIN, domainbed) for key, title, domainbed in _BUILT_IN
}


def register_method(key: str, title: str, *, per_test_domain: bool = False,
                    domainbed: str | None = None) -> Callable[[Scorer], Scorer]:
    """Decorator registering a scoring function as the selection method ``key`` (``title``: table headers).

    The function takes the tidy frame and returns one row per candidate: ``job_id``, ``step`` and its score
    ``val_acc`` (with ``per_test_domain``: also ``domain`` and that domain's test accuracy ``acc``).
    :func:`dganalysis.records.select` takes the argmax per config with the built-in methods' ties; a candidate that
    names no record of the frame, or (without ``per_test_domain``) a checkpoint without test-domain rows, is not
    chosen."""
    check_str(key, "key", func="register_method")
    check_str(title, "title", func="register_method")

    def deco(scores: Scorer) -> Scorer:
        if key in _METHODS and _METHODS[key].scores is not scores:
            raise ValueError(f"selection method {key!r} is registered twice")
        _METHODS[key] = SelectionMethod(key, title, scores, per_test_domain, domainbed)
        return scores

    return deco


def methods() -> list[str]:
    """The registered selection methods' keys, in registration order (DomainBed's three: :data:`DOMAINBED_METHODS`)."""
    return list(_METHODS)


def get_method(key: str) -> SelectionMethod:
    """The method registered as ``key``; an unknown key fails listing the known ones ("did you mean")."""
    if not isinstance(key, str):
        raise ConfigError(f"get_method: parameter 'key': expected a selection method name, got {describe(key)}")
    if key not in _METHODS:
        raise ConfigError(f"get_method: parameter 'key': unknown selection method {key!r}"
                          f"{did_you_mean(key, methods())}; expected one of {methods()}")
    return _METHODS[key]


class _Titles(Mapping[str, str]):
    """Read-only view: method key → the name printed in table headers."""

    def __getitem__(self, key: str) -> str:
        return _METHODS[key].title

    def __iter__(self) -> Iterator[str]:
        return iter(_METHODS)

    def __len__(self) -> int:
        return len(_METHODS)


#: Method key → the name printed in table headers (DomainBed's names where it has the method); follows the registry.
METHODS: Mapping[str, str] = _Titles()
