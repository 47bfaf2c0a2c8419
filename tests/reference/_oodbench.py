"""Loading OoD-Bench (``$OODBENCH_SRC``) and running its own scripts in-process, for tests and ``bench/shift_speed.py``.

OoD-Bench's ``config.py`` imports ``domainbed.datasets`` (its DomainBed fork, a git submodule absent from the
snapshot) only for the ``--dataset`` choices; when it cannot be imported, a stub with an empty ``DATASETS`` list
stands in while OoD-Bench is imported and is removed afterwards. No computation we compare touches it.
Scripts run as ``python -m`` would run them (``runpy`` with ``sys.argv`` set), writing into a work folder.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import runpy
import shlex
import subprocess
import sys
import types
from pathlib import Path
from unittest import mock

import numpy as np

import dganalysis  # noqa: F401  (torchvision CPU shim, before OoD-Bench imports torchvision)

ENV = "OODBENCH_SRC"
HOW = f"set {ENV}=/path/to/OoD-Bench (CI: {ENV}=../shared/reference/OoD-Bench relative to the repository)"


def oodbench_root() -> Path | None:
    """The checkout named by ``$OODBENCH_SRC`` when it holds ``ood_bench/scripts/quantify.py``, else None."""
    value = os.environ.get(ENV)
    if not value:
        return None
    root = Path(value).expanduser().resolve()
    return root if (root / "ood_bench" / "scripts" / "quantify.py").exists() else None


def skip_reason() -> str:
    value = os.environ.get(ENV)
    if not value:
        return f"{ENV} is not set: {HOW} to run the differential tests against OoD-Bench's quantify.py"
    return f"{ENV}={value} has no ood_bench/scripts/quantify.py: {HOW}"


def load_oodbench(root: Path) -> types.SimpleNamespace:
    """OoD-Bench's ``config``, ``networks`` and ``utils`` modules from ``root`` (its scripts then run by name)."""
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    added = []
    try:
        importlib.import_module("domainbed.datasets")
    except Exception:  # the DomainBed fork is not there: stub what config.py reads
        for name, attrs in (("domainbed", {"__path__": []}), ("domainbed.datasets", {"DATASETS": []})):
            if name not in sys.modules:
                mod = types.ModuleType(name)
                mod.__dict__.update(attrs)
                sys.modules[name] = mod
                added.append(name)
    try:
        mods = {n: importlib.import_module(f"ood_bench.{n}") for n in ("config", "networks", "utils", "scripts")}
    finally:
        for name in added:
            sys.modules.pop(name, None)
    return types.SimpleNamespace(config=mods["config"], networks=mods["networks"], utils=mods["utils"], root=root)


def _run_module(module: str, argv: list[str]) -> None:
    with mock.patch.object(sys, "argv", [module, *argv]), contextlib.redirect_stdout(io.StringIO()):
        runpy.run_module(module, run_name="__main__", alter_sys=False)


def run_quantify(feature_dir: Path, z_p, y_p, z_q, y_q, **args) -> dict:
    """Write ``data.npz`` into ``feature_dir`` and run ``python -m ood_bench.scripts.quantify`` there with
    ``--key value`` arguments (``True`` for a flag); returns its ``result.json`` (``{"div", "cor"}``)."""
    feature_dir = Path(feature_dir)
    feature_dir.mkdir(parents=True, exist_ok=True)
    np.savez(feature_dir / "data.npz", y_p=y_p, z_p=z_p, y_q=y_q, z_q=z_q)
    argv = ["--feature_dir", str(feature_dir)]
    for k, v in args.items():
        if v is True:
            argv.append(f"--{k}")
        elif v is not False and v is not None:
            argv += [f"--{k}", str(v)]
    _run_module("ood_bench.scripts.quantify", argv)
    return json.loads((feature_dir / "result.json").read_text())


def run_calibrate(root_dir: Path, **args) -> dict:
    """Run ``python -m ood_bench.scripts.calibrate --root_dir root_dir`` in-process over the ``data.npz`` files
    under ``root_dir``; its ``subprocess.run`` calls of ``quantify`` also run in-process. Returns the
    ``result`` of its ``calibration.json``."""
    def fake_run(cmd, **kwargs):
        parts = shlex.split(cmd)
        assert parts[:2] == ["python", "-m"], cmd
        _run_module(parts[2], parts[3:])
        return subprocess.CompletedProcess(parts, 0)

    argv = ["--root_dir", str(root_dir)]
    for k, v in args.items():
        argv += [f"--{k}", str(v)]
    with mock.patch.object(subprocess, "run", fake_run):
        _run_module("ood_bench.scripts.calibrate", argv)
    return json.loads((Path(root_dir) / "calibration.json").read_text())["result"]
