"""FAKE weight files in each published layout (random tensors, the real names and shapes).

The names are built here from each publisher's own module structure (torchvision's ResNet/ViT names as the
base; MoCo's ``module.encoder_q``/``encoder_k`` wrapper and MLP head; MoCo-v3's timm ViT names under
``module.base_encoder``/``momentum_encoder`` with its 3-layer projector ``head`` and ``predictor``; Separius'
SimCLR-v2 ``net.{stage}.blocks.{block}.net.{op}`` modules), independently of the loader's renaming table, so
``tests/nets/test_published.py`` can check that the loader maps every one of them onto our networks.
The momentum encoders share the query encoder's tensors (``torch.save`` stores a shared storage once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import torch

from dganalysis import io
from dganalysis.nets.published import PUBLISHED

State = dict[str, torch.Tensor]


def _randomise(sd: Mapping[str, torch.Tensor], seed: int) -> State:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for k, v in sd.items():
        if not v.is_floating_point():
            out[k] = v.clone()
        elif k.endswith("running_var"):
            out[k] = torch.rand(v.shape, generator=g) + 0.5
        else:
            out[k] = torch.randn(v.shape, generator=g) * 0.02
    return out


def torchvision_state(arch: str, seed: int = 0) -> State:
    """Random tensors under torchvision's names for ``arch`` (resnet18/50, vit_b_16), ``fc``/``heads`` included."""
    from dganalysis.compat import torchvision

    with torch.device("meta"):
        net = getattr(torchvision().models, arch)(weights=None)
    return _randomise({k: torch.empty(v.shape, dtype=v.dtype) for k, v in net.state_dict().items()}, seed)


def _mlp(prefix: str, dims: list[int], bn: bool = False) -> State:
    out: State = {}
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        j = 3 * i if bn else 2 * i
        out[f"{prefix}{j}.weight"] = torch.randn(b, a) * 0.02
        if bn:
            out.update({f"{prefix}{j + 1}.weight": torch.ones(b), f"{prefix}{j + 1}.bias": torch.zeros(b),
                        f"{prefix}{j + 1}.running_mean": torch.zeros(b), f"{prefix}{j + 1}.running_var": torch.ones(b)})
        else:
            out[f"{prefix}{j}.bias"] = torch.zeros(b)
    return out


def moco_checkpoint(sd: State, v2: bool) -> dict:
    """MoCo (v1: linear ``fc`` 2048→128) / MoCo-v2 (MLP ``fc.0``, ``fc.2``) as main_moco.py saves it."""
    body = {k: v for k, v in sd.items() if not k.startswith("fc.")}
    width = sd["fc.weight"].shape[1]
    head = _mlp("fc.", [width, width, 128]) if v2 else {"fc.weight": torch.randn(128, width), "fc.bias": torch.zeros(128)}
    enc = {**body, **head}
    return {"epoch": 800 if v2 else 200, "arch": "resnet50", "optimizer": {},
            "state_dict": {**{f"module.encoder_q.{k}": v for k, v in enc.items()},
                           **{f"module.encoder_k.{k}": v for k, v in enc.items()},
                           "module.queue": torch.randn(128, 16), "module.queue_ptr": torch.zeros(1, dtype=torch.long)}}


def simclr_v2_checkpoint(sd: State) -> dict:
    """Separius' SimCLR-v2 conversion: ``{"resnet": ResNet.state_dict(), "head": ContrastiveHead.state_dict()}``."""
    def bn(dst: str, src: str) -> State:
        return {f"{dst}.{p}": sd[f"{src}.{p}"] for p in ("weight", "bias", "running_mean", "running_var",
                                                          "num_batches_tracked")}

    res: State = {"net.0.0.weight": sd["conv1.weight"], **bn("net.0.1.0", "bn1")}
    for stage in range(1, 5):
        n_blocks = len({k.split(".")[1] for k in sd if k.startswith(f"layer{stage}.")})
        for b in range(n_blocks):
            src, dst = f"layer{stage}.{b}", f"net.{stage}.blocks.{b}"
            for op, (conv, norm) in enumerate((("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3"))):
                res[f"{dst}.net.{2 * op}.weight"] = sd[f"{src}.{conv}.weight"]
                res.update(bn(f"{dst}.net.{2 * op + 1}.0", f"{src}.{norm}"))
            if f"{src}.downsample.0.weight" in sd:
                res[f"{dst}.projection.shortcut.weight"] = sd[f"{src}.downsample.0.weight"]
                res.update(bn(f"{dst}.projection.bn.0", f"{src}.downsample.1"))
    res.update({"fc.weight": sd["fc.weight"], "fc.bias": sd["fc.bias"]})
    width = sd["fc.weight"].shape[1]
    return {"resnet": res, "head": _mlp("layers.", [width, width, width, 128], bn=True)}


