"""Users' own algorithms and datasets: modules imported before any name is looked up.

A user module registers algorithms (``@register_algorithm``, :mod:`dganalysis.algorithms.registry`) and datasets
(``@register_dataset``, :mod:`dganalysis.data.registry`) when it is imported. Every command that takes names imports
the same modules first, from two places, in this order (each item once):

* ``$DGANALYSIS_IMPORT`` (:data:`IMPORT_ENV`): comma-separated module names (``mylab.algos``, found on ``sys.path`` /
  ``PYTHONPATH``) or ``.py`` file paths;
* ``--import`` (repeatable) of ``dganalysis train``, ``dganalysis sweep`` and the drop-ins
  ``python -m dganalysis.scripts.train`` / ``python -m dganalysis.scripts.sweep``.

Processes a command starts import them too: ``dganalysis sweep``'s workers and Slurm tasks get them in their options
(:class:`dganalysis.sweep.launcher.ExecutionOptions`), and the drop-in sweep's ``train`` commands inherit
``$DGANALYSIS_IMPORT`` (:func:`export`), so the commands themselves stay DomainBed's. ``docs/extending.md`` has a
worked example.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from dganalysis.validation import ConfigError

#: the environment variable listing modules to import (comma-separated)
IMPORT_ENV = "DGANALYSIS_IMPORT"


def requested(imports: Sequence[str] = ()) -> list[str]:
    """``$DGANALYSIS_IMPORT``'s items, then ``imports``, each once, in that order (empty items dropped)."""
    items = [x.strip() for x in os.environ.get(IMPORT_ENV, "").split(",")] + [str(x).strip() for x in imports]
    return list(dict.fromkeys(x for x in items if x))


def import_plugins(imports: Sequence[str]) -> None:
    """Import modules (``pkg.mod``) or files (``path/to/mod.py``) that register datasets/algorithms. A module or
    file that cannot be found is a :class:`~dganalysis.validation.ConfigError` naming it; an error raised by the
    module's own code propagates as it is."""
    for item in imports:
        if item.endswith(".py"):
            path = Path(item).expanduser()
            name = path.stem
            if name in sys.modules:
                continue
            if not path.is_file():
                raise ConfigError(f"import {item}: no such file (a .py file from --import or ${IMPORT_ENV})")
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ConfigError(f"import {item}: cannot import it as a module")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            try:
                importlib.import_module(item)
            except ModuleNotFoundError as e:
                if e.name is None or not (item == e.name or item.startswith(e.name + ".")):
                    raise  # the module was found; something it imports is missing
                raise ConfigError(f"import {item}: no module named {e.name!r} (from --import or ${IMPORT_ENV}; is its "
                                  "folder on PYTHONPATH?)") from None


def import_requested(imports: Sequence[str] = ()) -> list[str]:
    """Import :func:`requested` (``$DGANALYSIS_IMPORT`` and ``imports``); returns the list imported."""
    items = requested(imports)
    import_plugins(items)
    return items


def export(imports: Sequence[str]) -> None:
    """Set ``$DGANALYSIS_IMPORT`` to ``imports`` (``.py`` paths made absolute) so that the processes this one starts
    import the same modules."""
    items = [str(Path(x).expanduser().resolve()) if x.endswith(".py") else x for x in imports]
    if items:
        os.environ[IMPORT_ENV] = ",".join(dict.fromkeys(items))
