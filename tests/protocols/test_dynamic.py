"""Swap-test and Domain+ descriptions on hand-made selected frames with known answers (Zhang, Zhang & Liu Sec.
4.2–4.3); the findings' decisions are tested in tests/findings/test_dynamic.py."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import dynamic
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


def test_trial_accuracies_inputs(st_frame):
    """The per-unit view the findings take: choices matched as sets, clear errors."""
    with pytest.raises(ValueError, match="train_choices"):
        dynamic.trial_accuracies(st_frame, "hw", train_choices=[C1, "d0,d9"])
    with pytest.raises(ValueError, match="test_domain"):
        dynamic.trial_accuracies(st_frame, "nope")
    with pytest.raises(ValueError, match="missing columns"):
        dynamic.trial_accuracies(st_frame.drop(columns="trial_seed"), "hw")
    t = dynamic.trial_accuracies(st_frame, "hw", train_choices=["d1,d0", ["d2", "d0"]])
    assert set(t["train"]) == {C1, C2} and list(t.columns) == ["method", "train", "trial_seed", "acc"]
    means = dynamic.swap_means(st_frame, "hw", [C1, C2], methods=["A", "B"])
    assert means.loc["A", C1] == pytest.approx(np.mean(t[(t.method == "A") & (t.train == C1)]["acc"]))


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
    assert "verdict" not in dp and "p_adj" not in dp  # a description: the findings decide (findings.dynamic)
    assert v.loc["D", "test"] == TOO_FEW
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
    # paired on trial seeds (the default): the CI is the one of the per-trial differences
    vp = dynamic.domain_plus(frame(spec), [base, ext], "hw", methods=["A", "B", "C", "D"]).set_index("method")
    dd = x1 - x0
    half = stats.t.ppf(0.975, 2) * dd.std(ddof=1) / np.sqrt(3)
    assert vp.loc["C", "test"] == PAIRED
    assert (vp.loc["C", "ci_low"], vp.loc["C", "ci_high"]) == pytest.approx((dd.mean() - half, dd.mean() + half))


def test_domain_plus_chain_and_errors():
    chain = ["d0,d1", "d0,d1,d2", "d0,d1,d2,d3"]
    spec = {}
    for i, c in enumerate(chain):
        spec[(c, "A")] = trials(0.5 + 0.1 * i)  # copes at each step
        spec[(c, "B")] = trials(0.5 - 0.1 * i)  # degrades at each step
    dp = dynamic.domain_plus(frame(spec), chain, "hw")
    assert list(dp["step"].unique()) == [0, 1]
    assert list(dp["added"].unique()) == ["d2", "d3"]
    assert (dp[dp.method == "A"].delta > 0).all() and (dp[dp.method == "B"].delta < 0).all()
    with pytest.raises(ValueError, match="strictly contain"):
        dynamic.domain_plus(frame(spec), ["d0,d1", "d1,d2"], "hw")
    with pytest.raises(ValueError, match="test_domain"):
        dynamic.domain_plus(frame(spec), ["d0", "d0,hw"], "hw")


def test_summary_and_plots(st_frame):
    base, ext = C1, "d0,d1,d2"
    extra = frame({(ext, m): trials(v) for m, v in {"A": 0.8, "B": 0.4, "C": 0.2, "D": 0.95}.items()})
    f = pd.concat([st_frame, extra], ignore_index=True)
    st = dynamic.swap_means(f, "hw", train_choices=[C1, C2, C3])
    dp = dynamic.domain_plus(f, [base, ext], "hw")
    lodo = pd.Series({"A": 2, "B": 3, "C": 4, "D": 1})
    s = dynamic.dynamic_summary(st, dp, lodo)
    assert list(s.index) == ["A", "B", "C", "D"]
    assert s.loc["D", f"ST {C1}"] == pytest.approx(0.90, abs=0.05)
    assert s.loc["A", "LODO rank"] == 2
    dcol = [c for c in s.columns if c.startswith("D+ Δ d0,d1")][0]
    assert s.loc["A", dcol] > 0 > s.loc["B", dcol]
    import matplotlib.figure

    for fig in (dynamic.plot_swap_test(f, "hw", [C1, C2, C3]), dynamic.plot_domain_plus(dp)):
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
