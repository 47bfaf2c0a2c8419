"""Throughput of our ERM job against a DomainBed-style baseline, measured in the same run.

Both sides train the same model (``ERM`` with the small MNIST-CNN featurizer), with the
same hyperparameters, batch size, number of steps and synthetic 32×32 glyph-like data
(simulated: random strokes per class, domains differ in stroke width, contrast and noise),
and both follow DomainBed's checkpoint schedule: after the step ``s`` with
``s % checkpoint_freq == 0`` or ``s == steps − 1``, accuracy on the in and out split of
every domain, and one JSON line written.

(a) ours: :func:`dganalysis.training.train.run_job` — uint8 tensors in memory, minibatches by
    index with a seeded generator, channels_last, large no-grad eval batches, no worker
    processes.
(b) DomainBed-style baseline (written here, following DomainBed's ``train.py`` and
    ``fast_data_loader.py``): images stored as PNG files in ``<domain>/<class>/`` folders,
    decoded per sample with Pillow and converted with ``torchvision.transforms``
    (``Resize`` + ``ToTensor``), one infinite ``DataLoader`` (sampling with replacement,
    ``--workers`` worker processes) per training domain, evaluation through one persistent
    ``FastDataLoader``-style loader per split with batch 64, contiguous NCHW fp32.

Images/s counts training images (steps × batch × training domains) over the wall time
of the whole job, evaluation included. ``--repeats N`` runs N rounds, alternating ours and
the baseline (ABAB…), and prints each round's ratio and their range: on a shared machine
only ratios from the same round mean much. ``--eval-batch 64`` also times ours with that
evaluation batch (DomainBed's). ``--malloc-default`` also times ours, first and in the first round only,
with glibc's default malloc thresholds, as before :func:`dganalysis.training.speed.keep_freed_memory` (which
cannot be undone within a process; the baseline runs after it, but its blocks are small). Run: ``python bench/train_throughput.py``.

``--profile`` runs one job of each under ``torch.profiler`` instead (use ``--threads 1``) and prints their CPU-s by
phase (data, forward, backward, optimizer, evaluation; from the ``record_function`` labels of
:func:`dganalysis.training.train.run_job`, which the baseline here uses too) and kind of op (convolution, GroupNorm/ReLU,
the rest), the evaluation convolutions' GMAC/s, and the largest ratio reachable if everything but our
convolutions cost nothing.

``--networks`` times one ERM training step instead (forward, backward, Adam; no data loading, no evaluation) for
each network the quick profile trains and ResNet-18 at 32 and 64 px, at the profile's batch size: images/s, the
fraction of the device's peak FLOP/s (estimated from ``lscpu`` on a CPU, printed with its parts) and DomainBed's own
``algorithms.ERM`` update on the same network and minibatches (``$DOMAINBED_SRC``), idle and with ``--load`` busy
processes; ``--device cuda`` on a GPU (:mod:`bench._network_peak`).

``--thread-policies`` times the CPU thread policies instead (:mod:`bench._thread_policies`): the fixed count of
the launcher's share with the workers' waiting policy (the default), the same count with OpenMP's default and
with passive waiting, the former load-adaptive governor and one thread; idle and with every core busy, each in
its own process, images/s and the ratio to the default in the same run, and whether idle and loaded records are
identical. ``--rounds`` rounds, ``--policy-runs`` timed jobs per policy and round.

``--image-pipeline`` times DomainBed's image pipeline instead (training minibatches delivered to the
model, augmented and normalised, no model step), on simulated photo-like JPEGs of varied sizes in a
PACS-layout folder (real folder names, simulated content), in one run:
(1) ours, on the device: the files decoded once (timed separately as setup), uint8 in memory, batched
    augmentation (:class:`dganalysis.data.pipeline.DomainBedPipeline`);
(2) ours, streamed: JPEG bytes on the host, decoded per batch by Pillow in threads with prefetch, batched
    augmentation on the device (:mod:`dganalysis.data.stream`), and the same with the augmentation done per
    sample by Pillow in the decode threads (``stream+host-aug``, the CPU default);
(3) DomainBed-style: torchvision ``ImageFolder``-like per-sample Pillow decoding and DomainBed's per-sample
    transforms, one ``InfiniteDataLoader`` per training domain with ``--workers`` worker processes.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import record_function

import dganalysis  # noqa: F401 - installs the torchvision shim before torchvision is imported
from dganalysis.compat import torchvision
from dganalysis.data import Domain, DomainDataset, register_dataset
from dganalysis.data.registry import DATASETS
from dganalysis.sweep import Job
from dganalysis.training.train import run_job, seed_hash, split_indices

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import _busy  # noqa: E402
from dganalysis import threads  # noqa: E402

BENCH = "_BenchGlyphs"
_CACHE: dict[tuple, DomainDataset] = {}


# --------------------------------------------------------------------------- simulated data
def make_glyphs(n_domains: int, n_per_domain: int, n_classes: int, size: int, seed: int = 0) -> DomainDataset:
    """Simulated glyph-like data: each class is 4 random strokes; samples jitter them."""
    rng = np.random.RandomState(seed)
    protos = rng.uniform(0.15, 0.85, (n_classes, 4, 2, 2))  # class, stroke, endpoint, xy
    yy, xx = np.mgrid[0:size, 0:size] / (size - 1)
    pix = np.stack([xx, yy], -1).reshape(-1, 2)  # P, 2
    domains = []
    for d in range(n_domains):
        width = 0.03 + 0.02 * d
        labels = rng.randint(n_classes, size=n_per_domain)
        strokes = protos[labels] + rng.normal(0, 0.04, (n_per_domain, 4, 2, 2))
        a, b = strokes[:, :, 0], strokes[:, :, 1]  # N, S, 2
        ab = b - a
        t = ((pix[None, None] - a[:, :, None]) * ab[:, :, None]).sum(-1) / ((ab**2).sum(-1)[:, :, None] + 1e-9)
        t = np.clip(t, 0, 1)
        dist = np.linalg.norm(pix[None, None] - (a[:, :, None] + t[..., None] * ab[:, :, None]), axis=-1).min(1)
        ink = np.clip(1.5 - dist / width, 0, 1)  # N, P
        bg, fg = 20 + 40 * d, 230 - 30 * d
        img = bg + (fg - bg) * ink + rng.normal(0, 8 + 4 * d, ink.shape)
        images = np.clip(img, 0, 255).astype(np.uint8).reshape(n_per_domain, 1, size, size)
        domains.append(Domain(f"style{d}", images, labels))
    return DomainDataset(BENCH, [str(c) for c in range(n_classes)], domains, {"source": "simulated glyphs (bench)"})


def _builder(data_dir=None, n_domains=3, n_per_domain=1000, n_classes=10, size=32):
    key = (n_domains, n_per_domain, n_classes, size)
    if key not in _CACHE:
        _CACHE[key] = make_glyphs(*key)
    return _CACHE[key]


if BENCH not in DATASETS:
    register_dataset(BENCH)(_builder)


# --------------------------------------------------------------------------- DomainBed-style baseline
class ImageFileDataset(torch.utils.data.Dataset):
    """(path, label) pairs decoded with Pillow per sample, as torchvision's ImageFolder does."""

    def __init__(self, items, transform):
        self.items, self.transform = items, transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        from PIL import Image

        path, label = self.items[i]
        with Image.open(path) as im:
            img = im.convert("L")
        return self.transform(img), label


