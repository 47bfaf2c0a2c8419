"""Swap test and Domain+ on hand-made selected frames with known answers (Zhang, Zhang & Liu Sec. 4.2–4.3)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import dynamic
from dganalysis.stats.multiplicity import adjust_pvalues
from dganalysis.stats.ttests import PAIRED, TOO_FEW

NOISE = [-0.01, 0.0, 0.01]  # three trials, sample sd 0.01


def frame(spec, test="hw", dataset="Toy"):
    """spec: {(train, method): list of trial accuracies} -> selected frame of the contract (trial seed = position)."""
    rows = []
    for (train, method), accs in spec.items():
        for t, a in enumerate(accs):
            rows.append(dict(dataset=dataset, algorithm=method, train_domains=train, test_domains=test,
                             trial_seed=t, domain=test, acc=a, val_acc=0.9, hparams_seed=0, job_id=f"{train}{method}{t}",
                             step=100, selection="training_domain"))
    return pd.DataFrame(rows)


_RNG = np.random.default_rng(123)


def trials(mean, noise=None, n=4, sd=0.01):
    """Trial accuracies around ``mean``; default noise is drawn fresh (so paired differences are not constant)."""
    if noise is None:
        noise = _RNG.normal(0, sd, n)
    return [mean + e for e in noise]


C1, C2, C3 = "d0,d1", "d0,d2", "d1,d2"


# ----------------------------------------------------------------------------------------------- swap test
@pytest.fixture
def st_frame():
    spec = {}
    # A beats B on C1, B beats A on C2 (reversal), identical on C3
    spec[(C1, "A")], spec[(C1, "B")] = trials(0.70), trials(0.50)
    spec[(C2, "A")], spec[(C2, "B")] = trials(0.40), trials(0.60)
    spec[(C3, "A")], spec[(C3, "B")] = trials(0.55), trials(0.55)
    for c in (C1, C2, C3):
        spec[(c, "C")] = trials(0.20)  # always worst
        spec[(c, "D")] = trials(0.90)  # always best
    return frame(spec)


def test_swap_test_known_reversal_and_stable_orders(st_frame):
    res = dynamic.swap_test(st_frame, "hw", methods=["A", "B", "C", "D"])
    v = res.pairs.set_index(["method_a", "method_b"])["verdict"]
    assert v[("A", "B")] == "reversal"
    assert v[("C", "D")] == "stable b>a" and v[("A", "D")] == "stable b>a" and v[("A", "C")] == "stable a>b"
    m = res.methods
    assert m.loc["A", "reversals"] == 1 and m.loc["B", "reversals"] == 1
    assert m.loc["A", "st_verdict"] == "unstable"
    assert m.loc["D", "st_verdict"] == "stable advantage"
    assert set(m.loc["D", "stable_over"].split(", ")) == {"A", "B", "C"}
    assert m.loc["C", "st_verdict"] == "no decided advantage"
    assert set(m.loc["C", "stable_under"].split(", ")) == {"A", "B", "D"}
    # the family: 2 claims (stable, reversal) per method pair, not every (choice, pair) test
    assert len(res.claims) == 2 * 6 and len(res.tests) == 6 * 3 and len(res.pairs) == 6
    assert (res.tests["test"] == PAIRED).all()
    mat = res.reversal_matrix()
    assert mat.loc["A", "B"] == mat.loc["B", "A"] == 1 and mat.values.sum() == 2


def test_swap_test_claim_pvalues_by_hand(st_frame):
    res = dynamic.swap_test(st_frame, "hw", methods=["A", "B", "C", "D"], correction="holm")
    t = res.tests.set_index(["train", "method_a", "method_b"])
    c = res.claims.set_index(["method_a", "method_b", "claim"])
    # reversal A/B: k=3 choices; (3 · min p_greater) and (3 · min p_less), the larger of the two
    pg = [t.loc[(ch, "A", "B"), "p_greater"] for ch in (C1, C2, C3)]
    pl = [t.loc[(ch, "A", "B"), "p_less"] for ch in (C1, C2, C3)]
    assert c.loc[("A", "B", "reversal"), "p"] == pytest.approx(max(min(1, 3 * min(pg)), min(1, 3 * min(pl))))
    # stable C<D: intersection-union over choices, doubled for the data-chosen direction
    pl_cd = [t.loc[(ch, "C", "D"), "p_less"] for ch in (C1, C2, C3)]
    assert c.loc[("C", "D", "stable a<b"), "p"] == pytest.approx(min(1, 2 * max(pl_cd)))
    # the simple effect C1: A vs B is the paired t-test of scipy
    xa = st_frame[(st_frame.train_domains == C1) & (st_frame.algorithm == "A")].acc
    xb = st_frame[(st_frame.train_domains == C1) & (st_frame.algorithm == "B")].acc
    assert t.loc[(C1, "A", "B"), "p"] == pytest.approx(stats.ttest_rel(xa, xb).pvalue)
    assert np.allclose(res.claims["p_adj"], adjust_pvalues(res.claims["p"], 0.05, "holm"), equal_nan=True)


def test_noisy_raw_reversal_is_undecided_with_a_power_figure():
    rng = np.random.default_rng(0)
    spec = {
        (C1, "A"): list(0.60 + rng.normal(0, 0.05, 3)), (C1, "B"): list(0.59 + rng.normal(0, 0.05, 3)),
        (C2, "A"): list(0.58 + rng.normal(0, 0.05, 3)), (C2, "B"): list(0.61 + rng.normal(0, 0.05, 3)),
    }
    f = frame(spec)
    res = dynamic.swap_test(f, "hw")
    r = res.pairs.iloc[0]
    means = f.groupby(["train_domains", "algorithm"]).acc.mean()
    raw = np.sign(means[(C1, "A")] - means[(C1, "B")]) != np.sign(means[(C2, "A")] - means[(C2, "B")])
    assert bool(r["raw_reversal"]) == bool(raw)
    assert r["verdict"] == "undecided"
    assert res.methods.loc["A", "reversals"] == 0
    assert r["trials_needed"] > 3  # more trials than we ran would be needed at the observed effect


def test_correction_can_remove_a_reversal():
    # moderately separated means: the reversal survives alone but not Bonferroni over many pairs' claims
    na, nb = [0.02, -0.01, 0.0, -0.01], [-0.01, 0.02, -0.02, 0.01]  # paired differences: t = 4.08, df = 3
    spec = {(C1, "A"): trials(0.53, na), (C1, "B"): trials(0.47, nb),
            (C2, "A"): trials(0.47, na), (C2, "B"): trials(0.53, nb)}
    for m in "EFGHIJ":  # extra methods enlarge the family
        for c in (C1, C2):
            spec[(c, m)] = trials({"E": 0.1, "F": 0.2, "G": 0.8, "H": 0.9, "I": 0.3, "J": 0.7}[m])
    f = frame(spec)
    raw = dynamic.swap_test(f, "hw", correction="none")
    adj = dynamic.swap_test(f, "hw", correction="bonferroni")
    pick = lambda r: r.pairs.set_index(["method_a", "method_b"]).loc[("A", "B"), "verdict"]  # noqa: E731
    p = raw.claims.set_index(["method_a", "method_b", "claim"]).loc[("A", "B", "reversal"), "p"]
    assert p < 0.05 and p * len(raw.claims) > 0.05
    assert pick(raw) == "reversal"
    assert pick(adj) == "undecided"


def test_single_trial_and_exact_values():
    spec = {(C1, "A"): [0.7], (C1, "B"): [0.5], (C2, "A"): [0.4], (C2, "B"): [0.6]}
    res = dynamic.swap_test(frame(spec), "hw")
    assert res.tests["p"].isna().all() and (res.tests["test"] == TOO_FEW).all()
    assert res.pairs.iloc[0]["verdict"] == "undecided" and bool(res.pairs.iloc[0]["raw_reversal"])
    # deterministic trials (zero variance): differing means are exact
    spec = {(C1, "A"): [0.7] * 3, (C1, "B"): [0.5] * 3, (C2, "A"): [0.4] * 3, (C2, "B"): [0.6] * 3}
    assert dynamic.swap_test(frame(spec), "hw").pairs.iloc[0]["verdict"] == "reversal"


def test_swap_test_input_errors(st_frame):
    with pytest.raises(ValueError, match="equal size"):
        dynamic.swap_test(pd.concat([st_frame, frame({("d0,d1,d2", "A"): trials(0.5)})]), "hw")
    with pytest.raises(ValueError, match="train_choices"):
        dynamic.swap_test(st_frame, "hw", train_choices=[C1, "d0,d9"])
    with pytest.raises(ValueError, match="test_domain"):
        dynamic.swap_test(st_frame, "nope")
    with pytest.raises(ValueError, match="missing columns"):
        dynamic.swap_test(st_frame.drop(columns="trial_seed"), "hw")
    # choices are matched as sets, whatever the order the user writes them in
    res = dynamic.swap_test(st_frame, "hw", train_choices=["d1,d0", ["d2", "d0"]])
    assert set(res.tests["train"]) == {C1, C2}


def test_domain_plus_known_signs():
    base, ext = "d0,d1", "d0,d1,d2"
    spec = {
        (base, "A"): trials(0.50, NOISE), (ext, "A"): trials(0.60, NOISE[::-1]),  # copes
        (base, "B"): trials(0.60, NOISE), (ext, "B"): trials(0.45, NOISE[::-1]),  # degrades
        (base, "C"): [0.50, 0.55, 0.45], (ext, "C"): [0.52, 0.46, 0.53],  # noisy, tiny change
        (base, "D"): [0.5], (ext, "D"): [0.9],  # one trial: undecided
    }
    dp = dynamic.domain_plus(frame(spec), [base, ext], "hw", methods=["A", "B", "C", "D"], paired=False)
    v = dp.set_index("method")
    assert v.loc["A", "verdict"] == "copes"
    assert v.loc["B", "verdict"] == "degrades"
    assert v.loc["C", "verdict"] == "no significant change"
    assert v.loc["D", "verdict"] == "undecided (n<2)"
    assert v.loc["A", "delta"] == pytest.approx(0.10)
    assert v.loc["B", "delta"] == pytest.approx(-0.15)
    assert v.loc["A", "added"] == "d2"
    # Welch CI by hand for C: se and df from sample variances
    x1, x0 = np.array([0.52, 0.46, 0.53]), np.array([0.50, 0.55, 0.45])
    a, b = x1.var(ddof=1) / 3, x0.var(ddof=1) / 3
    se = np.sqrt(a + b)
    df = (a + b) ** 2 / (a**2 / 2 + b**2 / 2)
    q = stats.t.ppf(0.975, df)
    d = x1.mean() - x0.mean()
    assert v.loc["C", "ci_low"] == pytest.approx(d - q * se)
    assert v.loc["C", "ci_high"] == pytest.approx(d + q * se)
    assert v.loc["C", "ci_low"] < 0 < v.loc["C", "ci_high"]
    assert v.loc["C", "trials_needed"] > 3 and np.isnan(v.loc["A", "trials_needed"])
    # paired on trial seeds (the default): the CI is the one of the per-trial differences
    vp = dynamic.domain_plus(frame(spec), [base, ext], "hw", methods=["A", "B", "C", "D"]).set_index("method")
    dd = x1 - x0
    half = stats.t.ppf(0.975, 2) * dd.std(ddof=1) / np.sqrt(3)
    assert vp.loc["C", "test"] == PAIRED
    assert (vp.loc["C", "ci_low"], vp.loc["C", "ci_high"]) == pytest.approx((dd.mean() - half, dd.mean() + half))
    assert vp.loc["C", "p"] == pytest.approx(stats.ttest_rel(x1, x0).pvalue)
    # one family over several chains
    both = dynamic.adjust_domain_plus(pd.concat([vp.reset_index(), vp.reset_index()]), 0.05, "bonferroni")
    assert both["p_adj"].iloc[0] == pytest.approx(min(1, vp["p"].iloc[0] * both["p"].notna().sum()))


def test_domain_plus_chain_and_errors():
    chain = ["d0,d1", "d0,d1,d2", "d0,d1,d2,d3"]
    spec = {}
    for i, c in enumerate(chain):
        spec[(c, "A")] = trials(0.5 + 0.1 * i)  # copes at each step
        spec[(c, "B")] = trials(0.5 - 0.1 * i)  # degrades at each step
    dp = dynamic.domain_plus(frame(spec), chain, "hw")
    assert list(dp["step"].unique()) == [0, 1]
    assert list(dp["added"].unique()) == ["d2", "d3"]
    assert (dp[dp.method == "A"].verdict == "copes").all()
    assert (dp[dp.method == "B"].verdict == "degrades").all()
    with pytest.raises(ValueError, match="strictly contain"):
        dynamic.domain_plus(frame(spec), ["d0,d1", "d1,d2"], "hw")
    with pytest.raises(ValueError, match="test_domain"):
        dynamic.domain_plus(frame(spec), ["d0", "d0,hw"], "hw")


def test_summary_and_plots(st_frame):
    base, ext = C1, "d0,d1,d2"
    extra = frame({(ext, m): trials(v) for m, v in {"A": 0.8, "B": 0.4, "C": 0.2, "D": 0.95}.items()})
    f = pd.concat([st_frame, extra], ignore_index=True)
    st = dynamic.swap_test(f, "hw", train_choices=[C1, C2, C3])
    dp = dynamic.domain_plus(f, [base, ext], "hw")
    lodo = pd.Series({"A": 2, "B": 3, "C": 4, "D": 1})
    s = dynamic.dynamic_summary(st, dp, lodo)
    assert list(s.index) == ["A", "B", "C", "D"]
    assert s.loc["D", "ST verdict"] == "stable advantage"
    assert s.loc["A", "LODO rank"] == 2
    dcol = [c for c in s.columns if c.startswith("D+ d0,d1")][0]
    assert s.loc["A", dcol].startswith("copes") and s.loc["B", dcol].startswith("degrades")
    assert s.loc["C", dcol].startswith("no significant change")
    import matplotlib.figure

    for fig in (dynamic.plot_swap_test(f, "hw", [C1, C2, C3]), dynamic.plot_reversal_matrix(st),
                dynamic.plot_domain_plus(dp)):
        assert isinstance(fig, matplotlib.figure.Figure)
    ax = dynamic.plot_swap_test(f, "hw", [C1, C2, C3]).axes[0]
    assert len(ax.get_legend().get_texts()) == 3


def test_plots_name_their_methods_on_the_axis(st_frame):
    """The swap-test and Domain+ figures write method names under the x axis by default; the paper's 1..M indices
    remain an option (``xticks="index"``, key in the legend title); anything else is an error."""
    ax = dynamic.plot_swap_test(st_frame, "hw", [C1, C2, C3], methods=["D", "A", "B", "C"]).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["D", "A", "B", "C"]
    assert ax.get_xlabel() == "method" and ax.get_legend().get_title().get_text() == ""
    ax = dynamic.plot_swap_test(st_frame, "hw", [C1, C2, C3], methods=["D", "A", "B", "C"], xticks="index").axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4"]
    assert ax.get_xlabel() == "method index" and ax.get_legend().get_title().get_text() == "1=D  2=A  3=B  4=C"
    ext = frame({("d0,d1,d2", m): trials(v) for m, v in {"A": 0.8, "B": 0.4, "C": 0.2, "D": 0.95}.items()})
    dp = dynamic.domain_plus(pd.concat([st_frame, ext], ignore_index=True), [C1, "d0,d1,d2"], "hw")
    for a in dynamic.plot_domain_plus(dp, methods=["D", "A", "B", "C"]).axes:
        assert [t.get_text() for t in a.get_xticklabels()] == ["D", "A", "B", "C"] and a.get_xlabel() == "method"
    with pytest.raises(ValueError, match="xticks"):
        dynamic.plot_swap_test(st_frame, "hw", [C1, C2, C3], xticks="names")
