"""Leakage protocol: Fréchet distance vs closed forms, LP/FT tables and Gap on hand-made frames."""

from __future__ import annotations

import json

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")

from dganalysis.protocols.leakage import (  # noqa: E402
    accuracy_table,
    annotate,
    distance_table,
    frechet_distance,
    frozen_stages_curve,
    gap_table,
    gaussian_fit,
    lp_ft_table,
    mode_of,
    plot_frozen_stages,
    random_network_extractor,
    select_per_setting,
)


def test_frechet_closed_forms():
    # 1-D: (μ1 − μ2)² + (σ1 − σ2)²
    assert frechet_distance([1.0], [[4.0]], [3.0], [[9.0]]) == pytest.approx(4 + 1)
    # diagonal covariances: Σ (μ diff)² + Σ (√a − √b)²
    a, b = np.array([1.0, 4.0, 0.25]), np.array([9.0, 1.0, 0.25])
    mu1, mu2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
    want = ((mu1 - mu2) ** 2).sum() + ((np.sqrt(a) - np.sqrt(b)) ** 2).sum()
    assert frechet_distance(mu1, np.diag(a), mu2, np.diag(b)) == pytest.approx(want)
    # non-commuting covariances: against Tr(Σ1 + Σ2 − 2 (Σ1 Σ2)^{1/2}) from scipy's sqrtm
    from scipy.linalg import sqrtm

    rng = np.random.RandomState(0)
    m1, m2 = rng.randn(5, 5), rng.randn(5, 5)
    s1, s2 = m1 @ m1.T + 0.1 * np.eye(5), m2 @ m2.T + 0.1 * np.eye(5)
    want = np.trace(s1 + s2 - 2 * np.real(sqrtm(s1 @ s2)))
    assert frechet_distance(np.zeros(5), s1, np.zeros(5), s2) == pytest.approx(want, rel=1e-6)
    assert frechet_distance(np.ones(5), s1, np.ones(5), s1) == pytest.approx(0, abs=1e-8)
    # empirical Gaussians converge to the closed form
    x = rng.multivariate_normal(np.zeros(5), s1, size=20000)
    y = rng.multivariate_normal(np.ones(5), s2, size=20000)
    closed = 5 + np.trace(s1 + s2 - 2 * np.real(sqrtm(s1 @ s2)))
    assert frechet_distance(*gaussian_fit(x), *gaussian_fit(y)) == pytest.approx(closed, rel=0.05)
    with pytest.raises(ValueError, match="shapes"):
        frechet_distance(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))


def test_frechet_of_few_samples_is_exact():
    # fewer features than dimensions (FID: a few images, d = 2048): the trace term from the N x N matrix equals the
    # nuclear norm of A2 A1^T (Sigma = A^T A), and agrees with the d x d symmetric form
    from dganalysis.protocols.leakage import _frechet

    rng = np.random.RandomState(1)
    for n1, n2, d in [(8, 16, 300), (16, 8, 300), (200, 10, 50), (10, 200, 50), (300, 400, 50), (2, 3, 5)]:
        x, y = rng.randn(n1, d) * rng.rand(d) + 1, rng.randn(n2, d) @ (rng.randn(d, d) / np.sqrt(d))
        (m1, s1), (m2, s2) = gaussian_fit(x), gaussian_fit(y)
        a1, a2 = (x - m1) / np.sqrt(n1 - 1), (y - m2) / np.sqrt(n2 - 1)
        exact = (((m1 - m2) ** 2).sum() + (a1 ** 2).sum() + (a2 ** 2).sum()
                 - 2 * np.linalg.svd(a2 @ a1.T, compute_uv=False).sum())
        assert _frechet(m1, s1, m2, s2, x, y) == pytest.approx(exact, rel=1e-9), (n1, n2, d)
        assert frechet_distance(m1, s1, m2, s2) == pytest.approx(exact, rel=1e-6), (n1, n2, d)


