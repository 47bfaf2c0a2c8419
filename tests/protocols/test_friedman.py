"""Friedman / Nemenyi / bootstrap rank CIs over (dataset, test domain) blocks."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import friedman as fr


def selected_frame(acc, n_trials=2):
    """acc: {(dataset, domain): {method: accuracy}} -> selected frame of the contract."""
    rows = []
    for (ds, dom), per in acc.items():
        for m, a in per.items():
            for t in range(n_trials):
                rows.append(dict(dataset=ds, algorithm=m, test_domains=dom, domain=dom, trial_seed=t,
                                 acc=a + (0.01 if t else -0.01), selection="training_domain"))
    return pd.DataFrame(rows)


@pytest.fixture
def blocks():
    rng = np.random.default_rng(0)
    acc = {}
    for ds in ("X", "Y"):
        for d in range(5):
            base = rng.uniform(0.3, 0.7)
            acc[(ds, str(d))] = {"A": base + 0.2, "B": base + rng.normal(0, 0.02), "C": base - 0.2 + rng.normal(0, 0.02)}
    return selected_frame(acc)


def test_block_scores_and_friedman_match_scipy(blocks):
    s = fr.block_scores(blocks)
    assert s.shape == (10, 3) and list(s.columns) == ["A", "B", "C"]
    assert s.loc["X | 0 | 0", "A"] == pytest.approx(blocks[(blocks.dataset == "X") & (blocks.domain == "0")
                                                           & (blocks.algorithm == "A")].acc.mean())
    res = fr.friedman(s)
    ref = stats.friedmanchisquare(s["A"], s["B"], s["C"])
    assert res.statistic == pytest.approx(ref.statistic) and res.p == pytest.approx(ref.pvalue)
    assert res.avg_rank["A"] == 1.0 and res.avg_rank["C"] == 3.0
    # Demšar (2006) Table 5: q_0.05 = 2.343 for k = 3; CD = q sqrt(k(k+1)/(6N))
    assert res.critical_difference == pytest.approx(2.343 * np.sqrt(3 * 4 / 60), abs=1e-3)
    assert res.nemenyi.loc["A", "C"] < 0.05 and res.nemenyi.shape == (3, 3)
    assert "average ranks differ" in res.summary()
    assert fr.plot_cd_diagram(res, "toy") is not None


@pytest.mark.parametrize("seed", range(4))
def test_nemenyi_p_values_are_scikit_posthocs(seed):
    """nemenyi_friedman (scipy, without importing scikit-posthocs and its plotting stack) equals scikit-posthocs'
    posthoc_nemenyi_friedman, ties within blocks included."""
    import scikit_posthocs as sp

    rng = np.random.default_rng(seed)
    k, n = 3 + seed * 3, 4 + 5 * seed
    values = rng.integers(0, 4 if seed % 2 else 1000, size=(n, k)).astype(float)  # odd seeds: many ties
    scores = pd.DataFrame(values, columns=[f"m{i}" for i in range(k)], index=[f"b{i}" for i in range(n)])
    got = fr.nemenyi_friedman(scores)
    want = sp.posthoc_nemenyi_friedman(scores.reset_index(drop=True))
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (np.diag(got) == 1).all() and ((got.to_numpy() >= 0) & (got.to_numpy() <= 1)).all()
    holed = scores.copy()
    holed.iloc[0, 0] = np.nan
    with pytest.raises(ValueError, match="'scores'.* with NaN"):
        fr.nemenyi_friedman(holed)
    with pytest.raises(ValueError, match=r"got 4 blocks × 1 methods$"):
        fr.nemenyi_friedman(scores.iloc[:4, :1])


def test_incomplete_blocks_dropped_and_errors(blocks):
    partial = blocks[~((blocks.dataset == "Y") & (blocks.domain == "4") & (blocks.algorithm == "B"))]
    assert len(fr.block_scores(partial)) == 9
    with pytest.raises(ValueError, match=">= 3 methods"):
        fr.friedman(fr.block_scores(blocks, methods=["A", "B"]))
    with pytest.raises(ValueError, match="methods"):
        fr.block_scores(blocks, methods=["A", "Z"])
    with pytest.raises(ValueError, match="missing columns"):
        fr.block_scores(blocks.drop(columns="domain"))


def test_bootstrap_rank_ci(blocks):
    s = fr.block_scores(blocks)
    ci = fr.bootstrap_rank_ci(s, n_resamples=500, seed=1)
    assert list(ci.index) == ["A", "B", "C"]
    assert ci.loc["A", "ci_low"] == ci.loc["A", "ci_high"] == 1.0  # always first
    r = fr.block_ranks(s)["B"]
    assert ci.loc["B", "ci_low"] <= r.mean() <= ci.loc["B", "ci_high"]
    assert ci.equals(fr.bootstrap_rank_ci(s, n_resamples=500, seed=1))  # seeded
    # ties share the average rank
    tied = pd.DataFrame({"A": [0.5, 0.6], "B": [0.5, 0.4], "C": [0.1, 0.1]})
    assert fr.block_ranks(tied).loc[0, "A"] == 1.5
