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
