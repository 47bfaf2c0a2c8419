"""Datasets by name. A builder is ``fn(**kwargs) -> DomainDataset``; caching is the builder's choice."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dganalysis.data.dataset import DomainDataset
from dganalysis.registry import Registry

DATASETS: Registry[Callable[..., DomainDataset]] = Registry("dataset")
register_dataset = DATASETS.register


def default_data_dir() -> Path:
    """Where builders cache datasets: ``$DGANALYSIS_DATA`` or ``~/.cache/dganalysis``."""
    return Path(os.environ.get("DGANALYSIS_DATA", Path.home() / ".cache" / "dganalysis")).expanduser()


def resolve_data_dir(data_dir: str | Path | None) -> Path:
    """``data_dir`` as a Path, or the default cache folder when None."""
    return Path(data_dir).expanduser() if data_dir is not None else default_data_dir()


#: datasets built from MNIST's raw files, found under ``mnist_dir=`` (DomainBed's ``--data_dir`` works as it is)
MNIST_READERS = ("RotatedMNIST", "ColoredMNIST", "RotatedMNIST_Fixed", "ColoredMNIST_Fixed")
#: where a data root comes from when no ``--data_dir`` is given (also the default cache folder, see
#: :func:`default_data_dir`: the profiles' ``paths.yaml`` read their ``${data}`` from it)
DATA_ENV = "DGANALYSIS_DATA"
#: how a command line gives a builder its data root, for the builders' "needs root=" errors
ROOT_HINT = f"on the command line: --data_dir DIR (DomainBed's data root), or ${DATA_ENV}"


def root_kwargs(name: str, data_root: str | Path | None) -> dict[str, Any]:
    """The builder keyword that takes DomainBed's ``--data_dir`` (the folder its download script filled) for the
    dataset ``name``: ``mnist_dir`` for the MNIST readers, ``root`` for a builder with a ``root`` parameter (DomainBed's
    image benchmarks, WILDS, Spawrious, a user's dataset declaring ``root``), nothing for one that reads no files
    (Debug28, RotatedDigits, ...) or when ``data_root`` is None."""
    import inspect

    if not data_root:
        return {}
    if name in MNIST_READERS:
        return {"mnist_dir": str(data_root)}
    _import_builtin()
    if name not in DATASETS:
        return {}
    try:
        params = inspect.signature(DATASETS.get(name)).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return {}
    return {"root": str(data_root)} if "root" in params else {}


def available() -> list[str]:
    """Names of all registered datasets."""
    _import_builtin()
    return DATASETS.names()


def load_dataset(name: str, **kwargs: Any) -> DomainDataset:
    """Build or load the dataset registered as ``name`` (unknown names list the known ones)."""
    _import_builtin()
    return DATASETS.get(name)(**kwargs)


def _import_builtin() -> None:
    # importing the modules runs their @register_dataset decorators
    import importlib

    for mod in ("dganalysis.data.digits", "dganalysis.data.domainbed_mnist", "dganalysis.data.fashion", "dganalysis.data.folder", "dganalysis.data.benchmarks",
                "dganalysis.data.wilds_data", "dganalysis.data.celeba",
                "dganalysis.data.pahcc", "dganalysis.data.spawrious", "dganalysis.data.debug"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
