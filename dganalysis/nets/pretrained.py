"""Load pretrained backbones from local checkpoint files (no downloads).

Yu et al. (2024, Sec. 2.1, Tables 1-3) compare supervised ImageNet weights (torchvision/timm
ResNet-18/50, ViT-B/16) with self-supervised ones (MoCo, MoCo-v2, SimCLR for ResNet-50; MoCo-v3
for ViT-B/16). Each family ships its weights in its own layout; :func:`load_pretrained` maps
them onto our featurizers:

==============  =====================================================  =====================================
layout          backbone keys                                          dropped (other networks / head)
==============  =====================================================  =====================================
``torchvision`` ``conv1.weight`` … (optionally ``module.``-prefixed)   ``fc.*`` / ``heads.*``
``timm``        ResNet: as torchvision; ViT: ``blocks.{i}.attn.qkv``…   ``fc.*`` / ``head.*``
                (remapped to torchvision's ViT names)
``moco_v2``     ``module.encoder_q.*`` (MoCo v1 and v2)                ``module.encoder_k.*``, ``queue*``,
                                                                       the projection ``encoder_q.fc.*``
``moco_v3``     ``module.base_encoder.*`` (ResNet or timm-ViT)         ``module.momentum_encoder.*``,
                                                                       ``module.predictor.*``, ``fc.*``/``head.*``
``simclr``      ``backbone.*`` / ``encoder.*`` (``module.``-prefixed   ``projector.*``, ``projection.*``,
                too); tonylins' SimCLR-v1 conversion uses              ``projection_head.*``, ``fc.*``
                ``torchvision`` names (``{"state_dict": …}``)
``simclr_v2``   Separius' SimCLR-v2 conversion ``{"resnet": …,         ``head`` (the contrastive projector,
                "head": …}``: ``net.0.0`` stem conv, ``net.0.1.0``     a separate entry) and ``fc.*``
                its BN, ``net.{s}.blocks.{b}.net.{0..5}`` the
                bottleneck convs/BNs, ``….projection.{shortcut,bn.0}``
                the downsample (renamed to torchvision's)
==============  =====================================================  =====================================

Published files and their layouts by name: :mod:`dganalysis.nets.published` (a missing file's error says how
to get it).

Checkpoints may wrap the state dict in ``{"state_dict": …}``, ``{"model": …}`` or ``{"net": …}``.
``layout="auto"`` picks the layout whose remapped keys cover most of the featurizer's keys.

Strictness: after remapping, every target key must be present and every source key used,
except the classification/projection head (``fc``, ``head``, ``heads``, ``classifier`` when the
target has no such module) and BatchNorm ``num_batches_tracked`` counters (old torchvision
files lack them). Anything else raises :class:`PretrainedKeyError` listing the keys.
Shape adaptations (documented choices): a conv weight whose *input channels* differ (ImageNet
RGB → our 1- or 2-channel inputs) is replaced by the channel mean repeated over the target's
channels and rescaled by 3/C (the response to a gray image replicated over channels is kept);
ViT position embeddings are bicubically interpolated to the target's patch grid. Any other
shape mismatch is an error naming the key and both shapes.
"""

from __future__ import annotations

import io as _io
import logging
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.nets.archs import backbone_of
from dganalysis.nets.freeze import freeze_featurizer, freeze_stages
from dganalysis.nets.torchhub import resolve_pretrained
from dganalysis.training.hparams import HParams

__all__ = ["LAYOUTS", "LoadReport", "PretrainedKeyError", "apply_init_hparams", "backbone_of", "detect_layout",
           "load_pretrained", "read_checkpoint", "remap", "state_dict_bytes", "unwrap_state_dict"]

log = logging.getLogger(__name__)

HEAD_PREFIXES = ("fc.", "head.", "heads.", "classifier.")


@dataclass(frozen=True)
class Layout:
    """Where the backbone lives in a checkpoint (``prefixes``, first match stripped) and what to ignore."""

    name: str
    prefixes: tuple[str, ...]
    ignore: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()  #: (regex, replacement) applied to the stripped keys, first match


