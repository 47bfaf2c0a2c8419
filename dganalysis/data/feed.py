"""Training data for one job: every domain's in/out splits, on the device or streamed from the host.

Two paths with one interface (``len``, ``sample(batch_size, generator)``, ``eval_batches(batch_size)``):

- ``device``: the split's uint8 images live on the training device (:class:`DeviceSplit`); minibatches are
  gathered by index on the device generator — no per-sample Python in the step loop. Encoded datasets are
  decoded once (thread pool) before training.
- ``stream``: the data stay on the host, encoded or memory-mapped, and batches are decoded and copied with
  prefetch (:mod:`dganalysis.data.stream`).

``mode="auto"`` (the default, or ``$DGANALYSIS_FEED``) picks ``device`` when the decoded dataset takes at most
``DEVICE_FRACTION`` of the free memory of the device (CUDA: ``torch.cuda.mem_get_info``; CPU: the host's
``MemAvailable``), else ``stream``. One exception: on a CPU device, encoded images under DomainBed's augmentation
are streamed and augmented per sample by Pillow in the decode threads (measured ~10x more images per CPU-second
than the batched float augmentation on this project's CPUs, and ~2x DomainBed's DataLoader loop:
``bench/train_throughput.py --image-pipeline``). In both, the pipeline (:mod:`dganalysis.data.pipeline`) converts and augments
batches on the device.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from dganalysis.data.dataset import DomainDataset
from dganalysis.data.encoded import EncodedDataset
from dganalysis.data.stream import HostSource, StreamSplit
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)
FEED_MODES = ("auto", "device", "stream")
#: the share of free device memory the decoded dataset may take on the ``device`` path
DEVICE_FRACTION = 0.5


class DeviceSplit:
    """One split held on the device: uint8 images, int64 labels, optional original sizes (W, H)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, device: torch.device, channels_last: bool,
                 pipeline, orig_size: np.ndarray | None = None) -> None:
        x = torch.from_numpy(np.ascontiguousarray(images))
        if channels_last and x.ndim == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        self.images = x.to(device)
        self.labels = torch.from_numpy(np.ascontiguousarray(labels, dtype=np.int64)).to(device)
        self.orig_size = torch.from_numpy(np.ascontiguousarray(orig_size)).to(device) if orig_size is not None else None
        self.channels_last = channels_last and x.ndim == 4
        self.pipeline = pipeline
        self.sample_weights: torch.Tensor | None = None  # per-example draw weights (class_balanced), None = uniform

    def __len__(self) -> int:
        return len(self.labels)

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A training minibatch drawn uniformly with replacement (or by ``sample_weights``, set by
        :func:`dganalysis.data.balanced.use_class_balanced`), through the pipeline's training transform."""
        if self.sample_weights is None:
            idx = torch.randint(len(self), (batch_size,), generator=generator, device=self.labels.device)
        else:
            idx = torch.multinomial(self.sample_weights, batch_size, replacement=True, generator=generator)
        orig = self.orig_size[idx] if self.orig_size is not None else None
        return self.pipeline.train(self.images[idx], orig, generator, self.channels_last), self.labels[idx]

    def eval_batches(self, batch_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        for start in range(0, len(self), batch_size):
            yield (self.pipeline.eval(self.images[start:start + batch_size], self.channels_last),
                   self.labels[start:start + batch_size])

    def close(self) -> None:
        pass


class Feed(list):
    """``[(in split, out split)]`` per domain, plus the path taken (``mode``) and ``close()``."""

    def __init__(self, pairs, mode: str, pool: ThreadPoolExecutor | None = None) -> None:
        super().__init__(pairs)
        self.mode = mode
        self._pool = pool

    def close(self) -> None:
        for pair in self:
            for s in pair:
                s.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def decoded_nbytes(dataset: DomainDataset | EncodedDataset) -> int:
    """Bytes the dataset's images take as uint8 at their training size."""
    if isinstance(dataset, EncodedDataset):
        return dataset.decoded_nbytes()
    return sum(int(np.prod(d.images.shape)) for d in dataset.domains)


def free_memory(device: torch.device) -> int:
    """Free bytes on ``device`` (CUDA: driver's free memory; CPU: ``MemAvailable`` from /proc/meminfo)."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 * 2**30


def choose_mode(dataset: DomainDataset | EncodedDataset, device: torch.device, mode: str | None = None,
                pipeline=None) -> str:
    """``device`` or ``stream`` (see the module doc); an explicit ``mode`` or ``$DGANALYSIS_FEED`` wins."""
    mode = mode or os.environ.get("DGANALYSIS_FEED", "auto")
    if mode not in FEED_MODES:
        raise ConfigError(f"feed mode {mode!r} ($DGANALYSIS_FEED or mode=): expected one of {FEED_MODES}")
    if mode != "auto":
        return mode
    if (device.type == "cpu" and isinstance(dataset, EncodedDataset) and getattr(pipeline, "augment", False)
            and hasattr(pipeline, "augment_pil")):
        log.info("CPU device, DomainBed augmentation of encoded images → stream (augmented per sample by Pillow)")
        return "stream"
    need, free = decoded_nbytes(dataset), free_memory(device)
    chosen = "device" if need <= DEVICE_FRACTION * free else "stream"
    log.info("data %.2f GB decoded, %.2f GB free on %s → %s", need / 2**30, free / 2**30, device, chosen)
    return chosen


def make_feed(
    dataset: DomainDataset | EncodedDataset, index: Sequence[tuple[np.ndarray, np.ndarray]], device: torch.device,
    channels_last: bool, pipeline, seed: int = 0, mode: str | None = None, workers: int | None = None,
    prefetch: int = 2, gpu_decode: bool | None = None, host_augment: bool | None = None,
) -> Feed:
    """The (in, out) splits of every domain at ``index`` (per domain: in indices, out indices); a domain whose entry
    holds a third index array (a test domain's unlabelled ``uda`` split, :func:`dganalysis.training.train.make_splits`) gets a
    third split, fed without augmentation (DomainBed augments no test environment).

    ``workers``: decoding threads (default: the CPU count, at most 16). ``gpu_decode`` (default: on CUDA with
    JPEG files) decodes streamed batches with torchvision's CUDA decoder. ``host_augment`` (default: on CPU
    devices) augments streamed encoded training images per sample with Pillow in the decode threads.
    """
    device = torch.device(device)
    if len(index) != len(dataset.domains):
        raise ValueError(f"make_feed: {len(index)} index pairs for {len(dataset.domains)} domains")
    if any(len(idx) not in (2, 3) for idx in index):
        raise ValueError("make_feed: expected per domain (in, out) or (in, out, uda) index arrays")
    mode = choose_mode(dataset, device, mode, pipeline)
    unaugmented = pipeline
    if any(len(idx) == 3 for idx in index) and getattr(pipeline, "augment", False):
        if not dataclasses.is_dataclass(pipeline):
            raise ValueError(f"make_feed: a uda split needs {type(pipeline).__name__} without augmentation "
                             "(a dataclass with an 'augment' field)")
        unaugmented = dataclasses.replace(pipeline, augment=False)
    pipes = (pipeline, pipeline, unaugmented)
    workers = workers or min(16, os.cpu_count() or 1)
    encoded = isinstance(dataset, EncodedDataset)
    pool = ThreadPoolExecutor(workers) if encoded else None
    if mode == "device":
        if encoded:
            dataset = dataset.to_arrays(workers)
        pairs = []
        for dom, idx in zip(dataset.domains, index):
            images, orig = np.asarray(dom.images), dom.meta.get("orig_size")
            pairs.append(tuple(DeviceSplit(images[i], dom.labels[i], device, channels_last, pipes[k],
                                           np.asarray(orig)[i] if orig is not None else None) for k, i in enumerate(idx)))
        if pool is not None:
            pool.shutdown()
        return Feed(pairs, "device")
    gpu = device.type == "cuda" if gpu_decode is None else bool(gpu_decode)
    host_aug = device.type == "cpu" if host_augment is None else bool(host_augment)
    size = dataset.input_shape[-1]
    pairs = []
    for d, (dom, idx) in enumerate(zip(dataset.domains, index)):
        src = HostSource(dom, size, pool, gpu_decode=gpu)
        pairs.append(tuple(StreamSplit(src, i, pipes[k], device, channels_last, seed=(seed, d, k),
                                       prefetch=prefetch, host_augment=host_aug and k == 0)
                           for k, i in enumerate(idx)))
    return Feed(pairs, "stream", pool)
