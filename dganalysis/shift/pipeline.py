"""The full OoD-Bench shift-estimation pipeline, one row per trial (Ye et al., CVPR 2022; OoD-Bench's ``main.py``).

Per trial: label-balance the two environments, split a stratified holdout, train the environment classifier
(:mod:`dganalysis.shift.env_classifier`), extract z on the holdout and estimate both shifts
(:func:`dganalysis.shift.estimator.estimate_shift`). With ``calibrate=True``, as ``main.py --calibrate``:
first the same number of trials on the i.i.d. split (:func:`dganalysis.shift.env_classifier.iid_split`, full
sample size), then the threshold search of :func:`dganalysis.shift.calibration.calibrate_thresholds` on their
features, then the real trials at the calibrated thresholds. Trials differ by seed (subsampling, splits,
initialisation, batches, Monte-Carlo points); :func:`shift_summary` reports mean ± SE (ddof = 1).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from dganalysis.data.checks import check_domain_dataset
from dganalysis.data.dataset import DomainDataset, concat_domains
from dganalysis.shift.calibration import calibrate_thresholds
from dganalysis.shift.env_classifier import (
    EnvClassifier,
    EnvClassifierConfig,
    balance_and_split,
    iid_split,
    images_to_float,
    train_env_classifier,
)
from dganalysis.shift.estimator import EPS_COR, EPS_DIV, N_SAMPLES, fit_densities
from dganalysis.shift.regime import MAX_DIM, check_regime
from dganalysis.stats.moments import standard_error
from dganalysis.threads import torch_threads
from dganalysis.validation import (
    ConfigError,
    check_choice,
    check_domains,
    check_features,
    check_frame,
    check_generator,
    check_interval,
    check_labels,
    check_scalar,
    describe,
)

log = logging.getLogger(__name__)


def _pool(ds: DomainDataset, names: Sequence[str] | str) -> tuple[np.ndarray, np.ndarray]:
    names = [names] if isinstance(names, str) else list(names)
    d = concat_domains("+".join(names), [ds[n] for n in names]) if len(names) > 1 else ds[names[0]]
    return np.asarray(d.images), np.asarray(d.labels)


def trial_features(
    x_p: np.ndarray, y_p: np.ndarray, x_q: np.ndarray, y_q: np.ndarray, n_classes: int, cfg: EnvClassifierConfig,
    rng: np.random.Generator, *, iid: bool = False, device: str | torch.device | None = None,
) -> dict:
    """One trial up to the features: ``{"z_p", "y_p", "z_q", "y_q", "env_acc"}`` on the holdout
    (``iid=True``: on OoD-Bench's i.i.d. split of p ∪ q instead of p versus q). ``x_*`` [n, C, H, W] uint8 images,
    ``y_*`` [n] integer labels in [0, ``n_classes``); ``z_*`` come back as ``cfg.z_dim``-d float64 arrays."""
    f = "trial_features"
    check_features(x_p, "x_p", func=f, ndim=None, min_ndim=2, finite=False, to=None)
    check_features(x_q, "x_q", func=f, ndim=None, min_ndim=2, finite=False, to=None)
    check_labels(y_p, len(x_p), "y_p", func=f, rows_of="'x_p'")
    check_labels(y_q, len(x_q), "y_q", func=f, rows_of="'x_q'")
    check_scalar(n_classes, "n_classes", func=f, kind="int", low=1)
    if not isinstance(cfg, EnvClassifierConfig):
        raise ConfigError(f"{f}: parameter 'cfg': expected an EnvClassifierConfig, got {describe(cfg)}")
    rng = check_generator(rng, "rng", func=f)
    if iid:
        x_p, y_p, x_q, y_q = iid_split(x_p, y_p, x_q, y_q, rng)
    tr_p, ho_p, tr_q, ho_q = balance_and_split(y_p, y_q, cfg.holdout_fraction, rng)
    model = train_env_classifier(x_p[tr_p], y_p[tr_p], x_q[tr_q], y_q[tr_q], n_classes, cfg,
                                 seed=int(rng.integers(2**31)), device=device)
    dev = next(model.parameters()).device
    with torch.no_grad():
        acc = _holdout_accuracy(model, x_p[ho_p], y_p[ho_p], x_q[ho_q], y_q[ho_q], dev)
    return {"z_p": model.features(images_to_float(x_p[ho_p], dev)), "y_p": y_p[ho_p],
            "z_q": model.features(images_to_float(x_q[ho_q], dev)), "y_q": y_q[ho_q], "env_acc": acc}


@dataclass(frozen=True)
class ShiftOptions:
    """How :func:`shift_trials` turns features into the two shifts (Ye et al. 2022, Definition 1; OoD-Bench's
    ``quantify.py`` and ``calibrate.py`` options): the ``formula`` (``"eq5"``: ``--legacy_mode``; ``"hellinger"``),
    the thresholds ``eps_div`` / ``eps_cor``, or ``calibrate`` them on i.i.d. splits (with ``calibration_formula``,
    which defaults to ``"hellinger"`` because ``calibrate.py`` never passes ``--legacy_mode``, see
    :mod:`dganalysis.shift.calibration`, and ``calibration_bounds``), the ``n_samples`` Monte-Carlo points and the
    KDE ``bandwidth`` rule (:func:`dganalysis.shift.estimator.fit_densities`)."""

    formula: str = "eq5"
    eps_div: float = EPS_DIV
    eps_cor: float = EPS_COR
    calibrate: bool = False
    calibration_formula: str = "hellinger"
    calibration_bounds: tuple[float, float] = (5e-3, 1e-2)
    n_samples: int = N_SAMPLES
    bandwidth: str = "scott"

    def __post_init__(self) -> None:
        f = "ShiftOptions"
        check_choice(self.formula, ("eq5", "hellinger"), "formula", func=f)
        check_choice(self.calibration_formula, ("eq5", "hellinger"), "calibration_formula", func=f)
        check_choice(self.bandwidth, ("scott", "shared"), "bandwidth", func=f)
        check_scalar(self.eps_div, "eps_div", func=f, low=0.0)
        check_scalar(self.eps_cor, "eps_cor", func=f, low=0.0)
        check_interval(self.calibration_bounds, "calibration_bounds", func=f, low=0.0)
        check_scalar(self.n_samples, "n_samples", func=f, kind="int", low=1)
        if not isinstance(self.calibrate, bool):
            raise ConfigError(f"{f}: parameter 'calibrate': expected True or False, got {describe(self.calibrate)}")


def shift_trials(
    dataset: DomainDataset,
    train: Sequence[str] | str,
    test: Sequence[str] | str,
    *,
    n_trials: int = 3,
    cfg: EnvClassifierConfig | None = None,
    options: ShiftOptions | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    max_per_env: int | None = None,
) -> pd.DataFrame:
    """One row per trial: diversity, correlation, their Monte-Carlo SEs, the thresholds used (calibrated when
    ``options.calibrate``, with the i.i.d. averages), and the environment classifier's holdout accuracy.

    ``train``/``test``: domain name(s) pooled into environment p resp. q. ``cfg``: the environment classifier
    (default :class:`EnvClassifierConfig`); ``options``: the estimate (:class:`ShiftOptions`; default: OoD-Bench's
    defaults). ``max_per_env`` subsamples each environment first (for speed).
    Each trial trains the environment classifier (:func:`dganalysis.shift.train_env_classifier`) and estimates on
    its ``cfg.z_dim``-d (default 8) holdout features: the regime where the estimate is valid
    (:mod:`dganalysis.shift.regime`).

    Columns: ``trial``; ``diversity``, ``correlation`` (D_div, D_cor, dimensionless in [0, 1]) and their Monte-Carlo
    ``*_se``; ``share_div``, ``share_cor``, ``n_samples``, ``eps_div``, ``eps_cor``, ``formula``, ``bandwidth``
    (as :class:`dganalysis.shift.ShiftEstimate`); with ``options.calibrate``: ``iid_diversity``,
    ``iid_correlation``, ``calibration_converged``; ``env_acc`` (the environment classifier's holdout accuracy,
    0.5 = chance); ``n_p``, ``n_q`` (holdout sizes the estimate used).
    """
    f = "shift_trials"
    check_domain_dataset(dataset, func=f)
    check_domains(train, dataset.domain_names, "train", func=f)
    check_domains(test, dataset.domain_names, "test", func=f)
    n_trials = check_scalar(n_trials, "n_trials", func=f, kind="int", low=1)
    if cfg is not None and not isinstance(cfg, EnvClassifierConfig):
        raise ConfigError(f"{f}: parameter 'cfg': expected an EnvClassifierConfig or None, got {describe(cfg)}")
    if options is not None and not isinstance(options, ShiftOptions):
        raise ConfigError(f"{f}: parameter 'options': expected a ShiftOptions or None, got {describe(options)}")
    check_scalar(seed, "seed", func=f, kind="int", low=0)
    check_scalar(max_per_env, "max_per_env", func=f, kind="int", low=4, nullable=True)
    cfg = cfg or EnvClassifierConfig()
    # before training: an environment classifier wider than the valid regime warns or is refused
    check_regime(cfg.z_dim, max_per_env or 0, func=f, arg="parameter 'cfg' (z_dim)",
                 override=f"Use EnvClassifierConfig(z_dim=8), OoD-Bench's, or at most {MAX_DIM}")
    o = ShiftOptions() if options is None else options
    formula, eps_div, eps_cor, calibrate = o.formula, o.eps_div, o.eps_cor, o.calibrate
    calibration_formula, calibration_bounds, n_samples, bandwidth = (o.calibration_formula, o.calibration_bounds,
                                                                      o.n_samples, o.bandwidth)
    x_p, y_p = _pool(dataset, train)
    x_q, y_q = _pool(dataset, test)
    est_kw = dict(bandwidth=bandwidth, n_samples=n_samples, device=device)
    cal_cols: dict = {}
    with torch_threads(cfg.num_threads):
        if calibrate:
            dens = []
            for t in range(n_trials):
                rng = np.random.default_rng([seed, t, 1])
                sp, sq = _subsample(len(y_p), len(y_q), max_per_env, rng)
                f = trial_features(x_p[sp], y_p[sp], x_q[sq], y_q[sq], dataset.n_classes, cfg, rng, iid=True,
                                   device=device)
                dens.append(fit_densities(f["z_p"], f["y_p"], f["z_q"], f["y_q"], seed=seed, **est_kw))
            cal = calibrate_thresholds(dens, formula=calibration_formula, lower_bound=calibration_bounds[0],
                                       upper_bound=calibration_bounds[1])
            eps_div, eps_cor = cal.eps_div, cal.eps_cor
            cal_cols = {"iid_diversity": cal.iid_diversity, "iid_correlation": cal.iid_correlation,
                        "calibration_converged": cal.converged}
        rows = []
        for t in range(n_trials):
            rng = np.random.default_rng([seed, t])
            sp, sq = _subsample(len(y_p), len(y_q), max_per_env, rng)
            f = trial_features(x_p[sp], y_p[sp], x_q[sq], y_q[sq], dataset.n_classes, cfg, rng, device=device)
            d = fit_densities(f["z_p"], f["y_p"], f["z_q"], f["y_q"], seed=int(rng.integers(2**31)),
                              thresholds=(eps_div, eps_cor), **est_kw)
            est = d.estimate(eps_div=eps_div, eps_cor=eps_cor, formula=formula)
            rows.append({"trial": t, **est.as_dict(), **cal_cols, "env_acc": f["env_acc"], "n_p": len(f["y_p"]),
                         "n_q": len(f["y_q"])})
    return pd.DataFrame(rows)


def _subsample(n_p: int, n_q: int, max_per_env: int | None, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    if max_per_env is None:
        return np.arange(n_p), np.arange(n_q)
    return rng.permutation(n_p)[:max_per_env], rng.permutation(n_q)[:max_per_env]


def _holdout_accuracy(model: EnvClassifier, x_p, y_p, x_q, y_q, device) -> float:
    correct = 0
    for x, y, e in ((x_p, y_p, 0), (x_q, y_q, 1)):
        logit = model.q_logit(images_to_float(x, device), torch.as_tensor(y, device=device))
        correct += int(((logit > 0).long() == e).sum())
    return correct / (len(y_p) + len(y_q))


def shift_summary(trials: pd.DataFrame, cols: Sequence[str] = ("diversity", "correlation")) -> dict[str, float]:
    """Mean and standard error (ddof = 1) over trials of each column in ``cols`` of ``trials`` (a
    :func:`shift_trials` frame): keys ``<col>``, ``<col>_se`` (NaN with one trial) and ``n_trials``."""
    if isinstance(cols, str):
        raise ConfigError(f"shift_summary: parameter 'cols': expected a list of column names, got {cols!r}")
    check_frame(trials, list(cols), "trials", func="shift_summary", what="a shift_trials frame")
    out: dict[str, float] = {}
    n = len(trials)
    for c in cols:
        v = trials[c].to_numpy(dtype=float)
        out[c] = float(v.mean())
        out[f"{c}_se"] = standard_error(v)
    out["n_trials"] = n
    return out
