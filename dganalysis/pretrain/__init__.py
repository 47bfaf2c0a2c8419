"""In-package pretraining, so the leakage study (Yu et al., 2024, Sec. 2.1) runs without downloads.

- :func:`pretrain_supervised`: a featurizer + linear head trained with cross-entropy on a labelled
  source (the analogue of supervised ImageNet pretraining), saved in the torchvision layout.
- :func:`pretrain_simclr`: SimCLR (Chen et al., 2020) on unlabelled images, NT-Xent loss on two
  batched on-device augmentations, saved in the SimCLR layout (``backbone.*`` + ``projector.*``).

Both write checkpoints :func:`dganalysis.nets.pretrained.load_pretrained` reads; set the
``pretrained`` hparam to the returned path.
"""

from dganalysis.pretrain._loop import PretrainConfig, PretrainResult
from dganalysis.pretrain.augment import two_views
from dganalysis.pretrain.checkpoint import checkpoint_path, save_checkpoint
from dganalysis.pretrain.simclr import nt_xent, pretrain_simclr
from dganalysis.pretrain.sources import rotated_digits_source
from dganalysis.pretrain.supervised import pretrain_supervised

__all__ = ["PretrainConfig", "PretrainResult", "checkpoint_path", "nt_xent", "pretrain_simclr", "pretrain_supervised", "rotated_digits_source",
           "save_checkpoint", "two_views"]