class _InfiniteSampler(torch.utils.data.Sampler):
    def __init__(self, sampler):
        self.sampler = sampler

    def __iter__(self):
        while True:
            yield from self.sampler


def infinite_loader(dataset, batch_size, workers, seed):
    """DomainBed's InfiniteDataLoader: uniform sampling with replacement, endless batches."""
    gen = torch.Generator().manual_seed(seed)
    sampler = torch.utils.data.RandomSampler(dataset, replacement=True, generator=gen)
    batches = torch.utils.data.BatchSampler(sampler, batch_size=batch_size, drop_last=True)
    return iter(torch.utils.data.DataLoader(dataset, num_workers=workers, batch_sampler=_InfiniteSampler(batches)))


class FastLoader:
    """DomainBed's FastDataLoader: one persistent iterator over an endless sequential sampler."""

    def __init__(self, dataset, batch_size, workers):
        batches = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(dataset), batch_size, drop_last=False)
        self._it = iter(torch.utils.data.DataLoader(dataset, num_workers=workers, batch_sampler=_InfiniteSampler(batches)))
        self._len = len(batches)

    def __iter__(self):
        for _ in range(self._len):
            yield next(self._it)


_FOLDERS: dict[str, list[list[tuple[str, int]]]] = {}


def write_image_folders(dataset: DomainDataset, root: Path) -> list[list[tuple[str, int]]]:
    """PNG files in DomainBed's ``<domain>/<class>/<i>.png`` layout; returns (path, label) per domain
    (written once per ``root`` in a process)."""
    from PIL import Image

    if str(root) in _FOLDERS:
        return _FOLDERS[str(root)]
    out = []
    for dom in dataset.domains:
        items = []
        for i, (img, lab) in enumerate(zip(dom.images, dom.labels)):
            p = root / dom.name / str(int(lab)) / f"{i:06d}.png"
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.fromarray(img[0]).save(p)
            items.append((str(p), int(lab)))
        out.append(items)
    _FOLDERS[str(root)] = out
    return out


