"""Where the ImageNet weights DomainBed downloads are found on this machine (local files only, never downloaded).

DomainBed (Gulrajani & Lopez-Paz, 2021, ``networks.ResNet``/``networks.DinoV2``) starts its 224-px featurizers from
pretrained weights fetched at construction time. We read the same files from the places their libraries cache them:

=====================  ==============================================================================================
DomainBed's network    files looked up, in order
=====================  ==============================================================================================
``resnet50.ram_in1k``  ``$DGANALYSIS_RESNET50_AUGMIX`` (a file); the Hugging Face cache timm uses
(``resnet50_augmix``)  (``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``):
                       ``models--timm--resnet50.ram_in1k/snapshots/*/model.safetensors`` (or ``pytorch_model.bin``);
                       timm's older URL download in ``$TORCH_HOME/hub/checkpoints/resnet50_ram-a26f946b.pth``
ResNet-18 / ResNet-50  torchvision's ``IMAGENET1K_V1`` files (``pretrained=True``) in ``$TORCH_HOME/hub/checkpoints``:
(``resnet18``)         ``resnet18-f37072fd.pth`` / ``resnet50-0676ba61.pth`` (:mod:`dganalysis.nets.torchhub`)
DINOv2 ViT-B/14        weights ``$TORCH_HOME/hub/checkpoints/dinov2_vitb14_pretrain.pth``; the architecture code is the
(``vit`` + ``dinov2``) torch-hub checkout ``$TORCH_HOME/hub/facebookresearch_dinov2_main`` (as ``torch.hub.load`` leaves it)
=====================  ==============================================================================================

``$TORCH_HOME`` defaults to ``~/.cache/torch`` (``torch.hub.get_dir()``). A missing file is a
``FileNotFoundError`` naming every path tried and how to get the file.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from dganalysis.nets.torchhub import hub_checkpoint_dir, torchvision_weights_file

AUGMIX_TIMM_NAME = "resnet50.ram_in1k"
AUGMIX_ENV = "DGANALYSIS_RESNET50_AUGMIX"
AUGMIX_LEGACY_FILE = "resnet50_ram-a26f946b.pth"
DINOV2_FILE = "dinov2_vitb14_pretrain.pth"
DINOV2_REPO_DIR = "facebookresearch_dinov2_main"


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache timm downloads into (``$HF_HUB_CACHE``, ``$HF_HOME/hub``, ``~/.cache/huggingface/hub``)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def augmix_candidates() -> list[Path]:
    """Every place ``resnet50.ram_in1k`` weights are looked for, in order (existing or not)."""
    out: list[Path] = []
    if os.environ.get(AUGMIX_ENV):
        out.append(Path(os.environ[AUGMIX_ENV]).expanduser())
    snap = hf_hub_cache() / "models--timm--resnet50.ram_in1k" / "snapshots"
    found = sorted(snap.glob("*/model.safetensors")) + sorted(snap.glob("*/pytorch_model.bin"))
    out += found or [snap / "<revision>" / "model.safetensors"]
    out.append(hub_checkpoint_dir() / AUGMIX_LEGACY_FILE)
    return out


def _first(paths: list[Path], what: str, how: str) -> Path:
    for p in paths:
        if p.is_file():
            return p
    tried = "; ".join(str(p) for p in paths)
    raise FileNotFoundError(f"{what}: no weight file found (DomainBed downloads it; we never do). Looked for: {tried}. "
                            f"{how} Or set hparam 'pretrained' to a checkpoint path, or to null for random weights.")


def augmix_weights() -> Path:
    """The local file with timm's ``resnet50.ram_in1k`` weights (DomainBed's default ``resnet50_augmix``)."""
    return _first(augmix_candidates(), "DomainBed's featurizer timm 'resnet50.ram_in1k' (resnet50_augmix=True)",
                  f"On a machine with internet: `HF_HOME=<dir> python -c \"import timm; timm.create_model("
                  f"'{AUGMIX_TIMM_NAME}', pretrained=True)\"` and copy <dir>/hub here (or point $HF_HOME at it), or "
                  f"set ${AUGMIX_ENV} to the downloaded model.safetensors.")


def torchvision_resnet_weights(depth: int) -> Path:
    """torchvision's ``IMAGENET1K_V1`` ResNet-``depth`` file (DomainBed's ``resnet{depth}(pretrained=True)``)."""
    path = torchvision_weights_file(f"resnet{depth}", "IMAGENET1K_V1")
    return _first([path], f"DomainBed's featurizer torchvision resnet{depth} (IMAGENET1K_V1)",
                  f"On a machine with internet: `TORCH_HOME=<dir> python -c \"import torchvision; torchvision.models."
                  f"resnet{depth}(weights='IMAGENET1K_V1')\"` and point $TORCH_HOME at <dir>.")


def dinov2_weights() -> Path:
    """DINOv2 ViT-B/14's weight file in the torch hub cache."""
    return _first([hub_checkpoint_dir() / DINOV2_FILE], "DomainBed's featurizer DINOv2 ViT-B/14 (vit=True, dinov2=True)",
                  "On a machine with internet: `TORCH_HOME=<dir> python -c \"import torch; torch.hub.load("
                  "'facebookresearch/dinov2', 'dinov2_vitb14')\"` and point $TORCH_HOME at <dir>.")


def dinov2_repo() -> Path:
    """The local torch-hub checkout of facebookresearch/dinov2 (its architecture code)."""
    path = Path(torch.hub.get_dir()) / DINOV2_REPO_DIR
    if not (path / "hubconf.py").is_file():
        raise FileNotFoundError(
            f"DomainBed's featurizer DINOv2 ViT-B/14 needs the architecture code of facebookresearch/dinov2 at {path} "
            f"(with hubconf.py; torch.hub.load leaves it there). Clone https://github.com/facebookresearch/dinov2 "
            f"into that folder, or point $TORCH_HOME at a cache that has it.")
    return path


def read_state(path: str | Path) -> dict[str, torch.Tensor]:
    """The tensors of a ``.safetensors`` file or a torch checkpoint (unwrapping ``state_dict``/``model``)."""
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return dict(load_file(str(path)))
    from dganalysis.nets.pretrained import read_checkpoint

    return read_checkpoint(path)
