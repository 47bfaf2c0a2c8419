"""Train one job: dataset → in/out splits on the device → algorithm → JSONL checkpoint records.

The loop follows DomainBed's ``train.py`` (Gulrajani & Lopez-Paz, 2021) so its records can
be read by DomainBed-aware tools:

- each domain ``i`` is split into ``out`` (``int(len * holdout_fraction)`` samples) and
  ``in`` (the rest) by shuffling with ``np.random.RandomState(seed_hash(trial_seed, i))``;
- every step draws one minibatch per training domain from its ``in`` split, uniformly
  *with replacement* (DomainBed's ``InfiniteDataLoader`` uses ``RandomSampler(replacement=True)``);
- a checkpoint record is written after the updates of step ``s`` when
  ``s % checkpoint_freq == 0`` or ``s == steps - 1``, with the accuracy on the ``in``
  and ``out`` split of *every* domain (``env{i}_in_acc`` / ``env{i}_out_acc``) and the
  mean of each ``update()`` output over the steps since the previous record.

Unlike DomainBed, the data never go through a ``DataLoader``: every domain's images are
kept as one uint8 tensor on the device, minibatches are gathered with ``torch.randint``
on a seeded ``torch.Generator``, converted to float/255 on the fly, and optionally
augmented in one batched affine warp (hparam ``augment``); DomainBed's image benchmarks get
DomainBed's augmentation and ImageNet normalisation, batched on the device; data larger than the
device are streamed from the host with prefetch (:mod:`dganalysis.data.feed`, recorded as ``data_path``). Evaluation runs in large
batches under ``torch.inference_mode``. On CUDA the job uses bf16 autocast and
channels_last; on CPU channels_last, with bf16 autocast on CPUs that have AMX-bf16 units
(measured ~2.5x faster per job on this project's CPU machines at equal accuracy) and fp32
elsewhere, or as ``precision`` / ``$DGANALYSIS_CPU_PRECISION`` says. A CPU job runs on a torch thread count
fixed when it starts (``threads``; default :func:`dganalysis.threads.fixed_count`) and recorded as ``threads``:
float32 sums depend on the count, so the records are a function of the job and that count, never of the load.

Choices DomainBed leaves implicit: ``epoch = step / steps_per_epoch`` with
``steps_per_epoch = min(len(in split of a *training* domain)) / batch_size`` (DomainBed
takes the minimum over all domains); the torch seed is derived from the job hash, so
different hparam draws also get different initialisations.
"""

from __future__ import annotations

import contextlib
import io as _pyio
import json
import logging
import math
import os
import random
import shutil
import socket
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch.profiler import record_function

from dganalysis import io, provenance, threads
from dganalysis.provenance import cuda_flags
from dganalysis.training.exact import uda_split  # DomainBed's uda split, shared with domainbed_exact
from dganalysis.training.hparams import seed_hash
from dganalysis.training.job import Job
from dganalysis.training.job_draw import job_hparams
from dganalysis.validation import ConfigError, MissingInputError, UnknownKeyError

log = logging.getLogger(__name__)

#: files a job writes into its folder (removed before a rerun)
JOB_OUTPUT_FILES = ("spec.json", "results.jsonl", "model.pt", "done", "failed")
#: record fields that depend on the clock, the machine or where the job folder lives, not on the computation
RUN_FIELDS = ("elapsed", "step_time", "host", "mem_gb", "provenance", "packing")
#: ``args`` entries that say where the run read and wrote (DomainBed's ``data_dir``, ``output_dir``)
RUN_ARGS = ("data_dir", "output_dir")


