"""Pretraining sources built from the embedded data.

:func:`rotated_digits_source` makes the "supervised source resembling the test domain" of the
leakage study on RotatedDigits (Yu et al., 2024, Sec. 2.1 analogue: ImageNet photos resemble the
photo-like test domains): the *training-domain* images' base digits (no test image is reused),
rotated by random angles drawn from ``angle_range`` — the test domains' angles — with labels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from dganalysis.data.dataset import DomainDataset


def rotated_digits_source(
    dataset: DomainDataset, domains: Sequence[str], angle_range: tuple[float, float], copies: int = 1, seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8[N, 1, S, S], labels) — ``domains``' base digits rotated by U(``angle_range``) degrees.

    Needs the ``source_index`` metadata of :func:`dganalysis.data.digits.rotated_digits` (scikit-learn digits).
    """
    from dganalysis.data.digits import sklearn_digits

    by_name = {d.name: d for d in dataset.domains}
    missing = [d for d in domains if d not in by_name]
    if missing:
        raise KeyError(f"domains {missing} not in dataset {dataset.name!r}; known: {list(by_name)}")
    if any("source_index" not in by_name[d].meta for d in domains):
        raise ValueError(f"dataset {dataset.name!r}: domains need 'source_index' metadata (RotatedDigits)")
    size = int(by_name[domains[0]].images.shape[-1])
    base, labels = sklearn_digits(size)
    idx = np.concatenate([by_name[d].meta["source_index"] for d in domains])
    idx = np.tile(idx, copies)
    rng = np.random.RandomState(seed)
    angles = rng.uniform(angle_range[0], angle_range[1], size=len(idx))
    imgs = np.stack([np.asarray(Image.fromarray(base[i]).rotate(float(a), resample=Image.BILINEAR))
                     for i, a in zip(idx, angles)])
    return imgs[:, None], labels[idx]
