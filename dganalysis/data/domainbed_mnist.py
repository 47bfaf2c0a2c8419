"""DomainBed's RotatedMNIST and ColoredMNIST, built for one run exactly as DomainBed builds them.

DomainBed (Gulrajani & Lopez-Paz 2021, ``datasets.py``, ``MultipleEnvironmentMNIST``) builds these datasets inside
every run, after ``torch.manual_seed(args.seed)``: it concatenates MNIST's 60,000 training and 10,000 test images,
shuffles them with ``torch.randperm`` on torch's global generator and gives environment ``i`` of ``k`` every
``k``-th image starting at ``i``. Its sweep gives each run its own ``--seed`` (``seed_hash(dataset, algorithm,
test_envs, hparams_seed, trial_seed)``, :meth:`dganalysis.training.job.Job.domainbed_seed`), so the partition changes from
run to run, and that partition variance is part of DomainBed's trial-to-trial variance. Here the run seed arrives as
``run_seed`` (the trainer passes the job's DomainBed seed), and the same draws are made on a private generator
seeded with it; :func:`replay_draws` repeats them on the global generator (the ``domainbed_exact`` mode needs the
global stream where DomainBed's training starts from).

- ``RotatedMNIST`` (Ghifary et al. 2015): environments ``"0"``, ``"15"``, … ``"75"``; every image rotated by its
  environment's angle (Pillow, bilinear, black fill: the pixels of torchvision's ``rotate`` on a PIL image).
- ``ColoredMNIST`` (Arjovsky et al. 2019): environments ``"+90%"``, ``"+80%"``, ``"-90%"`` (colour flipped with
  probability 0.1, 0.2, 0.9); DomainBed's binary label is ``digit < 5`` (1 for 0-4), flipped where
  ``torch.rand < 0.25``, then the colour is the label flipped where ``torch.rand < e``: two draws per environment,
  in environment order, after the shuffle. The digit is drawn in channel ``colour`` (the other channel zeroed).

Images are kept as uint8; DomainBed's tensors are these divided by 255 (``ToTensor`` / ``.div_(255.0)``).
``image_size`` other than 28 or other ``angles`` / ``flips`` are our extensions (the partition rule is unchanged,
``k`` = the number of environments). ``info["partition"]`` names the rule; ``meta["source_index"]`` holds each
image's index in the concatenated train+test set. Our earlier fixed partition (one numpy shuffle seeded 0,
consecutive blocks) stays available as ``RotatedMNIST_Fixed`` / ``ColoredMNIST_Fixed`` (:mod:`dganalysis.data.digits`).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from dganalysis.data.dataset import Domain, DomainDataset
from dganalysis.data.registry import ROOT_HINT, register_dataset
from dganalysis.validation import ConfigError

ROTATIONS = (0, 15, 30, 45, 60, 75)
#: DomainBed's ColoredMNIST environments and their colour-flip probabilities, in environment order
COLOR_FLIP = {"+90%": 0.1, "+80%": 0.2, "-90%": 0.9}
LABEL_NOISE = 0.25
PARTITION = "DomainBed per-run: torch.randperm after manual_seed(run_seed), environment i takes every k-th image"


def check_run_seed(run_seed) -> int:
    """``run_seed`` as an int in DomainBed's seed range, else a ValueError naming it."""
    if isinstance(run_seed, bool) or not isinstance(run_seed, (int, np.integer)) or not 0 <= int(run_seed) < 2**63:
        raise ConfigError(f"run_seed={run_seed!r}: expected a non-negative int (the run's DomainBed --seed)")
    return int(run_seed)


def draws(n: int, n_envs: int, run_seed: int, flips: tuple[float, ...] | None = None, digits: np.ndarray | None = None,
          generator: torch.Generator | None = None):
    """DomainBed's random draws for one run: the shuffle, then (ColoredMNIST, ``flips`` given) per environment the
    label-noise and colour-flip draws. On ``generator`` (None: torch's global generator, which the caller seeded).
    Returns ``[(source indices, label, colour or None)]`` per environment (labels need ``digits``)."""
    perm = torch.randperm(n, generator=generator)
    out = []
    for i in range(n_envs):
        idx = perm[i::n_envs]
        if flips is None:
            out.append((idx.numpy(), None, None))
            continue
        m = len(idx)
        base = (torch.from_numpy(digits[idx.numpy()]) < 5).float() if digits is not None else torch.zeros(m)
        label = (base - (torch.rand(m, generator=generator) < LABEL_NOISE).float()).abs()
        colour = (label - (torch.rand(m, generator=generator) < flips[i]).float()).abs()
        out.append((idx.numpy(), label.long().numpy(), colour.long().numpy()))
    return out


