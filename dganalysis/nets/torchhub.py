"""torchvision's ImageNet weight files, found in the local torch hub cache (never downloaded).

``pretrained: imagenet`` (or ``imagenet:<weights>``, e.g. ``imagenet:IMAGENET1K_V2``) names the file
torchvision itself would download for the featurizer's architecture, looked up in
``torch.hub.get_dir()/checkpoints`` — ``$TORCH_HOME/hub/checkpoints`` (default ``~/.cache/torch``).
DomainBed (Gulrajani & Lopez-Paz, 2021, ``networks.ResNet``) uses ``resnet50(pretrained=True)``,
i.e. ``IMAGENET1K_V1``, our default. File names come from torchvision's weight enums, so they are
those of the installed torchvision (e.g. ``resnet18-f37072fd.pth``, ``resnet50-0676ba61.pth``,
``vit_b_16-c867db91.pth``).
"""

from __future__ import annotations

from pathlib import Path

import torch

#: our architecture name → torchvision's weights enum
WEIGHT_ENUMS = {"resnet18": "ResNet18_Weights", "resnet50": "ResNet50_Weights", "vit_b_16": "ViT_B_16_Weights"}
DEFAULT_WEIGHTS = "IMAGENET1K_V1"
WEIGHTS_PREFIX = "imagenet"


def hub_checkpoint_dir() -> Path:
    """Where torchvision caches weight files: ``torch.hub.get_dir()/checkpoints`` (follows ``$TORCH_HOME``)."""
    return Path(torch.hub.get_dir()) / "checkpoints"


def torchvision_weights_file(arch: str, weights: str = DEFAULT_WEIGHTS) -> Path:
    """The path torchvision would store ``arch``'s ``weights`` at (whether or not it exists)."""
    from dganalysis.compat import torchvision

    if arch not in WEIGHT_ENUMS:
        raise ValueError(f"hparam 'pretrained': no torchvision ImageNet weights for featurizer {arch!r}; "
                         f"known: {sorted(WEIGHT_ENUMS)}")
    enum = getattr(torchvision().models, WEIGHT_ENUMS[arch])
    try:
        entry = enum[weights]
    except KeyError:
        raise ValueError(f"hparam 'pretrained': {arch} has no weights {weights!r}; "
                         f"known: {[w.name for w in enum]}") from None
    return hub_checkpoint_dir() / entry.url.rsplit("/", 1)[-1]


def is_hub_spec(spec: str) -> bool:
    """True for ``imagenet`` / ``imagenet:<weights>``."""
    return spec == WEIGHTS_PREFIX or spec.startswith(WEIGHTS_PREFIX + ":")


def resolve_pretrained(spec: str | Path, arch: str | None) -> Path:
    """A checkpoint path from the ``pretrained`` hparam: ``imagenet[:<weights>]`` → torchvision's cached
    file for ``arch`` (which must exist: no downloads); anything else is a path."""
    spec = str(spec)
    if not is_hub_spec(spec):
        return Path(spec).expanduser()
    if arch is None:
        raise ValueError(f"hparam 'pretrained': {spec!r} needs a torchvision architecture; known: {sorted(WEIGHT_ENUMS)}")
    weights = spec.split(":", 1)[1] if ":" in spec else DEFAULT_WEIGHTS
    path = torchvision_weights_file(arch, weights)
    if not path.is_file():
        raise FileNotFoundError(
            f"hparam 'pretrained': {spec!r} for {arch} expects torchvision's weight file {path} "
            f"(set $TORCH_HOME to the cache holding hub/checkpoints/{path.name}, or copy the file there; on a machine "
            f"with internet `torchvision.models.{arch}(weights={weights!r})` downloads it into its own cache)"
        )
    return path
