"""The weight files the papers' authors publish, by name: file name, architecture, layout, where to get it.

Yu et al. (2024, Sec. 2.1, Tables 1-3 and 5) initialise from supervised ImageNet weights (ResNet-18/50, ViT-B/16)
and from self-supervised ones (MoCo, MoCo-v2, SimCLR, SimCLR-v2 ResNet-50; MoCo-v3 ViT-B/16); Table 2's FID
uses pytorch-fid's Inception. Nothing is downloaded: a profile's YAML names the local file
(``${weights}/<file name>``, see :mod:`dganalysis.studies.paths`); :func:`howto` turns a missing file's *name* into
how to get it (the dry run and the loader's errors print it). SimCLR's authors publish TensorFlow
checkpoints only; the entries name the published PyTorch conversions (chosen: the two most used converters),
whose key layouts :mod:`dganalysis.nets.pretrained` reads (``torchvision`` for tonylins' SimCLR-v1 conversion,
``simclr_v2`` for Separius' SimCLR-v2 conversion).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dganalysis.registry import Registry


@dataclass(frozen=True)
class WeightFile:
    """One published weight file: ``file`` is the name its authors give it."""

    name: str
    file: str
    arch: str  #: our featurizer name the weights fit (``resnet50``, ``vit_b_16``, …; ``inception`` for FID)
    layout: str  #: the :data:`dganalysis.nets.pretrained.LAYOUTS` entry (or ``pytorch_fid``)
    source: str  #: paper / project
    get: str  #: how to get the file

    def howto(self) -> str:
        return f"{self.name} ({self.source}): {self.get}; put it at <weights>/{self.file}"


PUBLISHED: Registry[WeightFile] = Registry("published weight file")

_TV = "https://download.pytorch.org/models/"
_FB = "https://dl.fbaipublicfiles.com/"
for _w in (
    WeightFile("supervised_resnet18", "resnet18-f37072fd.pth", "resnet18", "torchvision", "torchvision IMAGENET1K_V1",
               f"download {_TV}resnet18-f37072fd.pth (or `torchvision.models.resnet18(weights='IMAGENET1K_V1')` "
               "with $TORCH_HOME set)"),
    WeightFile("supervised_resnet50", "resnet50-0676ba61.pth", "resnet50", "torchvision",
               "torchvision IMAGENET1K_V1 (DomainBed's default)", f"download {_TV}resnet50-0676ba61.pth"),
    WeightFile("supervised_vit_b_16", "vit_b_16-c867db91.pth", "vit_b_16", "torchvision", "torchvision IMAGENET1K_V1",
               f"download {_TV}vit_b_16-c867db91.pth"),
    WeightFile("moco_v1_resnet50", "moco_v1_200ep_pretrain.pth.tar", "resnet50", "moco_v2", "He et al. 2020 (MoCo)",
               f"download {_FB}moco/moco_checkpoints/moco_v1_200ep/moco_v1_200ep_pretrain.pth.tar "
               "(github.com/facebookresearch/moco)"),
    WeightFile("moco_v2_resnet50", "moco_v2_800ep_pretrain.pth.tar", "resnet50", "moco_v2", "Chen et al. 2020 (MoCo-v2)",
               f"download {_FB}moco/moco_checkpoints/moco_v2_800ep/moco_v2_800ep_pretrain.pth.tar "
               "(github.com/facebookresearch/moco)"),
    WeightFile("simclr_resnet50", "resnet50-1x.pth", "resnet50", "torchvision", "Chen et al. 2020 (SimCLR)",
               "convert the TF checkpoint ResNet50_1x of github.com/google-research/simclr with "
               "github.com/tonylins/simclr-converter (`python convert.py ResNet50_1x/model.ckpt-225206 resnet50-1x.pth`)"),
    WeightFile("simclr_v2_resnet50", "r50_1x_sk0.pth", "resnet50", "simclr_v2", "Chen et al. 2020 (SimCLR-v2)",
               "`python download.py r50_1x_sk0 && python convert.py r50_1x_sk0/model.ckpt-250228` in "
               "github.com/Separius/SimCLRv2-Pytorch"),
    WeightFile("moco_v3_vit_b_16", "vit-b-300ep.pth.tar", "vit_b_16", "moco_v3", "Chen, Xie & He 2021 (MoCo-v3)",
               f"download {_FB}moco-v3/vit-b-300ep/vit-b-300ep.pth.tar (github.com/facebookresearch/moco-v3)"),
    WeightFile("fid_inception", "pt_inception-2015-12-05-6726825d.pth", "inception", "pytorch_fid",
               "pytorch-fid 0.3.0 (Heusel et al. 2017's TF Inception, ported)",
               "download https://github.com/mseitzer/pytorch-fid/releases/download/fid_weights/"
               "pt_inception-2015-12-05-6726825d.pth"),
):
    PUBLISHED.register(_w.name)(_w)


def by_file(path: str | Path) -> WeightFile | None:
    """The published entry whose file name is ``path``'s name (None when it is no published file)."""
    name = Path(str(path)).name
    return next((PUBLISHED.get(n) for n in PUBLISHED.names() if PUBLISHED.get(n).file == name), None)


def howto(path: str | Path) -> str:
    """How to get the file at ``path`` when it is a published one, else ''."""
    w = by_file(path)
    return w.howto() if w else ""
