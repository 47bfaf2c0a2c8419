"""The environment classifier of OoD-Bench and the full shift-estimation pipeline (Ye et al., CVPR 2022).

Sec. 2, "Practical estimation": a network ``g`` (featurizer → low-dimensional z) with a label-
conditioned head ``h(z, y)`` is trained to tell which environment an example ``(x, y)`` comes from
(eq. 4, cross-entropy); by Theorem 1 its features keep what makes the joint distribution of (z, y)
differ across environments. The shifts are then estimated on *held-out* features with
:func:`dganalysis.shift.estimator.estimate_shift`.

Choices the paper leaves open (ours):

- ``z_dim = 2``: the KDE needs a low-dimensional z (its error grows fast with the dimension);
  ``g`` is ``build_featurizer`` (``featurizer="mlp"`` by default, DomainBed's MLP for small
  images; ``"cnn"``/``"auto"`` for larger ones) followed by a linear map to ``z_dim``.
- ``h(z, y) = w_y . z + b_y`` (one linear environment logit per class, selected by the label).
- Label-shift-free balancing (the paper assumes p(y) = q(y)): for every class both environments are
  subsampled to the same count (the smaller one), at random.
- Holdout: each balanced environment is split at random (``holdout_fraction = 0.5``); the classifier
  trains on one part, z is extracted on the other.
- Adam, lr 1e-3, batch 128 per environment, ``steps = 300``; trials differ by seed (subsampling,
  split, initialisation, Monte-Carlo points); ``summarize`` reports mean ± SE (ddof = 1).
- ``num_threads = 1``: :func:`shift_trials` runs with that many torch CPU threads and restores the
  previous setting afterwards. The networks and KDEs here are tiny; on a shared 2-core CPU two
  OpenMP threads made a trial 7x slower (37 s vs 5 s measured) than one.
- Optional calibration of ``eps_div``/``eps_cor`` on an i.i.d. split of the training
  environment's held-out features (:func:`dganalysis.shift.calibration.calibrate_thresholds`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from dganalysis.data.dataset import DomainDataset, concat_domains
from dganalysis.nets.featurizers import build_featurizer
from dganalysis.shift.calibration import calibrate_thresholds
from dganalysis.shift.estimator import estimate_shift

log = logging.getLogger(__name__)


@dataclass
class EnvClassifierConfig:
    """Training settings of the environment classifier (see module docstring)."""

    z_dim: int = 2
    featurizer: str = "mlp"
    steps: int = 300
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    holdout_fraction: float = 0.5
    num_threads: int | None = 1


class EnvClassifier(nn.Module):
    """``g``: featurizer → Linear(z_dim); ``h(z, y)``: the y-th of ``n_classes`` linear environment logits."""

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, cfg: EnvClassifierConfig) -> None:
        super().__init__()
        feat = build_featurizer(input_shape, {"featurizer": cfg.featurizer})
        self.g = nn.Sequential(feat, nn.Linear(feat.n_outputs, cfg.z_dim))
        self.h = nn.Linear(cfg.z_dim, n_classes)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Environment logit (test = 1) of each example given its label."""
        return self.h(self.g(x)).gather(1, y.view(-1, 1)).squeeze(1)

    @torch.no_grad()
    def features(self, x: torch.Tensor, batch_size: int = 1024) -> np.ndarray:
        """z = g(x) for float inputs in [0, 1], batched, as float64 numpy."""
        self.eval()
        return np.concatenate([self.g(x[i : i + batch_size]).double().cpu().numpy() for i in range(0, len(x), batch_size)])


def _to_float(images: np.ndarray, device: torch.device) -> torch.Tensor:
    return torch.as_tensor(np.asarray(images), device=device).float().div_(255.0)


