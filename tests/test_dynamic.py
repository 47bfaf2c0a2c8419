"""Swap test and Domain+ on hand-made selected frames with known answers (seed 000 Sec. 4.2–4.3)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import dynamic
from dganalysis.protocols.stats import adjust_pvalues, welch

NOISE = [-0.01, 0.0, 0.01]  # three trials, sample sd 0.01


def frame(spec, test="hw", dataset="Toy"):
    """spec: {(train, method): list of trial accuracies} -> selected frame of the contract."""
    rows = []
    for (train, method), accs in spec.items():
        for t, a in enumerate(accs):
            rows.append(dict(dataset=dataset, algorithm=method, train_domains=train, test_domains=test,
                             trial_seed=t, domain=test, acc=a, val_acc=0.9, hparams_seed=0, job_id=f"{train}{method}{t}",
                             step=100, selection="training_domain"))
    return pd.DataFrame(rows)


def trials(mean, noise=NOISE):
    return [mean + e for e in noise]


C1, C2, C3 = "d0,d1", "d0,d2", "d1,d2"


@pytest.fixture
def st_frame():
    spec = {}
    # A beats B on C1, B beats A on C2 (reversal), identical on C3 (tie -> undecided)
    spec[(C1, "A")], spec[(C1, "B")] = trials(0.70), trials(0.50)
    spec[(C2, "A")], spec[(C2, "B")] = trials(0.40), trials(0.60)
    spec[(C3, "A")], spec[(C3, "B")] = trials(0.55), trials(0.55)
    for c in (C1, C2, C3):
        spec[(c, "C")] = trials(0.20)  # always worst
        spec[(c, "D")] = trials(0.90)  # always best
    return frame(spec)


def test_swap_test_known_reversal(st_frame):
    res = dynamic.swap_test(st_frame, "hw", methods=["A", "B", "C", "D"])
    ab = res.pairs[(res.pairs.method_a == "A") & (res.pairs.method_b == "B")].set_index(["train_1", "train_2"])
    assert ab.loc[(C1, C2), "verdict"] == "reversal"
    assert ab.loc[(C1, C3), "verdict"] == "undecided"  # tie on C3
    assert ab.loc[(C2, C3), "verdict"] == "undecided"
    assert (ab.loc[(C1, C2), "dir_1"], ab.loc[(C1, C2), "dir_2"]) == (1, -1)
    # D beats everyone everywhere, C loses everywhere: consistent pairs only
    dc = res.pairs[(res.pairs.method_a == "C") & (res.pairs.method_b == "D")]
    assert (dc.verdict == "consistent").all() and len(dc) == 3
    m = res.methods
    assert m.loc["A", "reversals"] == 1 and m.loc["B", "reversals"] == 1
    assert m.loc["A", "st_verdict"] == "unstable"
    assert m.loc["D", "st_verdict"] == "stable advantage"
    assert set(m.loc["D", "stable_over"].split(", ")) == {"A", "B", "C"}
    assert m.loc["C", "st_verdict"] == "no decided advantage"
    assert set(m.loc["C", "stable_under"].split(", ")) == {"A", "B", "D"}
    # every pair of methods x every pair of choices
    assert len(res.pairs) == 6 * 3
    mat = res.reversal_matrix()
    assert mat.loc["A", "B"] == mat.loc["B", "A"] == 1
    assert mat.values.sum() == 2


def test_swap_test_welch_and_holm_values(st_frame):
    res = dynamic.swap_test(st_frame, "hw", methods=["A", "B", "C", "D"], correction="holm")
    row = res.tests.set_index(["train", "method_a", "method_b"]).loc[(C1, "A", "B")]
    ref = stats.ttest_ind(trials(0.70), trials(0.50), equal_var=False)
    assert row["p"] == pytest.approx(ref.pvalue)
    assert row["diff"] == pytest.approx(0.20)
    # se by hand: sqrt(0.01^2/3 + 0.01^2/3)
    assert row["se"] == pytest.approx(np.sqrt(2 * 0.0001 / 3))
    # Holm adjusted p-values are those of statsmodels over the whole family and never smaller than raw ones
    assert np.allclose(res.tests["p_adj"], adjust_pvalues(res.tests["p"], 0.05, "holm"), equal_nan=True)
    ok = res.tests["p"].notna()
    assert (res.tests.loc[ok, "p_adj"] >= res.tests.loc[ok, "p"] - 1e-15).all()


def test_noisy_raw_reversal_is_undecided():
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


def test_correction_can_remove_a_reversal():
    # moderately separated means: each test is significant alone (p ~ 0.01) but not after Bonferroni over many pairs
    spec = {(C1, "A"): trials(0.53, [-0.02, 0.0, 0.02]), (C1, "B"): trials(0.47, [-0.02, 0.0, 0.02]),
            (C2, "A"): trials(0.47, [-0.02, 0.0, 0.02]), (C2, "B"): trials(0.53, [-0.02, 0.0, 0.02])}
    for m in "EFGH":  # extra methods enlarge the family, all far apart
        for c in (C1, C2):
            spec[(c, m)] = trials({"E": 0.1, "F": 0.2, "G": 0.8, "H": 0.9}[m])
    f = frame(spec)
    p_single = stats.ttest_ind(trials(0.53, [-0.02, 0, 0.02]), trials(0.47, [-0.02, 0, 0.02]), equal_var=False).pvalue
    assert p_single < 0.05
    raw = dynamic.swap_test(f, "hw", correction="none")
    adj = dynamic.swap_test(f, "hw", correction="bonferroni")
    pick = lambda r: r.pairs.set_index(["method_a", "method_b"]).loc[("A", "B"), "verdict"]  # noqa: E731
    assert pick(raw) == "reversal"
    assert pick(adj) == "undecided"


def test_single_trial_and_exact_values():
    spec = {(C1, "A"): [0.7], (C1, "B"): [0.5], (C2, "A"): [0.4], (C2, "B"): [0.6]}
    res = dynamic.swap_test(frame(spec), "hw")
    assert res.tests["p"].isna().all()
    assert res.pairs.iloc[0]["verdict"] == "undecided" and bool(res.pairs.iloc[0]["raw_reversal"])
    # deterministic trials (zero variance): differing means are exact, equal means are ties
    spec = {(C1, "A"): [0.7] * 3, (C1, "B"): [0.5] * 3, (C2, "A"): [0.4] * 3, (C2, "B"): [0.6] * 3}
    assert dynamic.swap_test(frame(spec), "hw").pairs.iloc[0]["verdict"] == "reversal"
    w = welch([0.5] * 3, [0.5] * 3)
    assert w.p == 1.0 and w.diff == 0.0


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
        (base, "A"): trials(0.50), (ext, "A"): trials(0.60),  # copes
        (base, "B"): trials(0.60), (ext, "B"): trials(0.45),  # degrades
        (base, "C"): [0.50, 0.55, 0.45], (ext, "C"): [0.52, 0.46, 0.53],  # noisy, tiny change
        (base, "D"): [0.5], (ext, "D"): [0.9],  # one trial: undecided
    }
    dp = dynamic.domain_plus(frame(spec), [base, ext], "hw", methods=["A", "B", "C", "D"])
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
