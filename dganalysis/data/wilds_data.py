"""DomainBed's WILDS benchmarks by name: ``WILDSCamelyon`` (and ``WILDSFMoW``), read through the ``wilds`` package.

As DomainBed (Gulrajani & Lopez-Paz, 2021, ``datasets.WILDSDataset``): the ``wilds`` dataset is opened at the
user's root (``download=False``: no downloads here), every value of one metadata field is an environment, in
sorted order (``hospital_0`` … ``hospital_4`` for Camelyon17; ``region_0`` … ``region_5`` for FMoW), labels
are ``y_array``. The files are packed as the folder benchmarks' are (:mod:`dganalysis.data.encoded`), and
DomainBed's WILDS transforms resize to 224 × 224 *before* the random resized crop, so the crop frame is recorded
as square (``square_frame``). Large-image datasets (``small_images = False``). Needs ``pip install wilds==2.0.0``.

``max_per_env`` keeps at most that many samples of each environment (a seeded uniform draw, ``subsample_seed``,
in file order) *before* anything is packed or decoded: Camelyon17-WILDS has ~450k patches, and the shift map of
Ye et al. (2022, Fig. 3 / Table 1) needs only a few thousand per hospital. The subset is part of the
cache key and recorded in ``info["max_per_env"]``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dganalysis.data.dataset import DomainDataset
from dganalysis.data.encoded import EncodedDataset, pack_files
from dganalysis.data.registry import ROOT_HINT, register_dataset, resolve_data_dir
from dganalysis.validation import ConfigError, MissingInputError

HOWTO = ("get the data with `python -m dganalysis.scripts.download --data_dir <root> --datasets {name}`, which calls "
         "`wilds.get_dataset('{ds}', root_dir='<root>', download=True)` "
         "on a machine with internet (needs `pip install wilds==2.0.0`)")


@dataclass(frozen=True)
class WildsBenchmark:
    """A WILDS dataset split into environments by one metadata field, as DomainBed does."""

    name: str
    wilds_name: str  #: the name ``wilds.get_dataset`` takes
    folder: str  #: ``<wilds_name>_v<version>`` under the root
    metadata: str  #: the field whose values are the environments
    environments: tuple[str, ...]
    checkpoint_freq: int = 300

    small_images = False  # read by dganalysis.training.hparams.is_small_images: DomainBed's large-image regime

    def locate(self, root) -> Path:
        """``root/<wilds_name>_v<version>``; a missing one raises naming the folder and how to get the data."""
        howto = HOWTO.format(ds=self.wilds_name, name=self.name)
        if root is None:
            raise ConfigError(f"dataset {self.name!r} needs root= the WILDS data folder (holding {self.folder}/; "
                             f"{ROOT_HINT}); {howto}")
        folder = Path(root).expanduser() / self.folder
        if not folder.is_dir():
            raise MissingInputError(f"dataset {self.name!r}: folder {folder} not found; {howto}")
        return folder

    def open(self, root):
        """The ``wilds`` dataset at ``root`` (a clear error when the package or the folder is missing)."""
        self.locate(root)
        os.environ.setdefault("OUTDATED_IGNORE", "1")  # `wilds` asks PyPI for its latest version on import otherwise
        try:
            import wilds
        except ImportError as e:
            raise ImportError(f"dataset {self.name!r} reads its data through the `wilds` package: "
                              f"pip install wilds==2.0.0 ({e})") from e
        return wilds.get_dataset(dataset=self.wilds_name, root_dir=str(Path(root).expanduser()), download=False)

    def files(self, ds) -> list[Path]:
        """Each sample's image file (the paths ``get_input`` opens)."""
        if self.wilds_name == "camelyon17":
            return [Path(ds.data_dir) / p for p in ds._input_array]
        if self.wilds_name == "fmow":
            return [Path(ds.root) / "images" / f"rgb_img_{i}.png" for i in ds.full_idxs]
        raise ValueError(f"dataset {self.name!r}: no file listing for wilds dataset {self.wilds_name!r}")

    def __call__(self, root=None, image_size: int = 224, storage: str = "encoded", data_dir=None,
                 workers: int = 4, max_per_env: int | None = None,
                 subsample_seed: int = 0) -> EncodedDataset | DomainDataset:
        if storage not in ("encoded", "arrays"):
            raise ConfigError(f"dataset {self.name!r}: storage={storage!r}, expected 'encoded' or 'arrays'")
        if max_per_env is not None and int(max_per_env) < 1:
            raise ConfigError(f"dataset {self.name!r}: max_per_env={max_per_env}, expected >= 1 or None (all samples)")
        ds = self.open(root)
        col = ds.metadata_fields.index(self.metadata)
        values = ds.metadata_array[:, col]
        envs = sorted(set(values.tolist()))
        names = [f"{self.metadata}_{v}" for v in envs]
        if tuple(names) != self.environments:
            raise ConfigError(f"dataset {self.name!r}: environments {names} in {root}, DomainBed's are {list(self.environments)}")
        files, labels = self.files(ds), ds.y_array.tolist()
        index = {n: (values == v).nonzero()[:, 0].numpy() for n, v in zip(names, envs)}
        if max_per_env is not None:
            index = {n: cap_index(idx, int(max_per_env), [subsample_seed, k]) for k, (n, idx) in enumerate(index.items())}
        listing = {n: [(files[i], int(labels[i])) for i in idx.tolist()] for n, idx in index.items()}
        from dganalysis.data.folder import _fingerprint

        opts: dict = {"benchmark": self.name, "image_size": int(image_size)}
        if max_per_env is not None:  # keeps the cache keys of uncapped datasets as they were
            opts.update(max_per_env=int(max_per_env), subsample_seed=int(subsample_seed))
        key = _fingerprint([f for items in listing.values() for f, _ in items], opts)
        cache = resolve_data_dir(data_dir) / "imported" / f"{self.name}-{key}"
        info = {"source": f"WILDS {self.wilds_name} at {root}", "benchmark": self.name, "pipeline": "domainbed",
                "checkpoint_freq": self.checkpoint_freq}
        if max_per_env is not None:
            info.update(max_per_env=int(max_per_env), subsample_seed=int(subsample_seed))
        if (cache / "encoded" / "manifest.json").is_file():
            enc = EncodedDataset.load(cache / "encoded")
        else:
            classes = [str(c) for c in range(int(ds.n_classes))]
            enc = pack_files(cache / "encoded", self.name, classes, listing, int(image_size), info, square_frame=True)
        if storage == "encoded":
            return enc
        if not (cache / "arrays" / "manifest.json").is_file():
            enc.to_arrays(workers).save(cache / "arrays")
        return DomainDataset.load(cache / "arrays")


def cap_index(index: np.ndarray, cap: int, seed) -> np.ndarray:
    """At most ``cap`` entries of ``index``: a uniform draw without replacement (``numpy`` generator seeded with
    ``seed``), kept in their original order; ``index`` itself when it is no longer than ``cap``."""
    index = np.asarray(index)
    if len(index) <= cap:
        return index
    keep = np.random.default_rng(seed).choice(len(index), size=cap, replace=False)
    return index[np.sort(keep)]


WILDS_BENCHMARKS = {b.name: b for b in (
    WildsBenchmark("WILDSCamelyon", "camelyon17", "camelyon17_v1.0", "hospital", tuple(f"hospital_{i}" for i in range(5))),
    WildsBenchmark("WILDSFMoW", "fmow", "fmow_v1.1", "region", tuple(f"region_{i}" for i in range(6))),
)}

for _name, _bench in WILDS_BENCHMARKS.items():
    register_dataset(_name)(_bench)