#: Separius/SimCLRv2-Pytorch ``resnet.py`` names → torchvision's ResNet names (stride on the 3x3 conv in both)
_SIMCLR_V2 = (
    (r"^net\.0\.0\.", "conv1."),
    (r"^net\.0\.1\.0\.", "bn1."),
    (r"^net\.(\d)\.blocks\.(\d+)\.projection\.shortcut\.", r"layer\1.\2.downsample.0."),
    (r"^net\.(\d)\.blocks\.(\d+)\.projection\.bn\.0\.", r"layer\1.\2.downsample.1."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.0\.", r"layer\1.\2.conv1."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.1\.0\.", r"layer\1.\2.bn1."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.2\.", r"layer\1.\2.conv2."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.3\.0\.", r"layer\1.\2.bn2."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.4\.", r"layer\1.\2.conv3."),
    (r"^net\.(\d)\.blocks\.(\d+)\.net\.5\.0\.", r"layer\1.\2.bn3."),
)


LAYOUTS: dict[str, Layout] = {
    "torchvision": Layout("torchvision", ("module.", "")),
    "timm": Layout("timm", ("module.", "")),
    "moco_v2": Layout("moco_v2", ("module.encoder_q.", "encoder_q."),
                      ("module.encoder_k.", "encoder_k.", "module.queue", "queue")),
    "moco_v3": Layout("moco_v3", ("module.base_encoder.", "base_encoder."),
                      ("module.momentum_encoder.", "momentum_encoder.", "module.predictor.", "predictor.")),
    "simclr": Layout("simclr", ("module.backbone.", "backbone.", "module.encoder.", "encoder."),
                     ("module.projector.", "projector.", "module.projection.", "projection.",
                      "module.projection_head.", "projection_head.")),
    "simclr_v2": Layout("simclr_v2", ("module.", ""), rename=_SIMCLR_V2),
}


class PretrainedKeyError(KeyError):
    """Missing, unexpected or mis-shaped keys after remapping; the message lists them."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


@dataclass
class LoadReport:
    """What :func:`load_pretrained` did."""

    path: str
    layout: str
    loaded: list[str] = field(default_factory=list)
    head: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    adapted: list[str] = field(default_factory=list)
    filled: list[str] = field(default_factory=list)


# -- reading -------------------------------------------------------------------------------
def read_checkpoint(path: str | Path) -> dict[str, torch.Tensor]:
    """The flat tensor state dict inside a checkpoint file (unwrapping ``state_dict``/``model``/``net``)."""
    from dganalysis.nets.published import howto

    path = Path(path).expanduser()
    if not path.is_file():
        how = howto(path)
        raise FileNotFoundError(f"pretrained checkpoint {str(path)!r} does not exist (expected file name "
                                f"{path.name!r}{'; ' + how if how else ''})")
    obj = torch.load(path, map_location="cpu", weights_only=True)
    return unwrap_state_dict(obj, str(path))


def unwrap_state_dict(obj: Any, where: str = "checkpoint") -> dict[str, torch.Tensor]:
    """Descend into ``state_dict``/``model``/``net``/``module``/``resnet`` (SimCLR-v2 conversion) wrappers; keep
    tensor entries only."""
    for _ in range(4):
        if not isinstance(obj, Mapping):
            break
        inner = next((obj[k] for k in ("state_dict", "model", "net", "module", "resnet")
                      if isinstance(obj.get(k), Mapping)), None)
        if inner is None:
            break
        obj = inner
    if not isinstance(obj, Mapping):
        raise ValueError(f"{where}: expected a state dict (mapping of names to tensors), got {type(obj).__name__}")
    out = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if not out:
        raise ValueError(f"{where}: no tensors found; top-level keys: {sorted(map(str, obj))[:20]}")
    return out


def detect_layout(state: Mapping[str, torch.Tensor], target_keys: Collection[str] | None = None) -> str:
    """Guess the layout of ``state``.

    With ``target_keys`` (the featurizer's state-dict keys): the layout whose remapped keys cover
    most target keys (ties: the order of :data:`LAYOUTS`, torchvision first) — this tells a
    torchvision ViT (``encoder.layers…``) from a SimCLR ``encoder.*`` ResNet. Without: the layout
    whose non-empty backbone prefixes match most keys (``torchvision`` when none do).
    """
    best, best_n = "torchvision", 0
    for name, lay in LAYOUTS.items():
        if target_keys is not None:
            kept = remap(state, name)[0]
            if any(k.startswith("blocks.") for k in kept):
                kept = timm_vit_to_torchvision(kept)
            n = len(set(kept) & set(target_keys))
        else:
            n = sum(any(k.startswith(p) for p in lay.prefixes if p and p != "module.") for k in state)
        if n > best_n:
            best, best_n = name, n
    return best


# -- remapping -----------------------------------------------------------------------------
_TIMM_VIT = [
    (r"^cls_token$", "class_token"),
    (r"^pos_embed$", "encoder.pos_embedding"),
    (r"^patch_embed\.proj\.", "conv_proj."),
    (r"^blocks\.(\d+)\.norm1\.", r"encoder.layers.encoder_layer_\1.ln_1."),
    (r"^blocks\.(\d+)\.norm2\.", r"encoder.layers.encoder_layer_\1.ln_2."),
    (r"^blocks\.(\d+)\.attn\.qkv\.weight$", r"encoder.layers.encoder_layer_\1.self_attention.in_proj_weight"),
    (r"^blocks\.(\d+)\.attn\.qkv\.bias$", r"encoder.layers.encoder_layer_\1.self_attention.in_proj_bias"),
    (r"^blocks\.(\d+)\.attn\.proj\.", r"encoder.layers.encoder_layer_\1.self_attention.out_proj."),
    (r"^blocks\.(\d+)\.mlp\.fc1\.", r"encoder.layers.encoder_layer_\1.mlp.0."),
    (r"^blocks\.(\d+)\.mlp\.fc2\.", r"encoder.layers.encoder_layer_\1.mlp.3."),
    (r"^norm\.", "encoder.ln."),
]


def timm_vit_to_torchvision(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename timm ``VisionTransformer`` keys (also MoCo-v3's ViT) to torchvision's ``vit_b_16`` names."""
    out = {}
    for k, v in state.items():
        new = k
        for pat, rep in _TIMM_VIT:
            new, n = re.subn(pat, rep, k)
            if n:
                break
        out[new] = v
    return out


def remap(state: Mapping[str, torch.Tensor], layout: str) -> tuple[dict[str, torch.Tensor], list[str], list[str]]:
    """Strip the layout's backbone prefix. Returns (backbone state, ignored keys, keys outside the layout)."""
    if layout not in LAYOUTS:
        raise ValueError(f"pretrained layout {layout!r} unknown; expected 'auto' or one of {sorted(LAYOUTS)}")
    lay = LAYOUTS[layout]
    kept: dict[str, torch.Tensor] = {}
    ignored, outside = [], []
    for k, v in state.items():
        if any(k.startswith(p) for p in lay.ignore):
            ignored.append(k)
            continue
        prefix = next((p for p in lay.prefixes if k.startswith(p)), None)
        if prefix is None:
            outside.append(k)
            continue
        new = k[len(prefix):]
        for pat, rep in lay.rename:
            new, n = re.subn(pat, rep, new)
            if n:
                break
        kept[new] = v
    return kept, ignored, outside


def _adapt(key: str, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor | None:
    """A source tensor reshaped to the target's shape by a documented rule, or None."""
    if src.ndim == 4 and dst.ndim == 4 and src.shape[0] == dst.shape[0] and src.shape[2:] == dst.shape[2:]:
        c = dst.shape[1]
        return (src.mean(1, keepdim=True) * (src.shape[1] / c)).repeat(1, c, 1, 1)
    if key.endswith("pos_embedding") and src.ndim == 3 and dst.ndim == 3 and src.shape[2] == dst.shape[2]:
        g_src, g_dst = math.isqrt(src.shape[1] - 1), math.isqrt(dst.shape[1] - 1)
        if g_src ** 2 + 1 == src.shape[1] and g_dst ** 2 + 1 == dst.shape[1]:
            grid = src[:, 1:].reshape(1, g_src, g_src, -1).permute(0, 3, 1, 2)
            grid = F.interpolate(grid, size=(g_dst, g_dst), mode="bicubic", align_corners=False)
            return torch.cat([src[:, :1], grid.permute(0, 2, 3, 1).reshape(1, g_dst * g_dst, -1)], 1)
    return None


def _listing(keys: list[str], limit: int = 60) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f", … ({len(keys) - limit} more)" if len(keys) > limit else "")


def load_pretrained(featurizer: nn.Module, path: str | Path, layout: str = "auto") -> LoadReport:
    """Load the backbone weights in ``path`` into ``featurizer`` (in place); see the module doc.

    Raises :class:`PretrainedKeyError` when, apart from the head, keys are missing, unexpected
    or of a shape no adaptation rule covers.
    """
    state = read_checkpoint(path)
    target_module = backbone_of(featurizer)
    target = target_module.state_dict()
    layout = detect_layout(state, list(target)) if layout == "auto" else layout
    kept, ignored, outside = remap(state, layout)
    if any(k.startswith("encoder.layers.") for k in target) and any(k.startswith("blocks.") for k in kept):
        kept = timm_vit_to_torchvision(kept)
    report = LoadReport(str(path), layout, ignored=ignored)
    target_heads = {p for p in HEAD_PREFIXES if any(t.startswith(p) for t in target)}
    for k in list(kept):
        if any(k.startswith(p) for p in HEAD_PREFIXES if p not in target_heads):
            report.head.append(k)
            del kept[k]
    unexpected = sorted(outside + [k for k in kept if k not in target])
    missing = sorted(k for k in target if k not in kept and not k.endswith("num_batches_tracked"))
    shapes = []
    for k in sorted(set(kept) & set(target)):
        if kept[k].shape != target[k].shape:
            new = _adapt(k, kept[k], target[k])
            if new is None:
                shapes.append(f"{k}: checkpoint {list(kept[k].shape)} vs model {list(target[k].shape)}")
            else:
                kept[k] = new
                report.adapted.append(k)
    if unexpected or missing or shapes:
        parts = [f"pretrained checkpoint {str(path)!r} (layout {layout!r}) does not match the featurizer"]
        if missing:
            parts.append(f"missing keys ({len(missing)}): {_listing(missing)}")
        if unexpected:
            parts.append(f"unexpected keys ({len(unexpected)}): {_listing(unexpected)}")
        if shapes:
            parts.append(f"shape mismatches ({len(shapes)}): {_listing(shapes)}")
        raise PretrainedKeyError("; ".join(parts))
    for k in target:
        if k not in kept:  # num_batches_tracked only
            kept[k] = target[k]
            report.filled.append(k)
    target_module.load_state_dict({k: kept[k] for k in target}, strict=True)
    report.loaded = sorted(k for k in target if k not in report.filled)
    log.info("loaded %d tensors from %s (layout %s; head dropped: %d; ignored: %d; adapted: %s)",
             len(report.loaded), path, layout, len(report.head), len(ignored), report.adapted)
    return report


def apply_init_hparams(featurizer: nn.Module, hparams: Mapping[str, Any]) -> nn.Module:
    """The hook :func:`dganalysis.nets.build_featurizer` calls: load ``pretrained`` (a path, or
    ``imagenet[:<weights>]`` for torchvision's cached file, see :mod:`dganalysis.nets.torchhub`; layout
    ``pretrained_layout``), then freeze (``linear_probe`` → whole featurizer, else the first
    ``freeze_stages`` stages; see :mod:`dganalysis.nets.freeze`). Returns ``featurizer``."""
    hparams = HParams.of(hparams)
    spec = hparams["pretrained"]
    if spec:
        path = resolve_pretrained(spec, getattr(featurizer, "arch", None))
        load_pretrained(featurizer, path, str(hparams["pretrained_layout"]))
    if bool(hparams["linear_probe"]):
        freeze_featurizer(featurizer)
    elif int(hparams["freeze_stages"] or 0) > 0:
        freeze_stages(featurizer, int(hparams["freeze_stages"]))
    return featurizer


def state_dict_bytes(state: Mapping[str, Any]) -> bytes:
    """``torch.save`` of ``state`` into bytes (for atomic writes with :func:`dganalysis.io.write_bytes`)."""
    buf = _io.BytesIO()
    torch.save(dict(state), buf)
    return buf.getvalue()
