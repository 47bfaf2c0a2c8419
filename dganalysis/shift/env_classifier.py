"""The environment classifier of OoD-Bench (Ye et al., CVPR 2022, Sec. 2 "Practical estimation", eq. 4).

A network ``g`` (featurizer → low-dimensional z) with a label-conditioned head ``h(z, y)`` learns to tell
which environment an example ``(x, y)`` comes from; by Theorem 1 its features keep what makes the joint
distribution of (z, y) differ across environments. Shifts are then estimated on its *held-out* features.

Two named recipes (``EnvClassifierConfig.recipe``):

- ``"oodbench"`` (default): the recipe of OoD-Bench's ``scripts/train.py`` with its ``config.py`` defaults.
  z dimension 8 (``--dim_z``); featurizer ``"oodbench_mlp"`` (its ``MNIST_MLP``: two ReLU layers of 390,
  Xavier-uniform with ReLU gain; any :func:`dganalysis.nets.featurizers.build_featurizer` name can be given
  instead, e.g. ``"resnet18"`` as it uses for larger images); head ``h(z ⊙ W onehot(y))`` with two outputs
  and cross-entropy (its ``EnvClassifier``, Xavier-uniform, zero biases); SGD (lr 0.05, momentum 0.9,
  weight decay 1e-4), batches of 32 per environment without replacement, 10 epochs; cosine annealing from
  0.05 to 0.025 over the first 5 epochs, then stochastic weight averaging (SWA) of every step of epochs
  6–10; BatchNorm statistics of the averaged model recomputed on the training data; features from the
  averaged model. ``steps`` (None = epochs as OoD-Bench) may shorten training for a CPU budget: the cosine
  phase then takes the first ``swa_start / n_epochs`` of the steps (our knob, not OoD-Bench's).
- ``"dganalysis"`` (``EnvClassifierConfig.dganalysis()``, our earlier recipe): z dimension 2 (KDE error
  grows fast with the dimension), DomainBed's MLP featurizer, one linear environment logit per class
  ``h(z, y) = w_y . z + b_y`` with binary cross-entropy, Adam (lr 1e-3), 300 steps of 128 examples per
  environment drawn with replacement, holdout 50%.

Both recipes share the data handling of OoD-Bench's ``utils.get_dataloaders``: label-shift-free balancing
(per class, both environments subsampled at random to the smaller count) and a holdout split stratified
per class (``int(count * holdout_fraction)`` of each class held out; OoD-Bench's 20%).
``num_threads = 1``: training runs with one torch CPU thread (on a shared 2-core CPU two OpenMP threads
made a trial 7x slower, 37 s vs 5 s measured); ``None`` uses :func:`dganalysis.threads.fixed_count` (the count
in force or ``$DGANALYSIS_THREADS``, never the load); the previous setting is restored afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn
from torch.optim import swa_utils
from tqdm.auto import tqdm

from dganalysis.nets.featurizers import build_featurizer
from dganalysis.validation import (
    ConfigError,
    check_features,
    check_generator,
    check_labels,
    check_scalar,
    describe,
)

RECIPES = ("oodbench", "dganalysis")


@dataclass
class EnvClassifierConfig:
    """Training settings of the environment classifier; defaults = OoD-Bench's ``train.py`` (see module doc).

    Fields marked (oodbench) or (dganalysis) are read only by that recipe.
    """

    recipe: str = "oodbench"
    z_dim: int = 8
    featurizer: str = "oodbench_mlp"
    holdout_fraction: float = 0.2
    batch_size: int = 32  # per environment
    n_epochs: int = 10  # (oodbench)
    swa_start: int = 5  # (oodbench) last epoch of the cosine phase; SWA averages the later ones
    init_lr: float = 0.05  # (oodbench)
    swa_lr: float = 0.025  # (oodbench)
    momentum: float = 0.9  # (oodbench)
    weight_decay: float = 1e-4
    steps: int | None = None  # total steps; None: n_epochs epochs (oodbench) or 300 (dganalysis)
    lr: float = 1e-3  # (dganalysis) Adam
    num_threads: int | None = 1

    def __post_init__(self) -> None:
        if self.recipe not in RECIPES:
            raise ValueError(f"EnvClassifierConfig.recipe: expected one of {RECIPES}, got {self.recipe!r}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"EnvClassifierConfig.holdout_fraction: expected (0, 1), got {self.holdout_fraction}")
        if self.z_dim < 1 or self.batch_size < 1:
            raise ValueError(f"EnvClassifierConfig: z_dim and batch_size must be >= 1, got {self.z_dim}, "
                             f"{self.batch_size}")
        if self.recipe == "oodbench" and not 0 < self.swa_start < self.n_epochs:
            raise ValueError(f"EnvClassifierConfig: need 0 < swa_start < n_epochs (SWA must average some epochs), "
                             f"got swa_start={self.swa_start}, n_epochs={self.n_epochs}")
        if self.steps is not None and self.steps < 2:
            raise ValueError(f"EnvClassifierConfig.steps: expected None or >= 2, got {self.steps}")

    @classmethod
    def dganalysis(cls, **overrides) -> EnvClassifierConfig:
        """Our earlier recipe (see module docstring), with ``overrides``."""
        base = cls(recipe="dganalysis", z_dim=2, featurizer="mlp", holdout_fraction=0.5, batch_size=128,
                   weight_decay=0.0, lr=1e-3)
        return replace(base, **overrides)


class OoDBenchMLP(nn.Module):
    """OoD-Bench's ``MNIST_MLP`` backbone: flatten → Linear(·, 390) → ReLU → Linear(390, 390) → ReLU."""

    def __init__(self, input_shape: tuple[int, ...], width: int = 390) -> None:
        super().__init__()
        n_in = int(np.prod(input_shape))
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(n_in, width), nn.ReLU(True), nn.Linear(width, width),
                                 nn.ReLU(True))
        self.n_outputs = width
        gain = nn.init.calculate_gain("relu")
        for m in self.net:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight, gain=gain)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def _featurizer(input_shape: tuple[int, ...], name: str) -> nn.Module:
    if name == "oodbench_mlp":
        return OoDBenchMLP(input_shape)
    return build_featurizer(input_shape, {"featurizer": name})


