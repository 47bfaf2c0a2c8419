"""Differential tests: our shift estimation against OoD-Bench's own scripts (``$OODBENCH_SRC``), Ye et al. 2022.

``quantify.py`` and ``calibrate.py`` run in-process as ``python -m`` runs them, on synthetic feature arrays
(simulated data) written as its ``data.npz``. Our estimator draws the same Monte-Carlo points for the same
seed, so estimates agree to float rounding: ``precision="float64"`` to 1e-9, the float32 default to 1e-4.
"""

from __future__ import annotations

import argparse
import inspect

import numpy as np
import pytest
import torch

from dganalysis.shift.calibration import calibrate_thresholds
from dganalysis.shift.env_classifier import EnvClassifier, EnvClassifierConfig, OoDBenchMLP
from dganalysis.shift.estimator import EPS_COR, EPS_DIV, N_SAMPLES, estimate_shift, fit_densities
from tests.reference import _oodbench

torch.set_num_threads(1)
TIGHT = 1e-7


@pytest.fixture(scope="module")
def ob():
    root = _oodbench.oodbench_root()
    if root is None:
        pytest.skip(_oodbench.skip_reason())
    return _oodbench.load_oodbench(root)


def features(n_per_class: int, d: int, n_classes: int, kind: str, seed: int):
    """Simulated features with equal class counts in p and q (as OoD-Bench requires): ``kind`` = "iid",
    "cor" (a dimension whose link to y flips), "div" (part of q moved away), "both"."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(n_classes), n_per_class)
    means = rng.normal(scale=1.5, size=(n_classes, d))
    z_p = means[y] + rng.normal(size=(len(y), d))
    z_q = means[y] + rng.normal(size=(len(y), d))
    if kind in ("cor", "both"):
        z_p[:, 0] += np.where(y % 2 == 0, 1.5, -1.5)
        z_q[:, 0] -= np.where(y % 2 == 0, 1.5, -1.5)
    if kind in ("div", "both"):
        z_q[: len(y) // 4, -1] += 8.0
    perm_q = rng.permutation(len(y))  # row order must not matter
    return z_p.astype(np.float32), y, z_q[perm_q].astype(np.float32), y[perm_q]


CASES = [  # (n per class, d, classes, kind)
    (150, 2, 2, "cor"),
    (80, 3, 5, "both"),
    (100, 8, 2, "div"),
    (60, 4, 10, "iid"),
    (300, 1, 3, "both"),
]


@pytest.mark.parametrize("legacy", [True, False], ids=["eq5", "hellinger"])
@pytest.mark.parametrize("case", CASES, ids=[f"n{c[0]}-d{c[1]}-C{c[2]}-{c[3]}" for c in CASES])
def test_quantify_agrees(ob, tmp_path, case, legacy):
    n, d, C, kind = case
    z_p, y_p, z_q, y_q = features(n, d, C, kind, seed=n + d + C)
    seed, m = 7, 2000
    ref = _oodbench.run_quantify(tmp_path, z_p, y_p, z_q, y_q, seed=seed, sample_size=m, legacy_mode=legacy)
    formula = "eq5" if legacy else "hellinger"
    exact = estimate_shift(z_p, y_p, z_q, y_q, formula=formula, seed=seed, n_samples=m, precision="float64")
    fast = estimate_shift(z_p, y_p, z_q, y_q, formula=formula, seed=seed, n_samples=m)
    assert exact.diversity == pytest.approx(ref["div"], abs=TIGHT)
    assert exact.correlation == pytest.approx(ref["cor"], abs=TIGHT)
    assert fast.diversity == pytest.approx(ref["div"], abs=1e-4)
    assert fast.correlation == pytest.approx(ref["cor"], abs=1e-4)
    if kind == "iid":
        assert ref["div"] < 0.05
    else:
        assert max(ref["div"], ref["cor"]) > 0.05  # the case is not trivially zero


def test_quantify_thresholds_and_skipped_class(ob, tmp_path):
    """Non-default thresholds, and a class too small for a KDE (2 points in 3 dims) skipped by both."""
    z_p, y_p, z_q, y_q = features(120, 3, 3, "both", seed=3)
    keep = (y_p != 2) | (np.arange(len(y_p)) % 60 == 0)
    z_p, y_p, z_q, y_q = z_p[keep], y_p[keep], z_q[np.argsort(y_q, kind="stable")][keep], np.sort(y_q)[keep]
    assert np.sum(y_p == 2) == 2
    kw = dict(eps_div=1e-3, eps_cor=2e-2)
    ref = _oodbench.run_quantify(tmp_path, z_p, y_p, z_q, y_q, seed=1, sample_size=1500, legacy_mode=True, **kw)
    ours = estimate_shift(z_p, y_p, z_q, y_q, seed=1, n_samples=1500, precision="float64", **kw)
    assert ours.skipped_classes.tolist() == [2]
    assert ours.diversity == pytest.approx(ref["div"], abs=TIGHT)
    assert ours.correlation == pytest.approx(ref["cor"], abs=TIGHT)


def test_calibrate_agrees(ob, tmp_path):
    """calibrate.py's bisection (it runs quantify.py without --legacy_mode, seed 0) on two i.i.d. trials."""
    trials = [features(100, 3, 2, "iid", seed=s) for s in (11, 12)]
    for i, t in enumerate(trials):
        (tmp_path / f"t{i}").mkdir()
        np.savez(tmp_path / f"t{i}" / "data.npz", y_p=t[1], z_p=t[0], y_q=t[3], z_q=t[2])
    ref = _oodbench.run_calibrate(tmp_path, sample_size=1000, max_iters=8)
    dens = [fit_densities(*t, seed=0, n_samples=1000, precision="float64") for t in trials]
    ours = calibrate_thresholds(dens, max_iters=8)
    assert ours.eps_div == pytest.approx(ref["eps_div"], rel=1e-12, abs=0)
    assert ours.eps_cor == pytest.approx(ref["eps_cor"], rel=1e-12, abs=0)
    assert ours.iid_diversity == pytest.approx(ref["avg_div"], abs=TIGHT)
    assert ours.iid_correlation == pytest.approx(ref["avg_cor"], abs=TIGHT)


