"""Rank tests (dganalysis.stats.rank_tests): Friedman / Nemenyi / bootstrap rank CIs over (dataset, test domain)
blocks (arranged by dganalysis.protocols.leaderboard.block_scores), the Wilcoxon signed-rank p-values, scipy's, and
Spearman's ρ with its exact permutation p-value for a few items."""

import matplotlib

matplotlib.use("Agg")

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import leaderboard as lb
from dganalysis.stats import rank_tests
from dganalysis.stats.rank_tests import EXACT_SPEARMAN_MAX_N, spearman_min_p, spearman_test, wilcoxon_p
from dganalysis.validation import ConfigError


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
    s = lb.block_scores(blocks)
    assert s.shape == (10, 3) and list(s.columns) == ["A", "B", "C"]
    assert s.loc["X | 0 | 0", "A"] == pytest.approx(blocks[(blocks.dataset == "X") & (blocks.domain == "0")
                                                           & (blocks.algorithm == "A")].acc.mean())
    res = rank_tests.friedman(s)
    ref = stats.friedmanchisquare(s["A"], s["B"], s["C"])
    assert res.statistic == pytest.approx(ref.statistic) and res.p == pytest.approx(ref.pvalue)
    assert res.avg_rank["A"] == 1.0 and res.avg_rank["C"] == 3.0
    # Demšar (2006) Table 5: q_0.05 = 2.343 for k = 3; CD = q sqrt(k(k+1)/(6N))
    assert res.critical_difference == pytest.approx(2.343 * np.sqrt(3 * 4 / 60), abs=1e-3)
    assert res.nemenyi.loc["A", "C"] < 0.05 and res.nemenyi.shape == (3, 3)
    assert "average ranks differ" in res.summary()
    assert rank_tests.plot_cd_diagram(res, "toy") is not None


def _demsar_nemenyi(scores: pd.DataFrame) -> np.ndarray:
    """Demšar (2006), Sec. 3.2.2, written out as the oracle: average ranks (ties averaged), q_ij = |R_i − R_j| /
    √(k(k+1)/(6N)), p_ij = P(Q_k,∞ > q_ij √2) with Q the studentized range; 1 on the diagonal."""
    n, k = scores.shape
    ranks = stats.rankdata(scores.to_numpy(dtype=float), axis=1, method="average").mean(axis=0)
    q = np.abs(ranks[:, None] - ranks[None, :]) / np.sqrt(k * (k + 1.0) / (6.0 * n))
    p = stats.studentized_range.sf(q * np.sqrt(2.0), k, np.inf)
    np.fill_diagonal(p, 1.0)
    return p


@pytest.mark.parametrize("seed", range(4))
def test_nemenyi_p_values_are_demsars(seed):
    """The Nemenyi p-values (scikit-posthocs' posthoc_nemenyi_friedman) are Demšar's formula, ties within blocks
    included, labelled by the methods; scikit-posthocs (and its plotting stack) is imported only when they are
    asked for."""
    rng = np.random.default_rng(seed)
    k, n = 3 + seed * 3, 4 + 5 * seed
    values = rng.integers(0, 4 if seed % 2 else 1000, size=(n, k)).astype(float)  # odd seeds: many ties
    values[0] = np.arange(k)  # never one rank for all (scipy's Friedman statistic would be 0/0)
    scores = pd.DataFrame(values, columns=[f"m{i}" for i in range(k)], index=[f"b{i}" for i in range(n)])
    res = rank_tests.friedman(scores)
    assert "nemenyi" not in vars(res)  # not computed yet
    got = res.nemenyi
    assert list(got.index) == list(got.columns) == list(scores.columns)
    np.testing.assert_allclose(got.to_numpy(), _demsar_nemenyi(scores), rtol=1e-12, atol=1e-15)
    assert (np.diag(got) == 1).all() and ((got.to_numpy() >= 0) & (got.to_numpy() <= 1)).all()


def test_incomplete_blocks_dropped_and_errors(blocks):
    partial = blocks[~((blocks.dataset == "Y") & (blocks.domain == "4") & (blocks.algorithm == "B"))]
    assert len(lb.block_scores(partial)) == 9
    with pytest.raises(ValueError, match=">= 3 methods"):
        rank_tests.friedman(lb.block_scores(blocks, methods=["A", "B"]))
    with pytest.raises(ValueError, match="methods"):
        lb.block_scores(blocks, methods=["A", "Z"])
    with pytest.raises(ValueError, match="missing columns"):
        lb.block_scores(blocks.drop(columns="domain"))


