"""The domain names of a dataset by name, without building it where the name alone tells them.

Sweep grids (:mod:`dganalysis.sweep.grid`) and notebook plans (:mod:`dganalysis.studies.plans`) both need a dataset's domain
names before any training: to expand ``"rest"`` test splits, to check split names, to list jobs in a dry run. The
built-in datasets answer from their kwargs (PaHCC at paper scale takes hours to render); any other registered
dataset is built once through the registry. A question about datasets, so it lives with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def domain_names(dataset: str, dataset_kwargs: Mapping[str, Any] | None = None,
                 data_dir: str | Path | None = None) -> list[str]:
    """The domain names of ``dataset`` built with ``dataset_kwargs``; built-in datasets without building them."""
    from dganalysis.data.digits import COLOR_FLIP, ROTATIONS
    from dganalysis.data.pahcc import DOMAINS

    kw = dict(dataset_kwargs or {})
    if dataset in ("RotatedDigits", "RotatedMNIST", "RotatedMNIST_Fixed"):
        return [str(a) for a in kw.get("angles", ROTATIONS)]
    if dataset in ("ColoredDigits", "ColoredMNIST", "ColoredMNIST_Fixed"):
        return [str(k) for k in (kw.get("flips") or COLOR_FLIP)]
    if dataset == "PaHCC":
        return list(DOMAINS)
    from dganalysis.data.benchmarks import BENCHMARKS

    if dataset in BENCHMARKS:  # fixed by the benchmark: known without its files (the dry run on a bare machine)
        return list(BENCHMARKS[dataset].environments)
    from dganalysis.data.wilds_data import WILDS_BENCHMARKS

    if dataset in WILDS_BENCHMARKS:  # DomainBed's environments, checked against the metadata when it is built
        return list(WILDS_BENCHMARKS[dataset].environments)
    if dataset == "CelebA_Blond":  # OoD-Bench's split files, or the subset ``environments=`` names
        from dganalysis.data.celeba import ENVIRONMENTS

        return list(kw.get("environments", ENVIRONMENTS))
    from dganalysis.data.registry import load_dataset

    return load_dataset(dataset, data_dir=data_dir, **kw).domain_names