class EnvClassifier(nn.Module):
    """``g`` = featurizer → Linear(z_dim) and a label-conditioned head, per recipe:

    - ``"oodbench"``: logits over (p, q) = ``h(z ⊙ W onehot(y))`` (OoD-Bench's ``EnvClassifier``);
    - ``"dganalysis"``: one logit of q, the y-th output of ``h(z)``.
    """

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, cfg: EnvClassifierConfig) -> None:
        super().__init__()
        feat = _featurizer(input_shape, cfg.featurizer)
        fc = nn.Linear(feat.n_outputs, cfg.z_dim)
        self.g = nn.Sequential(feat, fc)
        self.recipe = cfg.recipe
        self.n_classes = n_classes
        if cfg.recipe == "oodbench":
            self.y_map = nn.Linear(n_classes, cfg.z_dim)
            self.h = nn.Linear(cfg.z_dim, 2)
            for m in (fc, self.y_map, self.h):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        else:
            self.h = nn.Linear(cfg.z_dim, n_classes)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Environment logits ``[n, 2]`` (oodbench) or the logit of q ``[n]`` (dganalysis)."""
        z = self.g(x)
        if self.recipe == "oodbench":
            onehot = nn.functional.one_hot(y, self.n_classes).to(z.dtype)
            return self.h(z * self.y_map(onehot))
        return self.h(z).gather(1, y.view(-1, 1)).squeeze(1)

    def q_logit(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Log-odds that ``(x, y)`` comes from environment q."""
        out = self(x, y)
        return out[:, 1] - out[:, 0] if out.ndim == 2 else out

    @torch.no_grad()
    def features(self, x: torch.Tensor, batch_size: int = 1024) -> np.ndarray:
        """z = g(x) for float inputs in [0, 1], batched, as float64 numpy."""
        self.eval()
        return np.concatenate([self.g(x[i : i + batch_size]).double().cpu().numpy()
                               for i in range(0, len(x), batch_size)])