def test_distance_table_orders_shifted_domains():
    rng = np.random.RandomState(0)
    ref = (rng.rand(200, 1, 12, 12) * 120).astype(np.uint8)
    near = (rng.rand(200, 1, 12, 12) * 120).astype(np.uint8)
    far = (rng.rand(200, 1, 12, 12) * 120 + 120).astype(np.uint8)
    ext = random_network_extractor((1, 12, 12), featurizer="smallcnn", seed=0)
    t = distance_table(ref, {"near": near, "far": far}, ext, reference_name="src")
    d = dict(zip(t["domain"], t["distance"]))
    assert 0 <= d["near"] < d["far"]
    assert t["metric"].iloc[0].startswith("Fréchet distance on random-init smallcnn") and "FID substitute" in t["metric"].iloc[0]


def _hp(pre=None, lp=False, k=0):
    return json.dumps({"lr": 1e-3, "pretrained": pre, "linear_probe": lp, "freeze_stages": k})


def test_annotate_and_modes(tmp_path):
    p = tmp_path / "sup.pt"
    df = pd.DataFrame({"hparams": [_hp(), _hp(str(p), True), _hp(str(p), False, 2), _hp(str(tmp_path / "x.pt"))]})
    out = annotate(df, {"supervised": str(p), "none": None})
    assert list(out["pretraining"]) == ["none", "supervised", "supervised", "x"]
    assert list(out["mode"]) == ["FT", "LP", "FT-freeze2", "FT"]
    assert mode_of({"linear_probe": True, "freeze_stages": 3}) == "LP"
    with pytest.raises(KeyError, match="hparams"):
        annotate(pd.DataFrame({"a": [1]}))


def test_annotate_names_a_moved_store_s_checkpoints_by_file_name(tmp_path):
    """A store copied elsewhere keeps the paths its jobs ran with: a unique file name still names the checkpoint;
    a file name two checkpoints share does not."""
    old, new = tmp_path / "old" / "sup-1.pt", tmp_path / "new" / "sup-1.pt"
    df = pd.DataFrame({"hparams": [_hp(str(old), True), _hp(str(tmp_path / "old" / "x.pt"))]})
    assert list(annotate(df, {"supervised": str(new)})["pretraining"]) == ["supervised", "x"]
    twins = {"a": str(tmp_path / "a" / "sup-1.pt"), "b": str(new)}
    assert list(annotate(df, twins)["pretraining"]) == ["sup-1", "x"]


def _selected():
    # two settings × two seeds × two test domains, accuracies chosen by hand
    rows = []
    acc = {("sup", "LP"): {"a": [0.8, 0.9], "b": [0.5, 0.7]}, ("sup", "FT"): {"a": [0.6, 0.8], "b": [0.6, 0.6]},
           ("sup", "FT-freeze2"): {"a": [0.7, 0.7], "b": [0.6, 0.6]}}
    for (pre, mode), by_dom in acc.items():
        for dom, vals in by_dom.items():
            for seed, v in enumerate(vals):
                rows.append({"pretraining": pre, "mode": mode, "domain": dom, "trial_seed": seed, "acc": v})
    return pd.DataFrame(rows)


def test_accuracy_lp_ft_and_gap_tables():
    t = accuracy_table(_selected())
    row = t[(t["mode"] == "LP") & (t["domain"] == "a")].iloc[0]
    assert row["mean"] == pytest.approx(85.0) and row["se"] == pytest.approx(5.0) and row["n"] == 2
    avg = t[(t["mode"] == "LP") & (t["domain"] == "Avg")].iloc[0]  # per-seed means 65, 80
    assert avg["mean"] == pytest.approx(72.5) and avg["se"] == pytest.approx(7.5)
    wide = lp_ft_table(t)
    assert list(wide.columns) == ["a", "b", "Avg"] and list(wide.index.get_level_values("mode")) == ["LP", "FT"]
    assert wide.loc[("sup", "LP"), "a"].replace(" ", "") == "85.0±5.0"
    gap = gap_table(t)
    assert gap.loc["sup", "a"] == pytest.approx((85 - 70) / 70)
    assert gap.loc["sup", "b"] == pytest.approx((60 - 60) / 60)
    assert gap.loc["sup", "Avg"] == pytest.approx((72.5 - 65) / 65)
    with pytest.raises(ValueError, match="LP and FT"):
        gap_table(t[t["mode"] != "LP"])