def timm_vit_names(tv: State) -> State:
    """torchvision ``vit_b_16`` names → timm ``VisionTransformer`` names (MoCo-v3's ``vits.py`` subclasses it)."""
    out: State = {}
    for k, v in tv.items():
        parts = k.split(".")
        if k == "class_token":
            out["cls_token"] = v
        elif k == "encoder.pos_embedding":
            out["pos_embed"] = v
        elif parts[0] == "conv_proj":
            out[f"patch_embed.proj.{parts[-1]}"] = v
        elif parts[:2] == ["encoder", "ln"]:
            out[f"norm.{parts[-1]}"] = v
        elif parts[:2] == ["encoder", "layers"]:
            i = parts[2].rsplit("_", 1)[1]
            mod = {"ln_1": "norm1", "ln_2": "norm2"}.get(parts[3])
            if mod:
                out[f"blocks.{i}.{mod}.{parts[-1]}"] = v
            elif parts[3] == "self_attention":
                name = {"in_proj_weight": "qkv.weight", "in_proj_bias": "qkv.bias"}.get(parts[4])
                out[f"blocks.{i}.attn.{name or 'proj.' + parts[-1]}"] = v
            else:  # mlp.0 / mlp.3
                out[f"blocks.{i}.mlp.{'fc1' if parts[4] == '0' else 'fc2'}.{parts[-1]}"] = v
        # heads.* (torchvision's classifier) has no counterpart: MoCo-v3 replaces it by its projector
    return out


def moco_v3_checkpoint(tv: State) -> dict:
    """MoCo-v3 ViT as main_moco.py saves it: base/momentum encoders with the projector ``head``, a predictor."""
    enc = {**timm_vit_names(tv), **_mlp("head.", [768, 4096, 4096, 256], bn=True)}
    return {"epoch": 300, "arch": "vit_base", "optimizer": {},
            "state_dict": {**{f"module.base_encoder.{k}": v for k, v in enc.items()},
                           **{f"module.momentum_encoder.{k}": v for k, v in enc.items()},
                           **{f"module.predictor.{k}": v for k, v in _mlp("", [256, 4096, 256], bn=True).items()}}}


def fid_inception_state(seed: int = 0) -> State:
    """pytorch-fid's ``pt_inception`` file: its FID Inception's state dict (1008 classes, no aux logits)."""
    from pytorch_fid import inception as fid

    with torch.device("meta"):
        net = fid._inception_v3(num_classes=1008, aux_logits=False, weights=None, init_weights=False)
    return _randomise({k: torch.empty(v.shape, dtype=v.dtype) for k, v in net.state_dict().items()}, seed)


#: published entry name → builder of the FAKE file's contents
FAKE: dict[str, Callable[[], object]] = {
    "supervised_resnet18": lambda: torchvision_state("resnet18"),
    "supervised_resnet50": lambda: torchvision_state("resnet50"),
    "supervised_vit_b_16": lambda: torchvision_state("vit_b_16"),
    "moco_v1_resnet50": lambda: moco_checkpoint(torchvision_state("resnet50", 1), v2=False),
    "moco_v2_resnet50": lambda: moco_checkpoint(torchvision_state("resnet50", 2), v2=True),
    "simclr_resnet50": lambda: {"state_dict": torchvision_state("resnet50", 3)},
    "simclr_v2_resnet50": lambda: simclr_v2_checkpoint(torchvision_state("resnet50", 4)),
    "moco_v3_vit_b_16": lambda: moco_v3_checkpoint(torchvision_state("vit_b_16", 5)),
    "fid_inception": fid_inception_state,
}


def write_fake_weights(folder: str | Path, names: list[str] | None = None) -> dict[str, Path]:
    """Write a FAKE file for each published entry (default: all) under its published file name; atomic writes."""
    from dganalysis.nets.pretrained import state_dict_bytes

    out = {}
    for name in names or sorted(FAKE):
        path = Path(folder) / PUBLISHED.get(name).file
        if not path.is_file():
            io.write_bytes(path, state_dict_bytes(FAKE[name]()))
        out[name] = path
    return out