def _defaults(add) -> dict:
    parser = argparse.ArgumentParser()
    add(parser)
    return {a.dest: a.default for a in parser._actions}


def test_defaults_match_config(ob):
    quant = _defaults(ob.config.add_quant_arguments)
    assert (EPS_DIV, EPS_COR, N_SAMPLES) == (quant["eps_div"], quant["eps_cor"], quant["sample_size"])
    sig = inspect.signature(estimate_shift).parameters
    assert sig["eps_div"].default == quant["eps_div"] and sig["eps_cor"].default == quant["eps_cor"]
    assert sig["formula"].default == "eq5" and sig["bandwidth"].default == "scott"  # eq. 5 = --legacy_mode
    calib = _defaults(ob.config.add_calib_arguments)
    cs = inspect.signature(calibrate_thresholds).parameters
    assert cs["max_iters"].default == calib["max_iters"]
    assert (cs["lower_bound"].default, cs["upper_bound"].default) == (calib["lower_bound"], calib["upper_bound"])
    assert cs["eps_div_range"].default == (calib["min_eps_div"], calib["max_eps_div"])
    assert cs["eps_cor_range"].default == (calib["min_eps_cor"], calib["max_eps_cor"])


def test_env_classifier_recipe_matches_train_py(ob):
    train = _defaults(ob.config.add_training_arguments)
    cfg = EnvClassifierConfig()
    assert cfg.recipe == "oodbench"
    for ours, theirs in [("z_dim", "dim_z"), ("init_lr", "init_lr"), ("swa_lr", "swa_lr"), ("momentum", "momentum"),
                         ("weight_decay", "weight_decay"), ("batch_size", "batch_size"), ("swa_start", "swa_start"),
                         ("n_epochs", "n_epochs"), ("holdout_fraction", "holdout_fraction")]:
        assert getattr(cfg, ours) == train[theirs], ours
    assert cfg.steps is None  # epochs, as train.py
    # architecture: the same modules, shapes and forward pass as its MNIST_MLP + EnvClassifier
    shape, n_classes = (3, 8, 8), 4
    theirs = ob.networks.EnvClassifier(ob.networks.MNIST_MLP(shape), n_classes, cfg.z_dim, 2)
    ours_m = EnvClassifier(shape, n_classes, cfg)
    assert isinstance(ours_m.g[0], OoDBenchMLP)
    p_theirs = [theirs.backbone, theirs.fc, theirs.y_map, theirs.h]
    p_ours = [ours_m.g[0], ours_m.g[1], ours_m.y_map, ours_m.h]
    for a, b in zip(p_theirs, p_ours):
        sa, sb = [p.shape for p in a.parameters()], [p.shape for p in b.parameters()]
        assert sa == sb
        with torch.no_grad():
            for pa, pb in zip(a.parameters(), b.parameters()):
                pb.copy_(pa)
    x = torch.rand(5, *shape)
    y = torch.arange(5) % n_classes
    _, logits = theirs(x, torch.nn.functional.one_hot(y, n_classes).float())
    torch.testing.assert_close(ours_m(x, y), logits)
