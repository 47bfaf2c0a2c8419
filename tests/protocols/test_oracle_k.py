"""Oracle leakage vs number of test domains K (Yu et al. 2024, Table 4) on hand-made frames, answers by hand."""

import numpy as np
import pandas as pd
import pytest

from dganalysis.protocols.oracle_k import oracle_k_select, oracle_k_table
from dganalysis.records import selection

# (hparams_seed) -> {domain: (out acc, in acc)} at the last step (100)
LAST = {
    0: {"a": (0.9, 0.8), "b": (0.1, 0.2), "c": (0.5, 0.5)},
    1: {"a": (0.2, 0.3), "b": (0.6, 0.7), "c": (0.6, 0.4)},
    2: {"a": (0.5, 0.5), "b": (0.5, 0.5), "c": (0.7, 0.9)},
}
KEY = dict(dataset="Toy", algorithm="ERM", train_domains="s1,s2", test_domains="a,b,c", val_domains="")


def tidy_frame():
    rows = []
    for h, accs in LAST.items():
        job = f"job{h}"
        for step in (50, 100):
            for d, (out, inn) in accs.items():
                if step == 50:  # an earlier checkpoint that would win the oracle: must be ignored (last step only)
                    out, inn = 1.0, 0.0
                for split, v in (("out", out), ("in", inn)):
                    rows.append(dict(KEY, job_id=job, hparams_seed=h, trial_seed=0, step=step, domain=d, split=split,
                                     role="test", acc=v, hparams="{}"))
            for d in ("s1", "s2"):  # training domains: never used by the oracle
                for split in ("in", "out"):
                    rows.append(dict(KEY, job_id=job, hparams_seed=h, trial_seed=0, step=step, domain=d, split=split,
                                     role="train", acc=1.0, hparams="{}"))
    return pd.DataFrame(rows)


def iid_frame(values, test_domains="a,b,c"):
    return pd.DataFrame([dict(KEY, test_domains=test_domains, trial_seed=0, domain=d, acc=v,
                              selection="training_domain") for d, v in values.items()])


def test_oracle_k_select_by_hand():
    sel = oracle_k_select(tidy_frame())
    got = sel.set_index(["k", "subset", "domain"])
    # K=1: a picks h0 (out .9) -> in .8; b picks h1 (.6) -> .7; c picks h2 (.7) -> .9
    assert got.loc[(1, "a", "a"), "acc"] == 0.8 and got.loc[(1, "a", "a"), "hparams_seed"] == 0
    assert got.loc[(1, "b", "b"), "acc"] == 0.7
    assert got.loc[(1, "c", "c"), "acc"] == 0.9
    # K=2: {a,b}: h0 .5 = h2 .5 > h1 .4 -> tie to the highest seed h2 (DomainBed's); {a,c}: h0 .7;
    # {b,c}: h1 .6 = h2 .6 -> h2
    assert got.loc[(2, "a,b", "a"), "hparams_seed"] == 2 and got.loc[(2, "a,b", "b"), "acc"] == 0.5
    assert got.loc[(2, "a,c", "c"), "acc"] == 0.5 and got.loc[(2, "a,c", "a"), "hparams_seed"] == 0
    assert got.loc[(2, "b,c", "b"), "acc"] == 0.5 and got.loc[(2, "b,c", "c"), "acc"] == 0.9
    # K=3: h2 (mean out .567) -> a .5, b .5, c .9
    assert got.loc[(3, "a,b,c", "c"), "acc"] == 0.9 and got.loc[(3, "a,b,c", "a"), "hparams_seed"] == 2
    assert (sel["step"] == 100).all()
    assert len(sel) == 3 * 1 + 3 * 2 + 1 * 3


def test_oracle_k_table_by_hand():
    sel = oracle_k_select(tidy_frame())
    tab = oracle_k_table(iid_frame({"a": 0.4, "b": 0.3, "c": 0.5}), sel).set_index("row")
    # IID avg 40; K=1 (80, 70, 90) -> 80; K=2 a=(50+80)/2, b=(50+50)/2, c=(50+90)/2 -> 61.67; K=3 (50, 50, 90) -> 63.33
    assert tab.loc["IID", "Avg"] == pytest.approx(40.0)
    assert tab.loc["K=1", "Avg"] == pytest.approx(80.0)
    assert tab.loc["K=2", "b"] == pytest.approx(50.0)
    assert tab.loc["K=2", "Avg"] == pytest.approx(185 / 3)
    assert tab.loc["K=3", "Avg"] == pytest.approx(190 / 3)
    assert tab.loc["K=1", "leakage"] == pytest.approx(40.0)
    assert tab.loc["K=2", "leakage"] == pytest.approx(185 / 3 - 40)
    assert tab.loc["K=1", "reduction_%"] == pytest.approx(0.0)
    assert tab.loc["K=2", "reduction_%"] == pytest.approx((185 / 3 - 40 - 40) / 40 * 100)  # -45.8%
    assert tab["reduction_reliable"].all()
    assert pd.isna(tab.loc["IID", "reduction_%"]) and tab.loc["IID", "leakage"] == 0.0
    assert list(tab.index) == ["IID", "K=1", "K=2", "K=3"]


