"""The two named oracles of Table 4 (Yu et al. 2024): DomainBed's held-out one and the literal one, which chooses by
the accuracy it reports; pooled splits, the construction properties, relative falls and the findings rows."""

import numpy as np
import pandas as pd
import pytest

from dganalysis.protocols import oracle_k_trials as okt
from dganalysis.protocols.oracle_k import ORACLES, oracle_k_select, report_on, split_sizes, with_pooled_split
from dganalysis.records import selection
from tests.protocols.test_oracle_k import tidy_frame

# every domain of tidy_frame(): 3 'in' samples and 1 'out' sample, so whole-domain accuracy = (3·in + out) / 4
SIZES = {d: {"in": 3, "out": 1} for d in ("a", "b", "c", "s1", "s2")}


def test_split_sizes_as_domainbed():
    assert split_sizes({"a": 299, "b": 10}) == {"a": {"in": 240, "out": 59}, "b": {"in": 8, "out": 2}}
    assert split_sizes({"a": 10}, holdout_fraction=0.5) == {"a": {"in": 5, "out": 5}}
    with pytest.raises(ValueError, match="holdout_fraction"):
        split_sizes({"a": 10}, holdout_fraction=1.0)
    with pytest.raises(ValueError, match=r"domain_sizes\['a'\]"):
        split_sizes({"a": 0})


def test_pooled_split_by_hand():
    pooled = with_pooled_split(tidy_frame(), SIZES)
    got = pooled[(pooled["split"] == "all") & (pooled["step"] == 100)].set_index(["hparams_seed", "domain"])["acc"]
    assert got[(0, "a")] == pytest.approx((3 * 0.8 + 0.9) / 4)
    assert got[(1, "c")] == pytest.approx((3 * 0.4 + 0.6) / 4)
    assert len(pooled) == len(tidy_frame()) * 3 // 2  # one pooled row per (job, step, domain) pair of in/out rows
    with pytest.raises(ValueError, match=r"no split sizes for domains \['s2'\]"):
        with_pooled_split(tidy_frame(), {d: v for d, v in SIZES.items() if d != "s2"})
    with pytest.raises(ValueError, match="both an 'in' and an 'out'"):
        with_pooled_split(tidy_frame().query("split != 'out' or domain != 'a'"), SIZES)


def test_runs_without_training_accuracy_pool_and_choose_as_full_runs():
    """Runs that evaluated held-out splits only (``Job.evaluate_splits="held_out"``) lack the training domains' 'in'
    rows: those domains get no pooled row, every other pooled row and both oracles' choices are the full runs'."""
    full = tidy_frame()
    held = full[~((full["role"] == "train") & (full["split"] == "in"))].reset_index(drop=True)
    pooled_full, pooled_held = with_pooled_split(full, SIZES), with_pooled_split(held, SIZES)
    kept = pooled_full[~((pooled_full["role"] == "train") & pooled_full["split"].isin(["in", "all"]))]
    assert not ((pooled_held["role"] == "train") & (pooled_held["split"] == "all")).any()
    pd.testing.assert_frame_equal(pooled_held.reset_index(drop=True), kept.reset_index(drop=True))
    for oracle in ORACLES:
        pd.testing.assert_frame_equal(oracle_k_select(held, oracle=oracle, sizes=SIZES),
                                      oracle_k_select(full, oracle=oracle, sizes=SIZES))


def test_literal_oracle_by_hand():
    # whole-domain accuracy at the last step: h0 a .825 b .175 c .5 | h1 a .275 b .675 c .45 | h2 a .5 b .5 c .85
    sel = oracle_k_select(tidy_frame(), oracle="literal", sizes=SIZES).set_index(["k", "subset", "domain"])
    assert sel.loc[(1, "a", "a"), "acc"] == pytest.approx(0.825) and sel.loc[(1, "a", "a"), "hparams_seed"] == 0
    assert sel.loc[(1, "b", "b"), "acc"] == pytest.approx(0.675) and sel.loc[(1, "c", "c"), "acc"] == pytest.approx(0.85)
    # {a,b}: h0 .5, h1 .475, h2 .5 -> tie, highest seed h2; K=3: h2 (.617) beats h0 (.5) and h1 (.467)
    assert sel.loc[(2, "a,b", "a"), "hparams_seed"] == 2
    assert sel.loc[(3, "a,b,c", "c"), "acc"] == pytest.approx(0.85) and (sel["oracle"] == "literal").all()
    # the score it chose by is the accuracy it reports (K=1)
    k1 = sel.loc[1]
    assert np.allclose(k1["acc"], k1["val_acc"])
    # held-out (DomainBed's) on the same runs: chooses on out, reports in (a: h0, out .9 -> in .8)
    held = oracle_k_select(tidy_frame()).set_index(["k", "subset", "domain"])
    assert held.loc[(1, "a", "a"), "acc"] == 0.8 and (held["oracle"] == "held_out").all()
    with pytest.raises(ValueError, match="sizes=split_sizes"):
        oracle_k_select(tidy_frame(), oracle="literal")
    with pytest.raises(ValueError, match="unknown oracle 'test'"):
        oracle_k_select(tidy_frame(), oracle="test")
    assert set(ORACLES) == {"held_out", "literal"}