def computed_part(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` without :data:`RUN_FIELDS` and ``args``' :data:`RUN_ARGS`, key order kept: what the same job must
    reproduce wherever and whenever it runs (its folder, clock and machine aside)."""
    out = {k: v for k, v in record.items() if k not in RUN_FIELDS}
    if isinstance(out.get("args"), Mapping):
        out["args"] = {k: v for k, v in out["args"].items() if k not in RUN_ARGS}
    return out


# --------------------------------------------------------------------------- seeding and splits
def holdout_size(n: int, holdout_fraction: float) -> int:
    """Samples in the ``out`` split of a domain of ``n`` (DomainBed's ``split_dataset``: ``int(n · fraction)``)."""
    return int(n * holdout_fraction)


def split_indices(n: int, holdout_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(in_idx, out_idx)`` of a domain of ``n`` samples, as DomainBed's ``split_dataset``.

    The ``out`` split is the first ``int(n * holdout_fraction)`` keys of a permutation
    shuffled by ``np.random.RandomState(seed)``; the ``in`` split is the rest.
    """
    keys = list(range(n))
    np.random.RandomState(seed).shuffle(keys)
    n_out = holdout_size(n, holdout_fraction)
    return np.asarray(keys[n_out:], dtype=np.int64), np.asarray(keys[:n_out], dtype=np.int64)


def job_seed(job: Job) -> int:
    """The torch seed of a job: a hash of its spec (which includes the trial seed), without the hyperparameter draw
    version (:attr:`dganalysis.training.job.Job.seed_key`: a new drawing rule moves a job to a new folder, not to new seeds)."""
    return seed_hash(job.seed_key, job.trial_seed)


def resolve_device(device: str | torch.device | None = None) -> torch.device:
    """``device`` as given, else CUDA when available, else CPU."""
    if device is not None:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# --------------------------------------------------------------------------- data (on the device or streamed)
def make_splits(
    dataset, holdout_fraction: float, trial_seed: int, device: torch.device, channels_last: bool,
    pipeline=None, seed: int = 0, mode: str | None = None, uda_domains: Sequence[int] = (),
    uda_holdout_fraction: float = 0.0,
):
    """``(in, out)`` splits of every domain of ``dataset``, in domain order: a :class:`dganalysis.data.feed.Feed`
    (on the device, or streamed from the host when the data do not fit; ``mode`` / ``$DGANALYSIS_FEED``). With a
    ``uda_holdout_fraction`` above 0, each domain of ``uda_domains`` (the test domains) whose ``in`` split yields a
    non-empty unlabelled split (:func:`uda_split`) holds ``(in, out, uda)`` instead (:func:`uda_splits`)."""
    from dganalysis.data.feed import make_feed
    from dganalysis.data.pipeline import PlainPipeline

    index = []
    for i, dom in enumerate(dataset.domains):
        in_idx, out_idx = split_indices(len(dom), holdout_fraction, seed_hash(trial_seed, i))
        if i in uda_domains and uda_holdout_fraction > 0:
            in_idx, uda_idx = uda_split(in_idx, uda_holdout_fraction, seed_hash(trial_seed, i))
            if len(uda_idx):
                index.append((in_idx, out_idx, uda_idx))
                continue
        index.append((in_idx, out_idx))
    return make_feed(dataset, index, device, channels_last, pipeline or PlainPipeline(), seed=seed, mode=mode)


def uda_splits(splits) -> list[Any]:
    """The unlabelled ``uda`` splits of :func:`make_splits`' splits, in domain order (DomainBed's ``uda_splits``)."""
    return [entry[2] for entry in splits if len(entry) > 2]


# --------------------------------------------------------------------------- evaluation
@torch.inference_mode()
def accuracy(algorithm, split, batch_size: int = 1024, autocast: bool = False) -> float:
    """Top-1 accuracy of ``algorithm.predict`` on ``split`` (the caller sets eval mode)."""
    if len(split) == 0:
        return float("nan")
    correct = torch.zeros((), dtype=torch.int64, device=split.labels.device)
    dev = split.labels.device.type
    for x, y in split.eval_batches(batch_size):
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=autocast):
            logits = algorithm.predict(x)
        correct += (logits.argmax(1) == y).sum()
    return correct.item() / len(split)


def evaluate(algorithm, splits, batch_size: int, autocast: bool, skip_in: Collection[int] = ()) -> dict[str, float]:
    """``env{i}_in_acc`` and ``env{i}_out_acc`` for every domain, then ``env{k}_uda_acc`` for the k-th unlabelled
    split (:func:`uda_splits`; numbered in their own list, as DomainBed's ``train.py`` names them), in eval mode. An
    algorithm whose predictions depend on the batch (e.g. ARM's support sets) fixes its own evaluation batch size
    (``EVAL_BATCH_SIZE``). ``skip_in``: domains whose ``in`` split is not evaluated, and so has no key
    (:meth:`Job.unevaluated_in_splits`)."""
    batch_size = getattr(algorithm, "EVAL_BATCH_SIZE", None) or batch_size
    was_training = algorithm.training
    algorithm.eval()
    try:
        with record_function("dganalysis.evaluate"):  # a label for bench/train_throughput.py --profile
            res = {}
            for i, (in_split, out_split, *_) in enumerate(splits):
                if i not in skip_in:
                    res[f"env{i}_in_acc"] = accuracy(algorithm, in_split, batch_size, autocast)
                res[f"env{i}_out_acc"] = accuracy(algorithm, out_split, batch_size, autocast)
            for k, uda in enumerate(uda_splits(splits)):
                res[f"env{k}_uda_acc"] = accuracy(algorithm, uda, batch_size, autocast)
        return res
    finally:
        algorithm.train(was_training)


# --------------------------------------------------------------------------- job helpers
def domain_indices(names: Sequence[str], all_names: Sequence[str], role: str) -> list[int]:
    """Indices of ``names`` in the dataset's domain order (unknown names are an error)."""
    missing = [n for n in names if n not in all_names]
    if missing:
        raise UnknownKeyError(f"job {role}_domains: unknown domains {missing}; the dataset has {list(all_names)}")
    return [list(all_names).index(n) for n in names]


def clear_job_dir(job_dir: str | Path) -> None:
    """Remove what a previous (partial or failed) run of the job left behind."""
    job_dir = Path(job_dir)
    for name in JOB_OUTPUT_FILES:
        p = job_dir / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _cuda_setup(device: torch.device, flags: Mapping[str, bool]) -> None:
    """Apply :func:`~dganalysis.provenance.cuda_flags`'s ``flags`` to torch; make ``device`` the current CUDA device."""
    backends = torch.backends
    targets = {"matmul_allow_tf32": (backends.cuda.matmul, "allow_tf32"),
               "cudnn_allow_tf32": (backends.cudnn, "allow_tf32"),
               "cudnn_benchmark": (backends.cudnn, "benchmark"),
               "cudnn_deterministic": (backends.cudnn, "deterministic")}
    for key, value in flags.items():
        obj, attr = targets[key]
        setattr(obj, attr, bool(value))
    if device.index is not None:
        torch.cuda.set_device(device)


# --------------------------------------------------------------------------- the job
@dataclass(frozen=True)
class Runtime:
    """How a job runs on its machine (none of it is part of the job hash): the device, whether it is CUDA, the
    precision (``fp32`` or ``bf16``; bf16 means autocast), channels_last, the evaluation batch size and, on CPU, the
    torch thread count (None on CUDA) and the cuDNN/TF32 settings in force (:func:`dganalysis.provenance.cuda_backends`,
    read after :func:`make_runtime` set them)."""

    device: torch.device
    cuda: bool
    precision: str
    autocast: bool
    channels_last: bool
    eval_batch_size: int
    threads: int | None = None
    backends: Mapping[str, Any] | str = provenance.NOT_CUDA


@dataclass
class JobData:
    """A job's data on the device: the dataset, its domain names, the job's domain indices (train, test, val), the
    job's torch seed and concrete hparams, the ``(in, out)`` splits of every domain and the training domains'
    ``in`` splits, which the loop samples."""

    dataset: Any
    names: list[str]
    train_idx: list[int]
    test_idx: list[int]
    val_idx: list[int]
    seed: int
    hparams: dict[str, Any]
    splits: Any
    train_splits: list[Any]


def run_job(
    job: Job | Mapping[str, Any],
    job_dir: str | Path,
    data_dir: str | Path | None = None,
    device: str | torch.device | None = None,
    compile: bool = False,
    precision: str = "auto",
    progress: bool = False,
    eval_batch_size: int | None = None,
    heartbeat: Callable[[], None] | None = None,
    threads: int | None = None,
    extra_fields: Mapping[str, Any] | None = None,
    on_checkpoint: Callable[[int, Any], None] | None = None,
) -> Path:
    """Train ``job`` and write its records into ``job_dir``; returns ``job_dir``.

    Writes ``spec.json`` first, appends one DomainBed-compatible record per checkpoint to
    ``results.jsonl``, saves ``model.pt`` when ``job.save_model``, and writes ``done``
    atomically last. Anything left from an earlier run of the job is removed first.
    A non-finite loss raises ``FloatingPointError`` (the sweep records the job as failed).

    ``device``: None → CUDA when available, else CPU. ``precision``: ``auto`` (bf16 autocast
    on CUDA and on AMX-bf16 CPUs, else fp32; ``$DGANALYSIS_CPU_PRECISION`` overrides on CPU), ``fp32`` or ``bf16``; recorded as
    ``precision`` (not part of the job hash). ``threads``: the CPU job's torch thread count, fixed for the whole
    job (None: ``$DGANALYSIS_THREADS``, else the count in force; a sweep passes its workers' share,
    :func:`dganalysis.threads.launcher_share`); recorded as ``threads`` (not part of the job hash; None on CUDA).
    ``compile``: ``torch.compile`` the featurizer
    and classifier. ``progress``: a tqdm bar over steps. ``heartbeat``: called before every write into
    ``job_dir`` after the first; it raises to stop the job (a sweep passes its claim's check, see
    :mod:`dganalysis.sweep.store`). ``extra_fields``: added to every record (the DomainBed drop-in's ``mode`` and
    CUDA backend settings). ``on_checkpoint``: called as ``on_checkpoint(step, algorithm)``
    after each checkpoint's record is written (the drop-in ``train``'s ``--save_model_every_checkpoint`` saves the
    model there).

    The steps, in order: :func:`start_job_dir` (spec.json), :func:`make_runtime` (device, precision),
    :func:`build_data` (dataset, hparams, splits), :func:`build_algorithm` (seeded model),
    :func:`record_fields` (what every record repeats), :func:`train_loop` (updates on :class:`SampledDraws`' minibatches;
    :func:`write_checkpoint` appends a record), :func:`finish_job` (model.pt, done). A ``domainbed_exact`` job
    (:func:`run_job_exact`) builds its data and algorithm as DomainBed does and goes through the same loop with
    DomainBed's draws.
    """
    job = job if isinstance(job, Job) else Job.from_dict(job)
    t_start = time.time()
    runtime = make_runtime(device, algorithm_precision(job.algorithm, precision), eval_batch_size, threads,
                           exact=job.domainbed_exact)
    job_dir = start_job_dir(job, job_dir, runtime_stamp(runtime, job.domainbed_exact))
    if job.domainbed_exact:  # DomainBed's train.py draw for draw, fp32 (dganalysis.training.exact)
        with job_threads(runtime):
            run_job_exact(job, job_dir, data_dir, runtime.device, t_start, heartbeat, n_threads=runtime.threads,
                          extra_fields=extra_fields, on_checkpoint=on_checkpoint)
        return job_dir
    with job_threads(runtime):  # data, model, training and evaluation on one fixed count
        data = build_data(job, data_dir, runtime)
        algorithm = build_algorithm(job, data, runtime, compile)
        static = {**record_fields(job, data, runtime, job_dir, data_dir), **(extra_fields or {})}
        log.info("job %s: %s on %s", job.job_id, job.describe(), static["device"])
        from dganalysis.algorithms.base import takes_unlabeled

        draws = SampledDraws(job, data, runtime, takes_unlabeled(algorithm))
        train_loop(job, algorithm, draws, data, runtime, static, job_dir / "results.jsonl", t_start, progress,
                   heartbeat, on_checkpoint)
        finish_job(job, algorithm, data, job_dir, t_start, heartbeat)
    return job_dir


def algorithm_precision(algorithm: str, precision: str) -> str:
    """The precision a job of ``algorithm`` asks :func:`make_runtime` for: ``auto`` is ``fp32`` for an algorithm
    whose bf16 was measured not to track fp32 (``Algorithm.BF16_AUTOCAST`` false), else ``precision`` as given."""
    from dganalysis.algorithms.registry import get_algorithm

    if precision == "auto" and not get_algorithm(algorithm).BF16_AUTOCAST:
        return "fp32"
    return precision


def job_threads(runtime: Runtime):
    """The context a job computes in: ``runtime.threads`` torch threads on CPU (restored after), nothing on CUDA."""
    return contextlib.nullcontext() if runtime.threads is None else threads.torch_threads(runtime.threads)


def run_job_exact(job: Job, job_dir: Path, data_dir: str | Path | None, device: torch.device, t_start: float,
                  heartbeat: Callable[[], None] | None = None, num_workers: int | None = None,
                  n_threads: int | None = None, extra_fields: Mapping[str, Any] | None = None,
                  on_checkpoint: Callable[[int, Any], None] | None = None) -> None:
    """Train ``job`` as DomainBed's ``train.py`` (:mod:`dganalysis.training.exact`) and append its records to
    ``job_dir/results.jsonl``: DomainBed's seeds, data, splits, loaders
    (:class:`~dganalysis.training.exact.DomainBedDraws`) and algorithm, made in its order, then :func:`train_loop` on
    those draws in fp32. ``num_workers``: DomainBed's dataset ``N_WORKERS`` (default 8), which sets when pass seeds
    are drawn; ``n_threads``: the CPU thread count the caller fixed (recorded); ``extra_fields``: added to
    every record; ``on_checkpoint``: as :func:`run_job`'s, called after each record."""
    from dganalysis.algorithms import create
    from dganalysis.training.exact import (
        DOMAINBED_WORKERS,
        EVAL_BATCH_SIZE,
        DomainBedDraws,
        ExactSplits,
        check_exact,
        domainbed_tensors,
        exact_splits,
        featurizer_draws,
    )

    workers = DOMAINBED_WORKERS if num_workers is None else int(num_workers)
    hparams = job_hparams(job)
    dataset = _cached_dataset(job.dataset, data_dir, dataset_kwargs(job))
    names = list(dataset.domain_names)
    test_envs = check_exact(job, names, hparams, dict(getattr(dataset, "info", {}) or {}))
    seed = job.domainbed_seed(names)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if device.type == "cuda":  # DomainBed's cuDNN settings next to its seeds (also without make_runtime(exact=True))
        _cuda_setup(device, cuda_flags("domainbed_exact", device.type))
    envs, udas = [], []
    for i, (x, y) in enumerate(domainbed_tensors(dataset)):  # DomainBed's tensors, its draws on the global generator
        idx3 = exact_splits(len(y), job.holdout_fraction, job.trial_seed, i, i in test_envs, job.uda_holdout_fraction)
        envs.append([(x[idx].contiguous().to(device), y[idx].to(device)) for idx in idx3[:2]])
        if len(idx3[2]):  # DomainBed keeps the non-empty uda splits only
            udas.append((x[idx3[2]].contiguous().to(device), y[idx3[2]].to(device)))
    adapt = job.task == "domain_adaptation"
    if adapt and not udas:
        raise ConfigError(f"job {job.job_id}: task domain_adaptation: not enough unlabeled samples for domain "
                          f"adaptation (uda_holdout_fraction {job.uda_holdout_fraction} leaves no test environment "
                          "an unlabelled split; DomainBed's train.py raises the same)")
    splits = ExactSplits(envs, udas)
    train_envs = [i for i in range(len(names)) if i not in test_envs]
    draws = DomainBedDraws(splits, train_envs, int(hparams["batch_size"]), workers, adapt)  # before the algorithm
    featurizer_draws(dataset.input_shape, hparams)  # DomainBed's throwaway torchvision ResNet before timm's
    algorithm = create(job.algorithm, dataset.input_shape, dataset.n_classes, len(train_envs), hparams)
    algorithm.to(device)
    algorithm.train()

    runtime = Runtime(device, device.type == "cuda", "fp32", False, False, EVAL_BATCH_SIZE, n_threads,
                      provenance.cuda_backends(device))
    data = JobData(dataset, names, train_envs, test_envs, [], seed, hparams, splits, [envs[i][0] for i in train_envs])
    static = {**record_fields(job, data, runtime, job_dir, data_dir), **(extra_fields or {})}
    train_loop(job, algorithm, draws, data, runtime, static, job_dir / "results.jsonl", t_start,
               heartbeat=heartbeat, on_checkpoint=on_checkpoint)
    finish_job(job, algorithm, data, job_dir, t_start, heartbeat)


def start_job_dir(job: Job, job_dir: str | Path, stamp: Mapping[str, Any] | None = None) -> Path:
    """Create ``job_dir``, remove what an earlier run of the job left there, and write ``spec.json`` (with the id
    and, given, the run's provenance ``stamp`` under ``provenance``: :mod:`dganalysis.provenance`; no part of the id,
    :meth:`dganalysis.training.job.Job.from_dict` ignores it)."""
    job_dir = Path(job_dir)
    job_dir.mkdir(parents=True, exist_ok=True)
    clear_job_dir(job_dir)
    spec = {**job.to_dict(), "job_id": job.job_id}
    if stamp is not None:
        spec[provenance.PROVENANCE_KEY] = dict(stamp)
    io.write_json(job_dir / "spec.json", spec)
    return job_dir


def runtime_stamp(runtime: Runtime, exact: bool = False) -> dict[str, Any]:
    """The provenance of a job computed under ``runtime`` (:func:`dganalysis.provenance.stamp`); ``exact``: in
    ``domainbed_exact`` mode, which computes in fp32 whatever ``runtime.precision`` says."""
    return provenance.stamp(runtime.device, "fp32" if exact else runtime.precision, runtime.threads, runtime.backends)


def make_runtime(device: str | torch.device | None, precision: str, eval_batch_size: int | None,
                 n_threads: int | None = None, exact: bool = False) -> Runtime:
    """Resolve the device and set it up (on CUDA the cuDNN/TF32 settings of
    :func:`~dganalysis.provenance.cuda_flags` for the mode: ``exact``, DomainBed's deterministic cuDNN without TF32
    matrix products; else TF32 and cuDNN autotuning; :func:`dganalysis.training.speed.keep_freed_memory` on CPU), then the
    precision: ``auto`` is bf16 on CUDA and on AMX-bf16 CPUs (measured ~2.5x faster per job here, same accuracy within
    noise), fp32 on other CPUs; ``$DGANALYSIS_CPU_PRECISION`` overrides the CPU choice. On CPU the thread count:
    :func:`dganalysis.threads.fixed_count` of ``n_threads``. The settings in force end up in the runtime's
    ``backends`` (:func:`dganalysis.provenance.cuda_backends`), which the provenance stamp carries."""
    from dganalysis.training.speed import keep_freed_memory

    device = resolve_device(device)
    cuda = device.type == "cuda"
    if cuda:
        _cuda_setup(device, cuda_flags("domainbed_exact" if exact else "default", device.type))
    else:
        keep_freed_memory()  # no page faults on every large batch (dganalysis.training.speed)
    if precision not in ("auto", "fp32", "bf16"):
        raise ConfigError(f"run_job precision: expected auto, fp32 or bf16, got {precision!r}")
    try:
        count = None if cuda else threads.fixed_count(n_threads)
    except ValueError as e:
        raise ConfigError(f"run_job threads: {e}") from None
    if precision == "auto":
        precision = "bf16" if cuda else os.environ.get("DGANALYSIS_CPU_PRECISION", _cpu_default_precision())
        if precision not in ("fp32", "bf16"):
            raise ConfigError(f"$DGANALYSIS_CPU_PRECISION: expected fp32 or bf16, got {precision!r}")
    return Runtime(device, cuda, precision, precision == "bf16", True, eval_batch_size or (4096 if cuda else 512),
                   count, provenance.cuda_backends(device))


def build_data(job: Job, data_dir: str | Path | None, runtime: Runtime) -> JobData:
    """The job's dataset (cached per process), domain indices, seed, hparams, input pipeline and the ``(in, out)``
    splits of every domain on the device; an empty ``in`` split of a training domain is an error."""
    from dganalysis.data.pipeline import make_pipeline

    dataset = _cached_dataset(job.dataset, data_dir, dataset_kwargs(job))
    names = dataset.domain_names
    train_idx = domain_indices(job.train_domains, names, "train")
    test_idx = domain_indices(job.test_domains, names, "test")
    val_idx = domain_indices(job.val_domains, names, "val")
    seed = job_seed(job)
    hparams = job_hparams(job)
    pipeline = make_pipeline(dict(getattr(dataset, "info", {})), hparams, dataset.input_shape)
    splits = make_splits(dataset, job.holdout_fraction, job.trial_seed, runtime.device, runtime.channels_last,
                         pipeline, seed, uda_domains=test_idx, uda_holdout_fraction=job.uda_holdout_fraction)
    if job.task == "domain_adaptation" and not uda_splits(splits):
        splits.close()
        from dganalysis.validation import ConfigError

        raise ConfigError(f"job {job.job_id}: task domain_adaptation: not enough unlabeled samples for domain "
                          f"adaptation (uda_holdout_fraction {job.uda_holdout_fraction} leaves no test domain an "
                          "unlabelled split; DomainBed's train.py raises the same)")
    train_splits = [splits[i][0] for i in train_idx]
    for i, s in zip(train_idx, train_splits):
        if len(s) == 0:
            splits.close()
            raise ConfigError(f"job {job.job_id}: training domain {names[i]!r} has an empty 'in' split")
    if hparams.get("class_balanced", False):  # DomainBed's class-balanced training minibatches (data.balanced)
        from dganalysis.data import balanced

        balanced.use_class_balanced([*train_splits, *uda_splits(splits)])  # DomainBed weighs its uda loaders too
    return JobData(dataset, names, train_idx, test_idx, val_idx, seed, hparams, splits, train_splits)


def build_algorithm(job: Job, data: JobData, runtime: Runtime, compile: bool = False):
    """Seed torch and numpy's global generators with the job seed, create the algorithm, move it to the device
    (channels_last), optionally ``torch.compile`` its featurizer and classifier; in train mode."""
    from dganalysis.algorithms import create

    torch.manual_seed(data.seed)
    np.random.seed(data.seed % (2**32))
    algorithm = create(job.algorithm, data.dataset.input_shape, data.dataset.n_classes, len(data.train_idx),
                       data.hparams)
    algorithm.to(runtime.device)
    if runtime.channels_last:
        algorithm.to(memory_format=torch.channels_last)
    if compile:
        algorithm.featurizer.compile()
        algorithm.classifier.compile()
    algorithm.train()
    return algorithm


def record_fields(job: Job, data: JobData, runtime: Runtime, job_dir: str | Path | None = None,
                  data_dir: str | Path | None = None) -> dict[str, Any]:
    """The fields every checkpoint record repeats: ``hparams``, DomainBed's ``args``, the domain names, the device,
    precision, CPU thread count (``threads``; null on CUDA; outside ``args``, so no part of the ``setting``), data
    path, host and ``provenance`` (versions, commit, CPU and GPU: :func:`dganalysis.provenance.stamp`; like
    ``host``, one of the :data:`RUN_FIELDS`).

    ``args`` holds every key DomainBed's ``train.py`` writes there (``task``, ``hparams`` as its JSON string of the
    overrides or None, ``uda_holdout_fraction``, ``skip_model_save``, ``save_model_every_checkpoint``,
    ``data_dir``, ``output_dir`` …) with the value the same run of DomainBed's would hold, plus ours."""
    args = {
        "dataset": job.dataset,
        "dataset_kwargs": dict(job.dataset_kwargs),
        "algorithm": job.algorithm,
        "test_envs": data.test_idx,
        "train_envs": data.train_idx,
        "val_envs": data.val_idx,
        "hparams_seed": job.hparams_seed,
        "trial_seed": job.trial_seed,
        "seed": data.seed,
        "holdout_fraction": job.holdout_fraction,
        "steps": job.steps,
        "checkpoint_freq": job.checkpoint_freq,
        "job_id": job.job_id,
        # DomainBed's remaining train.py arguments, as its run of this job would hold them
        "task": job.task,
        "hparams": json.dumps(dict(job.hparams_overrides), sort_keys=True) if job.hparams_overrides else None,
        "uda_holdout_fraction": job.uda_holdout_fraction or 0,
        "skip_model_save": not job.save_model,
        "save_model_every_checkpoint": False,
        "data_dir": str(data_dir) if data_dir is not None else None,
        "output_dir": str(job_dir) if job_dir is not None else None,
    }
    return {
        "hparams": data.hparams,
        "args": args,
        "domains": data.names,
        "train_domains": list(job.train_domains),
        "test_domains": list(job.test_domains),
        "val_domains": list(job.val_domains),
        "device": _device_name(runtime.device),
        "precision": runtime.precision,
        "threads": runtime.threads,
        "data_path": data.splits.mode,
        "host": socket.gethostname(),
        provenance.PROVENANCE_KEY: provenance.stamp(runtime.device, runtime.precision, runtime.threads, runtime.backends),
    }


class Draws(Protocol):
    """How the training loop draws, the strategy :func:`train_loop` takes: our engine's (:class:`SampledDraws`) or,
    in ``domainbed_exact`` mode, DomainBed's (:class:`dganalysis.training.exact.DomainBedDraws`)."""

    #: the steps of one epoch (a record's ``epoch`` is ``step / steps_per_epoch``)
    steps_per_epoch: float

    def batches(self, algorithm) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
        """One step's minibatches, one per training domain, and the keywords ``update`` gets besides them."""

    def outputs(self, algorithm, out: Mapping[str, Any]) -> Mapping[str, Any]:
        """``update()``'s outputs under the keys the records hold."""

    def evaluate(self, algorithm) -> dict[str, float]:
        """The accuracies a checkpoint record holds (``env{i}_in_acc``, ``env{i}_out_acc``, ``env{k}_uda_acc``)."""

    def close(self) -> None:
        """Release the data when the loop ends."""


class SampledDraws:
    """Our engine's draws (the default mode): every step one minibatch per training domain drawn uniformly with replacement from its ``in`` split by a
    generator seeded with the job seed (:meth:`dganalysis.data.feed.Split.sample`); with
    ``task="domain_adaptation"`` and an algorithm whose ``update`` takes ``unlabeled``, one batch of images per ``uda``
    split (:func:`uda_splits`) from a generator of its own, so the labelled minibatches stay those of the same job
    without them; the accuracies of :func:`evaluate`."""

    def __init__(self, job: Job, data: JobData, runtime: Runtime, unlabeled: bool) -> None:
        self.data, self.runtime = data, runtime
        self.batch_size = int(data.hparams["batch_size"])
        self.gen = torch.Generator(device=runtime.device)
        self.gen.manual_seed(data.seed)
        self.skip_in = job.unevaluated_in_splits(data.train_idx)
        self.udas = uda_splits(data.splits) if job.task == "domain_adaptation" and unlabeled else []
        self.uda_gen = torch.Generator(device=runtime.device)
        self.uda_gen.manual_seed(seed_hash(data.seed, "uda"))
        #: DomainBed's ``steps_per_epoch`` over the *training* domains' ``in`` splits (see the module doc)
        self.steps_per_epoch = min(len(s) for s in data.train_splits) / self.batch_size

    def batches(self, algorithm) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], dict[str, Any]]:
        """One step's minibatches and the keywords ``update`` gets besides them (``unlabeled``, or none)."""
        minibatches = [s.sample(self.batch_size, self.gen) for s in self.data.train_splits]
        if not self.udas:
            return minibatches, {}
        return minibatches, {"unlabeled": [s.sample(self.batch_size, self.uda_gen)[0] for s in self.udas]}

    def outputs(self, algorithm, out: Mapping[str, Any]) -> Mapping[str, Any]:
        """``update()``'s outputs as the records hold them: under our keys."""
        return out

    def evaluate(self, algorithm) -> dict[str, float]:
        """The domains' accuracies (:func:`evaluate`; those :attr:`Job.evaluate_splits` keeps) at the runtime's
        evaluation batch size and precision."""
        return evaluate(algorithm, self.data.splits, self.runtime.eval_batch_size, self.runtime.autocast, self.skip_in)

    def close(self) -> None:
        """Release the splits (streamed data's prefetch thread)."""
        self.data.splits.close()


def train_loop(
    job: Job, algorithm, draws: Draws, data: JobData, runtime: Runtime, static: Mapping[str, Any],
    results_path: Path, t_start: float, progress: bool = False, heartbeat: Callable[[], None] | None = None,
    on_checkpoint: Callable[[int, Any], None] | None = None,
) -> None:
    """``job.steps`` updates, each on the minibatches ``draws`` gives (:class:`Draws`: our engine's
    :class:`SampledDraws`, or DomainBed's :class:`dganalysis.training.exact.DomainBedDraws` in ``domainbed_exact``
    mode); a checkpoint
    (:func:`write_checkpoint` of ``draws``' accuracies, then ``on_checkpoint(step, algorithm)`` when given) after
    step ``s`` when :meth:`Job.records_at` says so (``s % checkpoint_freq == 0`` or the last step), its epoch ``s / draws.steps_per_epoch``. A
    non-finite ``update()`` output raises ``FloatingPointError``. Closes ``draws`` at the end."""
    window: dict[str, list[float]] = defaultdict(list)
    step_times: list[float] = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=job.steps, desc=f"job {job.job_id}", leave=False, unit="step")
    try:
        for step in range(job.steps):
            t0 = time.perf_counter()
            with record_function("dganalysis.sample"):  # labels for bench/train_throughput.py --profile
                minibatches, kw = draws.batches(algorithm)
            with record_function("dganalysis.update"), torch.autocast(runtime.device.type, dtype=torch.bfloat16,
                                                                      enabled=runtime.autocast):
                out = draws.outputs(algorithm, algorithm.update(minibatches, step, **kw))
            for k, v in out.items():
                v = float(v)
                if not math.isfinite(v):
                    raise FloatingPointError(f"job {job.job_id}: {k} = {v} at step {step} (non-finite)")
                window[k].append(v)
            step_times.append(time.perf_counter() - t0)
            if bar is not None:
                bar.update(1)
            if job.records_at(step):
                write_checkpoint(job, step, step / draws.steps_per_epoch, window, step_times,
                                 draws.evaluate(algorithm), data, runtime, static, results_path, t_start, heartbeat)
                window.clear()
                step_times.clear()
                if on_checkpoint is not None:
                    on_checkpoint(step, algorithm)
    finally:
        draws.close()
        if bar is not None:
            bar.close()


def write_checkpoint(
    job: Job, step: int, epoch: float, window: Mapping[str, list[float]], step_times: list[float],
    accuracies: Mapping[str, float], data: JobData, runtime: Runtime, static: Mapping[str, Any], results_path: Path,
    t_start: float, heartbeat: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Append one checkpoint record to ``results_path``: step, epoch, the mean of each ``update()`` output and of
    the step time since the previous record, the ``accuracies`` (every domain's in/out accuracy, :func:`evaluate`),
    peak CUDA memory, elapsed seconds and the :func:`record_fields`. Calls ``heartbeat`` just before writing."""
    record: dict[str, Any] = {"step": step, "epoch": epoch}
    record.update({k: float(np.mean(v)) for k, v in window.items()})
    record["step_time"] = float(np.mean(step_times))
    record.update(accuracies)
    # DomainBed writes torch.cuda.max_memory_allocated() / 1024**3 always: 0.0 on a CPU
    record["mem_gb"] = torch.cuda.max_memory_allocated(runtime.device) / 2**30 if runtime.cuda else 0.0
    record["elapsed"] = time.time() - t_start
    record.update(static)
    if heartbeat is not None:
        heartbeat()
    io.append_jsonl(results_path, record)
    log.info(
        "job %s step %d loss %.4f %s", job.job_id, step, record.get("loss", float("nan")),
        " ".join(f"{data.names[i]}={record[f'env{i}_in_acc']:.3f}" for i in data.test_idx),
    )
    return record


def finish_job(job: Job, algorithm, data: JobData, job_dir: Path, t_start: float,
               heartbeat: Callable[[], None] | None = None) -> None:
    """After the loop: the last ``heartbeat``, ``model.pt`` when ``job.save_model``, then ``done`` (atomically, last:
    its presence marks the job finished) holding the job's wall-clock seconds."""
    if heartbeat is not None:
        heartbeat()
    if job.save_model:
        save_model(algorithm, job, data.hparams, data.dataset, job_dir / "model.pt")
    io.write_text(job_dir / "done", f"{time.time() - t_start:.3f}\n")


def _cpu_default_precision() -> str:
    """``bf16`` when the CPU has AMX-bf16 tile units (fast bf16 matmul/conv in oneDNN), else ``fp32``."""
    return "bf16" if provenance.cpu_has_amx_bf16() else "fp32"


_DATASETS: dict[str, Any] = {}


def dataset_kwargs(job: Job) -> dict[str, Any]:
    """The builder's keywords for ``job``: its ``dataset_kwargs``, plus ``run_seed`` = the job's DomainBed seed
    (:meth:`dganalysis.training.job.Job.domainbed_seed`) for a dataset DomainBed partitions per run (builder flagged
    ``per_run_seed``), which :func:`_cached_dataset` then builds once per distinct seed."""
    from dganalysis.data.domains import domain_names
    from dganalysis.data.registry import DATASETS, _import_builtin

    kw = dict(job.dataset_kwargs)
    _import_builtin()
    if job.dataset in DATASETS and getattr(DATASETS.get(job.dataset), "per_run_seed", False):
        if "run_seed" in kw:
            raise ConfigError(f"job {job.job_id}: dataset_kwargs run_seed={kw['run_seed']!r}: the run seed of "
                             f"{job.dataset} is the job's DomainBed seed; set Job.seed instead")
        kw["run_seed"] = job.domainbed_seed(domain_names(job.dataset, job.dataset_kwargs, None))
    return kw


def _cached_dataset(name: str, data_dir, kwargs: Mapping[str, Any]):
    """Load a dataset once per process (sweep workers run many jobs on the same data); keeps the 4 latest."""
    from dganalysis.data import load_dataset

    key = json.dumps([name, str(data_dir), dict(kwargs)], sort_keys=True, default=str)
    if key not in _DATASETS:
        if len(_DATASETS) >= 4:
            _DATASETS.pop(next(iter(_DATASETS)))
        _DATASETS[key] = load_dataset(name, data_dir=data_dir, **dict(kwargs))
    return _DATASETS[key]


def _device_name(device: torch.device) -> str:
    return provenance.device_name(device)


def write_failed(job_dir: str | Path, exc: BaseException | None = None) -> Path:
    """Record a failed job: ``failed`` holds the traceback (``done`` is never written)."""
    text = "".join(traceback.format_exception(exc)) if exc is not None else traceback.format_exc()
    return io.write_text(Path(job_dir) / "failed", text)


# --------------------------------------------------------------------------- model files
def save_model(algorithm, job: Job, hparams: Mapping[str, Any], dataset, path: str | Path) -> Path:
    """Save the state dict and everything needed to rebuild the algorithm, atomically."""
    state = {k: v.detach().cpu().contiguous() for k, v in algorithm.state_dict().items()}
    payload = {
        "format_version": 1,
        "algorithm": job.algorithm,
        "input_shape": list(dataset.input_shape),
        "n_classes": dataset.n_classes,
        "n_domains": len(job.train_domains),
        "hparams": dict(hparams),
        "classes": list(dataset.classes),
        "domains": dataset.domain_names,
        "job": job.to_dict(),
        "state_dict": state,
    }
    buf = _pyio.BytesIO()
    torch.save(payload, buf)
    return io.write_bytes(path, buf.getvalue())


def load_model(job_dir: str | Path, device: str | torch.device = "cpu"):
    """Rebuild the algorithm saved in ``job_dir/model.pt`` (eval mode, on ``device``)."""
    from dganalysis.algorithms import create

    path = Path(job_dir) / "model.pt"
    if not path.is_file():
        raise MissingInputError(f"{path}: no saved model (train the job with save_model=True)")
    payload = torch.load(path, map_location=device, weights_only=False)
    algorithm = create(
        payload["algorithm"], tuple(payload["input_shape"]), payload["n_classes"], payload["n_domains"], payload["hparams"]
    )
    algorithm.load_state_dict(payload["state_dict"])
    algorithm.to(device)
    algorithm.eval()
    return algorithm