def images_to_float(images: np.ndarray, device: torch.device) -> torch.Tensor:
    """uint8 images ``[n, C, H, W]`` (values 0–255) → float tensor in [0, 1] on ``device``."""
    check_features(images, "images", func="to_float", ndim=None, min_ndim=2, to=None)
    return torch.as_tensor(np.asarray(images), device=device).float().div_(255.0)


def balance(y_p: np.ndarray, y_q: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(idx_p, idx_q)``: per class, both environments subsampled at random to the same (smaller)
    count, as OoD-Bench's ``create_label_shift_free_datasets``; classes missing in either are dropped.
    ``y_p`` [n_p], ``y_q`` [n_q] integer labels; ``rng`` a numpy Generator (or an integer seed)."""
    y_p, y_q = check_labels(y_p, None, "y_p", func="balance"), check_labels(y_q, None, "y_q", func="balance")
    rng = check_generator(rng, "rng", func="balance")
    classes = np.intersect1d(y_p, y_q)
    idx_p, idx_q = [], []
    for c in classes:
        ip, iq = np.flatnonzero(y_p == c), np.flatnonzero(y_q == c)
        k = min(len(ip), len(iq))
        idx_p.append(rng.permutation(ip)[:k])
        idx_q.append(rng.permutation(iq)[:k])
    if not idx_p or sum(map(len, idx_p)) < 4:
        raise ValueError("balance: fewer than 4 examples per environment after label balancing")
    return np.sort(np.concatenate(idx_p)), np.sort(np.concatenate(idx_q))


def stratified_split(y: np.ndarray, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(first, rest)`` index arrays: ``int(count * fraction)`` random examples of each class in ``first``
    (OoD-Bench's ``split_dataset``). ``y`` [n] integer labels, ``fraction`` in [0, 1], ``rng`` a numpy Generator."""
    y = check_labels(y, None, "y", func="stratified_split")
    check_scalar(fraction, "fraction", func="stratified_split", low=0.0, high=1.0)
    rng = check_generator(rng, "rng", func="stratified_split")
    first, rest = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = int(len(idx) * fraction)
        first.append(idx[:k])
        rest.append(idx[k:])
    return np.sort(np.concatenate(first)), np.sort(np.concatenate(rest))


def balance_and_split(
    y_p: np.ndarray, y_q: np.ndarray, holdout_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Indices ``(train_p, hold_p, train_q, hold_q)``: :func:`balance`, then a per-class stratified holdout
    of ``holdout_fraction`` in each environment (equal class counts in both holdouts)."""
    check_scalar(holdout_fraction, "holdout_fraction", func="balance_and_split", low=0.0, high=1.0, low_open=True,
                 high_open=True)
    y_p, y_q = check_labels(y_p, None, "y_p", func="balance_and_split"), check_labels(y_q, None, "y_q",
                                                                                     func="balance_and_split")
    rng = check_generator(rng, "rng", func="balance_and_split")
    idx_p, idx_q = balance(y_p, y_q, rng)
    ho_p, tr_p = stratified_split(y_p[idx_p], holdout_fraction, rng)
    ho_q, tr_q = stratified_split(y_q[idx_q], holdout_fraction, rng)
    return idx_p[tr_p], idx_p[ho_p], idx_q[tr_q], idx_q[ho_q]


def iid_split(
    x_p: np.ndarray, y_p: np.ndarray, x_q: np.ndarray, y_q: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """OoD-Bench's ``--force_iid``: balance both environments, split each in half per class (p_a, p_b,
    q_a, q_b) and return the i.i.d. environments ``(x, y)`` of p_a ∪ q_b and p_b ∪ q_a, each of the full
    (balanced) sample size. Used to calibrate the thresholds. ``x_*`` [n, ...] images, ``y_*`` [n] labels."""
    f = "iid_split"
    check_features(x_p, "x_p", func=f, ndim=None, min_ndim=2, finite=False, to=None)
    check_features(x_q, "x_q", func=f, ndim=None, min_ndim=2, finite=False, to=None)
    y_p, y_q = check_labels(y_p, len(x_p), "y_p", func=f, rows_of="'x_p'"), check_labels(y_q, len(x_q), "y_q", func=f,
                                                                                          rows_of="'x_q'")
    rng = check_generator(rng, "rng", func=f)
    idx_p, idx_q = balance(y_p, y_q, rng)
    pa, pb = stratified_split(y_p[idx_p], 0.5, rng)
    qa, qb = stratified_split(y_q[idx_q], 0.5, rng)
    pa, pb, qa, qb = idx_p[pa], idx_p[pb], idx_q[qa], idx_q[qb]
    new_x_p = np.concatenate([x_p[pa], x_q[qb]])
    new_y_p = np.concatenate([y_p[pa], y_q[qb]])
    new_x_q = np.concatenate([x_p[pb], x_q[qa]])
    new_y_q = np.concatenate([y_p[pb], y_q[qa]])
    return new_x_p, new_y_p, new_x_q, new_y_q


def train_env_classifier(
    x_p: np.ndarray, y_p: np.ndarray, x_q: np.ndarray, y_q: np.ndarray, n_classes: int,
    cfg: EnvClassifierConfig | None = None, *, seed: int = 0, device: str | torch.device | None = None,
    progress: bool = False,
) -> EnvClassifier:
    """Train the environment classifier (eq. 4) on uint8 images ``x_*`` ``[N, C, H, W]`` of p (label 0)
    and q (label 1) with the recipe of ``cfg``; returns the SWA-averaged model for ``"oodbench"``.

    ``y_*`` [N] integer class labels in [0, ``n_classes``) (the classifier is conditioned on them, eq. 4).
    The trained model's ``features(x)`` gives the ``cfg.z_dim``-dimensional (default 8) features the shift
    estimate is valid on (:mod:`dganalysis.shift.regime`).
    """
    f = "train_env_classifier"
    for name, x in (("x_p", x_p), ("x_q", x_q)):
        check_features(x, name, func=f, ndim=None, min_ndim=2, finite=False, to=None)
    if tuple(np.shape(x_p)[1:]) != tuple(np.shape(x_q)[1:]):
        raise ConfigError(f"{f}: parameters 'x_p', 'x_q': expected images of the same shape, got {describe(x_p)} and "
                          f"{describe(x_q)}")
    n_classes = check_scalar(n_classes, "n_classes", func=f, kind="int", low=1)
    check_labels(y_p, len(x_p), "y_p", func=f, n_classes=n_classes, rows_of="'x_p'")
    check_labels(y_q, len(x_q), "y_q", func=f, n_classes=n_classes, rows_of="'x_q'")
    if cfg is not None and not isinstance(cfg, EnvClassifierConfig):
        raise ConfigError(f"{f}: parameter 'cfg': expected an EnvClassifierConfig or None, got {describe(cfg)}")
    check_scalar(seed, "seed", func=f, kind="int", low=0)
    cfg = cfg or EnvClassifierConfig()
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = EnvClassifier(tuple(x_p.shape[1:]), n_classes, cfg).to(device)
    gen = torch.Generator(device="cpu").manual_seed(seed)
    xp, xq = images_to_float(x_p, device), images_to_float(x_q, device)
    yp, yq = torch.as_tensor(y_p, device=device), torch.as_tensor(y_q, device=device)
    if cfg.recipe == "oodbench":
        model = _train_oodbench(model, xp, yp, xq, yq, cfg, gen, progress)
    else:
        _train_dganalysis(model, xp, yp, xq, yq, cfg, gen, progress)
    model.eval()
    return model


def _train_dganalysis(model, xp, yp, xq, yq, cfg, gen, progress) -> None:
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    env = torch.cat([torch.zeros(cfg.batch_size), torch.ones(cfg.batch_size)]).to(xp.device)
    model.train()
    for _ in tqdm(range(cfg.steps or 300), desc="env classifier", leave=False, disable=not progress):
        i = torch.randint(len(xp), (cfg.batch_size,), generator=gen).to(xp.device)
        j = torch.randint(len(xq), (cfg.batch_size,), generator=gen).to(xp.device)
        logits = model(torch.cat([xp[i], xq[j]]), torch.cat([yp[i], yq[j]]))
        loss = nn.functional.binary_cross_entropy_with_logits(logits, env)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()


def _epoch_batches(n_p: int, n_q: int, bs: int, gen: torch.Generator) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """One epoch of ``zip(loader_p, loader_q)`` with shuffling and ``drop_last`` (OoD-Bench's loaders)."""
    pp, pq = torch.randperm(n_p, generator=gen), torch.randperm(n_q, generator=gen)
    k = min(n_p, n_q) // bs
    return [(pp[s * bs:(s + 1) * bs], pq[s * bs:(s + 1) * bs]) for s in range(k)]


def _train_oodbench(model, xp, yp, xq, yq, cfg, gen, progress) -> EnvClassifier:
    bs = cfg.batch_size
    per_epoch = min(len(xp), len(xq)) // bs
    if per_epoch < 1:
        raise ValueError(f"train_env_classifier: {min(len(xp), len(xq))} training examples per environment, "
                         f"fewer than one batch of batch_size={bs}")
    total = cfg.steps if cfg.steps is not None else cfg.n_epochs * per_epoch
    cosine_steps = max(1, min(total - 1, round(total * cfg.swa_start / cfg.n_epochs)))
    opt = torch.optim.SGD(model.parameters(), lr=cfg.init_lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cosine_steps, eta_min=cfg.swa_lr)
    swa = swa_utils.AveragedModel(model)
    env = torch.cat([torch.zeros(bs, dtype=torch.long), torch.ones(bs, dtype=torch.long)]).to(xp.device)
    batches: list = []
    model.train()
    for step in tqdm(range(total), desc="env classifier", leave=False, disable=not progress):
        if not batches:
            batches = _epoch_batches(len(xp), len(xq), bs, gen)
        i, j = (t.to(xp.device) for t in batches.pop(0))
        logits = model(torch.cat([xp[i], xq[j]]), torch.cat([yp[i], yq[j]]))
        loss = nn.functional.cross_entropy(logits, env)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step < cosine_steps:
            sched.step()
        else:
            swa.update_parameters(model)
    averaged = swa.module
    _recompute_bn(averaged, xp, yp, xq, yq, bs, gen)
    return averaged


@torch.no_grad()
def _recompute_bn(model: EnvClassifier, xp, yp, xq, yq, bs: int, gen: torch.Generator) -> None:
    """BatchNorm running statistics of the averaged model from one pass over the training batches
    (OoD-Bench's ``update_swa_bn``); nothing to do without BatchNorm."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    momenta = {m: m.momentum for m in bns}
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    for i, j in _epoch_batches(len(xp), len(xq), bs, gen):
        model(torch.cat([xp[i.to(xp.device)], xq[j.to(xp.device)]]), torch.cat([yp[i.to(xp.device)], yq[j.to(xp.device)]]))
    for m, mom in momenta.items():
        m.momentum = mom
    model.eval()