def baseline_job(job: Job, dataset: DomainDataset, root: Path, workers: int, out_path: Path) -> tuple[float, float]:
    """A DomainBed-style job (its train.py loop); returns (wall s, CPU s incl. the loader workers)."""
    from dganalysis.algorithms import create
    from dganalysis.training.job_draw import job_hparams
    from dganalysis.training.train import job_seed

    tv = torchvision()
    per_domain = write_image_folders(dataset, root)  # the dataset on disk, before the job (not timed)
    t_start, c_start = time.time(), _cpu_seconds()
    size = dataset.input_shape[-1]
    transform = tv.transforms.Compose([tv.transforms.Resize((size, size)), tv.transforms.ToTensor()])
    in_sets, out_sets = [], []
    for i, items in enumerate(per_domain):
        in_idx, out_idx = split_indices(len(items), job.holdout_fraction, seed_hash(job.trial_seed, i))
        in_sets.append(ImageFileDataset([items[k] for k in in_idx], transform))
        out_sets.append(ImageFileDataset([items[k] for k in out_idx], transform))
    names = dataset.domain_names
    train_idx = [names.index(n) for n in job.train_domains]
    hparams = job_hparams(job)
    torch.manual_seed(job_seed(job))
    train_iters = [infinite_loader(in_sets[i], hparams["batch_size"], workers, job_seed(job) + i) for i in train_idx]
    eval_loaders = [FastLoader(s, 64, workers) for pair in zip(in_sets, out_sets) for s in pair]
    eval_names = [f"env{i}_{sp}" for i in range(len(names)) for sp in ("in", "out")]
    algorithm = create(job.algorithm, dataset.input_shape, dataset.n_classes, len(train_idx), hparams)
    algorithm.train()
    vals: dict[str, list[float]] = {}
    for step in range(job.steps):
        with record_function("dganalysis.sample"):  # the labels of ours (dganalysis.training.train), for --profile
            minibatches = [(x, y) for x, y in (next(it) for it in train_iters)]
        with record_function("dganalysis.update"):
            out = algorithm.update(minibatches, step)
        for k, v in out.items():
            vals.setdefault(k, []).append(v)
        if step % job.checkpoint_freq == 0 or step == job.steps - 1:
            rec = {"step": step, **{k: float(np.mean(v)) for k, v in vals.items()}}
            with record_function("dganalysis.evaluate"):
                rec.update(_baseline_evaluate(algorithm, eval_names, eval_loaders))
            rec.update({"hparams": hparams, "args": job.to_dict()})
            with open(out_path, "a") as fh:
                fh.write(json.dumps(rec, sort_keys=True) + "\n")
            vals = {}
    del train_iters, eval_loaders  # shut the loader workers down so their CPU time is counted
    gc.collect()
    return time.time() - t_start, _cpu_seconds() - c_start


def _baseline_evaluate(algorithm, names, loaders) -> dict[str, float]:
    """DomainBed's ``misc.accuracy`` over every split, in eval mode under ``no_grad``."""
    rec = {}
    for name, loader in zip(names, loaders):
        algorithm.eval()
        correct = total = 0
        with torch.no_grad():
            for x, y in loader:
                correct += (algorithm.predict(x).argmax(1) == y).float().sum().item()
                total += len(x)
        algorithm.train()
        rec[f"{name}_acc"] = correct / total
    return rec


