"""Writing featurizer checkpoints in the layouts :mod:`dganalysis.nets.pretrained` reads."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dganalysis import io
from dganalysis.nets.pretrained import backbone_of, state_dict_bytes

# layout: (backbone prefix, head prefix)
_PREFIXES = {
    "torchvision": ("", "fc."),
    "moco_v2": ("module.encoder_q.", "module.encoder_q.fc."),
    "moco_v3": ("module.base_encoder.", "module.base_encoder.fc."),
    "simclr": ("backbone.", "projector."),
}


def save_checkpoint(
    featurizer: nn.Module, path: str | Path, layout: str = "torchvision", head: nn.Module | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Path:
    """Atomically save ``{"state_dict": …, "meta": …}`` with the backbone (and ``head``) keys of ``layout``.

    ``layout`` is one of torchvision, moco_v2, moco_v3, simclr; ``meta`` must be JSON-serialisable
    (stored as a JSON string so the file loads with ``weights_only=True``).
    """
    if layout not in _PREFIXES:
        raise ValueError(f"layout {layout!r} unknown; expected one of {sorted(_PREFIXES)}")
    pre, head_pre = _PREFIXES[layout]
    state = {pre + k: v.detach().cpu() for k, v in backbone_of(featurizer).state_dict().items()}
    if head is not None:
        state.update({head_pre + k: v.detach().cpu() for k, v in head.state_dict().items()})
    return io.write_bytes(path, state_dict_bytes({"state_dict": state, "meta": json.dumps(dict(meta or {}))}))


def read_meta(path: str | Path) -> dict[str, Any]:
    """The ``meta`` dict saved by :func:`save_checkpoint` (empty when absent)."""
    obj = torch.load(Path(path), map_location="cpu", weights_only=True)
    return json.loads(obj.get("meta", "{}")) if isinstance(obj, dict) else {}


def checkpoint_path(folder: str | Path, kind: str, config: Mapping[str, Any]) -> Path:
    """``<folder>/<kind>-<hash of config>.pt``: same config, same file (lets notebooks reuse checkpoints)."""
    digest = hashlib.sha1(json.dumps(dict(config), sort_keys=True, default=str).encode()).hexdigest()[:12]
    return Path(folder) / f"{kind}-{digest}.pt"