def replay_draws(info: dict) -> None:
    """Repeat a built dataset's draws on torch's global generator (seeded by the caller with the run seed), so the
    global stream stands where DomainBed's stands once its dataset is built. A dataset without ``info["draws"]``
    made no draws (nothing happens)."""
    spec = info.get("draws")
    if spec:
        flips = tuple(spec["flips"]) if spec.get("flips") is not None else None
        draws(int(spec["n"]), int(spec["n_envs"]), 0, flips)


@lru_cache(maxsize=2)
def _mnist(mnist_dir: str, image_size: int) -> tuple[np.ndarray, np.ndarray, str]:
    from dganalysis.data.digits import resize
    from dganalysis.data.idx import find_mnist

    root = Path(mnist_dir)
    if (root / "MNIST" / "raw").is_dir() and not any(root.glob("*-ubyte*")) and not (root / "raw").is_dir():
        root = root / "MNIST"  # DomainBed's --data_dir (torchvision writes <data_dir>/MNIST/raw)
    x, y = find_mnist(root)
    return resize(x, image_size), y, f"MNIST (LeCun et al. 1998) raw IDX files in {mnist_dir}"


def _load(mnist_dir, image_size: int, name: str):
    if not mnist_dir:
        raise ConfigError(f"{name} needs mnist_dir= a folder with MNIST's raw IDX files (itself, its raw/ or its "
                         f"MNIST/raw/: DomainBed's --data_dir works as it is; {ROOT_HINT})")
    if isinstance(image_size, bool) or not isinstance(image_size, (int, np.integer)) or image_size < 1:
        raise ConfigError(f"{name}: image_size={image_size!r}, expected a positive int")
    return _mnist(str(Path(mnist_dir).expanduser()), int(image_size))


def rotated_mnist(mnist_dir: str | Path | None = None, run_seed: int = 0, image_size: int = 28,
                  angles: tuple[int, ...] = ROTATIONS, data_dir: str | Path | None = None) -> DomainDataset:
    """DomainBed's RotatedMNIST for the run seeded ``run_seed`` (``data_dir`` unused: built in memory)."""
    run_seed = check_run_seed(run_seed)
    x, y, source = _load(mnist_dir, image_size, "RotatedMNIST")
    angles = tuple(angles)
    parts = draws(len(x), len(angles), run_seed, generator=torch.Generator().manual_seed(run_seed))
    domains = []
    for angle, (idx, _, _) in zip(angles, parts):
        imgs = np.stack([np.asarray(Image.fromarray(im).rotate(angle, resample=Image.BILINEAR)) for im in x[idx]])
        domains.append(Domain(str(angle), imgs[:, None], y[idx], {"source_index": idx.astype(np.int64)}))
    return DomainDataset("RotatedMNIST", [str(c) for c in range(10)], domains, {
        "source": source, "recipe": "DomainBed RotatedMNIST", "partition": PARTITION, "run_seed": run_seed,
        "angles": list(angles), "draws": {"n": len(x), "n_envs": len(angles), "flips": None}})


def colored_mnist(mnist_dir: str | Path | None = None, run_seed: int = 0, image_size: int = 28,
                  flips: dict[str, float] | None = None, data_dir: str | Path | None = None) -> DomainDataset:
    """DomainBed's ColoredMNIST for the run seeded ``run_seed``; ``meta["digit"]`` keeps the digit, ``meta["color"]``
    the colour (0 red, 1 green)."""
    run_seed = check_run_seed(run_seed)
    x, digit, source = _load(mnist_dir, image_size, "ColoredMNIST")
    flips = dict(flips or COLOR_FLIP)
    rates = tuple(float(v) for v in flips.values())
    parts = draws(len(x), len(flips), run_seed, rates, digit, generator=torch.Generator().manual_seed(run_seed))
    domains = []
    for env, (idx, label, colour) in zip(flips, parts):
        imgs = np.zeros((len(idx), 2) + x.shape[1:], np.uint8)
        imgs[np.arange(len(idx)), colour] = x[idx]
        domains.append(Domain(env, imgs, label, {"color": colour, "digit": digit[idx],
                                                  "source_index": idx.astype(np.int64)}))
    return DomainDataset("ColoredMNIST", ["0", "1"], domains, {
        "source": source, "recipe": "DomainBed ColoredMNIST", "partition": PARTITION, "run_seed": run_seed,
        "label_noise": LABEL_NOISE, "label_rule": "digit < 5 -> 1 (DomainBed)", "color_flip": flips,
        "draws": {"n": len(x), "n_envs": len(flips), "flips": list(rates)}})


@register_dataset("RotatedMNIST")
def _rotated_mnist(**kw) -> DomainDataset:
    return rotated_mnist(**kw)


@register_dataset("ColoredMNIST")
def _colored_mnist(**kw) -> DomainDataset:
    return colored_mnist(**kw)


for _fn in (_rotated_mnist, _colored_mnist):
    _fn.per_run_seed = True  # read by dganalysis.training.train.build_data: pass the job's DomainBed seed as run_seed
