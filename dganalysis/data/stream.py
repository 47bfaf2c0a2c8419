"""Streaming batches from host storage to the device, for data larger than device memory.

The data stay on the host: encoded files (:class:`~dganalysis.data.encoded.EncodedDomain`, decoded per batch)
or uint8 arrays memory-mapped from disk (a :class:`~dganalysis.data.dataset.Domain` loaded with ``mmap``).
A :class:`StreamSplit` has the interface of the on-device split (:class:`dganalysis.data.feed.DeviceSplit`):
``sample(batch_size, generator)`` for training and ``eval_batches(batch_size)`` for evaluation; the DomainBed
pipeline then runs batched on the device.

- **Decoding on the CPU**: Pillow in a thread pool (``workers`` threads; Pillow releases the GIL while it
  decodes and resizes, so threads decode in parallel without pickling images between processes).
- **Decoding on CUDA** (``gpu_decode``; JPEG files only): the host reads the encoded bytes, and
  ``torchvision.io.decode_jpeg(..., device='cuda')`` decodes the batch on the GPU, then each image is resized
  to S × S (bilinear, antialiased). *Written for CUDA machines, untested here (no GPU in this project's CI).*
- **Augmenting on the host** (``host_augment``; encoded data, the default on CPU devices): each training image is
  decoded at full size and augmented with Pillow in the decode threads, with DomainBed's per-sample functions
  and the batch's random choices drawn at once (:meth:`~dganalysis.data.pipeline.DomainBedPipeline.draw`) —
  DomainBed's own path, crops taken from the original pixels. On a CPU this is several times cheaper than the
  batched float path (``bench/train_throughput.py --image-pipeline``); on CUDA the batched path runs on the GPU.
- **Prefetch**: training batches are produced ahead by a background thread per split (a queue of
  ``prefetch`` batches, pinned memory on CUDA, copied with ``non_blocking``); evaluation reads the next
  ``prefetch`` chunks in a reader thread while the model runs on the current one.

Training indices are drawn uniformly with replacement (DomainBed's ``InfiniteDataLoader``) from a NumPy
generator seeded per split, in the producer thread, so a run is reproducible; they differ from the draws of the
on-device path (which draws on the device generator), so the two paths train on different (equally
distributed) minibatch sequences.
"""

from __future__ import annotations

import io as _pyio
import logging
import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

import numpy as np
import torch
import torch.nn.functional as F

from dganalysis.data.dataset import Domain
from dganalysis.data.encoded import EncodedDomain
from dganalysis.data.pipeline import to_float
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)


