"""What a job costs: the throughput table (:data:`THROUGHPUT_YAML`, training images per second per network and image
size, measured on the CPU and published for GPUs, each figure with its source) and one job's estimate from it
(:func:`job_cost`). The dry run (:mod:`dganalysis.studies.dryrun`) sums these estimates per notebook; the sweep
launcher orders its jobs by them (:mod:`dganalysis.sweep.order`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dganalysis.validation import ConfigError, MissingInputError

THROUGHPUT_YAML = Path(__file__).with_name("throughput.yaml")
#: image side of each built-in dataset when ``image_size`` is not given (others: 32)
DATASET_IMAGE_SIZES = {"RotatedDigits": 28, "ColoredDigits": 28, "RotatedMNIST": 28, "ColoredMNIST": 28,
                      "RotatedMNIST_Fixed": 28, "ColoredMNIST_Fixed": 28, "PaHCC": 64}


@dataclass
class Throughput:
    """images/s per (featurizer, image size): measured on the CPU; on a GPU, figures others published, each with
    its source (``gpu_notes``: model, GPU, precision, batch and reference, or how a derived one was computed)."""

    cpu: dict[tuple[str, int], float]
    gpu: dict[tuple[str, int], float]
    cpu_source: str
    gpu_source: str
    gpu_notes: dict[tuple[str, int], str] = field(default_factory=dict)
    cross_checks: list[str] = field(default_factory=list)

    def images_per_s(self, featurizer: str, image_size: int, device: str) -> float | None:
        """The figure for ``featurizer`` at ``image_size``, scaled by pixel count from the nearest listed size."""
        table = self.gpu if device == "gpu" else self.cpu
        ref = self._nearest(table, featurizer, image_size)
        return None if ref is None else table[(featurizer, ref)] * (ref / image_size) ** 2

    @staticmethod
    def _nearest(table: Mapping[tuple[str, int], float], featurizer: str, image_size: int) -> int | None:
        sizes = [s for f, s in table if f == featurizer]
        return min(sizes, key=lambda s: abs(s - image_size)) if sizes else None

    def gpu_basis(self, featurizer: str, image_size: int) -> str:
        """Where the GPU figure for ``featurizer`` at ``image_size`` comes from, in words."""
        ref = self._nearest(self.gpu, featurizer, image_size)
        if ref is None:
            return "no published GPU figure"
        note = self.gpu_notes.get((featurizer, ref), "")
        return note + (f"; scaled by pixel count from {ref} to {image_size} px" if ref != image_size else "")


def load_throughput(path: str | Path | None = None) -> Throughput:
    """The throughput table (default ``dganalysis/sweep/throughput.yaml``); errors name the file and key. GPU entries
    need a ``basis`` (``published``: with ``model``, ``gpu``, ``precision``, ``batch``; ``derived``: with ``how``)
    and a ``ref`` among ``gpu.references``; an assumed speed-up factor is refused."""
    path = Path(path) if path is not None else THROUGHPUT_YAML
    try:
        cfg = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        error = MissingInputError if isinstance(e, FileNotFoundError) else ConfigError
        raise error(f"{path}: cannot read the throughput table ({e})") from e

    def entries(section: str) -> dict[tuple[str, int], float]:
        out = {}
        for i, e in enumerate((cfg.get(section) or {}).get("entries") or []):
            try:
                out[(str(e["featurizer"]), int(e["image_size"]))] = float(e["images_per_s"])
            except (KeyError, TypeError, ValueError) as err:
                raise ConfigError(f"{path}: {section}.entries[{i}]: expected featurizer, image_size, images_per_s; "
                                 f"got {e!r}") from err
        return out

    if not isinstance(cfg, Mapping) or "cpu" not in cfg:
        raise ConfigError(f"{path}: expected a mapping with a 'cpu' section (and optionally 'gpu')")
    gpu = cfg.get("gpu") or {}
    if "speedup_over_cpu" in gpu:
        raise ConfigError(f"{path}: gpu.speedup_over_cpu: an assumed CPU-to-GPU factor is no longer accepted; list "
                         "published or measured GPU figures under gpu.entries, each with its source")
    refs = gpu.get("references") or {}
    notes: dict[tuple[str, int], str] = {}
    for i, e in enumerate(gpu.get("entries") or []):
        where = f"{path}: gpu.entries[{i}]"
        basis, ref = e.get("basis"), e.get("ref")
        if ref not in refs:
            raise ConfigError(f"{where}: ref {ref!r} is not one of gpu.references {sorted(refs)}")
        if basis == "published":
            missing = [k for k in ("model", "gpu", "precision", "batch") if e.get(k) in (None, "")]
            if missing:
                raise ConfigError(f"{where}: a published figure needs {missing} (model, gpu, precision, batch)")
            notes[(str(e["featurizer"]), int(e["image_size"]))] = (
                f"published: {e['model']}, {e['gpu']}, {e['precision']}, batch {e['batch']} [{ref}]")
        elif basis == "derived":
            if not e.get("how"):
                raise ConfigError(f"{where}: a derived figure needs 'how' (from which published figure, and how)")
            notes[(str(e["featurizer"]), int(e["image_size"]))] = f"derived: {e['how']} [{ref}]"
        else:
            raise ConfigError(f"{where}: basis {basis!r}; expected 'published' or 'derived'")
    sources = " ".join(str(gpu.get("source", "")).split())
    if refs:
        sources += " References: " + "; ".join(f"[{k}] {' '.join(str(v).split())}" for k, v in refs.items())
    return Throughput(entries("cpu"), entries("gpu"), " ".join(str(cfg["cpu"].get("source", "")).split()),
                      sources, notes, [" ".join(str(c).split()) for c in gpu.get("cross_checks") or []])


@cache
def _network_and_batch(algorithm: str, hparams_seed: int, overrides: str, search: str, dataset: str | None,
                       trial_seed: int, image_size: int) -> tuple[str, int]:
    """The network a job builds (by the rule training uses) and its batch size."""
    from dganalysis.algorithms import default_hparams
    from dganalysis.nets import resolve_featurizer_name

    hp = default_hparams(algorithm, hparams_seed, overrides=json.loads(overrides), search_overrides=json.loads(search),
                         dataset=dataset, trial_seed=trial_seed)
    return resolve_featurizer_name((3, image_size, image_size), hp), int(hp.get("batch_size", 64))


def job_cost(job, throughput: Throughput) -> dict[str, Any]:
    """Featurizer, image size, batch size, training images and estimated hours of one job."""
    size = int(job.dataset_kwargs.get("image_size", DATASET_IMAGE_SIZES.get(job.dataset, 32)))
    featurizer, batch = _network_and_batch(job.algorithm, job.hparams_seed,
                                           json.dumps(job.hparams_overrides, sort_keys=True),
                                           json.dumps(job.search_overrides, sort_keys=True), job.dataset,
                                           job.trial_seed, size)
    images = int(job.steps) * batch * len(job.train_domains)
    row = {"featurizer": featurizer, "image_size": size, "batch_size": batch, "train_images": images}
    for device in ("cpu", "gpu"):
        ips = throughput.images_per_s(featurizer, size, device)
        row[f"{device}_hours"] = images / ips / 3600 if ips else float("nan")
    row["gpu_basis"] = throughput.gpu_basis(featurizer, size)
    return row
