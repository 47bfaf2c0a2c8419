"""One place for a profile's data roots and weight files: ``params/<profile>/paths.yaml``.

Each entry names a folder, read from an environment variable when it is set, else from a default::

    data:    {env: DGANALYSIS_DATA, default: ~/.cache/dganalysis}
    weights: {env: DGANALYSIS_WEIGHTS, default: "${torch_home}/hub/checkpoints"}

A default may use an entry defined above it (``${torch_home}``). The notebooks' YAMLs of that profile then
write ``${data}/PACS`` or ``${weights}/moco_v2_800ep_pretrain.pth.tar``; :func:`expand` substitutes every
``${name}`` in their strings (nested lists and mappings too) before the runner and the dry run validate
them, so moving the data means setting one variable. Nothing is downloaded: the folders are only read.
A profile without ``paths.yaml`` has no names to substitute (a ``${...}`` in its YAMLs is an error).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dganalysis.io import read_yaml_mapping
from dganalysis.validation import ConfigError

PATHS_FILE = "paths.yaml"
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _substitute(text: str, names: Mapping[str, str], where: str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in names:
            raise ConfigError(f"{where}: ${{{m.group(1)}}} is not defined; known names: {sorted(names)} "
                             f"(defined in params/<profile>/{PATHS_FILE})")
        return names[m.group(1)]

    return _REF.sub(one, text)


def profile_paths(profile: str, root: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The resolved entries of ``root/params/<profile>/paths.yaml`` ({} when the file does not exist)."""
    environ = os.environ if environ is None else environ
    path = Path(root) / "params" / profile / PATHS_FILE
    if not path.is_file():
        return {}
    cfg = read_yaml_mapping(path, "a mapping name -> {env: VAR, default: path}")
    out: dict[str, str] = {}
    for name, spec in cfg.items():
        if not isinstance(spec, Mapping) or "default" not in spec or set(spec) - {"env", "default"}:
            raise ConfigError(f"{path}: entry {name!r}: expected {{env: VAR, default: path}}, got {spec!r}")
        value = environ.get(str(spec.get("env") or "")) or _substitute(str(spec["default"]), out, f"{path}: {name}")
        out[str(name)] = str(Path(value).expanduser())
    return out


def expand(obj: Any, names: Mapping[str, str], where: str) -> Any:
    """``obj`` with every ``${name}`` in its strings replaced by ``names[name]`` (unknown names are an error)."""
    if isinstance(obj, str):
        return _substitute(obj, names, where) if "${" in obj else obj
    if isinstance(obj, list):
        return [expand(v, names, where) for v in obj]
    if isinstance(obj, dict):
        return {k: expand(v, names, f"{where}: {k}") for k, v in obj.items()}
    return obj