def test_report_on_keeps_the_choice():
    pooled = with_pooled_split(tidy_frame(), SIZES)
    held = oracle_k_select(pooled, ks=[1])
    moved = report_on(held, pooled, "all")
    assert list(moved.columns) == list(held.columns)
    assert (moved["job_id"] == held["job_id"]).all()
    assert moved.set_index("domain").loc["a", "acc"] == pytest.approx(0.825)
    with pytest.raises(ValueError, match="unknown split 'nope'"):
        report_on(held, pooled, "nope")


def random_runs(seed: int, n_hparams: int = 5, n_trials: int = 4, n_in: int = 8, n_out: int = 2) -> pd.DataFrame:
    """Random runs: train domain s, test domains a, b, c; accuracies are counts over n_in / n_out samples."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_trials):
        for h in range(n_hparams):
            job = f"t{t}h{h}"
            for step in (5, 10):
                for d, role in (("s", "train"), ("a", "test"), ("b", "test"), ("c", "test")):
                    for split, n in (("in", n_in), ("out", n_out)):
                        rows.append(dict(dataset="R", algorithm="ERM", train_domains="s", test_domains="a,b,c",
                                         val_domains="", job_id=job, hparams_seed=h, trial_seed=t, step=step,
                                         domain=d, split=split, role=role, acc=rng.integers(0, n + 1) / n,
                                         hparams="{}"))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", range(4))
def test_literal_oracle_construction_properties(seed):
    """Literal oracle: K=1 leakage ≥ 0 in every trial and every domain's K>1 accuracy ≤ its K=1 accuracy."""
    tidy = random_runs(seed)
    sizes = {d: {"in": 8, "out": 2} for d in "sabc"}
    lk = okt.oracle_leakage(tidy, sizes, "literal").vs_k
    last = with_pooled_split(okt.last_checkpoints(tidy), sizes)
    iid = report_on(selection.select(last, "training_domain_last"), last, "all")
    per = okt.leakage_by_trial(iid, oracle_k_select(last, oracle="literal"))
    assert (per.loc[per["k"] == 1, "leakage"] >= -1e-9).all()
    for _, g in per[per["k"] > 0].groupby(["train_domains", "trial_seed"]):
        g = g.set_index("k")[["a", "b", "c"]]
        assert (g.loc[[2, 3]] <= g.loc[1] + 1e-9).all().all()
    leak1 = lk.loc[lk["k"] == 1, "leakage"].iloc[0]
    assert (lk.loc[lk["k"] > 1, "leakage"] <= leak1 + 1e-9).all() and (lk.loc[lk["k"] > 1, "fall"] <= 1e-9).all()


def test_held_out_oracle_has_no_such_guarantee():
    """DomainBed's oracle scores on data it did not choose on: some trials of random runs leak < 0 at K=1."""
    tidy = random_runs(0, n_trials=12)
    lk = okt.oracle_leakage(tidy, {d: {"in": 8, "out": 2} for d in "sabc"}, "held_out").vs_k
    last = with_pooled_split(okt.last_checkpoints(tidy), {d: {"in": 8, "out": 2} for d in "sabc"})
    iid = selection.select(last, "training_domain_last")
    per = okt.leakage_by_trial(iid, oracle_k_select(last))
    assert (per.loc[per["k"] == 1, "leakage"] < 0).any()
    assert set(lk["oracle"]) == {"held_out"}


def test_relative_fall_and_step_fall():
    l1, lk = pd.Series([2.0, 4.0, 6.0]), pd.Series([1.0, 2.0, 3.0])
    assert okt.relative_fall(lk, l1) == pytest.approx((-50.0, -50.0, -50.0))  # every trial halves: exact CI
    assert np.isnan(okt.relative_fall(lk[:2], l1[:2])).all()  # < 3 trials: no bootstrap
    est, lo, hi = okt.relative_fall(pd.Series([1.0, 3.0, 2.0, 4.0]), pd.Series([2.0, 4.0, 6.0, 4.0]))
    assert est == pytest.approx(100 * (2.5 - 4.0) / 4.0) and lo <= est <= hi
    # the trials' row order (it follows the job ids) does not move the interval: trial seeds 3, 0, 2, 1 shuffled
    k, one = pd.Series([1.0, 3.0, 2.0, 4.0, 0.5], index=[3, 0, 2, 1, 4]), pd.Series([2.0, 4.0, 6.0, 4.0, 3.0], index=[3, 0, 2, 1, 4])
    order = [4, 1, 0, 3, 2]
    assert okt.relative_fall(k, one) == okt.relative_fall(k[order], one[order[::-1]])


