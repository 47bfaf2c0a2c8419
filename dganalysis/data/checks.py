"""Checks of dataset input before any work starts: a dataset name and its builder arguments (from a config file or
the command line), and a dataset object passed to a function.

The messages follow :mod:`dganalysis.validation` (``<where>: expected <what>, got <value>``, a
:class:`~dganalysis.validation.ConfigError`); the rules here are about datasets, so they live with them.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from dganalysis.data.dataset import DomainLookup
from dganalysis.data.registry import DATASETS, available, load_dataset
from dganalysis.registry import unknown_name
from dganalysis.validation import Check, ConfigError, describe, got, param_where

#: built-in datasets registered through a ``**kw`` wrapper: the function whose arguments they take
_WRAPPED = {"RotatedDigits": ("digits", "rotated_digits"), "RotatedMNIST_Fixed": ("digits", "rotated_digits"),
            "ColoredDigits": ("digits", "colored_digits"), "ColoredMNIST_Fixed": ("digits", "colored_digits"),
            "RotatedMNIST": ("domainbed_mnist", "rotated_mnist"), "ColoredMNIST": ("domainbed_mnist", "colored_mnist"),
            "PaHCC": ("pahcc", "build_pahcc")}


def kwarg_check(name: str) -> Check:
    """A rule for a builder argument from its name: ``*_size`` and ``n_*`` positive integers, ``seed`` ≥ 0,
    ``*fraction`` in [0, 1] (other arguments are the builder's to check)."""
    low = name.lower()
    if low.endswith("_size") or low.startswith(("n_", "num_")):
        return Check("int", low=1)
    if low == "seed":
        return Check("int", low=0)
    if low.endswith("fraction"):
        return Check("float", low=0.0, high=1.0)
    return Check("any")


def builder_parameters(dataset: str) -> list[str] | None:
    """Argument names the dataset's builder takes (following the built-in ``**kw`` wrappers to the function they
    call); None when it takes any keyword."""
    fn = DATASETS.get(dataset)
    if dataset in _WRAPPED:
        import importlib

        module, attr = _WRAPPED[dataset]
        fn = getattr(importlib.import_module(f"dganalysis.data.{module}"), attr)
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.name not in ("data_dir", "run_seed")]  # run_seed: set per job


def check_dataset_kwargs(dataset: str, kwargs: Mapping[str, Any], where: str) -> None:
    """Check ``kwargs`` of dataset ``dataset`` without building it: a known dataset, a mapping, argument names the
    builder takes, and values by :func:`kwarg_check` (the builder checks the rest when it is built)."""
    if not isinstance(dataset, str):
        raise ConfigError(f"dataset: expected a dataset name, got {got(dataset)}")
    if dataset not in available():
        raise ConfigError(f"dataset: {unknown_name('dataset', dataset, available())}")
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where}: expected a mapping of builder arguments, got {got(kwargs)}")
    known = builder_parameters(dataset)
    unknown = sorted(str(k) for k in kwargs if known is not None and k not in known)
    if unknown:
        raise ConfigError(f"{where}: {dataset} takes no argument(s) {unknown}; it takes {sorted(known or [])}")
    for key, value in kwargs.items():
        kwarg_check(str(key))(value, f"{where}.{key}")


def load_checked_dataset(dataset: str, kwargs: Mapping[str, Any], data_dir: Any, where: str):
    """Build the dataset once to check its name and arguments; builder errors become a
    :class:`~dganalysis.validation.ConfigError`."""
    check_dataset_kwargs(dataset, kwargs, where)
    try:
        return load_dataset(dataset, data_dir=data_dir, **dict(kwargs))
    except TypeError as e:
        raise ConfigError(f"{where}: the {dataset} builder does not take these arguments ({e})") from e
    except (ValueError, KeyError) as e:
        raise ConfigError(f"{where} of {dataset}: {e}") from e


def check_domain_dataset(value: Any, name: str = "dataset", *, func: str | None = None) -> Any:
    """A dataset of named domains (a :class:`dganalysis.data.dataset.DomainDataset` or a dataset whose images stay
    encoded on the host, both :class:`dganalysis.data.dataset.DomainLookup`; e.g. from
    ``dganalysis.data.load_dataset``)."""
    if not isinstance(value, DomainLookup):
        raise ConfigError(f"{param_where(func, name)}: expected a DomainDataset (dganalysis.data.load_dataset(name, "
                          f"...)), got {describe(value)}")
    return value
