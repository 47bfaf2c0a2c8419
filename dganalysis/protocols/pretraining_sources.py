"""The pretraining sources of the leakage study: its own pretrainings or the published files, and the images the FID
compares with each domain.

Yu et al. (2024, Tables 1-3) fine-tune or linear-probe from the weights their authors publish (ImageNet
supervised, MoCo, SimCLR, …) and measure each test domain's FID to ImageNet (Table 2). On the small digits the
study makes its own pretrainings instead (a supervised source close to the test domains, SimCLR on the
training domains; :func:`own_pretrainings`). The FID reference for published weights is a folder of images
from their pretraining data (``fid_reference``: e.g. a few thousand ImageNet validation images; chosen because
ImageNet itself cannot be shipped); without one, the distance table is skipped and says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dganalysis.data.checks import check_domain_dataset
from dganalysis.validation import check_mapping, check_path, check_scalar, check_str

if TYPE_CHECKING:
    from dganalysis.studies.params import LeakageOracleParams

#: image files read from a ``fid_reference`` folder
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".JPEG")


def own_pretrainings(ds, p: LeakageOracleParams, checkpoints: Mapping[str, Path]) -> dict[str, Any]:
    """The two pretrainings of the digits setting (see the module doc), with ``p``'s training domains, test-like
    angles, source copies, featurizer and pretraining steps, batch size and learning rate, saved to ``checkpoints``
    (:func:`dganalysis.studies.plans.leakage_checkpoints`); returns label → (result, source images)."""
    check_domain_dataset(ds, "ds", func="own_pretrainings")
    if not hasattr(p, "pretrain_domains"):
        from dganalysis.validation import ConfigError, describe

        raise ConfigError(f"own_pretrainings: parameter 'p': expected a LeakageOracleParams (dganalysis.studies.params), got {describe(p)}")
    check_mapping(checkpoints, "checkpoints", func="own_pretrainings", what="a mapping name → checkpoint path")
    from dganalysis.pretrain import PretrainConfig, pretrain_simclr, pretrain_supervised, rotated_digits_source

    sup_x, sup_y = rotated_digits_source(ds, p.pretrain_domains, tuple(p.test_like_angles), copies=p.source_copies,
                                         seed=0)
    unlab_x = np.concatenate([d.images for d in ds.domains if d.name in p.pretrain_domains])
    cfg = PretrainConfig(featurizer=p.featurizer, steps=p.pretrain_steps, batch_size=p.pretrain_batch_size,
                         lr=p.pretrain_lr, seed=0)
    sup = pretrain_supervised(sup_x, sup_y, cfg, n_classes=len(ds.classes), out_path=checkpoints["supervised"])
    ssl = pretrain_simclr(unlab_x, cfg, out_path=checkpoints["simclr"])
    return {"supervised (test-like)": (sup, sup_x), "SimCLR (train domains)": (ssl, unlab_x)}


def domain_images(ds, limit: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """uint8[N, C, H, W] images of each domain (decoded for an encoded benchmark), at most ``limit`` per domain."""
    check_domain_dataset(ds, "ds", func="domain_images")
    check_scalar(limit, "limit", func="domain_images", kind='int', low=1, nullable=True)
    rng = np.random.RandomState(seed)
    out = {}
    for d in ds.domains:
        n = len(d.labels) if hasattr(d, "labels") else len(d)
        idx = np.sort(rng.choice(n, min(n, limit), replace=False)) if limit and n > limit else np.arange(n)
        out[d.name] = d.images[idx] if hasattr(d, "images") else d.decode(idx, ds.image_size)
    return out


def reference_images(folder: str | Path, size: int, limit: int = 2000) -> np.ndarray:
    """uint8[N, 3, size, size] from the image files under ``folder`` (sorted, at most ``limit``)."""
    check_path(folder, "folder", func="reference_images", kind="dir")
    check_scalar(size, "size", func="reference_images", kind='int', low=1)
    check_scalar(limit, "limit", func="reference_images", kind='int', low=1)
    from PIL import Image

    folder = Path(folder).expanduser()
    files = sorted(p for p in folder.rglob("*") if p.suffix in IMAGE_SUFFIXES)[:limit] if folder.is_dir() else []
    if not files:
        raise FileNotFoundError(f"fid_reference {str(folder)!r}: no images ({', '.join(IMAGE_SUFFIXES)}) found; expected "
                                "a folder of images from the pretraining data (e.g. ImageNet validation images)")
    arrs = [np.asarray(Image.open(f).convert("RGB").resize((size, size), Image.BILINEAR)) for f in files]
    return np.stack(arrs).transpose(0, 3, 1, 2).copy()


def distance_to_pretraining(ds, extractor, own_sources: Mapping[str, np.ndarray], published_label: str,
                            fid_reference: str | Path | None, limit: int = 2000):
    """Fréchet distance of each domain to each pretraining's data, wide (reference × domain; Yu et al. Table 2).

    ``own_sources``: label → the images of the study's own pretrainings; without them, the published weights' reference
    is ``fid_reference`` (labelled ``published_label``); neither → an empty table (logged: nothing to compare)."""
    check_domain_dataset(ds, "ds", func="distance_to_pretraining")
    check_mapping(own_sources, "own_sources", func="distance_to_pretraining", what="a mapping label → images")
    check_str(published_label, "published_label", func="distance_to_pretraining")
    import logging

    import pandas as pd

    from dganalysis.protocols.leakage import distance_table

    refs = dict(own_sources) or ({published_label: reference_images(fid_reference, ds.input_shape[-1], limit)}
                                 if fid_reference else {})
    if not refs:
        logging.getLogger(__name__).warning("no fid_reference images: the distance to the pretraining data is skipped")
        return pd.DataFrame(columns=[d.name for d in ds.domains])
    domains = domain_images(ds, limit=None if own_sources else limit)
    dist = pd.concat([distance_table(x, domains, extractor, name) for name, x in refs.items()], ignore_index=True)
    return dist.pivot_table(index="reference", columns="domain", values="distance", sort=False)[list(domains)]
