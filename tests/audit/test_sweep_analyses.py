"""Sweep analyses on simulated DomainBed-format sweeps whose answers are known by construction."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis import io
from dganalysis.audit import coverage, sweep_analyses
from dganalysis.audit.outputs import selected_hparams_config
from dganalysis.audit.sweep_analyses import expected_max
from dganalysis.records import load, selection

# simulated: per algorithm, the validation (training-domain 'out') and test accuracy of each hparams draw
VAL = {"A": {0: 0.9, 1: 0.8, 2: 0.7}, "B": {0: 0.9, 1: 0.8, 2: 0.7}}
TEST = {"A": {0: 0.5, 1: 0.6, 2: 0.4}, "B": {0: 0.55, 1: 0.45, 2: 0.4}}


def write_planted(root: Path, pairs: bool = True, constant: bool = False) -> Path:
    """ColoredMNIST-format sweep (3 envs): A's validation prefers draw 0 while its test prefers draw 1 (training-domain
    regret 10 points, leave-one-out regret 0: the pair runs' held-out accuracy is the test accuracy); B's agree.
    Step 10 beats step 0 everywhere, so every method picks the last checkpoint. Trial t adds t points to test."""
    envs = [[0], [1], [2]] + ([list(p) for p in itertools.combinations(range(3), 2)] if pairs else [])
    for alg, tenvs, h, t in itertools.product("AB", envs, range(3), range(3)):
        run = root / f"{alg}_{'-'.join(map(str, tenvs))}_h{h}_t{t}"
        run.mkdir(parents=True)
        lines = []
        for step in (0, 10):
            late = 0.0 if step else -0.1
            test = (0.5 if constant else TEST[alg][h]) + 0.01 * t + late
            val = (0.5 if constant else VAL[alg][h]) + late
            r = {"args": {"dataset": "ColoredMNIST", "algorithm": alg, "test_envs": tenvs, "hparams_seed": h,
                          "trial_seed": t, "steps": 11, "checkpoint_freq": 10, "holdout_fraction": 0.2},
                 "hparams": {"lr": 10.0 ** -(h + 3), "batch_size": 32}, "step": step}
            for i in range(3):
                acc = test if i in tenvs else val
                r[f"env{i}_in_acc"] = r[f"env{i}_out_acc"] = acc
            lines.append(json.dumps(r))
        (run / "results.jsonl").write_text("\n".join(lines) + "\n")
        (run / "done").write_text("")
    return root


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    return load(write_planted(tmp_path_factory.mktemp("planted")), progress=False)


def test_expected_max_formula():
    v = np.array([0.3, 0.9, 0.5, 0.7])
    for n in (1, 2, 3):  # exact: every n-tuple of draws with replacement
        brute = np.mean([max(t) for t in itertools.product(v, repeat=n)])
        assert expected_max(v, n) == pytest.approx(brute)
        order = np.array([4.0, 1.0, 3.0, 2.0])  # the search picks the draw with the best order value
        picked = np.mean([v[max(t, key=lambda i: order[i])] for t in itertools.product(range(4), repeat=n)])
        assert expected_max(v, n, order) == pytest.approx(picked)
    assert expected_max(np.full(5, 0.7), 4) == pytest.approx(0.7)
    assert expected_max(v, 1) == pytest.approx(v.mean())
    with pytest.raises(ValueError, match="n ≥ 1"):
        expected_max(v, 0)


def test_selection_regret_planted(planted):
    reg = sweep_analyses.selection_regret(planted)
    assert list(reg.columns) == ["dataset", "algorithm", "selection", "regret", "ci_low", "ci_high", "n"]
    got = reg.set_index(["algorithm", "selection"])
    assert got.loc[("A", "training_domain"), "regret"] == pytest.approx(10.0)
    assert got.loc[("A", "leave_one_out"), "regret"] == pytest.approx(0.0, abs=1e-9)
    assert got.loc[("B", "training_domain"), "regret"] == pytest.approx(0.0, abs=1e-9)
    assert (got["n"] == 3).all()
    assert (got["ci_low"] <= got["regret"] + 1e-9).all() and (got["regret"] <= got["ci_high"] + 1e-9).all()


def test_selection_regret_ci_is_a_t_interval(planted):
    from dganalysis.records import select

    noisy = planted.copy()
    bump = (noisy["role"] == "test") & (noisy["algorithm"] == "A") & (noisy["hparams_seed"] == 1)
    noisy.loc[bump, "acc"] += 0.02 * noisy.loc[bump, "trial_seed"] ** 2  # per-trial regrets 10, 12, 18
    sels = {m: select(noisy, m) for m in ("training_domain", "oracle")}
    row = sweep_analyses.selection_regret(noisy, sels).set_index(["algorithm", "selection"]).loc[("A", "training_domain")]
    d = np.array([10.0, 12.0, 18.0])
    half = 4.302652729911275 * d.std(ddof=1) / np.sqrt(3)  # t(0.975, 2)
    assert row["regret"] == pytest.approx(d.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    with pytest.raises(ValueError, match="confidence"):
        sweep_analyses.selection_regret(noisy, confidence=1.5)
    with pytest.raises(ValueError, match="unknown methods"):
        sweep_analyses.selection_regret(noisy, ["best"])


def test_ranking_changes_planted(planted):
    rk = sweep_analyses.ranking_changes(planted)
    a, b = rk.set_index("algorithm").loc["A"], rk.set_index("algorithm").loc["B"]
    assert (a["rank_training_domain"], b["rank_training_domain"]) == (2.0, 1.0)  # 51 vs 56 points
    assert (a["rank_oracle"], b["rank_oracle"]) == (1.0, 2.0)  # 61 vs 56
    assert a["changed"] and a["kendall_training_domain_oracle"] == pytest.approx(-1.0)
    assert a["kendall_leave_one_out_oracle"] == pytest.approx(1.0)
    assert a["mean_oracle"] == pytest.approx(61.0)


def test_expected_max_curve_and_saturation(planted):
    orc = sweep_analyses.expected_max_curve(planted, "oracle").set_index(["algorithm", "budget"])
    # A's draws give 40, 50, 60 points (+1 on average over trials); oracle orders them by themselves
    assert orc.loc[("A", 1), "expected_max"] == pytest.approx(51.0)
    assert orc.loc[("A", 3), "expected_max"] == pytest.approx((40 + 50 * 7 + 60 * 19) / 27 + 1)
    # the interval is about the unbiased (without-replacement) estimate: at 3 of 3 draws the best draw, 60 + trial
    assert orc.loc[("A", 3), "expected_max_unbiased"] == pytest.approx(61.0)
    assert orc.loc[("A", 2), "expected_max_unbiased"] == pytest.approx((50 + 60 + 60) / 3 + 1)
    # the trials differ by a constant, so the per-trial gains agree and their interval is a point
    assert (orc["ci_low"] <= orc["expected_max_unbiased"] + 1e-9).all()
    assert (orc["expected_max_unbiased"] <= orc["ci_high"] + 1e-9).all() and (orc["n_trials"] == 3).all()
    tdv = sweep_analyses.expected_max_curve(planted, "training_domain", budgets=[3]).set_index("algorithm")
    # ordered by validation (h2 < h1 < h0): the search of 3 draws most often picks h0 (50), not the best test (60)
    assert tdv.loc["A", "expected_max"] == pytest.approx((40 + 60 * 7 + 50 * 19) / 27 + 1)
    sat = sweep_analyses.saturation(orc.reset_index()).set_index("algorithm")
    e2 = (40 + 50 * 3 + 60 * 5) / 9 + 1
    assert sat.loc["A", "gain"] == pytest.approx(orc.loc[("A", 3), "expected_max"] - e2)
    assert sat.loc["A", "gain_low"] == pytest.approx(61 - ((50 + 60 + 60) / 3 + 1))  # the unbiased gain, no spread
    assert sat["saturated"].tolist() == [False, False] and sat.loc["A", "budget"] == 3
    with pytest.raises(ValueError, match="lacks columns"):
        sweep_analyses.saturation(pd.DataFrame({"x": [1]}))


def test_expected_max_curve_is_eq1_per_split_on_a_random_sweep(tmp_path):
    """On a sweep with random accuracies, a missing draw and algorithms with different draw counts, the curve is
    the mean over (trial, test domain) of :func:`expected_max` of the per-draw picks ordered by validation score;
    given as ``draws`` (the per-draw selection, as the audit passes it) it is the same, intervals included."""
    rng = np.random.default_rng(3)
    root = tmp_path / "s"
    for alg, n_h in (("A", 4), ("B", 6)):
        for te, h, t in itertools.product(range(3), range(n_h), range(2)):
            if (alg, te, h, t) == ("B", 1, 5, 0):
                continue  # a draw missing from one split: that split's row leaves B's curve
            lines = []
            for step in (0, 10):
                r = {"args": {"dataset": "ColoredMNIST", "algorithm": alg, "test_envs": [te], "hparams_seed": h,
                              "trial_seed": t}, "hparams": {"lr": 0.1}, "step": step}
                for i in range(3):
                    r[f"env{i}_in_acc"], r[f"env{i}_out_acc"] = rng.integers(0, 20, 2).tolist()
                    r[f"env{i}_in_acc"] /= 20
                    r[f"env{i}_out_acc"] /= 20  # a coarse grid: ties in validation and in accuracy
                lines.append(json.dumps(r))
            (root / f"{alg}_{te}_h{h}_t{t}").mkdir(parents=True)
            (root / f"{alg}_{te}_h{h}_t{t}" / "results.jsonl").write_text("\n".join(lines) + "\n")
    df = load(root, progress=False)
    for method in ("training_domain", "oracle"):
        per = selection.select(df, method, per_draw=True)
        curve = sweep_analyses.expected_max_curve(df, method).set_index(["algorithm", "budget"])
        for alg, n_h in (("A", 4), ("B", 6)):
            splits = [g for _, g in per[per["algorithm"] == alg].groupby(["trial_seed", "domain"])
                      if len(g) == n_h]
            assert len(splits) == (6 if alg == "A" else 5)
            for n in range(1, n_h + 1):
                want = np.mean([expected_max(100 * g["acc"].to_numpy(), n, g["val_acc"].to_numpy()) for g in splits])
                assert curve.loc[(alg, n), "expected_max"] == pytest.approx(want, abs=1e-9), (method, alg, n)
        given = sweep_analyses.expected_max_curve(None, method, draws=per)
        pd.testing.assert_frame_equal(given, sweep_analyses.expected_max_curve(df, method), check_exact=True)
    with pytest.raises(ValueError, match="draws holds the selection"):
        sweep_analyses.expected_max_curve(None, "oracle", draws=per.assign(selection="training_domain"))
    with pytest.raises(ValueError, match="give the tidy frame df or its per-draw selection"):
        sweep_analyses.expected_max_curve(None, "oracle")
    with pytest.raises(ValueError, match="parameter 'draws': expected the frame of select"):
        sweep_analyses.expected_max_curve(None, "oracle", draws=per.drop(columns="val_acc"))


def test_expected_max_interval_covers_the_known_curve():
    """SIMULATED searches with a known answer (bivariate-normal validation and test accuracy; the expected test
    accuracy of the validation-selected draw of k is μ + cov/sd(V) · E[max of k standard normals]): over 3 trials ×
    4 test domains × 5 draws, the interval contains the true value at budgets 1, 3, 5 and the true gain 3 → 5 in at
    least 95% of sweeps up to Monte-Carlo error, and a quick rerun agrees with the shipped coverage table."""
    sims = 600
    quick = coverage.simulate_search(3, 5, sims, np.random.default_rng(31))
    assert min(quick.values()) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / sims)
    row = next(r for r in coverage.coverage_table()["methods"]["expected_max_trials_t"]["rows"]
               if r["size"] == {"trials": 3, "draws": 5})
    for k, q in quick.items():
        s = row["scenarios"][k]
        assert abs(q - s) <= 4 * np.sqrt(q * (1 - q) / sims + s * (1 - s) / row["sims"]), (k, q, s)
    assert coverage.search_truth(0.8, 2.0, 1) == pytest.approx(0.0, abs=1e-12)  # one draw: the mean
    # the known curve, checked by brute force: 200,000 searches of 5 draws from the scenario's bivariate normal
    rng = np.random.default_rng(32)
    h = rng.standard_normal((200_000, 5))
    sd_v = np.sqrt(16 / (0.64 * 5) - 4)
    a, v = 2 * h + rng.standard_normal(h.shape), 2 * h + rng.normal(0, sd_v, h.shape)
    picked = a[np.arange(len(a)), v.argmax(axis=1)]
    assert picked.mean() == pytest.approx(coverage.search_truth(0.8, 2.0, 5), abs=4 * picked.std() / np.sqrt(len(a)))


def _few_draws(rng: np.random.Generator, hparams_sd: float, trials: int = 3) -> pd.DataFrame:
    """SIMULATED per-draw picks of one (dataset, algorithm): ``trials`` trials × 4 test domains × 4 hparams draws,
    a draw's hparams moving test and validation accuracy alike (SD ``hparams_sd`` points, shared by the trial's test
    domains), noise 0.5 points on each."""
    rows = []
    for t in range(trials):
        q = rng.normal(0, hparams_sd / 100, 4)
        for dom, h in itertools.product(range(4), range(4)):
            rows.append(dict(dataset="PACS", algorithm="ERM", setting="", trial_seed=t, train_domains="x",
                             test_domains=str(dom), val_domains="", domain=str(dom), hparams_seed=h,
                             acc=0.6 + q[h] + rng.normal(0, 0.005), val_acc=0.8 + q[h] + rng.normal(0, 0.005),
                             selection="training_domain"))
    return pd.DataFrame(rows)


def test_saturation_is_not_flagged_with_few_draws():
    """SIMULATED searches of 4 draws over 3 trials whose true gain from 2 to 4 draws is 0.90 points (hparams SD 2
    points: 4 / √4.25 · (E[max of 4] − E[max of 2]) of standard normals), above the 0.5 threshold: the interval
    rarely calls them saturated (at most its one-sided miss, measured ≤ 0.028 at the threshold itself), where the
    eq. 1 point gain alone did so in a large share. On one sweep, the frame path: the point gain is below the
    threshold, the interval straddles it, and ``saturated`` is unknown (NaN)."""
    truth = 4 / np.sqrt(4.25) * (coverage._expected_max_std_normal(4) - coverage._expected_max_std_normal(2))
    assert truth == pytest.approx(0.90, abs=0.01)
    rng = np.random.default_rng(8)
    sims, flagged, point = 300, 0, 0
    for _ in range(sims):
        sat = sweep_analyses.saturation(sweep_analyses.expected_max_curve(None, "training_domain", draws=_few_draws(rng, 2.0))).iloc[0]
        flagged += sat["saturated"] is True or sat["saturated"] is np.True_
        point += sat["gain"] <= sweep_analyses.SATURATION_GAIN
    assert flagged / sims <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / sims) and point / sims > 0.15
    draws = _few_draws(np.random.default_rng(0), 1.0)
    curve = sweep_analyses.expected_max_curve(None, "training_domain", draws=draws)
    sat = sweep_analyses.saturation(curve, threshold=0.5).iloc[0]
    assert sat["gain"] <= 0.5 and sat["gain_low"] <= 0.5 < sat["gain_high"] and pd.isna(sat["saturated"])
    assert sat["ci_method"].startswith("Student t over trials") and 0.9 < sat["ci_coverage"] <= 1
    assert sweep_analyses.saturation(curve, threshold=50)["saturated"].tolist() == [True]  # a 50-point gain is ruled out
    one = sweep_analyses.expected_max_curve(None, "training_domain", draws=draws[draws["trial_seed"] == 0])
    assert sweep_analyses.saturation(one)["saturated"].isna().all()  # one trial: no interval, no flag


def test_constant_search_is_saturated(tmp_path):
    df = load(write_planted(tmp_path, pairs=False, constant=True), progress=False)
    curve = sweep_analyses.expected_max_curve(df, "training_domain")
    # every draw alike: the curve is flat; its interval is that of the trials' means, 50, 51, 52 (trial t adds t)
    half = stats.t.ppf(0.975, 2) / np.sqrt(3)
    assert np.allclose(curve["expected_max"], 51.0) and np.allclose(curve["ci_high"] - curve["ci_low"], 2 * half)
    assert np.allclose(curve[["gain", "gain_low", "gain_high"]], 0)
    assert sweep_analyses.saturation(curve)["saturated"].all()
    assert sweep_analyses.lodo_vs_logo(df) is None  # no runs with pairs of test environments
    assert sweep_analyses.selection_regret(df, ["training_domain"])["regret"].abs().max() < 1e-9


def test_lodo_vs_logo_planted(planted):
    out = sweep_analyses.lodo_vs_logo(planted)
    got = out.set_index("algorithm")
    assert got.loc["A", "lodo_acc"] == pytest.approx(51.0) and got.loc["B", "lodo_acc"] == pytest.approx(56.0)
    assert got.loc["A", "logo_acc"] == pytest.approx(51.0)  # pair runs select draw 0 too (validation prefers it)
    assert list(out.columns) == ["dataset", "algorithm", "lodo_acc", "logo_acc", "lodo_rank", "logo_rank",
                                 "rank_change", "kendall_tau"]
    assert (out["rank_change"] == out["logo_rank"] - out["lodo_rank"]).all()


def test_selected_hparams_records_and_file(planted, tmp_path):
    recs = sweep_analyses.selected_hparams(planted, "training_domain")
    single = [r for r in recs if len(r["test_domains"]) == 1]
    assert len(single) == 2 * 3 * 3  # algorithm x test env x trial
    assert {r["hparams_seed"] for r in single} == {0}  # validation prefers draw 0 everywhere
    r = single[0]
    assert r["hparams"] == {"lr": 1e-3, "batch_size": 32} and r["step"] == 10 and r["steps"] == 11
    data = selected_hparams_config(recs)
    i = recs.index(r)
    assert data["jobs"][i]["hparams_overrides"] == r["hparams"] and data["selected"][i]["job_id"] == r["job_id"]
    with pytest.raises(ValueError, match="lacks"):
        selected_hparams_config([{"dataset": "x"}])


@pytest.mark.usefixtures("one_thread")
def test_selected_hparams_rerun_end_to_end(tmp_path):
    """A tiny sweep of ours → selected hparams → JSON → ``dganalysis sweep --config`` → the same hparams trained."""
    from dganalysis.cli import main as cli_main
    from dganalysis.sweep import Sweep, make_jobs, run_sweep
    from tests._tiny import FAST_HPARAMS, TINY

    jobs = make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=2,
                           n_trials=1, steps=2, checkpoint_freq=1, hparams_overrides=FAST_HPARAMS,
                           search_overrides=None))
    jobs = [j for j in jobs if j.test_domains == ("d0",)]
    run_sweep(jobs, tmp_path / "store", progress=False)
    df = load(tmp_path / "store", progress=False)
    recs = sweep_analyses.selected_hparams(df, "training_domain")
    assert len(recs) == 1 and recs[0]["steps"] == 2 and recs[0]["checkpoint_freq"] == 1
    path = io.write_json(tmp_path / "picked.json", selected_hparams_config(recs))
    code = cli_main(["sweep", "--config", str(path), "--store", str(tmp_path / "rerun"), "--no-progress",
                     "--import", "tests/_tiny.py"])
    assert code == 0
    again = load(tmp_path / "rerun", progress=False)
    assert set(again["job_id"]) and json.loads(again["hparams"].iloc[0]) == recs[0]["hparams"]
    assert (again["trial_seed"].iloc[0], again["hparams_seed"].iloc[0]) == (recs[0]["trial_seed"],
                                                                            recs[0]["hparams_seed"])
    assert set(again["test_domains"]) == {"d0"}


def test_job_list_file_checked(tmp_path):
    from dganalysis.sweep import load_sweep_yaml
    from dganalysis.validation import ConfigError
    from tests._tiny import FAST_HPARAMS, TINY

    job = {"dataset": TINY, "algorithm": "ERM", "train_domains": ["d1", "d2"], "test_domains": ["d0"],
           "hparams_seed": 3, "trial_seed": 1, "steps": 6, "checkpoint_freq": 2, "hparams_overrides": FAST_HPARAMS}
    path = tmp_path / "jobs.json"
    path.write_text(json.dumps({"jobs": [job], "selected": []}))
    (got,) = load_sweep_yaml(path, steps=2)
    assert (got.hparams_seed, got.trial_seed, got.steps, got.test_domains) == (3, 1, 2, ("d0",))
    assert dict(got.hparams_overrides) == FAST_HPARAMS
    for bad, match in (({"jobs": [job], "extra": 1}, "unknown key"), ({"jobs": []}, "non-empty list"),
                       ({"jobs": [dict(job, colour="red")]}, r"jobs\[0\] has unknown field"),
                       ({"jobs": [dict(job, test_domains=["nowhere"])]}, "unknown domains"),
                       ({"jobs": [dict(job, hparams_overrides={"lr": -1.0})]}, r"jobs\[0\].*lr")):
        path.write_text(json.dumps(bad))
        with pytest.raises(ConfigError, match=match):
            load_sweep_yaml(path)
    path.write_text(json.dumps({"jobs": [job]}))
    with pytest.raises(ConfigError, match="only"):
        load_sweep_yaml(path, n_trials=3)


def test_bad_arguments_named(planted):
    with pytest.raises(ValueError, match="budgets"):
        sweep_analyses.expected_max_curve(planted, "training_domain", budgets=[0, 2])
    with pytest.raises(ValueError, match="unknown selection"):
        sweep_analyses.expected_max_curve(planted, "best")
    with pytest.raises(ValueError, match="string"):
        sweep_analyses.ranking_changes(planted, "oracle")


def test_ranking_changes_one_method_compared_with_oracle(planted):
    rk = sweep_analyses.ranking_changes(planted, ["training_domain"])
    assert {"rank_training_domain", "rank_oracle", "kendall_training_domain_oracle"} <= set(rk.columns)
    assert rk["changed"].all()