# --------------------------------------------------------------------------- --profile: where the CPU time goes
PHASES = ("data", "forward", "backward", "optimizer", "evaluation", "other", "unprofiled")
KINDS = ("conv", "norm+act", "rest")
_LABELS = {"dganalysis.sample": "data", "dganalysis.update": "forward", "dganalysis.evaluate": "evaluation"}


def _phase(event) -> str:
    """The phase of a profiler event: its nearest labelled ancestor (itself included)."""
    e = event
    while e is not None:
        if e.name.startswith("Optimizer."):
            return "optimizer"
        if e.name.startswith("autograd::engine"):
            return "backward"
        if e.name in _LABELS:
            return _LABELS[e.name]
        e = e.cpu_parent
    return "other"


def _kind(name: str) -> str:
    if "convolution" in name:
        return "conv"
    if any(k in name for k in ("norm", "threshold", "relu", "clamp")):
        return "norm+act"
    return "rest"


def profile_split(fn) -> tuple[dict[tuple[str, str], float], float, float]:
    """Run ``fn()`` under torch.profiler; returns (CPU-s of this process by (phase, kind of op), this process's
    CPU-s, CPU-s of its finished child processes, e.g. DataLoader workers).

    The profiler times ops in wall-clock time, which other processes on a shared machine inflate; each op's
    share of the wall time is turned into CPU-s by multiplying with the process's CPU-s (which assumes the
    contention was even over the run). What no op covers (Python, I/O) is the phase ``unprofiled``."""
    from torch.profiler import ProfilerActivity, profile

    me0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    wall = time.perf_counter() - t0
    gc.collect()
    me1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    me = me1.ru_utime + me1.ru_stime - me0.ru_utime - me0.ru_stime
    kids = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
    split: dict[tuple[str, str], float] = {}
    for e in prof.events():
        key = (_phase(e), _kind(e.name))
        split[key] = split.get(key, 0.0) + e.self_cpu_time_total / 1e6 / wall * me
    split[("unprofiled", "rest")] = max(me - sum(split.values()), 0.0)
    return split, me, kids


def _print_split(name: str, split: dict[tuple[str, str], float], me: float, kids: float) -> None:
    print(f"{name}: {me + kids:.1f} CPU-s = {me:.1f} in the training process + {kids:.1f} in child processes "
          "(DataLoader workers: decoding); by phase and op kind, CPU-s (profiler shares of wall time x process CPU-s):")
    print(f"  {'phase':11s}" + "".join(f"{k:>10s}" for k in (*KINDS, "total")))
    for ph in PHASES:
        row = [split.get((ph, k), 0.0) for k in KINDS]
        if sum(row) > 0:
            print(f"  {ph:11s}" + "".join(f"{v:10.2f}" for v in (*row, sum(row))))


def conv_macs(dataset: DomainDataset, hparams: dict) -> int:
    """Multiply-accumulates of the featurizer's convolutions for one image (forward)."""
    from dganalysis.nets import build_featurizer

    net, macs = build_featurizer(dataset.input_shape, hparams), []

    def hook(m, inp, out):
        macs.append(out.numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1])

    for m in net.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        net(torch.zeros(1, *dataset.input_shape))
    return sum(macs)


