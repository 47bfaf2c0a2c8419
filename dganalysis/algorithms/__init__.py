"""DG algorithms, one module per algorithm or family, registered by name.

Importing this package imports every algorithm module so the registry is full.
"""

import importlib
import pkgutil

from dganalysis.algorithms.base import Algorithm
from dganalysis.algorithms.registry import (
    available,
    create,
    default_hparams,
    get_algorithm,
    hparam_specs,
    names,
    register_algorithm,
    tags,
)

for _m in pkgutil.iter_modules(__path__):
    if _m.name not in ("base", "registry"):
        importlib.import_module(f"{__name__}.{_m.name}")

__all__ = ["Algorithm", "available", "create", "default_hparams", "get_algorithm", "hparam_specs", "names", "register_algorithm",
           "tags"]
