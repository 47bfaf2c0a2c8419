"""DomainBed's debug datasets by name: ``Debug28`` and ``Debug224`` (Gulrajani & Lopez-Paz 2021, ``datasets.Debug``).

**Simulated data** (random values, no images). DomainBed's ``Debug`` makes three environments ``'0'``, ``'1'``,
``'2'``, each 16 samples of shape ``INPUT_SHAPE`` (3 × 28 × 28 or 3 × 224 × 224) drawn with ``torch.randn`` and
labels with ``torch.randint(0, 2, (16,))`` (two classes), environment after environment, from torch's global
generator (seeded by DomainBed's ``train.py`` with its ``--seed`` before the dataset is built).

Ours draws the very same sequence from a ``torch.Generator`` seeded with ``seed`` (DomainBed's sequence after
``torch.manual_seed(seed)``), so the labels are DomainBed's exactly. Images are stored as uint8, as every
:class:`~dganalysis.data.dataset.DomainDataset`: the standard normal values z become ``clip(round(128 + 32 z), 0,
255)`` (±4 standard deviations), and training reads them as value / 255 (our plain pipeline, no augmentation), so
the inputs are DomainBed's values up to this affine map and the rounding, not the floats themselves (the
``domainbed_exact`` mode, :mod:`dganalysis.training.exact`, trains on DomainBed's floats themselves, drawn on the global
generator after DomainBed's seeding: :meth:`DebugDataset.draws` with ``seed=None``). Classes are
named ``'0'`` and ``'1'``. ``Debug28`` draws in DomainBed's small-image regime (its ``SMALL_IMAGES``), ``Debug224``
in the large-image one; both have DomainBed's default ``CHECKPOINT_FREQ`` of 100.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.registry import register_dataset
from dganalysis.validation import ConfigError

ENVIRONMENTS = ("0", "1", "2")  #: DomainBed's ``Debug28.ENVIRONMENTS`` / ``Debug224.ENVIRONMENTS``
N_PER_ENV = 16  #: DomainBed's samples per environment
N_CLASSES = 2
SCALE = 32.0  #: uint8 value = 128 + SCALE · z, clipped


def to_uint8(z: torch.Tensor) -> np.ndarray:
    """DomainBed's standard normal values as stored here: ``clip(round(128 + 32 z), 0, 255)``."""
    return torch.round(128.0 + SCALE * z).clamp(0, 255).to(torch.uint8).numpy()


@dataclass(frozen=True)
class DebugDataset:
    """DomainBed's ``Debug28``/``Debug224`` (see the module doc)."""

    name: str
    input_shape: tuple[int, int, int]
    small_images: bool  # read by dganalysis.training.hparams.is_small_images
    checkpoint_freq = 100

    def draws(self, seed: int | None = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """DomainBed's (x float[16, *shape], y int64[16]) per environment, as drawn after ``torch.manual_seed(seed)``;
        ``seed`` None: drawn on torch's global generator, where the caller left it (``domainbed_exact`` mode, which
        seeds it as DomainBed's ``train.py`` does and needs the global stream moved past these draws)."""
        gen = None if seed is None else torch.Generator().manual_seed(int(seed))
        return [(torch.randn(N_PER_ENV, *self.input_shape, generator=gen),
                 torch.randint(0, N_CLASSES, (N_PER_ENV,), generator=gen)) for _ in ENVIRONMENTS]

    def __call__(self, seed: int = 0, data_dir: str | Path | None = None) -> DomainDataset:
        """The dataset (built in memory, nothing cached: 48 samples); ``data_dir`` is accepted and unused."""
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise ConfigError(f"dataset {self.name!r}: seed={seed!r}, expected an int")
        domains = [Domain(env, to_uint8(x), y.numpy()) for env, (x, y) in zip(ENVIRONMENTS, self.draws(seed))]
        info = {"source": f"simulated: DomainBed's {self.name} (torch.randn / torch.randint, seed {int(seed)}), "
                          f"values stored as clip(round(128 + {SCALE:g} z))", "simulated": True,
                "checkpoint_freq": self.checkpoint_freq}
        return DomainDataset(self.name, [str(k) for k in range(N_CLASSES)], domains, info)


DEBUG: dict[str, DebugDataset] = {d.name: d for d in (
    DebugDataset("Debug28", (3, 28, 28), small_images=True),
    DebugDataset("Debug224", (3, 224, 224), small_images=False),
)}

for _name, _ds in DEBUG.items():
    register_dataset(_name)(_ds)
