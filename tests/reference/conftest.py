"""Differential tests against the reference codebases (DomainBed, OoD-Bench).

The references are imported from the folders named by ``$DOMAINBED_SRC`` and ``$OODBENCH_SRC`` (``.ci/run`` points
them at ``../shared/reference/``). Without them every test here is skipped with a message saying how to enable it.
DomainBed imports a few heavy optional packages at module level (timm, wilds, gdown); they are replaced by empty
stub modules here, which is harmless because no code path we compare uses them.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

import pytest

import dganalysis  # noqa: F401  (installs the torchvision CPU shim before DomainBed imports torchvision)

_STUBS = {
    "timm": {},
    "gdown": {},
    "wilds": {},
    "wilds.datasets": {},
    "wilds.datasets.camelyon17_dataset": {"Camelyon17Dataset": object},
    "wilds.datasets.fmow_dataset": {"FMoWDataset": object},
}


def _reference_root(var: str, marker: str) -> Path:
    value = os.environ.get(var)
    if not value:
        pytest.skip(f"{var} is not set: point it at a checkout of the reference code to run the differential tests "
                    f"(.ci/run sets it to the snapshot in ../shared/reference/)")
    root = Path(value).expanduser().resolve()
    if not (root / marker).exists():
        pytest.skip(f"{var}={value}: expected {marker} under it (a checkout of the reference code)")
    return root


def _install_stubs() -> list[str]:
    """Stub the optional packages that are not installed; returns the names stubbed (removed again after the
    import, so that later tests in the same process see the real state: e.g. a test that skips without wilds)."""
    added = []
    for name, attrs in _STUBS.items():
        try:
            importlib.import_module(name)
        except ImportError:
            mod = types.ModuleType(name)
            mod.__dict__.update(attrs)
            mod.__path__ = []  # behave as a package so submodule stubs resolve
            sys.modules[name] = mod
            added.append(name)
    return added


def import_with_stubs(module: str) -> types.ModuleType:
    """Import a DomainBed module with the optional packages it needs stubbed for the duration of the import only
    (e.g. ``domainbed.scripts.collect_results``, which imports ``domainbed.datasets`` and so wilds)."""
    added = _install_stubs()
    try:
        return importlib.import_module(module)
    finally:
        for name in added:
            sys.modules.pop(name, None)


@pytest.fixture(scope="session")
def domainbed() -> types.SimpleNamespace:
    """DomainBed's modules (algorithms, networks, hparams_registry, misc, model_selection, query, reporting)."""
    root = _reference_root("DOMAINBED_SRC", "domainbed/algorithms.py")
    added = _install_stubs()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    mods = {}
    try:
        for name in ("algorithms", "networks", "hparams_registry", "model_selection"):
            mods[name] = importlib.import_module(f"domainbed.{name}")
        for name in ("misc", "query", "reporting"):
            mods[name] = importlib.import_module(f"domainbed.lib.{name}")
    finally:
        for name in added:
            sys.modules.pop(name, None)
    mods["root"] = root
    return types.SimpleNamespace(**mods)


@pytest.fixture(scope="session")
def oodbench_root() -> Path:
    """The OoD-Bench checkout (``$OODBENCH_SRC``), put on ``sys.path`` so ``import ood_bench`` works."""
    root = _reference_root("OODBENCH_SRC", "ood_bench/scripts/quantify.py")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root
