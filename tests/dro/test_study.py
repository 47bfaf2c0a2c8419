"""The WC-DG poster's claims as tables (dganalysis.dro.study): near-source ratio, attainment, loss agreement,
and the bootstrap comparison of Spearman correlations."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from dganalysis.dro import study


def curves_frame(n_models=4):
    rows = []
    for i, m in enumerate("abcdefgh"[:n_models]):
        for loss, k in (("ce", 1.0), ("hinge", 2.0), ("01", 0.5)):
            for rho in (0.0, 0.05, 0.1):
                rows.append(dict(model=m, loss=loss, rho=rho, worst_case_loss=k * (0.1 + i * 0.1) * (1 + 20 * rho)))
    return pd.DataFrame(rows)


def test_near_source_and_loss_agreement():
    c = curves_frame()
    t = study.near_source_table(c, 0.05).set_index("model")
    assert t.loc["b", "nominal"] == pytest.approx(0.2) and t.loc["b", "ratio"] == pytest.approx(2.0)
    with pytest.raises(ValueError, match="ρ = 0.07"):
        study.near_source_table(c, 0.07)
    agree = study.loss_agreement(c, 0.05)
    assert list(agree["losses"]) == ["ce vs hinge", "ce vs 01", "hinge vs 01"]
    assert np.allclose(agree["spearman"], 1.0) and (agree["n_models"] == 4).all()


def test_attainment_table():
    cmp = pd.DataFrame({"rho_input": [0.0, 1.0, 2.0], "input_primal": [0.5, 0.9, 1.5], "rep_wc": [0.5, 1.3, 1.5],
                        "nominal": [0.5, 0.5, 0.5]})
    a = study.attainment_table(cmp)
    assert list(a["rho_input"]) == [1.0, 2.0]  # no excess at ρ = 0
    assert a["attained"].tolist() == pytest.approx([0.4 / 0.8, 1.0])
    assert a["rep/input"].iloc[0] == pytest.approx(1.3 / 0.9)


def test_spearman_difference_bootstrap():
    rng = np.random.default_rng(0)
    acc = rng.uniform(0.3, 0.9, 12)
    pred = pd.DataFrame({"test_acc": acc, "wc_ce": -acc + rng.normal(0, 0.01, 12),
                         "nominal_ce": rng.uniform(0, 1, 12)})
    r = study.spearman_difference(pred, n_resamples=500)
    assert r["spearman_measure"] == pytest.approx(spearmanr(pred.wc_ce, acc).statistic)
    assert r["difference"] == pytest.approx(r["spearman_measure"] - r["spearman_baseline"])
    assert r["ci_low"] <= r["difference"] <= r["ci_high"] and r["decided"] and r["ci_high"] < 0
    same = study.spearman_difference(pred.assign(nominal_ce=pred.wc_ce), n_resamples=200)
    assert same["difference"] == 0 and not same["decided"]
    with pytest.raises(ValueError, match=">= 4 models"):
        study.spearman_difference(pred.head(3))


def test_poster_findings_verdicts():
    c = curves_frame()
    near = study.near_source_table(c, 0.05)  # ratio 2.0 everywhere
    att = pd.DataFrame({"attained": [0.3, 0.4], "rep/input": [2.0, 1.8]})
    agree = study.loss_agreement(c, 0.05)
    sdiff = {"spearman_measure": -0.5, "spearman_baseline": -0.6, "difference": 0.1, "ci_low": -0.3, "ci_high": 0.5,
             "n_models": 10}
    rows = study.poster_findings(near, att, agree, sdiff, 0.05)
    # 4 models in perfect agreement: the exact Spearman p is 1/12 at best, so the claim cannot be decided
    assert [r["verdict"] for r in rows[:2] + rows[3:]] == ["reproduced", "not reproduced", "not decided"]
    assert rows[2]["verdict"].startswith("not decided (too small: n = 4 models")
    assert "p=0.083" in rows[2]["ours"] and "p=0 " not in rows[2]["ours"] + " " and "p=0)" not in rows[2]["ours"]
    assert "35%" in rows[1]["ours"]
    c5 = curves_frame(5)
    near, agree = study.near_source_table(c5, 0.05), study.loss_agreement(c5, 0.05)
    rows = study.poster_findings(near, att.assign(attained=[0.6, 0.7]), agree, dict(sdiff, ci_high=-0.01), 0.05,
                                 high_ratio=3)
    assert [r["verdict"] for r in rows] == ["not reproduced", "partly", "reproduced", "reproduced"]