def profile_bench(job: Job, dataset: DomainDataset, a, tmp: Path) -> None:
    """Where ours and the baseline spend their CPU time, by phase and kind of op, and the ratio left to gain."""
    from dganalysis.training.job_draw import job_hparams

    # the baseline once unprofiled (it also writes the PNG folders, outside its timing), then profiled: the
    # profiler's per-op overhead weighs more on its many small ops, so the bound below uses the unprofiled run
    plain = baseline_job(job, dataset, tmp / "png", a.workers, tmp / "base_plain.jsonl")[1]
    ours = profile_split(lambda: run_job(job, tmp / "ours_profiled", device="cpu"))
    _print_split("ours (profiled)", *ours)
    base = profile_split(lambda: baseline_job(job, dataset, tmp / "png", a.workers, tmp / "base_profiled.jsonl"))
    _print_split("DomainBed-style (profiled)", *base)
    n_eval = len([s for s in range(job.steps) if s % job.checkpoint_freq == 0 or s == job.steps - 1]) * sum(
        len(d) for d in dataset.domains)
    macs = conv_macs(dataset, job_hparams(job)) * n_eval
    for name, (split, *_) in (("ours", ours), ("DomainBed-style", base)):
        t = split.get(("evaluation", "conv"), 0.0)
        print(f"{name}: evaluation convolutions {macs / 1e9:.0f} GMAC in {t:.2f} CPU-s = {macs / 1e9 / t:.0f} GMAC/s")
    conv = sum(v for (ph, k), v in ours[0].items() if k == "conv")
    print(f"ratio ours / DomainBed-style (both profiled): {(base[1] + base[2]) / (ours[1] + ours[2]):.2f}x img per CPU-second")
    print(f"DomainBed-style unprofiled: {plain:.1f} CPU-s; if everything but ours' convolutions ({conv:.1f} CPU-s) "
          f"cost nothing, the ratio would be at most {plain / conv:.2f}x img per CPU-second")


# --------------------------------------------------------------------------- image pipeline (DomainBed benchmarks)
def make_photo_tree(root: Path, n_per_class: int, seed: int = 0) -> Path:
    """Simulated photo-like JPEGs (smooth colour fields plus a class-coloured ellipse, 64–128 px sides) in
    PACS's layout ``root/PACS/<env>/<class>/`` (the real folder and class names, simulated content)."""
    from PIL import Image

    from dganalysis.data.benchmarks import BENCHMARKS

    b = BENCHMARKS["PACS"]
    rng = np.random.RandomState(seed)
    for e, env in enumerate(b.env_folders):
        for k, c in enumerate(b.classes):
            d = root / b.folder / env / c
            d.mkdir(parents=True, exist_ok=True)
            for i in range(n_per_class):
                w, h = rng.randint(64, 129, 2)
                yy, xx = np.mgrid[0:h, 0:w] / max(w, h)
                base = rng.uniform(0, 255, (3, 1, 1)) * (0.5 + 0.5 * np.sin(6 * xx + rng.uniform(0, 6, (3, 1, 1))))
                cx, cy, r = rng.uniform(0.3, 0.7), rng.uniform(0.3, 0.7), rng.uniform(0.1, 0.3)
                blob = ((xx - cx) ** 2 + (yy - cy) ** 2 < r * r)[None]
                col = np.array([40 * k % 255, 80 + 20 * e, 255 - 30 * k])[:, None, None]
                img = np.where(blob, col, base) + rng.normal(0, 8, (3, h, w))
                Image.fromarray(np.clip(img, 0, 255).astype(np.uint8).transpose(1, 2, 0)).save(d / f"{i:05d}.jpg", quality=90)
    return root