def balance_and_split(
    y_p: np.ndarray, y_q: np.ndarray, holdout_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Indices ``(train_p, hold_p, train_q, hold_q)``: per class, both environments subsampled to the
    same count (no label shift), then each split at random into train / holdout."""
    if not 0 < holdout_fraction < 1:
        raise ValueError(f"holdout_fraction must be in (0, 1), got {holdout_fraction}")
    # random keys sorted within class give a random subset of each class; rank < min count keeps it
    def ranks(y: np.ndarray) -> np.ndarray:
        key = rng.random(len(y))
        order = np.lexsort((key, y))
        r = np.empty(len(y), dtype=np.int64)
        starts = np.searchsorted(y[order], y[order])
        r[order] = np.arange(len(y)) - starts
        return r

    classes = np.union1d(y_p, y_q)
    ip, iq = np.searchsorted(classes, y_p), np.searchsorted(classes, y_q)
    keep = np.minimum(np.bincount(ip, minlength=len(classes)), np.bincount(iq, minlength=len(classes)))
    if keep.sum() < 4:
        raise ValueError("balance_and_split: fewer than 4 examples per environment after label balancing")
    lim_p, lim_q = keep[ip], keep[iq]
    idx_p = np.flatnonzero(ranks(y_p) < lim_p)
    idx_q = np.flatnonzero(ranks(y_q) < lim_q)

    def split(idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.permutation(idx)
        n_hold = max(2, int(round(holdout_fraction * len(idx))))
        return np.sort(idx[n_hold:]), np.sort(idx[:n_hold])

    return (*split(idx_p), *split(idx_q))


def train_env_classifier(
    x_p: np.ndarray, y_p: np.ndarray, x_q: np.ndarray, y_q: np.ndarray, n_classes: int,
    cfg: EnvClassifierConfig | None = None, *, seed: int = 0, device: str | torch.device | None = None,
    progress: bool = False,
) -> EnvClassifier:
    """Train ``h(g(x), y)`` to tell environment p (label 0) from q (label 1), eq. 4 with cross-entropy.

    ``x_*`` are uint8 images ``[N, C, H, W]``; each step draws ``batch_size`` examples per environment.
    """
    cfg = cfg or EnvClassifierConfig()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(seed)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    model = EnvClassifier(tuple(x_p.shape[1:]), n_classes, cfg).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    xp, xq = _to_float(x_p, device), _to_float(x_q, device)
    yp, yq = torch.as_tensor(y_p, device=device), torch.as_tensor(y_q, device=device)
    env = torch.cat([torch.zeros(cfg.batch_size), torch.ones(cfg.batch_size)]).to(device)
    model.train()
    for _ in tqdm(range(cfg.steps), desc="env classifier", leave=False, disable=not progress):
        i = torch.randint(len(xp), (cfg.batch_size,), generator=gen).to(device)
        j = torch.randint(len(xq), (cfg.batch_size,), generator=gen).to(device)
        logits = model(torch.cat([xp[i], xq[j]]), torch.cat([yp[i], yq[j]]))
        loss = nn.functional.binary_cross_entropy_with_logits(logits, env)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    return model


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch CPU threads (None: unchanged), restoring the previous count."""
    old = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _pool(ds: DomainDataset, names: Sequence[str] | str):
    names = [names] if isinstance(names, str) else list(names)
    d = concat_domains("+".join(names), [ds[n] for n in names]) if len(names) > 1 else ds[names[0]]
    return np.asarray(d.images), np.asarray(d.labels)


def shift_trials(
    dataset: DomainDataset,
    train: Sequence[str] | str,
    test: Sequence[str] | str,
    *,
    n_trials: int = 3,
    cfg: EnvClassifierConfig | None = None,
    eps_div: float = 1e-12,
    eps_cor: float = 0.0,
    calibrate: bool = False,
    calibration_tol: float = 0.01,
    n_samples: int = 10_000,
    bandwidth: str = "shared",
    seed: int = 0,
    device: str | torch.device | None = None,
    max_per_env: int | None = None,
) -> pd.DataFrame:
    """The full pipeline, one row per trial: diversity, correlation, their Monte-Carlo SEs, shares of S/T,
    thresholds used, and the environment classifier's held-out accuracy.

    ``train``/``test``: domain name(s) pooled into environment p resp. q. ``max_per_env`` subsamples
    each environment first (for speed).
    """
    cfg = cfg or EnvClassifierConfig()
    with torch_threads(cfg.num_threads):
        return _shift_trials(dataset, train, test, n_trials, cfg, eps_div, eps_cor, calibrate, calibration_tol,
                             n_samples, bandwidth, seed, device, max_per_env)


def _shift_trials(dataset, train, test, n_trials, cfg, eps_div, eps_cor, calibrate, calibration_tol, n_samples,
                  bandwidth, seed, device, max_per_env) -> pd.DataFrame:
    x_p, y_p = _pool(dataset, train)
    x_q, y_q = _pool(dataset, test)
    rows = []
    for t in range(n_trials):  # a few trials, each a full training run
        rng = np.random.default_rng([seed, t])
        if max_per_env is not None:
            sp = rng.permutation(len(y_p))[:max_per_env]
            sq = rng.permutation(len(y_q))[:max_per_env]
        else:
            sp, sq = np.arange(len(y_p)), np.arange(len(y_q))
        tr_p, ho_p, tr_q, ho_q = balance_and_split(y_p[sp], y_q[sq], cfg.holdout_fraction, rng)
        tr_p, ho_p, tr_q, ho_q = sp[tr_p], sp[ho_p], sq[tr_q], sq[ho_q]
        model = train_env_classifier(x_p[tr_p], y_p[tr_p], x_q[tr_q], y_q[tr_q], dataset.n_classes, cfg,
                                     seed=int(rng.integers(2**31)), device=device)
        dev = next(model.parameters()).device
        z_p = model.features(_to_float(x_p[ho_p], dev))
        z_q = model.features(_to_float(x_q[ho_q], dev))
        with torch.no_grad():
            acc = _holdout_accuracy(model, x_p[ho_p], y_p[ho_p], x_q[ho_q], y_q[ho_q], dev)
        e_div, e_cor = eps_div, eps_cor
        if calibrate:
            cal = calibrate_thresholds(z_p, y_p[ho_p], tol=calibration_tol, n_samples=n_samples,
                                       seed=int(rng.integers(2**31)), bandwidth=bandwidth)
            e_div, e_cor = cal.eps_div, cal.eps_cor
        est = estimate_shift(z_p, y_p[ho_p], z_q, y_q[ho_q], eps_div=e_div, eps_cor=e_cor, n_samples=n_samples,
                             seed=int(rng.integers(2**31)), bandwidth=bandwidth)
        rows.append({"trial": t, **est.as_dict(), "env_acc": acc, "n_p": len(ho_p), "n_q": len(ho_q)})
    return pd.DataFrame(rows)


def _holdout_accuracy(model: EnvClassifier, x_p, y_p, x_q, y_q, device) -> float:
    correct = 0
    for x, y, e in ((x_p, y_p, 0), (x_q, y_q, 1)):
        logit = model(_to_float(x, device), torch.as_tensor(y, device=device))
        correct += int(((logit > 0).long() == e).sum())
    return correct / (len(y_p) + len(y_q))


def summarize(trials: pd.DataFrame, cols: Sequence[str] = ("diversity", "correlation")) -> dict[str, float]:
    """Mean and standard error (ddof = 1) over trials of each column in ``cols``."""
    out: dict[str, float] = {}
    n = len(trials)
    for c in cols:
        v = trials[c].to_numpy(dtype=float)
        out[c] = float(v.mean())
        out[f"{c}_se"] = float(v.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    out["n_trials"] = n
    return out