def test_bootstrap_rank_ci(blocks):
    s = lb.block_scores(blocks)
    ci = rank_tests.bootstrap_rank_ci(s, n_resamples=500, seed=1)
    assert list(ci.index) == ["A", "B", "C"]
    assert ci.loc["A", "ci_low"] == ci.loc["A", "ci_high"] == 1.0  # always first
    r = rank_tests.block_ranks(s)["B"]
    assert ci.loc["B", "ci_low"] <= r.mean() <= ci.loc["B", "ci_high"]
    assert ci.equals(rank_tests.bootstrap_rank_ci(s, n_resamples=500, seed=1))  # seeded
    # ties share the average rank
    tied = pd.DataFrame({"A": [0.5, 0.6], "B": [0.5, 0.4], "C": [0.1, 0.1]})
    assert rank_tests.block_ranks(tied).loc[0, "A"] == 1.5


# ---------------------------------------------------------------- Wilcoxon signed-rank
def test_wilcoxon_p_is_scipys_on_tables_with_ties_and_zeros(monkeypatch):
    """Published means are rounded to 0.1 points, so differences tie and vanish often: there scipy runs its exact
    permutation test, and wilcoxon_p runs the same test vectorised. The p-values must be the same numbers."""
    rng = np.random.default_rng(3)
    calls = []
    real = stats.permutation_test
    monkeypatch.setattr(rank_tests.stats, "permutation_test", lambda *a, **k: calls.append(1) or real(*a, **k))
    checked = 0
    for _ in range(150):
        n = int(rng.integers(2, 9))
        a = np.round(rng.normal(50, 2, n), int(rng.integers(0, 2)))
        b = np.round(a + rng.normal(0.5, 1.5, n), 1)
        if rng.random() < 0.3:
            b[: n // 3] = a[: n // 3]  # zeros
        if (a == b).all():
            continue
        monkeypatch.setattr(rank_tests.stats, "permutation_test", real)
        want = float(stats.wilcoxon(a, b, zero_method="pratt").pvalue)
        monkeypatch.setattr(rank_tests.stats, "permutation_test", lambda *a, **k: calls.append(1) or real(*a, **k))
        assert wilcoxon_p(a, b) == want, (a, b)
        checked += 1
    assert checked > 130 and len(calls) > 60  # most cases took the vectorised permutation test


def test_wilcoxon_p_without_ties_and_above_13_pairs_is_scipys_call():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=9), rng.normal(size=9)  # no ties: scipy's exact distribution
    assert wilcoxon_p(a, b) == stats.wilcoxon(a, b, zero_method="pratt").pvalue
    a, b = np.round(rng.normal(size=20), 0), np.round(rng.normal(size=20), 0)  # ties, n > 13: normal approximation
    assert wilcoxon_p(a, b) == stats.wilcoxon(a, b, zero_method="pratt").pvalue
    with pytest.raises(ValueError, match="same length"):
        wilcoxon_p(np.zeros(3), np.zeros(4))


@pytest.mark.parametrize("n", [4, 7, 16])
def test_wilcoxon_ps_rows_are_scipys_calls(n):
    """wilcoxon_ps answers many tests at once, sorting the rows by the test scipy's "auto" picks for each alone (exact
    distribution, permutation test, normal approximation): every row must be scipy's own p-value for that row,
    whatever the other rows hold."""
    rng = np.random.default_rng(n)
    x = np.round(rng.normal(50, 2, (60, n)), 1)
    y = x + rng.normal(0.3, 1.5, (60, n))
    y[::3] = np.round(y[::3], 0)  # ties
    y[1::3, : n // 3] = x[1::3, : n // 3]  # zeros
    got = rank_tests.wilcoxon_ps(x, y)
    want = [stats.wilcoxon(a, b, zero_method="pratt").pvalue for a, b in zip(x, y)]
    assert got.tolist() == want
    with pytest.raises(ValueError, match="same shape"):
        rank_tests.wilcoxon_ps(x, y[:, :-1])


def brute_spearman_p(x, y) -> float:
    """Two-sided exact p by enumerating every pairing (the definition)."""
    obs = abs(stats.spearmanr(x, y).statistic)
    rhos = [abs(stats.spearmanr(x, np.asarray(y)[list(p)]).statistic) for p in itertools.permutations(range(len(y)))]
    return float(np.mean(np.asarray(rhos) >= obs - 1e-12))


@pytest.mark.parametrize("x,y", [([1, 2, 3, 4], [1, 2, 3, 4]), ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]),
                                 ([3, 1, 2, 5, 4, 6], [1, 2, 3, 4, 6, 5])])