class HostSource:
    """Reads samples ``index`` of one domain from host storage: uint8[B, 3, S, S] (or raw bytes for CUDA decoding),
    the original sizes (W, H) and the labels."""

    def __init__(self, domain: EncodedDomain | Domain, size: int, pool: Executor | None, gpu_decode: bool = False) -> None:
        self.domain, self.size, self.pool = domain, size, pool
        self.encoded = isinstance(domain, EncodedDomain)
        self.gpu_decode = bool(gpu_decode and self.encoded and domain.all_jpeg)
        if self.encoded:
            self.orig = np.asarray(domain.sizes)
        else:
            meta = domain.meta.get("orig_size")
            self.orig = np.asarray(meta) if meta is not None else None
        self.labels = np.asarray(domain.labels)

    def __len__(self) -> int:
        return len(self.labels)

    def load(self, index: np.ndarray) -> tuple[np.ndarray | list[np.ndarray], np.ndarray | None, np.ndarray]:
        orig = self.orig[index] if self.orig is not None else None
        if self.gpu_decode:
            raw = [np.frombuffer(self.domain.raw(i), np.uint8).copy() for i in index]
            return raw, orig, self.labels[index]
        if self.encoded:
            return self.domain.decode(index, self.size, self.pool), orig, self.labels[index]
        order = np.argsort(index, kind="stable")  # memory-mapped reads in file order
        out = np.empty((len(index), *self.domain.images.shape[1:]), np.uint8)
        out[order] = self.domain.images[index[order]]
        return out, orig, self.labels[index]

    def load_augmented(self, index: np.ndarray, pipeline, generator: torch.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Training samples decoded at full size and augmented per sample with Pillow on the host (encoded data
        only): the batch's random choices are drawn at once from ``generator`` (:meth:`DomainBedPipeline.draw`)."""
        frames = self.orig[index]
        params = pipeline.draw(torch.from_numpy(np.ascontiguousarray(frames)), generator)
        out = np.empty((len(index), 3, pipeline.size, pipeline.size), np.uint8)

        def one(j: int) -> None:
            out[j] = _augment_one(self.domain, int(index[j]), tuple(int(v) for v in frames[j]), pipeline, params, j)

        if self.pool is None:
            for j in range(len(index)):
                one(j)
        else:
            list(self.pool.map(one, range(len(index))))
        return out, self.labels[index]


def _augment_one(domain: EncodedDomain, i: int, frame: tuple[int, int], pipeline, params, j: int) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(_pyio.BytesIO(bytes(domain.raw(i)))) as im:
            im = im.convert("RGB")
    except (UnidentifiedImageError, OSError) as e:
        raise ConfigError(f"domain {domain.name!r} sample {i}: unreadable image ({e})") from e
    if im.size != frame:  # the crop frame is the resized image (DomainBed's WILDS transforms)
        im = im.resize(frame, Image.BILINEAR)
    return pipeline.augment_pil(im, params, j)


def decode_jpeg_cuda(raw: list[np.ndarray], size: int, device: torch.device) -> torch.Tensor:
    """JPEG bytes → uint8[B, 3, size, size] on ``device`` with torchvision's CUDA decoder (untested: no GPU here)."""
    from dganalysis.compat import torchvision

    tvio = torchvision().io
    imgs = tvio.decode_jpeg([torch.from_numpy(r) for r in raw], mode=tvio.ImageReadMode.RGB, device=device)
    out = torch.empty((len(imgs), 3, size, size), dtype=torch.uint8, device=device)
    for j, im in enumerate(imgs):
        r = F.interpolate(im[None].float(), size=(size, size), mode="bilinear", align_corners=False, antialias=True)
        out[j] = r[0].round_().clamp_(0, 255).to(torch.uint8)
    return out


class StreamSplit:
    """One split (``index`` into a domain) streamed from the host, augmented on ``device`` by ``pipeline``."""

    def __init__(self, source: HostSource, index: np.ndarray, pipeline, device: torch.device, channels_last: bool,
                 seed: int | tuple[int, ...], prefetch: int = 2, host_augment: bool = False) -> None:
        self.source, self.index = source, np.asarray(index, np.int64)
        self.pipeline, self.device, self.channels_last = pipeline, device, channels_last
        self.prefetch = max(1, int(prefetch))
        self._rng = np.random.default_rng(list(seed) if isinstance(seed, tuple) else seed)
        self.host_augment = bool(host_augment and source.encoded and not source.gpu_decode
                                 and getattr(pipeline, "augment", False) and hasattr(pipeline, "augment_pil"))
        self._tgen = torch.Generator().manual_seed(int(self._rng.integers(2**62)))
        self._queue: queue.Queue | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._batch_size: int | None = None
        self.labels = torch.from_numpy(source.labels[self.index]).to(device)  # for len/device queries; small
        self.sample_weights: torch.Tensor | None = None  # per-example draw weights (class_balanced), None = uniform

    def __len__(self) -> int:
        return len(self.index)

    # ---------------------------------------------------------------- host → device
    def _host_batch(self, rows: np.ndarray):
        x, orig, y = self.source.load(self.index[rows])
        cuda = self.device.type == "cuda"
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x)
            if cuda:
                x = x.pin_memory()
        orig_t = torch.from_numpy(np.ascontiguousarray(orig)) if orig is not None else None
        return x, orig_t, torch.from_numpy(y)

    def _to_device(self, batch):
        x, orig, y = batch
        nb = self.device.type == "cuda"
        if isinstance(x, list):
            x = decode_jpeg_cuda(x, self.source.size, self.device)
        else:
            x = x.to(self.device, non_blocking=nb)
        return x, (orig.to(self.device) if orig is not None else None), y.to(self.device, non_blocking=nb)

    # ---------------------------------------------------------------- training
    def _produce(self, batch_size: int) -> None:
        try:
            while not self._stop.is_set():
                if self.sample_weights is None:
                    rows = self._rng.integers(0, len(self.index), batch_size)
                else:  # class_balanced (dganalysis.data.balanced)
                    p = self.sample_weights.cpu().numpy()
                    rows = self._rng.choice(len(self.index), batch_size, replace=True, p=p / p.sum())
                if self.host_augment:
                    x, y = self.source.load_augmented(self.index[rows], self.pipeline, self._tgen)
                    item = (torch.from_numpy(x), None, torch.from_numpy(y))
                else:
                    item = self._host_batch(rows)
                while not self._stop.is_set():
                    try:
                        self._queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as e:  # surfaced in sample() (dropped when the split is being closed)
            while not self._stop.is_set():
                try:
                    self._queue.put(e, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """A training minibatch (uniform with replacement), prefetched by a background thread."""
        if self._thread is None or self._batch_size != batch_size:
            self.close()
            self._stop = threading.Event()
            self._queue = queue.Queue(self.prefetch)
            self._batch_size = batch_size
            self._thread = threading.Thread(target=self._produce, args=(batch_size,), daemon=True)
            self._thread.start()
        item = self._queue.get()
        if isinstance(item, BaseException):
            raise item
        x, orig, y = self._to_device(item)
        if self.host_augment:  # augmented on the host: only float conversion and normalisation here
            return self.pipeline._finish(to_float(x), self.channels_last), y
        return self.pipeline.train(x, orig, generator, self.channels_last), y

    # ---------------------------------------------------------------- evaluation
    def eval_batches(self, batch_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The split in order, in chunks of ``batch_size``, the next ``prefetch`` chunks read ahead."""
        chunks = [np.arange(s, min(s + batch_size, len(self))) for s in range(0, len(self), batch_size)]
        # one reader thread loads chunks ahead in order (decoding itself fans out over the source's pool)
        with ThreadPoolExecutor(1) as reader:
            pending = [reader.submit(self._host_batch, rows) for rows in chunks[: self.prefetch]]
            nxt = len(pending)
            while pending:
                batch = pending.pop(0).result()
                if nxt < len(chunks):
                    pending.append(reader.submit(self._host_batch, chunks[nxt]))
                    nxt += 1
                x, _, y = self._to_device(batch)
                yield self.pipeline.eval(x, self.channels_last), y

    def close(self) -> None:
        """Stop the training producer (idempotent)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=5)
            self._thread = None
