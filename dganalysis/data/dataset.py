"""DomainDataset: named domains of uint8 images, int64 labels and per-sample metadata.

On disk a dataset is a folder holding ``manifest.json`` plus one ``.npy`` file per
domain and field (``<domain>.images.npy``, ``<domain>.labels.npy``,
``<domain>.meta.<key>.npy``), so arrays can be memory-mapped. The manifest is
written last, atomically: a folder without one is an unfinished build.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dganalysis import io
from dganalysis.validation import ConfigError, MissingInputError, UnknownKeyError

FORMAT_VERSION = 1


@dataclass
class Domain:
    """One domain: ``images`` uint8[N, C, H, W], ``labels`` int64[N], ``meta`` per-sample arrays."""

    name: str
    images: np.ndarray
    labels: np.ndarray
    meta: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.dtype != np.uint8:
            raise ValueError(
                f"domain {self.name!r}: images must be uint8[N, C, H, W], got "
                f"{self.images.dtype}{list(self.images.shape)}"
            )
        self.labels = np.asarray(self.labels, dtype=np.int64)
        if self.labels.shape != (len(self.images),):
            raise ValueError(
                f"domain {self.name!r}: {len(self.images)} images but labels of shape "
                f"{self.labels.shape}"
            )
        for key, values in self.meta.items():
            if len(values) != len(self.images):
                raise ValueError(
                    f"domain {self.name!r}: metadata {key!r} has {len(values)} entries, "
                    f"expected {len(self.images)}"
                )

    def __len__(self) -> int:
        return len(self.labels)

    def select(self, index: np.ndarray) -> Domain:
        """The samples at ``index`` (bool mask or integer indices)."""
        return Domain(
            self.name,
            np.asarray(self.images[index]),
            self.labels[index],
            {k: np.asarray(v[index]) for k, v in self.meta.items()},
        )


class DomainLookup:
    """Lookup shared by the in-memory and the encoded dataset: domains by index or name, class count."""

    name: str
    classes: list[str]
    domains: list

    @property
    def domain_names(self) -> list[str]:
        return [d.name for d in self.domains]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def __getitem__(self, key: int | str):
        if isinstance(key, int):
            return self.domains[key]
        for d in self.domains:
            if d.name == key:
                return d
        raise UnknownKeyError(f"dataset {self.name!r} has no domain {key!r}; domains: {self.domain_names}")

    def __iter__(self):
        return iter(self.domains)

    def __len__(self) -> int:
        return len(self.domains)


@dataclass
class DomainDataset(DomainLookup):
    """A DG dataset: classes shared by all domains, a list of named domains, free-form info.

    ``info`` is JSON-serialisable provenance (source, whether any domain is
    *simulated*, build parameters); it is stored in the manifest.
    """

    name: str
    classes: list[str]
    domains: list[Domain]
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [d.name for d in self.domains]
        if len(set(names)) != len(names):
            raise ValueError(f"dataset {self.name!r}: duplicate domain names {names}")
        shapes = {d.images.shape[1:] for d in self.domains if len(d)}
        if len(shapes) > 1:
            raise ValueError(f"dataset {self.name!r}: domains differ in image shape {shapes}")
        for d in self.domains:
            if len(d) and (d.labels.min() < 0 or d.labels.max() >= len(self.classes)):
                raise ValueError(
                    f"dataset {self.name!r}, domain {d.name!r}: labels outside "
                    f"[0, {len(self.classes)})"
                )

    # ------------------------------------------------------------------ access
    @property
    def input_shape(self) -> tuple[int, int, int]:
        return tuple(self.domains[0].images.shape[1:])  # type: ignore[return-value]

    # ------------------------------------------------------------------ views
    def subset(self, domains: Sequence[str] | None = None, name: str | None = None) -> DomainDataset:
        """The dataset restricted to ``domains`` (in that order)."""
        picked = [self[d] for d in domains] if domains is not None else list(self.domains)
        return DomainDataset(name or self.name, list(self.classes), picked, dict(self.info))

    def map_images(
        self, fn: Callable[[np.ndarray], np.ndarray], name: str, info: dict[str, Any] | None = None
    ) -> DomainDataset:
        """A new dataset with ``fn`` applied to each domain's image array (e.g. binarization)."""
        doms = [Domain(d.name, fn(np.asarray(d.images)), d.labels, dict(d.meta)) for d in self.domains]
        return DomainDataset(name, list(self.classes), doms, {**self.info, **(info or {})})

    def stats(self):
        """A pandas table: samples, classes present, and per-domain image statistics."""
        import pandas as pd

        rows = []
        for d in self.domains:
            rows.append(
                {
                    "domain": d.name,
                    "samples": len(d),
                    "classes": int(len(np.unique(d.labels))) if len(d) else 0,
                    "samples_per_class": len(d) / max(1, len(np.unique(d.labels))),
                }
            )
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ storage
    def save(self, root: str | Path) -> Path:
        """Write arrays then the manifest (atomically, last) into folder ``root``."""
        root = Path(root)
        root.mkdir(parents=True, exist_ok=True)
        doms = []
        for d in self.domains:
            io.write_npy(root / f"{d.name}.images.npy", d.images)
            io.write_npy(root / f"{d.name}.labels.npy", d.labels)
            for key, values in d.meta.items():
                io.write_npy(root / f"{d.name}.meta.{key}.npy", np.asarray(values))
            doms.append({"name": d.name, "samples": len(d), "meta": sorted(d.meta)})
        manifest = {
            "format_version": FORMAT_VERSION,
            "name": self.name,
            "classes": list(self.classes),
            "domains": doms,
            "input_shape": list(self.input_shape) if self.domains else None,
            "info": self.info,
        }
        io.write_json(root / "manifest.json", manifest)
        return root

    @classmethod
    def load(cls, root: str | Path, mmap: bool = True) -> DomainDataset:
        """Read a dataset folder written by :meth:`save` (arrays memory-mapped by default)."""
        root = Path(root)
        mpath = root / "manifest.json"
        if not mpath.is_file():
            raise MissingInputError(f"{mpath}: no dataset manifest (expected a folder written by DomainDataset.save)")
        try:
            manifest = json.loads(mpath.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{mpath}: not valid JSON ({e})") from e
        if manifest.get("format_version") != FORMAT_VERSION:
            raise ConfigError(f"{mpath}: format_version {manifest.get('format_version')!r}, expected {FORMAT_VERSION}")
        mode = "r" if mmap else None
        doms = []
        for spec in manifest["domains"]:
            name = spec["name"]

            def arr(suffix: str, name=name) -> np.ndarray:
                p = root / f"{name}.{suffix}.npy"
                if not p.is_file():
                    raise MissingInputError(f"{p}: missing array listed in {mpath}")
                return np.load(p, mmap_mode=mode, allow_pickle=False)

            meta = {k: arr(f"meta.{k}") for k in spec.get("meta", [])}
            doms.append(Domain(name, arr("images"), arr("labels"), meta))
        return cls(manifest["name"], manifest["classes"], doms, manifest.get("info", {}))


def concat_domains(name: str, parts: Iterable[Domain]) -> Domain:
    """Concatenate several domains' samples under one name (metadata keys must agree)."""
    parts = list(parts)
    if not parts:
        raise ValueError(f"domain {name!r}: nothing to concatenate")
    keys = set(parts[0].meta)
    for p in parts[1:]:
        if set(p.meta) != keys:
            raise ValueError(f"domain {name!r}: metadata keys differ ({sorted(keys)} vs {sorted(p.meta)})")
    return Domain(
        name,
        np.concatenate([p.images for p in parts]),
        np.concatenate([p.labels for p in parts]),
        {k: np.concatenate([p.meta[k] for p in parts]) for k in keys},
    )