def k3_frames(leaks):
    """IID 0.5 on x, y, z; oracle at K adds leaks[K-1][t] (fractions) in trial t."""
    g = dict(dataset="D", algorithm="ERM", train_domains="s")
    iid, orc = [], []
    subsets = {1: ["x", "y", "z"], 2: ["x,y", "x,z", "y,z"], 3: ["x,y,z"]}
    for t in range(len(leaks[0])):
        for d in "xyz":
            iid.append(dict(g, trial_seed=t, domain=d, acc=0.5))
        for k, subs in subsets.items():
            for s in subs:
                for d in s.split(","):
                    orc.append(dict(g, trial_seed=t, domain=d, acc=0.5 + leaks[k - 1][t], subset=s, k=k))
    return okt.leakage_vs_k(okt.leakage_by_trial(pd.DataFrame(iid), pd.DataFrame(orc)))


def test_fall_prev_columns():
    lk = k3_frames([[0.04, 0.05, 0.06, 0.05], [0.03, 0.035, 0.04, 0.03], [0.02, 0.03, 0.03, 0.02]])
    r3 = lk.set_index("k").loc[3]
    assert r3["fall_prev"] == pytest.approx(100 * (np.mean([0.02, 0.03, 0.03, 0.02]) - 0.03375))
    assert r3["reduction_pct"] == pytest.approx(100 * (2.5 - 5.0) / 5.0)
    assert r3["fall_prev_ci_low"] <= r3["fall_prev"] <= r3["fall_prev_ci_high"]


def test_leakage_plan_widens_the_oracle_search_only(tmp_path):
    """Notebook 04's oracle sweep takes ``oracle.search_overrides`` (the quick profile's augment choice); the LP/FT
    sweep and, with None, the oracle sweep keep DomainBed's space (so earlier jobs keep their hashes)."""
    from pathlib import Path

    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.study import plan_for

    nb = Path(__file__).resolve().parents[2] / "notebooks" / "04_leakage_oracle.ipynb"
    p = {**notebook_defaults(nb), "output_dir": str(tmp_path),
         "oracle": {"n_hparams": 3, "n_trials": 1, "search_overrides": {"augment": {"choice": [True, False]}}}}
    plan = plan_for("04_leakage_oracle", p)
    assert all(j.search_overrides == {"augment": {"choice": [True, False]}} for j in plan.sweeps["oracle-K"])
    assert not any(j.search_overrides for j in plan.sweeps["LP/FT"])
    plain = plan_for("04_leakage_oracle", {**p, "oracle": {**p["oracle"], "search_overrides": None}}).sweeps["oracle-K"]
    assert not any(j.search_overrides for j in plain)
    assert {j.job_id for j in plain}.isdisjoint({j.job_id for j in plan.sweeps["oracle-K"]})


@pytest.mark.parametrize("oracle", sorted(ORACLES))
def test_tables_do_not_depend_on_the_runs_row_order(oracle):
    """The runs' rows come in job-id order, which any spec field changes (e.g. ``Job.evaluate_splits``): Table 4, its
    per-trial rows and the leakage per K are the same numbers, bit for bit, whatever that order."""
    sizes = {d: {"in": 8, "out": 2} for d in "sabc"}
    tidy = random_runs(1, n_trials=6)
    order = {job: i for i, job in enumerate(np.random.default_rng(0).permutation(tidy["job_id"].unique()))}
    shuffled = tidy.iloc[np.argsort(tidy["job_id"].map(order).to_numpy(), kind="stable")].reset_index(drop=True)
    a, b = okt.oracle_leakage(tidy, sizes, oracle), okt.oracle_leakage(shuffled, sizes, oracle)
    pd.testing.assert_frame_equal(a.table, b.table, check_exact=True)
    for name in ("per_trial", "vs_k"):
        x, y = (getattr(r, name).sort_values(["k", "trial_seed"] if name == "per_trial" else ["k"])
                .reset_index(drop=True) for r in (a, b))
        pd.testing.assert_frame_equal(x, y, check_exact=True)
