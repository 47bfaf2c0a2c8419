"""FID features through pytorch-fid (Heusel et al. 2017; Seitzer's port, ``pytorch-fid==0.3.0``), weights local.

Yu et al. (2024, Table 2) report each domain's FID to ImageNet. pytorch-fid's ``InceptionV3`` builds the FID
Inception and fetches ``pt_inception-2015-12-05-6726825d.pth`` from GitHub; here the file is read from a local
path instead (chosen: pytorch-fid's own network and preprocessing — inputs in [0, 1], bilinear resize to 299,
scaled to [-1, 1] — with its download replaced by ``torch.load`` of that path; nothing is downloaded). A missing
file is an error naming the expected file name and where to get it.
"""

from __future__ import annotations

import os
from pathlib import Path
from unittest import mock

import torch

from dganalysis.nets.published import PUBLISHED
from dganalysis.validation import ConfigError, check_path, describe

FID_FILE = PUBLISHED.get("fid_inception").file


def is_pytorch_fid_file(path: str | Path) -> bool:
    """True when ``path`` is named like pytorch-fid's Inception weights (``pt_inception-2015-12-05-*.pth``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError(f"is_pytorch_fid_file: parameter 'path': expected a file path, got {describe(path)}")
    return Path(str(path)).name.startswith("pt_inception-2015-12-05")


def fid_inception(weights_path: str | Path) -> torch.nn.Module:
    """pytorch-fid's FID InceptionV3 (2048-d pool3 block) with the weights read from ``weights_path``."""
    check_path(weights_path, "weights_path", func="fid_inception", kind="file")
    from dganalysis.compat import torchvision

    torchvision()  # the project's torchvision shim, before pytorch_fid imports torchvision
    from pytorch_fid import inception as fid

    path = Path(weights_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"FID Inception weights {str(path)!r} do not exist (expected pytorch-fid's file "
                                f"{FID_FILE}; {PUBLISHED.get('fid_inception').howto()})")

    def local(url: str, *args, **kwargs) -> dict:
        return torch.load(path, map_location="cpu", weights_only=True)

    with mock.patch.object(fid, "load_state_dict_from_url", local):
        net = fid.InceptionV3([fid.InceptionV3.BLOCK_INDEX_BY_DIM[2048]], resize_input=True, normalize_input=True)
    return net.eval()


class PoolFeatures(torch.nn.Module):
    """``fid_inception``'s pool3 features as an (N, 2048) tensor, for :class:`~dganalysis.protocols.leakage.FeatureExtractor`."""

    def __init__(self, net: torch.nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)[0].flatten(1)