def test_separate_runs_per_subset_and_trial_average():
    # oracle-selected runs, one per test-domain subset; two trials on subset "a"
    rows = [("a", 0, "a", 0.8), ("a", 1, "a", 0.6), ("b", 0, "b", 0.7), ("a,b", 0, "a", 0.8), ("a,b", 0, "b", 0.2)]
    orc = pd.DataFrame([dict(KEY, test_domains=t, trial_seed=s, domain=d, acc=v, selection="oracle_pooled")
                        for t, s, d, v in rows])
    iid = pd.concat([iid_frame({"a": 0.5}, "a"), iid_frame({"b": 0.5}, "b")])
    tab = oracle_k_table(iid, orc).set_index("row")
    assert tab.loc["K=1", "a"] == pytest.approx(70.0)  # trials averaged first
    assert tab.loc["K=1", "Avg"] == pytest.approx(70.0)
    assert tab.loc["K=2", "Avg"] == pytest.approx(50.0)
    assert tab.loc["K=2", "reduction_%"] == pytest.approx(-100.0)


def test_errors():
    with pytest.raises(ValueError, match="missing columns"):
        oracle_k_select(tidy_frame().drop(columns="split"))
    with pytest.raises(ValueError, match="ks"):
        oracle_k_select(tidy_frame(), ks=[4])
    with pytest.raises(ValueError, match="iid_selected"):
        oracle_k_table(iid_frame({"z": 0.1}), oracle_k_select(tidy_frame()))


def test_reduction_undefined_without_leakage_at_k1():
    rows = [("a", 0, "a", 0.50), ("b", 0, "b", 0.50), ("a,b", 0, "a", 0.40), ("a,b", 0, "b", 0.45)]
    orc = pd.DataFrame([dict(KEY, test_domains=t, trial_seed=s, domain=d, acc=v, selection="oracle_pooled")
                        for t, s, d, v in rows])
    iid = pd.concat([iid_frame({"a": 0.5}, "a"), iid_frame({"b": 0.5}, "b")])
    tab = oracle_k_table(iid, orc).set_index("row")
    assert tab.loc["K=1", "leakage"] == pytest.approx(0.0) and tab.loc["K=2", "leakage"] == pytest.approx(-7.5)
    assert tab["reduction_%"].isna().all() and not tab["reduction_reliable"].any()


def test_small_leakage_reported_with_a_flag():
    """A K=1 leakage below min_leakage keeps its reduction (Table 4 rows are never blanked), flagged unreliable."""
    rows = [("a", 0, "a", 0.503), ("b", 0, "b", 0.50), ("a,b", 0, "a", 0.50), ("a,b", 0, "b", 0.501)]
    orc = pd.DataFrame([dict(KEY, test_domains=t, trial_seed=s, domain=d, acc=v, selection="oracle_pooled")
                        for t, s, d, v in rows])
    iid = pd.concat([iid_frame({"a": 0.5}, "a"), iid_frame({"b": 0.5}, "b")])
    tab = oracle_k_table(iid, orc).set_index("row")
    assert tab.loc["K=1", "leakage"] == pytest.approx(0.15)
    assert tab.loc["K=2", "reduction_%"] == pytest.approx((0.05 - 0.15) / 0.15 * 100)
    assert not tab["reduction_reliable"].any()
    assert oracle_k_table(iid, orc, min_leakage=0.1)["reduction_reliable"].all()


def test_per_domain_oracle_of_multi_domain_runs_is_refused():
    orc = pd.DataFrame([dict(KEY, test_domains="a,b", trial_seed=0, domain=d, acc=0.5, selection="oracle")
                        for d in "ab"])
    with pytest.raises(ValueError, match="oracle_pooled"):
        oracle_k_table(iid_frame({"a": 0.5, "b": 0.5}, "a,b"), orc)


def test_k1_and_kmax_equal_the_selection_methods():
    """K = 1 is select(..., "oracle") and K = K' is select(..., "oracle_pooled"), ties included."""
    tidy = tidy_frame()
    ok = oracle_k_select(tidy)
    for k, method in ((1, "oracle"), (3, "oracle_pooled")):
        sel = selection.select(tidy, method).set_index("domain")
        part = ok[ok["k"] == k].set_index("domain")
        for d in "abc":
            assert (part.loc[d, "hparams_seed"], part.loc[d, "acc"]) == (sel.loc[d, "hparams_seed"], sel.loc[d, "acc"])


def test_random_ties_match_selection():
    rng = np.random.default_rng(0)
    rows = []
    for h in range(6):
        for d in "abc":
            for split in ("out", "in"):
                rows.append(dict(KEY, job_id=f"j{h}", hparams_seed=h, trial_seed=0, step=10, domain=d, split=split,
                                 role="test", acc=int(rng.integers(3)) / 3, hparams="{}"))
    tidy = pd.DataFrame(rows)
    ok = oracle_k_select(tidy, ks=[1])
    sel = selection.select(tidy, "oracle")
    assert sorted(zip(ok["domain"], ok["hparams_seed"])) == sorted(zip(sel["domain"], sel["hparams_seed"]))