def test_spearman_exact_p_matches_enumeration(x, y):
    rho, p = spearman_test(x, y)
    assert rho == pytest.approx(stats.spearmanr(x, y).statistic)
    assert p == pytest.approx(brute_spearman_p(x, y))


def test_spearman_smallest_p_is_two_over_n_factorial():
    assert spearman_min_p(4) == pytest.approx(1 / 12)
    assert spearman_min_p(5) == pytest.approx(1 / 60)
    assert spearman_min_p(1) == 1.0
    assert spearman_test([1, 2, 3, 4], [1, 2, 3, 4])[1] == pytest.approx(1 / 12)  # scipy's t approximation says 0


def test_spearman_drops_nan_pairs_and_is_nan_when_undefined():
    rho, p = spearman_test([1, 2, np.nan, 3, 4, 5], [2, 1, 7, 4, 3, 5])
    assert (rho, p) == spearman_test([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])
    assert all(np.isnan(spearman_test([1, 2], [2, 1])))
    assert all(np.isnan(spearman_test([1, 1, 1, 1], [1, 2, 3, 4])))


def test_spearman_above_the_exact_limit_is_scipys():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=EXACT_SPEARMAN_MAX_N + 4), rng.normal(size=EXACT_SPEARMAN_MAX_N + 4)
    ref = stats.spearmanr(x, y)
    assert spearman_test(x, y) == (float(ref.statistic), float(ref.pvalue))


def test_spearman_names_mismatched_inputs():
    with pytest.raises(ConfigError, match="spearman_test: parameters 'x' and 'y'"):
        spearman_test([1, 2, 3], [1, 2])


def _labelled_tables() -> dict[str, pd.DataFrame]:
    """Simulated blocks × methods score tables, each named for the case it covers."""
    rng = np.random.default_rng(11)
    cols = list("ABCDEF")
    clear = pd.DataFrame(np.sort(rng.uniform(0, 1, (8, 4)), axis=1)[:, ::-1], columns=cols[:4])  # A best everywhere
    tied = pd.DataFrame(np.ones((5, 3)) * 0.7, columns=cols[:3])  # one rank for all: every p is 1
    rounded = pd.DataFrame(np.round(rng.normal(0.6, 0.02, (10, 5)), 2), columns=cols[:5])  # ties within blocks
    pair = pd.DataFrame(rng.normal(0.6, 0.05, (6, 2)) + [0.03, 0.0], columns=cols[:2])  # k = 2
    noise = pd.DataFrame(rng.normal(0.6, 0.05, (12, 6)), columns=cols)  # no difference at all
    one_block = pd.DataFrame(rng.normal(0.6, 0.05, (1, 3)), columns=cols[:3])  # N = 1
    return {"clear winner": clear, "all tied": tied, "ties within blocks": rounded, "two methods": pair,
            "noise": noise, "one block": one_block}


@pytest.mark.parametrize("name", [n for n, t in _labelled_tables().items() if t.shape[1] >= 3 and len(t) >= 2
                                  and n != "all tied"])  # all tied: scipy's Friedman statistic is 0/0
def test_nemenyi_on_labelled_tables_is_demsars_and_agrees_with_the_critical_difference(name):
    """On each labelled table the Nemenyi p-values are Demšar's formula, and the critical difference (which
    scikit-posthocs does not compute) separates exactly the pairs the p-values reject at α."""
    scores = _labelled_tables()[name]
    for alpha in (0.05, 0.1):
        res = rank_tests.friedman(scores, alpha=alpha)
        np.testing.assert_allclose(res.nemenyi.to_numpy(), _demsar_nemenyi(scores), rtol=1e-12, atol=1e-15)
        gap = np.abs(res.avg_rank.to_numpy()[:, None] - res.avg_rank.to_numpy()[None, :])
        p = res.nemenyi.loc[res.avg_rank.index, res.avg_rank.index].to_numpy()
        assert ((gap > res.critical_difference) == (p < alpha)).all()


def test_critical_difference_is_demsar_table_5():
    """q_0.05 of Demšar (2006), Table 5(a), k = 2 … 10: CD = q √(k(k+1)/(6N)) reproduces it to its 3 decimals (the table truncates: 2.3437 is printed 2.343)."""
    q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
    rng = np.random.default_rng(2)
    for k, q in zip(range(3, 11), q05[1:], strict=True):
        res = rank_tests.friedman(pd.DataFrame(rng.normal(size=(7, k))))
        assert res.critical_difference / np.sqrt(k * (k + 1) / (6 * 7)) == pytest.approx(q, abs=1e-3)
