"""Let ``import torchvision`` work in any order in the installed environment, DomainBed's own scripts included.

The torchvision 0.28.0 wheel beside this project's CPU build of torch 2.13.0 is a CUDA build: its C++ operators
(``_C``) do not load, and its Python layer then fails with ``operator torchvision::nms does not exist`` while
registering fake kernels for them. Defining the two missing schemas (``nms``, ``qnms``) first lets the Python parts
of torchvision (models, transforms) import; the C++ ops stay unavailable (we load images with Pillow).

:func:`register_missing_schemas` does that, and nothing when torchvision's ``_C`` loads (a matching build: CUDA
torch, or a CPU torchvision) or torchvision is absent. It runs

- when ``dganalysis`` is imported (:mod:`dganalysis.compat`), and
- at the first ``import torchvision`` of any Python process of the environment, through a path-configuration file
  ``dganalysis-torchvision-shim.pth`` in its site-packages (:func:`install_pth`, run by ``quickstart.sh``): at interpreter start it only puts a finder on ``sys.meta_path`` (no import of torch, nor
  of dganalysis); the finder removes itself at the first ``import torchvision`` and calls
  :func:`register_missing_schemas` then.

This file imports nothing from dganalysis: the ``.pth`` file executes it by path at interpreter start.
"""

from __future__ import annotations

import os  # only modules every interpreter has loaded at start: the .pth runs this file in each process
import sys

PTH_NAME = "dganalysis-torchvision-shim.pth"
_MODULE_NAME = "_dganalysis_tvhook"
_FLAG = "_dganalysis_torchvision_fragment"  #: attribute of ``sys`` holding the fragment once defined


def _torchvision_c_extension() -> str | None:
    """The path of torchvision's compiled ``_C`` module, found without importing torchvision (None if absent)."""
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_C" + suffix)
            if os.path.isfile(path):
                return path
    return None


def register_missing_schemas() -> bool:
    """Define ``torchvision::nms``/``qnms`` when torchvision's C++ ops cannot load; True when it did (idempotent)."""
    # one flag per process, not per module object: the .pth hook runs this file as its own module and dganalysis
    # imports it as dganalysis.tvhook, and both may run in one process
    if getattr(sys, _FLAG, None) is not None:
        return True
    import importlib.util

    import torch

    try:
        torch.ops.torchvision.nms  # noqa: B018 - already defined (torchvision's _C loaded, or defined before)
        return False
    except (AttributeError, RuntimeError):
        pass
    ext = _torchvision_c_extension()
    if ext is None and importlib.util.find_spec("torchvision") is None:
        return False  # no torchvision: nothing to fix
    if ext is not None:
        try:
            torch.ops.load_library(ext)  # what torchvision's extension.py does; loaded once per process
            return False
        except (OSError, RuntimeError):
            pass
    if getattr(sys, _FLAG, None) is not None:  # find_spec above may have run the .pth hook's copy, which defined them
        return True
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for schema in ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                   "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"):
        try:
            lib.define(schema)
        except RuntimeError as err:  # defined already by another copy of this code in the process
            if "multiple times" not in str(err):
                raise
    # keep a reference so the fragment is not garbage-collected (a collected fragment takes its schemas with it)
    setattr(sys, _FLAG, lib)
    return True


class TorchvisionFinder:
    """A ``sys.meta_path`` finder (the protocol is one method; no ``importlib.abc`` import at start) that finds
    nothing; at the first ``import torchvision`` it removes itself and registers the missing schemas."""

    def find_spec(self, name, path=None, target=None):  # noqa: ANN001 - the meta path finder protocol
        if name == "torchvision":
            remove_hook()
            try:
                register_missing_schemas()
            except Exception:  # noqa: BLE001 - never break an import; torchvision then raises its own error
                pass
        return None


def install_hook() -> None:
    """Put :class:`TorchvisionFinder` first on ``sys.meta_path`` (once; nothing if torchvision is imported)."""
    if "torchvision" in sys.modules or any(type(f).__name__ == "TorchvisionFinder" for f in sys.meta_path):
        return
    sys.meta_path.insert(0, TorchvisionFinder())


def remove_hook() -> None:
    """Take every :class:`TorchvisionFinder` off ``sys.meta_path``."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "TorchvisionFinder"]


def pth_line(path: str | None = None) -> str:
    """The one line of the ``.pth`` file: executes this file by path at interpreter start (skipped if it moved)."""
    path = os.path.abspath(path or __file__)
    return (f"import os; _p = {path!r}; os.path.isfile(_p) and exec(compile(open(_p, encoding='utf-8').read(), _p, "
            f"'exec'), {{'__name__': {_MODULE_NAME!r}, '__file__': _p}})\n")


def install_pth(site_dir: str | None = None) -> str:
    """Write :data:`PTH_NAME` into ``site_dir`` (default: this interpreter's purelib site-packages); its path."""
    import sysconfig

    site_dir = site_dir or sysconfig.get_paths()["purelib"]
    target = os.path.join(site_dir, PTH_NAME)
    tmp = target + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(pth_line())
    os.replace(tmp, target)
    return target


if __name__ == _MODULE_NAME:  # executed by the .pth file at interpreter start
    install_hook()
