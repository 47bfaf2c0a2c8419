"""OoD-Bench pipeline: coloured-digits generator, balancing, environment classifier → shift, study tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from dganalysis.shift.env_classifier import EnvClassifierConfig, balance_and_split, iid_split
from dganalysis.shift.pipeline import ShiftOptions, shift_summary, shift_trials
from dganalysis.shift.sanity import colored_digits_shift
from dganalysis.shift.study import ranking_tables

torch.set_num_threads(1)


def test_colored_digits_generator():
    ds = colored_digits_shift(0.1, 0.9, mu_tr=0.0, mu_te=1.0, sigma_tr=0.1, sigma_te=0.1, seed=3)
    tr, te = ds["train"], ds["test"]
    assert tr.images.shape[1:] == (3, 8, 8) and tr.images.dtype == np.uint8
    assert set(np.unique(tr.labels)) == {0, 1}
    # colour agrees with the label with probability 1 - rho
    assert abs(np.mean(tr.meta["color"] == tr.labels) - 0.9) < 0.04
    assert abs(np.mean(te.meta["color"] == te.labels) - 0.1) < 0.04
    assert tr.meta["blue"].mean() < 0.15 and te.meta["blue"].mean() > 0.85
    assert np.all((tr.meta["blue"] >= 0) & (tr.meta["blue"] <= 1))
    again = colored_digits_shift(0.1, 0.9, mu_tr=0.0, mu_te=1.0, sigma_tr=0.1, sigma_te=0.1, seed=3)
    np.testing.assert_array_equal(again["test"].images, te.images)


def test_balance_and_split_removes_label_shift():
    rng = np.random.default_rng(0)
    y_p = rng.choice(3, 600, p=[0.6, 0.3, 0.1])
    y_q = rng.choice(3, 500, p=[0.2, 0.3, 0.5])
    tr_p, ho_p, tr_q, ho_q = balance_and_split(y_p, y_q, 0.2, rng)
    assert not set(tr_p) & set(ho_p) and not set(tr_q) & set(ho_q)
    keep = np.minimum(np.bincount(y_p, minlength=3), np.bincount(y_q, minlength=3))
    np.testing.assert_array_equal(np.bincount(y_p[np.r_[tr_p, ho_p]], minlength=3), keep)
    np.testing.assert_array_equal(np.bincount(y_q[np.r_[tr_q, ho_q]], minlength=3), keep)
    # OoD-Bench's split_dataset: int(count * fraction) of each class held out, the same in both environments
    np.testing.assert_array_equal(np.bincount(y_p[ho_p], minlength=3), (keep * 0.2).astype(int))
    np.testing.assert_array_equal(np.bincount(y_q[ho_q], minlength=3), (keep * 0.2).astype(int))


def test_iid_split_mixes_halves_at_full_size():
    rng = np.random.default_rng(1)
    y_p, y_q = rng.choice(2, 300), rng.choice(2, 200)
    x_p, x_q = np.zeros((300, 1, 1, 1), np.uint8), np.ones((200, 1, 1, 1), np.uint8)  # x tells the source
    xa, ya, xb, yb = iid_split(x_p, y_p, x_q, y_q, rng)
    keep = np.minimum(np.bincount(y_p), np.bincount(y_q))
    np.testing.assert_array_equal(np.bincount(ya), keep)  # full balanced size, per class
    np.testing.assert_array_equal(np.bincount(yb), keep)
    for c in (0, 1):  # p_a ∪ q_b versus p_b ∪ q_a: each about half from each source
        assert abs(xa[ya == c].mean() - 0.5) <= 1 / keep[c] and abs(xb[yb == c].mean() - 0.5) <= 1 / keep[c]


def test_recipes():
    cfg = EnvClassifierConfig()
    assert (cfg.recipe, cfg.z_dim, cfg.featurizer, cfg.holdout_fraction, cfg.batch_size) == ("oodbench", 8, "oodbench_mlp",
                                                                                            0.2, 32)
    ours = EnvClassifierConfig.dganalysis()
    assert (ours.recipe, ours.z_dim, ours.holdout_fraction) == ("dganalysis", 2, 0.5)
    with pytest.raises(ValueError, match="recipe"):
        EnvClassifierConfig(recipe="adam")
    with pytest.raises(ValueError, match="swa_start"):
        EnvClassifierConfig(swa_start=10)


def test_pipeline_separates_the_two_shifts():
    cfg = EnvClassifierConfig(n_epochs=6, swa_start=3)  # OoD-Bench's recipe, shorter
    cor = shift_trials(colored_digits_shift(0.1, 0.9, seed=1), "train", "test", n_trials=1, cfg=cfg,
                       options=ShiftOptions(n_samples=1500), device="cpu")
    div = shift_trials(colored_digits_shift(0.1, 0.1, mu_tr=0.0, mu_te=1.0, seed=1), "train", "test", n_trials=1,
                       cfg=cfg, options=ShiftOptions(n_samples=1500), device="cpu")
    assert cor["correlation"].iloc[0] > 0.3 and cor["diversity"].iloc[0] < 0.05
    assert div["diversity"].iloc[0] > 0.8 and div["correlation"].iloc[0] < 0.1
    s = shift_summary(pd.concat([cor, cor]))
    assert s["n_trials"] == 2 and s["correlation_se"] == 0.0


def test_pipeline_calibrated_with_our_recipe():
    cfg = EnvClassifierConfig.dganalysis(steps=60)
    r = shift_trials(colored_digits_shift(0.1, 0.9, seed=2), "train", "test", n_trials=1, cfg=cfg,
                     options=ShiftOptions(n_samples=1000, calibrate=True), device="cpu")
    row = r.iloc[0]
    assert 0 < row["eps_cor"] < 1 and 0 <= row["eps_div"] <= 1e-6
    assert row["iid_correlation"] < 0.05 and row["correlation"] > 0.2


def test_ranking_tables_group_by_dominant_shift():
    summary = pd.DataFrame({
        "dataset": ["A", "A", "B", "B", "C", "C"],
        "algorithm": ["ERM", "X", "ERM", "X", "ERM", "X"],
        "acc": [50.0, 52.0, 60.0, 59.9, 70.0, 60.0],
        "se": [1.0, 0.5, 0.5, 0.5, 1.0, 1.0],
    })
    tables = ranking_tables(summary, {"A": "diversity", "B": "diversity", "C": "correlation"})
    assert tables["diversity"].loc["X", "Ranking score"] == 1  # +1 on A, 0 on B (within ERM's error bar)
    assert tables["correlation"].loc["X", "Ranking score"] == -1
    assert "↑" in tables["diversity"].loc["X", "A"]
