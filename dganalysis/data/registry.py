"""Datasets by name. A builder is ``fn(**kwargs) -> DomainDataset``; caching is the builder's choice."""

from __future__ import annotations

from typing import Any, Callable

from dganalysis.data.dataset import DomainDataset
from dganalysis.registry import Registry

DATASETS: Registry[Callable[..., DomainDataset]] = Registry("dataset")
register_dataset = DATASETS.register


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

    for mod in ("dganalysis.data.digits", "dganalysis.data.folder", "dganalysis.data.pahcc"):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