def test_gap_table_keeps_a_pretraining_whose_gap_is_undefined():
    # FT accuracy 0 everywhere (a few-step run): the row stays, its gaps NaN, not dropped (a KeyError downstream)
    sel = _selected()
    sel.loc[(sel["pretraining"] == "sup") & sel["mode"].isin(["LP", "FT"]), "acc"] = 0.0
    gap = gap_table(accuracy_table(sel))
    assert "sup" in gap.index and gap.loc["sup"].isna().all()


def test_frozen_curve_and_plot():
    t = accuracy_table(_selected())
    curve = frozen_stages_curve(t, n_stages=4)
    a = curve[curve["domain"] == "a"]
    assert list(a["frozen"]) == [0, 2, 4] and list(a["mean"]) == pytest.approx([70, 70, 85])
    assert set(frozen_stages_curve(t)["frozen"]) == {0, 2}  # LP dropped without n_stages
    fig = plot_frozen_stages(curve, lp_at=4)
    assert fig.axes[0].get_xticklabels()[-1].get_text() == "LP"


def test_select_per_setting_keeps_settings_apart():
    df = pd.DataFrame({"pretraining": ["s", "s", "n"], "mode": ["LP", "FT", "FT"], "freeze_stages": [0, 0, 0],
                       "acc": [0.1, 0.2, 0.3]})
    seen = []

    def fake_select(sub, method):
        seen.append((tuple(sub["mode"]), method))
        return pd.DataFrame({"acc": [sub["acc"].max()]})

    out = select_per_setting(df, "oracle", select=fake_select)
    assert len(seen) == 3 and all(m == "oracle" for _, m in seen)
    assert sorted(zip(out["pretraining"], out["mode"], out["acc"])) == [("n", "FT", 0.3), ("s", "FT", 0.2),
                                                                        ("s", "LP", 0.1)]


def test_lp_and_ft_jobs_never_compete_in_selection(tmp_path):
    """LP and FT jobs of one algorithm differ only in hparams overrides: the tidy frame's ``setting`` keeps them
    apart, so plain ``select`` and ``select_per_setting`` make the same picks (LP better on val, FT on test)."""
    from dganalysis.records import load, selection

    doms = ["a", "b", "c"]
    for mode, lp, val, test in (("LP", True, 0.9, 0.3), ("FT", False, 0.6, 0.8)):
        for h in (0, 1):
            d = tmp_path / f"{mode}{h}"
            d.mkdir()
            rec = {"args": {"dataset": "Toy", "algorithm": "ERM", "test_envs": [2], "hparams_seed": h, "trial_seed": 0,
                            "steps": 10}, "step": 10, "hparams": json.loads(_hp("sup.pt", lp)),
                   "domains": doms, "train_domains": ["a", "b"], "test_domains": ["c"], "val_domains": [],
                   "env0_in_acc": 1.0, "env0_out_acc": val - 0.1 * h, "env1_in_acc": 1.0, "env1_out_acc": val,
                   "env2_in_acc": test - 0.1 * h, "env2_out_acc": 0.5}
            (d / "results.jsonl").write_text(json.dumps(rec) + "\n")
            (d / "spec.json").write_text(json.dumps({"hparams_overrides": {"pretrained": "sup.pt", "linear_probe": lp}}))
            (d / "done").write_text("")
    df = annotate(load(tmp_path, progress=False), {"sup": "sup.pt"})
    plain = selection.select(df, "training_domain")
    assert sorted(plain["acc"]) == pytest.approx([0.3, 0.8])  # one pick per mode, h0 in each
    per = select_per_setting(df, "training_domain_last")
    assert dict(zip(per["mode"], per["acc"])) == pytest.approx({"LP": 0.3, "FT": 0.8})