def pipeline_bench(a) -> None:
    """Images/s of DomainBed's training pipeline: ours on the device, ours streamed, DomainBed-style DataLoader."""
    from dganalysis.data import load_dataset
    from dganalysis.data.feed import make_feed
    from dganalysis.data.pipeline import IMAGENET_MEAN, IMAGENET_STD, DomainBedPipeline

    tv = torchvision()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        root = make_photo_tree(tmp / "data", a.n_per_class)
        enc = load_dataset("PACS", root=root, image_size=a.size, data_dir=tmp / "cache")
        n_img = sum(len(d) for d in enc.domains)
        print(f"data (simulated photo-like JPEGs, PACS layout): {n_img} images, 64-128 px, "
              f"{enc.encoded_nbytes() / 2**20:.1f} MiB encoded, {enc.decoded_nbytes() / 2**20:.1f} MiB decoded at {a.size} px; "
              f"batch {a.batch_size} x 3 training domains, {a.steps} steps; device {device}; {a.workers} decode "
              f"threads / DataLoader workers; torch threads {a.threads}; load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} cores", flush=True)
        index = [(np.arange(len(d)), np.arange(0)) for d in enc.domains]
        pipe = DomainBedPipeline(size=a.size)
        n = a.steps * a.batch_size * 3
        sink = torch.zeros((), device=device)
        res = {}
        variants = {"device": ("device", False), "stream": ("stream", False), "stream+host-aug": ("stream", True)}
        for name, (mode, host_aug) in variants.items():
            t0 = time.time()
            feed = make_feed(enc, index, device, True, pipe, seed=0, mode=mode, workers=a.workers, prefetch=a.prefetch,
                             host_augment=host_aug)
            setup = time.time() - t0
            gen = torch.Generator(device=device).manual_seed(0)
            for s in feed[:3]:  # warm-up: one batch each (starts the stream producers)
                s[0].sample(a.batch_size, gen)
            t0, c0 = time.time(), _cpu_seconds()
            for _ in range(a.steps):
                for s in feed[:3]:
                    x, y = s[0].sample(a.batch_size, gen)
                    sink += x.float().mean()
            if device.type == "cuda":
                torch.cuda.synchronize()
            res[name] = (time.time() - t0, _cpu_seconds() - c0)
            feed.close()
            how = {"device": "decoded once (setup), batched augmentation on the device",
                   "stream": "Pillow decode per batch in threads, batched augmentation on the device",
                   "stream+host-aug": "Pillow decode + per-sample Pillow augmentation in threads"}[name]
            _report(f"ours, {name}", *res[name], n, f"{how}; setup {setup:.1f} s")

        T = tv.transforms
        aug = T.Compose([T.RandomResizedCrop(a.size, scale=(0.7, 1.0)), T.RandomHorizontalFlip(),
                         T.ColorJitter(0.3, 0.3, 0.3, 0.3), T.RandomGrayscale(), T.ToTensor(),
                         T.Normalize(IMAGENET_MEAN, IMAGENET_STD)])
        base = root / "PACS"
        c0 = _cpu_seconds()  # workers' CPU time is counted once they exit (del iters below)
        iters = []
        for env in ("art_painting", "cartoon", "photo"):
            ds = tv.datasets.ImageFolder(str(base / env), transform=aug)
            iters.append(infinite_loader(ds, a.batch_size, a.workers, 0))
        for it in iters:
            next(it)
        t0 = time.time()
        for _ in range(a.steps):
            for it in iters:
                x, y = next(it)
                sink += x.to(device).float().mean()
        wall = time.time() - t0
        del iters
        gc.collect()
        res["domainbed"] = (wall, _cpu_seconds() - c0)
        _report("DomainBed-style", *res["domainbed"], n, f"per-sample PIL + torchvision transforms, {a.workers} "
                "DataLoader workers per training domain; CPU-s include worker start-up and warm-up batch")
        w_db, c_db = res["domainbed"]
        for name in variants:
            w, c = res[name]
            print(f"ratio ours {name} / DomainBed-style: {w_db / w:.2f}x wall-clock img/s, {c_db / c:.2f}x img per CPU-second")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes on the machine skew wall-clock figures)")


