"""Compatibility shims for the CPU-only torch build used on CPU machines.

The torchvision 0.28.0 wheel is a CUDA build. Imported next to a CPU build of
torch it fails with ``operator torchvision::nms does not exist`` because its
Python layer registers fake kernels for C++ operators that the CPU torch does
not have. Defining the two missing schemas (``nms`` and ``qnms``) first lets the
Python parts of torchvision (models, transforms v2 on tensors) import. The C++
ops and image decoding stay unavailable: we load images with Pillow.

The shim is applied only when torchvision's compiled ``_C`` does not load (see :mod:`dganalysis.tvhook`, which
also installs it for processes that import torchvision before dganalysis); on a CUDA machine torchvision imports
normally. ``import dganalysis`` does not import torch: :func:`install_on_import` registers a finder that installs
the shim the moment torchvision is first imported (so reading and auditing results, which need pandas only, start
in a fraction of a second).
"""

from __future__ import annotations

import importlib.abc
import logging
import sys

log = logging.getLogger(__name__)
_installed = False


def install() -> None:
    """Register the missing torchvision op schemas when torchvision's C++ ops cannot load (idempotent); the rule
    lives in :func:`dganalysis.tvhook.register_missing_schemas`, which the environment's ``.pth`` hook also runs
    at the first ``import torchvision`` of any process (so torchvision imports before dganalysis too)."""
    global _installed
    if _installed:
        return
    _installed = True
    from dganalysis.tvhook import register_missing_schemas

    if register_missing_schemas():
        log.debug("registered torchvision nms/qnms schemas (torchvision's C++ ops do not load beside this torch)")


class _InstallBeforeTorchvision(importlib.abc.MetaPathFinder):
    """Installs the shim when ``torchvision`` is imported for the first time, then steps aside."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201 - importlib's protocol
        if name == "torchvision":
            if self in sys.meta_path:
                sys.meta_path.remove(self)
            install()
        return None  # the normal finders import it


def install_on_import() -> None:
    """Install the shim now if torchvision is already imported, else just before its first import."""
    if "torchvision" in sys.modules:
        install()
    elif not any(isinstance(f, _InstallBeforeTorchvision) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallBeforeTorchvision())


def torchvision():
    """Import torchvision after installing the shim and return the module."""
    install()
    import torchvision as tv

    return tv
