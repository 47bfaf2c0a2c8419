"""Leaderboards, ΔR, Spearman (Yu et al. (2024) Table 5) and OoD-Bench ranking score (Ye et al. (2022) Table 1) with known answers."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from dganalysis.protocols import leaderboard as lb


def selected_lodo():
    """Two datasets × two algorithms, leave-one-domain-out over two domains, two trials."""
    acc = {  # (dataset, algorithm, test domain, trial) -> acc
        ("D1", "ERM", "a", 0): 0.80, ("D1", "ERM", "b", 0): 0.60, ("D1", "ERM", "a", 1): 0.70, ("D1", "ERM", "b", 1): 0.50,
        ("D1", "X", "a", 0): 0.90, ("D1", "X", "b", 0): 0.70, ("D1", "X", "a", 1): 0.90, ("D1", "X", "b", 1): 0.70,
        ("D2", "ERM", "p", 0): 0.40, ("D2", "ERM", "q", 0): 0.20, ("D2", "ERM", "p", 1): 0.40, ("D2", "ERM", "q", 1): 0.40,
        ("D2", "X", "p", 0): 0.10, ("D2", "X", "q", 0): 0.10, ("D2", "X", "p", 1): 0.20, ("D2", "X", "q", 1): 0.20,
    }
    other = {"a": "b", "b": "a", "p": "q", "q": "p"}
    rows = [dict(dataset=ds, algorithm=alg, train_domains=other[d], test_domains=d, trial_seed=t, domain=d, acc=v,
                 selection="training_domain") for (ds, alg, d, t), v in acc.items()]
    return pd.DataFrame(rows)


def test_from_selected_by_hand():
    long = lb.from_selected(selected_lodo(), "mine")
    r = long.set_index(["algorithm", "dataset"])
    # D1/ERM: trial 0 mean(80,60)=70, trial 1 mean(70,50)=60 -> 65 ± std([70,60], ddof=1)/sqrt(2) = 5
    assert r.loc[("ERM", "D1"), "acc"] == pytest.approx(65.0)
    assert r.loc[("ERM", "D1"), "se"] == pytest.approx(5.0)
    assert r.loc[("X", "D1"), "acc"] == pytest.approx(80.0) and r.loc[("X", "D1"), "se"] == pytest.approx(0.0)
    assert r.loc[("ERM", "D2"), "acc"] == pytest.approx(35.0) and r.loc[("ERM", "D2"), "se"] == pytest.approx(5.0)
    assert r.loc[("X", "D2"), "acc"] == pytest.approx(15.0)
    tab = lb.leaderboard_table(long)
    # averages: ERM (65+35)/2 = 50, X (80+15)/2 = 47.5
    assert tab.loc["ERM", "Average"] == pytest.approx(50.0) and tab.loc["X", "Average"] == pytest.approx(47.5)
    assert tab.loc["ERM", "Ranking"] == 1 and tab.loc["X", "Ranking"] == 2
    assert (long["n"] == 2).all()


def test_incomplete_trial_dropped(caplog):
    df = selected_lodo()
    df = df[~((df.algorithm == "X") & (df.dataset == "D1") & (df.trial_seed == 1) & (df.domain == "b"))]
    long = lb.from_selected(df, "mine").set_index(["algorithm", "dataset"])
    assert long.loc[("X", "D1"), "n"] == 1
    assert long.loc[("X", "D1"), "acc"] == pytest.approx(80.0)
    assert np.isnan(long.loc[("X", "D1"), "se"])
    assert "drops 1 trial" in caplog.text


def test_published_table5_ranks_delta_r_spearman():
    pub = lb.load_published()
    names = list(dict.fromkeys(pub["leaderboard"]))
    assert len(names) == 3 and len(pub) == 3 * 10 * 5
    rk = lb.ranks(pub)
    for name in names:
        printed = pub[pub.leaderboard == name].groupby("algorithm")["rank_published"].first()
        assert (rk[name].reindex(printed.index) == printed).all(), name
        printed_avg = pub[pub.leaderboard == name].groupby("algorithm")["average_published"].first()
        ours = lb.leaderboard_table(pub, name)["Average"].reindex(printed_avg.index)
        assert np.allclose(ours, printed_avg, atol=0.051)
        dr = lb.delta_rank(rk, names[0], name)
        printed_dr = pub[pub.leaderboard == name].groupby("algorithm")["delta_r_published"].first()
        assert (dr.reindex(printed_dr.index) == printed_dr).all(), name
    # Sec. 3.2: Spearman MoCo-v2 vs MoCo-v3 = 0.794; by hand: d = (1,0,0,2,2,0,5,0,0,0) -> 1 - 6*34/(10*99)
    sp = lb.spearman_matrix(pub)
    assert sp.loc[names[1], names[2]] == pytest.approx(1 - 6 * 34 / 990)
    assert round(sp.loc[names[1], names[2]], 3) == 0.794
    assert sp.loc[names[2], names[1]] == sp.loc[names[1], names[2]]
    assert np.allclose(np.diag(sp), 1)


def test_ties_and_missing_dataset():
    long = pd.DataFrame([
        dict(leaderboard="L", algorithm="A", dataset="x", acc=50.0, se=1.0, n=3),
        dict(leaderboard="L", algorithm="B", dataset="x", acc=50.0, se=1.0, n=3),
        dict(leaderboard="L", algorithm="C", dataset="x", acc=40.0, se=1.0, n=3),
        dict(leaderboard="L", algorithm="A", dataset="y", acc=10.0, se=1.0, n=3),
        dict(leaderboard="L", algorithm="B", dataset="y", acc=10.0, se=1.0, n=3),
        dict(leaderboard="L", algorithm="C", dataset="y", acc=30.0, se=1.0, n=3),
    ])
    long = pd.concat([long, pd.DataFrame([dict(leaderboard="L", algorithm="D", dataset="x", acc=99.0, se=1.0, n=3)])])
    tab = lb.leaderboard_table(long)
    # averages: A = B = (50+10)/2 = 30, C = (40+30)/2 = 35, D lacks dataset y -> NaN
    assert tab.loc["C", "Average"] == 35.0 and tab.loc["A", "Average"] == 30.0
    assert tab.loc["C", "Ranking"] == 1
    assert tab.loc["A", "Ranking"] == tab.loc["B", "Ranking"] == 2  # exact tie shares the min rank
    assert np.isnan(tab.loc["D", "Average"]) and np.isnan(tab.loc["D", "Ranking"])
    assert lb.leaderboard_table(long, tie_method="average").loc["A", "Ranking"] == 2.5


def test_ranking_score_ood_bench_table1():
    # Ye et al. (2022) Table 1 (PACS, OfficeHome, TerraInc, Camelyon17) and its printed ranking scores
    rows = {
        "RSC": ([82.8, 62.9, 43.6, 94.9], [0.4, 0.4, 0.5, 0.2], 2),
        "MMD": ([81.7, 63.8, 38.3, 94.9], [0.2, 0.1, 0.4, 0.4], 2),
        "SagNet": ([81.6, 62.7, 42.3, 95.0], [0.4, 0.4, 0.7, 0.2], 1),
        "ERM": ([81.5, 63.3, 42.6, 94.7], [0.0, 0.2, 0.9, 0.1], 0),
        "IGA": ([80.9, 63.6, 41.3, 95.1], [0.4, 0.2, 0.8, 0.1], 0),
        "CORAL": ([81.6, 63.8, 38.3, 94.2], [0.6, 0.3, 0.7, 0.3], 0),
        "IRM": ([81.1, 63.0, 42.0, 95.0], [0.3, 0.2, 1.8, 0.4], -1),
        "VREx": ([81.8, 63.5, 40.7, 94.1], [0.1, 0.1, 0.7, 0.3], -1),
        "Mixup": ([79.8, 63.3, 39.8, 94.6], [0.6, 0.5, 0.3, 0.3], -2),
        "ARM": ([81.0, 63.2, 39.4, 93.5], [0.4, 0.2, 0.7, 0.6], -3),
        "MLDG": ([73.0, 52.4, 27.4, 91.2], [0.4, 0.2, 2.0, 0.4], -4),
    }
    ds = ["PACS", "OfficeHome", "TerraInc", "Camelyon17"]
    df = pd.DataFrame([dict(algorithm=a, dataset=d, acc=m, se=s) for a, (ms, ss, _) in rows.items()
                       for d, m, s in zip(ds, ms, ss)])
    score = lb.ranking_score(df)
    for alg, (_, _, expected) in rows.items():
        assert score[alg] == expected, alg
    marks = lb.ranking_marks(df)
    assert marks.loc["Mixup", "Camelyon17"] == 0  # 94.6 on the lower edge of 94.7 ± 0.1: inclusive
    assert marks.loc["VREx", "OfficeHome"] == 0  # 63.5 on the upper edge of 63.3 ± 0.2
    assert marks.loc["SagNet", "PACS"] == 1  # ERM SE is 0.0
    with pytest.raises(ValueError, match="baseline"):
        lb.ranking_score(df, baseline="Nope")


def test_latex_and_bump_chart():
    pub = lb.load_published()
    names = list(dict.fromkeys(pub["leaderboard"]))
    tex = lb.to_latex(pub, caption="Table 5")
    assert tex.count("\\multicolumn") == 3
    assert "85.5 $\\pm$ 0.2" in tex
    # largest |ΔR| (5) in bold, as in the paper; the reference block prints '-'
    assert "\\textbf{+5}" in tex and "\\textbf{-5}" in tex
    rk = lb.ranks(pub)
    data = lb.bump_chart_data(rk)
    assert len(data) == 30 and set(data["position"]) == {0, 1, 2}
    assert data.set_index(["leaderboard", "algorithm"]).loc[(names[1], "RSC"), "rank"] == 2
    fig = lb.plot_bump_chart(rk)
    assert len(fig.axes[0].lines) == 10
