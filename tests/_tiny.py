"""Test-only helpers of the engine tests: a tiny registered dataset and tiny job settings.

``EngineTiny``: 3 domains × 48 images of 1×16×16, 4 classes. Class c lights quadrant c;
domains differ in background level and noise (domain i: background 20·i, noise σ = 10 + 10·i).
Deterministic in ``seed``. Importable by spawned workers as a file (``imports=[TINY_FILE]``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dganalysis.data import Domain, DomainDataset, register_dataset
from dganalysis.data.registry import DATASETS

TINY_FILE = str(Path(__file__).resolve())
TINY = "EngineTiny"
DOMAINS = ["d0", "d1", "d2"]

# small and fast: MLP featurizer, small batches
FAST_HPARAMS = {"featurizer": "mlp", "batch_size": 8}


def build_tiny(data_dir=None, n_per_domain: int = 48, size: int = 16, seed: int = 0) -> DomainDataset:
    """The tiny dataset (``data_dir`` is accepted and ignored: nothing is cached)."""
    rng = np.random.RandomState(seed)
    domains = []
    h = size // 2
    for i, name in enumerate(DOMAINS):
        labels = np.arange(n_per_domain) % 4
        img = np.full((n_per_domain, 1, size, size), 20.0 * i)
        for k, c in enumerate(labels):
            r, q = divmod(int(c), 2)
            img[k, 0, r * h : (r + 1) * h, q * h : (q + 1) * h] = 220
        img += rng.normal(0, 10 + 10 * i, img.shape)
        domains.append(Domain(name, np.clip(img, 0, 255).astype(np.uint8), labels.astype(np.int64)))
    return DomainDataset(TINY, ["a", "b", "c", "d"], domains, {"source": "simulated (tests)"})


if TINY not in DATASETS:
    register_dataset(TINY)(build_tiny)
