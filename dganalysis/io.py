"""Atomic file writes: write to a temporary file in the same folder, then rename.

Files get the mode a plain ``open(path, "w")`` would give them: ``0o666`` less the process umask (``tempfile``
creates its files ``0o600``, which would hide every figure, table and report from colleagues on a shared server
whatever their umask).
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dganalysis.validation import ConfigError

if TYPE_CHECKING:  # numpy is imported where an array is written: the commands' fast paths need none
    import numpy as np

_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where Linux tells it (``/proc/self/status``); elsewhere set and
    restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a new file gets from ``open``: ``0o666 & ~umask``."""
    return 0o666 & ~current_umask()


def _atomic(path: Path, write, mode: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, file_mode())  # mkstemp's 0o600 → what open() would give
        with os.fdopen(fd, mode) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write ``text`` to ``path``."""
    return _atomic(Path(path), lambda fh: fh.write(text), "w")


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Atomically write ``data`` to ``path``."""
    return _atomic(Path(path), lambda fh: fh.write(data), "wb")


def write_json(path: str | Path, obj: Any) -> Path:
    """Atomically write ``obj`` as indented JSON."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def write_npy(path: str | Path, array: np.ndarray) -> Path:
    """Atomically save one array in ``.npy`` format (memory-mappable on load)."""
    import numpy as np
    return _atomic(Path(path), lambda fh: np.save(fh, np.ascontiguousarray(array)), "wb")


def append_jsonl(path: str | Path, obj: Any) -> None:
    """Append one JSON line (records are append-only; a torn last line is ignored on read)."""
    with open(path, "a") as fh:
        fh.write(json.dumps(obj, sort_keys=True, default=_json_default) + "\n")
        fh.flush()


def read_yaml_mapping(path: str | Path, expected: str) -> dict:
    """The top-level mapping of the YAML file ``path`` (``{}`` for an empty file). Invalid YAML or a top level
    that is not a mapping raises ``ValueError`` naming the file; ``expected`` says what the mapping should hold."""
    import yaml

    path = Path(path)
    try:
        cfg = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from e
    if not isinstance(cfg, dict):
        raise ConfigError(f"{path}: expected {expected}, got {type(cfg).__name__}")
    return cfg


def _json_default(obj: Any) -> Any:
    import numpy as np
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (set, tuple)):
        return list(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")