def _cpu_seconds() -> float:
    """CPU time of this process (all threads) plus its finished child processes."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# --------------------------------------------------------------------------- main
def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--domains", type=int, default=3)
    p.add_argument("--n-per-domain", type=int, default=1000)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--size", type=int, default=None, help="image side (default 32; --image-pipeline: 224)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="per training domain (DomainBed's defaults: 64; --image-pipeline: 32, its large-image batch)")
    p.add_argument("--steps", type=int, default=None, help="default 60; --image-pipeline: 10")
    p.add_argument("--checkpoint-freq", type=int, default=25)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers per loader in the baseline")
    p.add_argument("--threads", type=int, default=2, help="torch threads of the training process")
    p.add_argument("--compile", action="store_true", help="also time ours with torch.compile")
    p.add_argument("--bf16", action="store_true", help="also time ours with bf16 autocast (AMX on recent Xeons)")
    p.add_argument("--eval-batch", type=int, nargs="*", default=[],
                   help="also time ours with these evaluation batch sizes (default: the library's)")
    p.add_argument("--malloc-default", action="store_true",
                   help="also time ours with glibc's default malloc thresholds (first round only)")
    p.add_argument("--repeats", type=int, default=1, help="rounds, alternating ours and the baseline")
    p.add_argument("--load", type=int, default=_busy.default_load(),
                   help="then the same rounds with this many busy processes (default: one per usable core; 0: idle only)")
    p.add_argument("--skip-baseline", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="instead: one profiled job each (torch.profiler), CPU-s by phase and op kind, and the ratio's "
                        "upper bound if everything but ours' convolutions were free (use with --threads 1)")
    p.add_argument("--image-pipeline", action="store_true",
                   help="time DomainBed's image pipeline instead: device path, streaming path, DomainBed-style loader")
    p.add_argument("--n-per-class", type=int, default=20, help="--image-pipeline: images per class and domain (PACS: 7 x 4)")
    p.add_argument("--prefetch", type=int, default=3, help="--image-pipeline: batches read ahead per split (streaming)")
    p.add_argument("--thread-policies", action="store_true",
                   help="time the CPU thread policies instead (fixed count, waiting policies, the former governor, "
                        "one thread), idle and loaded")
    p.add_argument("--rounds", type=int, default=2, help="--thread-policies: rounds (policies alternate)")
    p.add_argument("--policy-runs", type=int, default=1, help="--thread-policies: timed jobs per policy and round")
    p.add_argument("--policies", nargs="+", default=None,
                   help="--thread-policies: which (fixed, fixed-spin10k, fixed-passive, governor, 1-thread; default all)")
    p.add_argument("--networks", action="store_true",
                   help="instead: training images/s and %% of peak FLOP/s per quick-profile network and ResNet-18 at "
                        "32/64 px, ours vs DomainBed's ERM ($DOMAINBED_SRC), idle then --load busy processes")
    p.add_argument("--device", default="cpu", help="--networks: cpu or cuda")
    p.add_argument("--seconds", type=float, default=2.0, help="--networks: timed seconds per variant and round")
    p.add_argument("--only", nargs="+", default=None, help="--networks: only the rows whose label contains one of these")
    p.add_argument("--batch-mult", type=int, default=1, help="--networks: multiply the profile's batch size (32) by this")
    p.add_argument("--policy-child", help=argparse.SUPPRESS)
    p.add_argument("--policy-job", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if a.policy_child:
        from bench import _thread_policies

        _thread_policies.child(a.policy_child, json.loads(a.policy_job), a.policy_runs)
        return
    torch.set_num_threads(a.threads)
    if a.networks:
        from bench import _network_peak

        _network_peak.networks_bench(a.device, a.seconds, a.rounds, a.load, a.threads, a.only, 32, a.batch_mult)
        return
    defaults = (224, 32, 10) if a.image_pipeline else (32, 64, 60)
    a.size, a.batch_size, a.steps = (v if v is not None else d for v, d in zip((a.size, a.batch_size, a.steps), defaults))
    if a.image_pipeline:
        pipeline_bench(a)
        return

    kwargs = {"n_domains": a.domains, "n_per_domain": a.n_per_domain, "n_classes": a.classes, "size": a.size}
    dataset = _builder(**kwargs)
    names = dataset.domain_names
    job = Job(BENCH, "ERM", names[1:], names[:1], steps=a.steps, checkpoint_freq=a.checkpoint_freq,
              dataset_kwargs=kwargs, hparams_overrides={"featurizer": "cnn", "batch_size": a.batch_size})
    n_train = a.steps * a.batch_size * len(job.train_domains)
    n_evals = len([s for s in range(a.steps) if s % a.checkpoint_freq == 0 or s == a.steps - 1])
    print(f"data (simulated): {a.domains} domains x {a.n_per_domain} images {a.size}x{a.size}, {a.classes} classes; "
          f"ERM + small CNN, batch {a.batch_size} x {len(job.train_domains)} domains, {a.steps} steps, "
          f"{n_evals} evaluations of {a.domains * a.n_per_domain} images; torch threads {a.threads}, "
          f"torch {torch.__version__}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    if a.thread_policies:
        from bench import _thread_policies

        _thread_policies.policies_bench(job, n_train, a.rounds, a.policy_runs, a.load,
                                        tuple(a.policies or _thread_policies.POLICIES))
        return
    if a.profile:
        with tempfile.TemporaryDirectory() as tmp:
            run_job(job, Path(tmp) / "warmup", device="cpu")  # oneDNN primitives and allocator warm, as in later rounds
            profile_bench(job, dataset, a, Path(tmp))
        print(f"load average at the end: {os.getloadavg()[0]:.1f}")
        return

    variants = [("ours malloc-default", {})] if a.malloc_default else []
    variants.append(("ours", {}))
    variants += [(f"ours eval{b}", {"eval_batch_size": b}) for b in a.eval_batch]
    if a.bf16:
        variants.append(("ours bf16", {"precision": "bf16"}))
    if a.compile:
        variants.append(("ours compile", {"compile": True}))
    variants.append(("ours 1-thread", {}))  # the single-threaded reference for the loaded run
    ratios: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in variants}
    phase_walls: dict[tuple[str, str], list[float]] = {}
    phases = [("idle", 0)] + ([("loaded", a.load)] if a.load > 0 else [])
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for phase, load in phases:
            with _busy.busy_load(load):
                print(f"== {phase}: {load} busy processes started by this script; {_busy.load_line()}"
                      + ("  (shared machine: not idle)" if phase == "idle" else ""), flush=True)
                for r in range(a.repeats):
                    if a.repeats > 1:
                        print(f"-- round {r + 1}/{a.repeats} (load average {os.getloadavg()[0]:.1f})")
                    results = {}
                    for name, opts in variants:
                        if name == "ours malloc-default":
                            if r > 0:
                                continue
                            saved = os.environ.get("DGANALYSIS_MALLOPT")
                            os.environ["DGANALYSIS_MALLOPT"] = "0"
                        t0, c0 = time.time(), _cpu_seconds()
                        with threads.torch_threads(1 if name == "ours 1-thread" else torch.get_num_threads()):
                            d = run_job(job, tmp / f"{phase}{r}_{name.replace(' ', '_')}", device="cpu", **opts)
                        if name == "ours malloc-default":
                            os.environ.pop("DGANALYSIS_MALLOPT")
                            if saved is not None:
                                os.environ["DGANALYSIS_MALLOPT"] = saved
                        results[name] = (time.time() - t0, _cpu_seconds() - c0)
                        phase_walls.setdefault((phase, name), []).append(results[name][0])
                        last = json.loads((d / "results.jsonl").read_text().splitlines()[-1])
                        _report(name, *results[name], n_train, f"final loss {last['loss']:.3f}, test acc {last['env0_in_acc']:.3f}")
                    if a.skip_baseline:
                        continue
                    base = baseline_job(job, dataset, tmp / f"png{phase}{r}", a.workers, tmp / f"baseline{phase}{r}.jsonl")
                    phase_walls.setdefault((phase, "DomainBed-style"), []).append(base[0])
                    last = json.loads((tmp / f"baseline{phase}{r}.jsonl").read_text().splitlines()[-1])
                    _report("DomainBed-style", *base, n_train,
                            f"final loss {last['loss']:.3f}, test acc {last['env0_in_acc']:.3f}; {a.workers} workers per loader")
                    for name, (w, c) in results.items():
                        ratios[name].append((base[0] / w, base[1] / c))
                        print(f"ratio {name} / DomainBed-style: {base[0] / w:.2f}x wall-clock img/s, {base[1] / c:.2f}x img per CPU-second")
    if a.repeats > 1 and not a.skip_baseline:
        for name, rs in ratios.items():
            walls, cpus = [x for x, _ in rs], [x for _, x in rs]
            print(f"ratio {name} / DomainBed-style over {len(rs)} rounds: wall {min(walls):.2f}-{max(walls):.2f}x "
                  f"(median {np.median(walls):.2f}), CPU {min(cpus):.2f}-{max(cpus):.2f}x (median {np.median(cpus):.2f})")
    if len(phases) > 1:
        names = sorted({n for _, n in phase_walls}, key=lambda n: (n != "ours", n))
        print("slowdown under load (median wall loaded / idle): " + ", ".join(
            f"{n} {np.median(phase_walls['loaded', n]) / np.median(phase_walls['idle', n]):.2f}x"
            for n in names if ("loaded", n) in phase_walls) + "  (ours 1-thread: the single-threaded reference)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (other processes on the machine skew wall-clock figures)")


def _report(name: str, wall: float, cpu: float, n: int, extra: str) -> None:
    print(f"{name:22s}: {wall:7.1f} s wall {n / wall:7.1f} img/s | {cpu:7.1f} CPU-s {n / cpu:7.1f} img/CPU-s  ({extra})",
          flush=True)


if __name__ == "__main__":
    main()
