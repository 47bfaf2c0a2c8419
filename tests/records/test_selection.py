"""Model selection and tables on hand-made records with known answers (no training)."""

from __future__ import annotations

import argparse
import io as _io
import itertools
import json
import math
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dganalysis import tables
from dganalysis.collect import add_collect_arguments, main_collect
from dganalysis.records import load, load_many, selection, selection_methods, summaries
from dganalysis.records import read as results
from dganalysis.validation import ConfigError
from tests.records._frame_oracle import SCORERS, select_frame, with_meta

# ---------------------------------------------------------------- writers of fake job folders


def write_run(root: Path, name: str, records: list[dict], status: str = "done") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    if status in ("done", "failed"):
        (d / status).write_text("")
    return d


def db_record(dataset, algorithm, test_envs, hseed, tseed, step, accs, val_envs=None):
    """A DomainBed-style record; ``accs`` = list of (in_acc, out_acc) per env."""
    args = {"dataset": dataset, "algorithm": algorithm, "test_envs": list(test_envs), "hparams_seed": hseed,
            "trial_seed": tseed, "holdout_fraction": 0.2}
    if val_envs is not None:
        args["val_envs"] = list(val_envs)
    rec = {"step": step, "epoch": step / 10, "loss": 0.5, "args": args, "hparams": {"lr": 1e-3 * (hseed + 1)}}
    for i, (a_in, a_out) in enumerate(accs):
        rec[f"env{i}_in_acc"] = a_in
        rec[f"env{i}_out_acc"] = a_out
    return rec


def our_record(dataset, algorithm, domains, train, test, val, hseed, tseed, step, accs):
    rec = db_record(dataset, algorithm, [domains.index(d) for d in test], hseed, tseed, step, accs)
    rec.update(domains=list(domains), train_domains=list(train), test_domains=list(test), val_domains=list(val))
    return rec


def random_domainbed_sweep(root: Path, dataset="ColoredMNIST", n_envs=3, algorithms=("ERM", "CORAL"),
                           n_hparams=3, trials=(0, 1, 2), steps=(0, 100, 200), seed=0) -> list[dict]:
    """A DomainBed sweep with single-test-env and [test, val] pair runs; accuracies drawn at random."""
    rng = np.random.default_rng(seed)
    all_records = []
    test_env_sets = [[i] for i in range(n_envs)] + [list(p) for p in itertools.combinations(range(n_envs), 2)]
    for alg, tenvs, h, t in itertools.product(algorithms, test_env_sets, range(n_hparams), trials):
        recs = [db_record(dataset, alg, tenvs, h, t, s, rng.uniform(0.3, 1.0, size=(n_envs, 2)).round(6).tolist())
                for s in steps]
        name = f"{alg}_{'-'.join(map(str, tenvs))}_h{h}_t{t}"
        write_run(root, name, recs)
        all_records += recs
    return all_records


# ---------------------------------------------------------------- an independent port of DomainBed's definitions


def domainbed_reference(records: list[dict], method: str) -> dict[tuple, float]:
    """(trial_seed, dataset, algorithm, test_env) → selected test acc, following domainbed/model_selection.py."""
    groups = defaultdict(list)
    for r in records:
        for e in r["args"]["test_envs"]:
            groups[(r["args"]["trial_seed"], r["args"]["dataset"], r["args"]["algorithm"], e)].append(r)
    out = {}
    for key, recs in groups.items():
        test_env = key[3]
        by_h = defaultdict(list)
        for r in recs:
            by_h[r["args"]["hparams_seed"]].append(r)
        best = None
        for rr in by_h.values():
            single = [r for r in rr if len(r["args"]["test_envs"]) == 1]
            n_envs = sum(1 for k in rr[0] if k.endswith("_out_acc"))
            cands = []
            if method == "oracle" and single:
                last = max(single, key=lambda r: r["step"])
                cands = [(last[f"env{test_env}_out_acc"], last[f"env{test_env}_in_acc"])]
            elif method == "training_domain":
                cands = [(np.mean([r[f"env{i}_out_acc"] for i in range(n_envs) if i != test_env]),
                          r[f"env{test_env}_in_acc"]) for r in single]
            elif method == "leave_one_out":
                for step in sorted({r["step"] for r in rr}):
                    at = [r for r in rr if r["step"] == step]
                    tr = [r for r in at if len(r["args"]["test_envs"]) == 1]
                    if len(tr) != 1:
                        continue
                    val = {}
                    for r in at:
                        if len(r["args"]["test_envs"]) == 2:
                            v = (set(r["args"]["test_envs"]) - {test_env}).pop()
                            val[v] = r[f"env{v}_in_acc"]
                    if len(val) == n_envs - 1:
                        cands.append((sum(val.values()) / (n_envs - 1), tr[0][f"env{test_env}_in_acc"]))
            if cands:
                run_best = max(cands, key=lambda c: c[0])
                if best is None or run_best[0] > best[0]:
                    best = run_best
        if best is not None:
            out[key] = best[1]
    return out


@pytest.mark.parametrize("method", ["training_domain", "leave_one_out", "oracle"])
def test_matches_domainbed_definitions_on_random_sweep(tmp_path, method):
    records = random_domainbed_sweep(tmp_path)
    df = load(tmp_path, progress=False)
    sel = selection.select(df, method)
    names = results.DOMAINBED_ENVIRONMENTS["ColoredMNIST"]
    ref = domainbed_reference(records, method)
    single = sel[~sel["test_domains"].str.contains(",")]
    got = {(r.trial_seed, r.dataset, r.algorithm, names.index(r.domain)): r.acc for r in single.itertuples()}
    assert got.keys() == ref.keys() and len(got) == 3 * 2 * 3
    for k, v in ref.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k


def test_domainbed_table_numbers_with_population_se(tmp_path):
    """ddof=0 reproduces collect_results.format_mean: 100*mean, 100*np.std(x/sqrt(n))."""
    records = random_domainbed_sweep(tmp_path, algorithms=("ERM",))
    df = load(tmp_path, progress=False)
    ref = domainbed_reference(records, "training_domain")
    text = tables.selection_table(df, "training_domain", fmt="csv", ddof=0, digits=3)
    cells = pd.read_csv(_io.StringIO(text))
    for env, name in enumerate(["+90%", "+80%", "-90%"]):
        accs = np.array([ref[(t, "ColoredMNIST", "ERM", env)] for t in (0, 1, 2)])
        row = cells[(cells["dataset"] == "ColoredMNIST") & (cells["column"] == name)].iloc[0]
        assert row["mean"] == pytest.approx(100 * accs.mean())
        assert row["se"] == pytest.approx(100 * np.std(accs / np.sqrt(3)))
        assert row["n"] == 3
    # averages table: per-trial mean over test envs, then mean ± se over trials
    per_trial = [np.mean([ref[(t, "ColoredMNIST", "ERM", e)] for e in range(3)]) for t in (0, 1, 2)]
    avg = cells[(cells["dataset"] == "Averages") & (cells["column"] == "ColoredMNIST")].iloc[0]
    assert avg["mean"] == pytest.approx(100 * np.mean(per_trial))
    assert avg["se"] == pytest.approx(100 * np.std(per_trial) / np.sqrt(3))


# ---------------------------------------------------------------- small hand-computed cases


@pytest.fixture
def tiny_domainbed(tmp_path):
    """PACS-like, 2 hparams x 1 trial, test env A(0); 3 checkpoints. Known answers in the tests below."""
    root = tmp_path / "sweep"
    acc = {  # hparams_seed -> step -> [(in, out) for A, C, P, S]
        0: {0: [(.10, .11), (.50, .50), (.50, .50), (.50, .50)],
            1: [(.60, .61), (.90, .90), (.90, .90), (.90, .90)],   # best training-domain val (0.9)
            2: [(.20, .70), (.80, .80), (.80, .80), (.80, .80)]},  # last: A out 0.70
        1: {0: [(.30, .30), (.40, .40), (.40, .40), (.40, .40)],
            1: [(.40, .40), (.70, .70), (.70, .70), (.70, .70)],
            2: [(.55, .75), (.85, .85), (.85, .85), (.85, .85)]},  # last: A out 0.75 -> oracle picks h1, in .55
    }
    for h, steps in acc.items():
        write_run(root, f"h{h}", [db_record("PACS", "ERM", [0], h, 0, s, a) for s, a in steps.items()])
    return root


def test_training_domain_uses_best_checkpoint(tiny_domainbed):
    sel = selection.select(load(tiny_domainbed, progress=False), "training_domain")
    assert len(sel) == 1
    row = sel.iloc[0]
    assert (row["domain"], row["hparams_seed"], row["step"]) == ("A", 0, 1)
    assert row["acc"] == pytest.approx(0.60) and row["val_acc"] == pytest.approx(0.90)
    assert row["train_domains"] == "C,P,S" and row["test_domains"] == "A" and row["selection"] == "training_domain"


def test_oracle_uses_last_checkpoint_only(tiny_domainbed):
    sel = selection.select(load(tiny_domainbed, progress=False), "oracle")
    row = sel.iloc[0]
    assert (row["hparams_seed"], row["step"]) == (1, 2)
    assert row["acc"] == pytest.approx(0.55) and row["val_acc"] == pytest.approx(0.75)


def test_leave_one_out_needs_pair_runs(tiny_domainbed):
    df = load(tiny_domainbed, progress=False)
    assert selection.select(df, "leave_one_out").empty  # no [test, val] runs: no answer (DomainBed prints X)
    # add helpers test_envs [0, v] for h0 only, v = C, P, S, with in-accs on v at steps 0..2
    held = {0: [.2, .3, .4], 1: [.9, .6, .6], 2: [.5, .6, .7]}  # step -> in-acc on C, P, S when held out
    for v in (1, 2, 3):
        recs = []
        for s in (0, 1, 2):
            accs = [(0.0, 0.0)] * 4
            accs[v] = (held[s][v - 1], 0.0)
            recs.append(db_record("PACS", "ERM", [0, v], 0, 0, s, accs))
        write_run(tiny_domainbed, f"h0_pair{v}", recs)
    sel = selection.select(load(tiny_domainbed, progress=False), "leave_one_out")
    sel = sel[sel["test_domains"] == "A"]
    row = sel.iloc[0]  # scores: step0 0.2+0.3+0.4=.9/3, step1 (.9+.6+.6)/3=.7, step2 (.5+.6+.7)/3=.6 -> step 1
    assert (row["hparams_seed"], row["step"]) == (0, 1)
    assert row["val_acc"] == pytest.approx(0.7) and row["acc"] == pytest.approx(0.60)
    # one helper missing at step 1 -> that step is skipped, step 2 wins (0.6 > 0.3)
    lines = (tiny_domainbed / "h0_pair2" / "results.jsonl").read_text().splitlines()
    (tiny_domainbed / "h0_pair2" / "results.jsonl").write_text(lines[0] + "\n" + lines[2] + "\n")
    row = selection.select(load(tiny_domainbed, progress=False), "leave_one_out").iloc[0]
    assert row["step"] == 2 and row["acc"] == pytest.approx(0.20)


@pytest.fixture
def multi_test(tmp_path):
    """Our store: 5 domains a..e, train {a, b}, test {c, d}, val {e}; 3 hparams; 2 trials; steps 0, 10."""
    return write_multi_test(tmp_path / "store")


def write_multi_test(root: Path) -> Path:
    doms = ["a", "b", "c", "d", "e"]
    # (hseed) -> step -> [(in, out)] for a, b, c, d, e; trial 1 = trial 0 shifted by +0.01
    acc = {
        0: {0: [(.9, .5), (.9, .5), (.30, .30), (.30, .30), (.2, .2)],
            10: [(.9, .9), (.9, .8), (.40, .50), (.50, .60), (.3, .3)]},  # train-out mean .85 (best), pooled .55
        1: {0: [(.9, .6), (.9, .6), (.35, .35), (.35, .35), (.6, .9)],     # val e out .9 (best ood val)
            10: [(.9, .7), (.9, .7), (.60, .90), (.20, .10), (.6, .5)]},  # c out .90 best; pooled .50
        2: {0: [(.9, .4), (.9, .4), (.10, .10), (.10, .10), (.2, .2)],
            10: [(.9, .6), (.9, .6), (.45, .40), (.65, .80), (.4, .4)]},  # d out .80 best; pooled .60 best
    }
    for t in (0, 1):
        for h, steps in acc.items():
            recs = [our_record("Toy", "ERM", doms, ["a", "b"], ["c", "d"], ["e"], h, t, s,
                               [(i + 0.01 * t, o + 0.01 * t) for i, o in a]) for s, a in steps.items()]
            write_run(root, f"h{h}t{t}", recs)
    return root


def _by_domain(sel, trial=0):
    part = sel[sel["trial_seed"] == trial]
    return {r.domain: (r.hparams_seed, r.step, round(r.acc, 6)) for r in part.itertuples()}


def test_multi_test_domain_methods(multi_test):
    df = load(multi_test, progress=False)
    assert set(df.loc[df["domain"] == "e", "role"]) == {"val"}
    td = selection.select(df, "training_domain")
    assert len(td) == 4  # 2 trials x 2 test domains, one choice per (config, trial)
    assert _by_domain(td) == {"c": (0, 10, 0.40), "d": (0, 10, 0.50)}
    assert _by_domain(td, 1) == {"c": (0, 10, 0.41), "d": (0, 10, 0.51)}
    orc = selection.select(df, "oracle")  # per test domain, last checkpoint
    assert _by_domain(orc) == {"c": (1, 10, 0.60), "d": (2, 10, 0.65)}
    pooled = selection.select(df, "oracle_pooled")  # one choice by mean(out c, out d)
    assert _by_domain(pooled) == {"c": (2, 10, 0.45), "d": (2, 10, 0.65)}
    assert pooled.loc[pooled["trial_seed"] == 0, "val_acc"].tolist() == pytest.approx([0.6, 0.6])
    ood = selection.select(df, "ood_validation")  # early stopping allowed: h1 step 0 (e out .9)
    assert _by_domain(ood) == {"c": (1, 0, 0.35), "d": (1, 0, 0.35)}
    # pooled oracle over a subset (K = 1): dropping test-domain d rows equals the per-domain oracle on c
    sub = selection.select(df[df["domain"] != "d"], "oracle_pooled")
    assert _by_domain(sub) == {"c": (1, 10, 0.60)}
    # no val domains -> ood_validation gives nothing; no helper runs -> leave_one_out gives nothing
    assert selection.select(df[df["role"] != "val"], "ood_validation").empty
    assert selection.select(df, "leave_one_out").empty


def test_leave_one_out_with_our_helper_runs(multi_test):
    # helpers: train {b} with a held out (as val) and train {a} with b held out (as test); same hparams/trial
    doms = ["a", "b", "c", "d", "e"]
    for h, score in ((0, .5), (1, .8), (2, .6)):
        for held, train in (("a", "b"), ("b", "a")):
            recs = []
            for s in (0, 10):
                accs = [(0.0, 0.0)] * 5
                accs[doms.index(held)] = (score if s == 10 else 0.1, 0.0)
                test, val = (["c", "d"], [held]) if held == "a" else ([held, "c", "d"], [])
                recs.append(our_record("Toy", "ERM", doms, [train], test, val, h, 0, s, accs))
            write_run(multi_test, f"h{h}_hold_{held}", recs)
    sel = selection.select(load(multi_test, progress=False), "leave_one_out")
    main = sel[(sel["train_domains"] == "a,b") & (sel["trial_seed"] == 0)]
    assert _by_domain(main) == {"c": (1, 10, 0.60), "d": (1, 10, 0.20)}
    assert main["val_acc"].tolist() == pytest.approx([0.8, 0.8])
    assert (sel["trial_seed"] == 1).sum() == 0  # trial 1 has no helpers


@pytest.mark.parametrize("method", selection_methods.methods())
def test_per_draw_equals_select_on_each_draw_alone(tmp_path, method):
    """select(df, m, per_draw=True) is select(df[hparams_seed == h], m) for every h, concatenated: each draw's own
    checkpoint choice (and, for leave-one-out, its own helpers), never another draw's."""
    random_domainbed_sweep(tmp_path)
    df = load(tmp_path, progress=False)
    if method == "ood_validation":  # DomainBed runs have no val domain: make the last training domain one
        df = df.copy()
        df["role"] = df["role"].astype(str).where(~((df["role"] == "train") & (df["domain"] == "+90%")), "val")
    got = selection.select(df, method, per_draw=True)
    want = pd.concat([selection.select(part, method) for _, part in df.groupby("hparams_seed")], ignore_index=True)
    want = want.sort_values([*selection_methods.CONFIG, "hparams_seed", "domain"], kind="stable", ignore_index=True)
    assert len(got) and got["hparams_seed"].nunique() > 1
    pd.testing.assert_frame_equal(got, want.astype(got.dtypes.to_dict()), check_exact=True)
    across = selection.select(df, method)  # across draws: one pick per config, among the per-draw picks
    assert len(across) < len(got)
    key = [*selection_methods.CONFIG, "domain", "job_id", "step"]
    assert across[key].merge(got[key]).shape[0] == len(across)


def test_select_rejects_bad_input(multi_test):
    df = load(multi_test, progress=False)
    with pytest.raises(ValueError, match="unknown method 'best'"):
        selection.select(df, "best")
    with pytest.raises(ValueError, match="lacks columns"):
        selection.select(df.drop(columns=["role"]), "oracle")
    with pytest.raises(ValueError, match="per_draw='yes', expected True or False"):
        selection.select(df, "oracle", per_draw="yes")


# ---------------------------------------------------------------- summary statistics


def test_summarize_standard_error():
    sel = pd.DataFrame({"dataset": "D", "algorithm": "ERM", "domain": ["x"] * 3 + ["y"],
                        "trial_seed": [0, 1, 2, 0], "acc": [0.5, 0.7, 0.9, 0.4]})
    s = selection.summarize(sel, by=["dataset", "algorithm", "domain"]).set_index("domain")
    assert s.loc["x", "mean"] == pytest.approx(0.7)
    assert s.loc["x", "se"] == pytest.approx(0.2 / math.sqrt(3))  # sample std 0.2 (ddof=1)
    assert s.loc["x", "n"] == 3
    assert math.isnan(s.loc["y", "se"]) and s.loc["y", "mean"] == pytest.approx(0.4)
    s0 = selection.summarize(sel, by=["domain"], ddof=0).set_index("domain")
    assert s0.loc["x", "se"] == pytest.approx(math.sqrt(0.08 / 3) / math.sqrt(3))  # population std
    assert s0.loc["y", "se"] == 0.0
    with pytest.raises(ValueError, match="lacks columns"):
        selection.summarize(sel, by=["nope"])


def _summary_frame(seed: int = 0) -> pd.DataFrame:
    """Trials of many (algorithm, domain) groups: n = 1 groups, an all-NaN group, NaN accuracies, groups of 8 and more
    values (numpy sums those pairwise), rows shuffled, attrs as a sweep's selection has them."""
    rng = np.random.default_rng(seed)
    rows = []
    for g, size in enumerate([1, 1, 2, 3, 3, 3, 4, 5, 7, 8, 9, 16, 17, 40, 130]):
        for t in range(size):
            rows.append({"algorithm": f"A{g % 4}", "domain": f"d{g}", "trial_seed": t, "acc": rng.random() ** 3})
    rows += [{"algorithm": "A0", "domain": "nan", "trial_seed": t, "acc": np.nan} for t in range(3)]
    df = pd.DataFrame(rows)
    df.loc[rng.random(len(df)) < 0.15, "acc"] = np.nan
    df = df.sample(frac=1, random_state=seed).reset_index(drop=True)
    df.attrs["jobs"] = {"read": 3, "problems": [["x", "y"]]}
    return df


@pytest.mark.parametrize("ddof", [0, 1])
def test_summarize_matches_per_group_numpy_and_the_plain_pandas_summary(ddof, monkeypatch):
    """The array path gives, group by group, numpy's nanstd / sqrt(n) as SE bit for bit, and exactly the frame of a
    plain pandas summary (per-group ``Series.std`` through ``agg``): same rows, order, dtypes, NaN."""
    calls = []
    from dganalysis.stats import moments

    group_std = moments.group_std
    monkeypatch.setattr(moments, "group_std", lambda *a: calls.append(1) or group_std(*a))
    df = _summary_frame()
    got = selection.summarize(df, by=["algorithm", "domain"], ddof=ddof)
    assert calls, "the array path was not taken"
    assert df.attrs == {"jobs": {"read": 3, "problems": [["x", "y"]]}} and got.attrs == {}
    for r in got.itertuples():
        acc = df.loc[(df["algorithm"] == r.algorithm) & (df["domain"] == r.domain), "acc"].to_numpy()
        n = int((~np.isnan(acc)).sum())
        assert r.n == n
        if n > ddof:
            assert r.se == np.nanstd(acc, ddof=ddof) / math.sqrt(n)  # exact: the same two-pass sums
            assert r.mean == pytest.approx(np.nanmean(acc), rel=1e-14)
        else:
            assert math.isnan(r.se)
            assert math.isnan(r.mean) == (n == 0)
    g = df.groupby(["algorithm", "domain"], sort=True, dropna=False)["acc"]
    plain = g.agg(mean="mean", std=lambda a: a.std(ddof=ddof), n="count").reset_index()
    plain["se"] = [s / math.sqrt(n) if n > ddof else np.nan for s, n in zip(plain["std"], plain["n"])]
    pd.testing.assert_frame_equal(got, plain[["algorithm", "domain", "mean", "se", "n"]], check_exact=True)


def test_summarize_general_path_keeps_its_results():
    """Integer accuracies and keys named like a result column take pandas' per-group path: same numbers, same
    error as before."""
    ints = pd.DataFrame({"g": ["a", "a", "b"], "acc": [1, 2, 5]})
    s = selection.summarize(ints, by=["g"])
    assert s["mean"].tolist() == [1.5, 5.0] and s["se"].iloc[0] == pytest.approx(0.5) and s["n"].tolist() == [2, 1]
    clash = pd.DataFrame({"n": ["p", "p"], "acc": [0.1, 0.2]})
    with pytest.raises(ValueError, match="cannot insert n, already exists"):
        selection.summarize(clash, by=["n"])


# ---------------------------------------------------------------- tables and the collect verb


def test_table_formats(tiny_domainbed, multi_test):
    # add a second trial to the PACS sweep so that SEs exist: trial 1 = same records + 0.1 on every acc
    for h in (0, 1):
        lines = (tiny_domainbed / f"h{h}" / "results.jsonl").read_text().splitlines()
        recs = [json.loads(x) for x in lines]
        for r in recs:
            r["args"]["trial_seed"] = 1
            for k in list(r):
                if k.endswith("_acc"):
                    r[k] = round(r[k] + 0.1, 6)
        write_run(tiny_domainbed, f"pacs_h{h}t1", recs)
    df = load([tiny_domainbed, multi_test], progress=False)
    text = tables.selection_table(df, "training_domain", fmt="text")
    # PACS, test A: trials 0.60 and 0.70 -> 65.0 ± 5.0 (sample std 0.0707/sqrt 2)
    assert "Dataset: PACS, model selection method: training-domain validation set" in text
    assert "65.0 ± 5.0" in text
    assert "Averages, model selection method" in text
    # Toy: c = 40.0/41.0 -> 40.5 ± 0.5; Avg over c, d = (40.5 + 50.5)/2 = 45.5 without SE
    assert "40.5 ± 0.5" in text and "45.5" in text
    md = tables.selection_table(df, "training_domain", fmt="markdown")
    assert "| ERM " in md and "**Dataset: Toy" in md
    tex = tables.selection_table(df, "oracle", fmt="latex")
    assert "\\toprule" in tex and "$\\pm$" in tex and "\\end{tabular}" in tex
    csv = pd.read_csv(_io.StringIO(tables.selection_table(df, "training_domain", fmt="csv")))
    assert set(csv.columns) == {"table", "dataset", "algorithm", "column", "mean", "se", "n", "cell"}
    pacs_avg = csv[(csv["dataset"] == "PACS") & (csv["column"] == "Avg")].iloc[0]
    assert pacs_avg["mean"] == pytest.approx(65.0) and pacs_avg["cell"] == "65.0"
    av = csv[(csv["dataset"] == "Averages") & (csv["column"] == "Avg")].iloc[0]
    assert av["mean"] == pytest.approx((65.0 + 45.5) / 2)
    with pytest.raises(ValueError, match="format 'html'"):
        tables.selection_table(df, "oracle", fmt="html")


def test_table_single_trial_and_latex_escape(tmp_path):
    write_run(tmp_path, "r0", [db_record("ColoredMNIST", "ERM", [2], 0, 0, 0, [(.9, .9), (.8, .8), (.1, .123)])])
    df = load(tmp_path, progress=False)
    text = tables.selection_table(df, "oracle", fmt="text")
    assert "10.0 ± —" in text  # one trial: no SE with ddof=1
    assert "+90%" not in text  # only test domains that were run make columns
    tex = tables.selection_table(df, "oracle", fmt="latex")
    assert "\\textbf{-90\\%}" in tex


def test_columns_disambiguated_for_several_splits(tmp_path):
    doms = ["p", "q", "r", "hw"]
    for train in (["p", "q"], ["p", "q", "r"]):
        recs = [our_record("Dyn", "ERM", doms, train, ["hw"], [], 0, 0, 5, [(.5, .5), (.5, .5), (.5, .5), (.3, .3)])]
        write_run(tmp_path, "j" + "".join(train), recs)
    text = tables.selection_table(load(tmp_path, progress=False), "oracle", fmt="markdown")
    assert "hw (train: p,q)" in text and "hw (train: p,q,r)" in text


def test_column_labels_name_splits_and_settings():
    """A domain under several splits gets the splits that differ in its label (per dataset), one algorithm's runs
    under several settings get the setting keys that differ; both together are joined; a per-algorithm setting
    alone keeps the bare name. Rows in any order, the frame's index kept."""
    s100, s200 = json.dumps({"steps": 100}), json.dumps({"steps": 200})
    lr = json.dumps({"steps": 100, "hparams_overrides": {"lr": 0.1}})
    rows = [  # dataset, algorithm, train, test, val, setting, domain, expected label
        ("Toy", "ERM", "a,b", "c", "", s100, "c", "c (train: a,b; steps=100)"),
        ("Toy", "ERM", "a,b", "c", "", s200, "c", "c (train: a,b; steps=200)"),
        ("Toy", "ERM", "a,b,d", "c", "", s100, "c", "c (train: a,b,d)"),
        ("Toy", "MMD", "a,b", "c", "", lr, "c", "c (train: a,b; steps=100)"),
        ("Toy", "ERM", "a,b", "d", "", s100, "d", "d (test: d; val: -)"),
        ("Toy", "ERM", "a,b", "d", "e", s100, "d", "d (test: d; val: e)"),
        ("Toy", "ERM", "a,b", "c,d", "e", s100, "d", "d (test: c,d; val: e)"),
        ("Toy", "MMD", "a,b", "e", "", lr, "e", "e"),
        ("Toy", "ERM", "a,b", "e", "", s100, "e", "e"),
        ("Other", "ERM", "a", "c", "", s100, "c", "c"),
        ("Other", "ERM", "a", "c", "", s100, "c", "c"),
    ]
    sel = pd.DataFrame(rows, columns=["dataset", "algorithm", "train_domains", "test_domains", "val_domains",
                                      "setting", "domain", "want"])
    sel = sel.sample(frac=1, random_state=0)
    sel.index = sel.index * 10 + 3
    got = summaries._column_labels(sel)
    assert got.index.equals(sel.index)
    assert got.tolist() == sel["want"].tolist()
    # without a setting column only the splits tell columns apart
    plain = summaries._column_labels(sel.drop(columns="setting"))
    assert plain[sel["want"] == "c (train: a,b; steps=200)"].tolist() == ["c (train: a,b)"]
    assert plain[sel["dataset"] == "Other"].tolist() == ["c", "c"]
    # a missing split value: that row keeps the bare name, the other split of its domain names its training domains
    gap = pd.DataFrame({"dataset": "Toy", "algorithm": "ERM", "train_domains": "a,b", "test_domains": "c",
                        "val_domains": ["", np.nan, ""], "domain": "c"})
    assert summaries._column_labels(gap).tolist() == ["c (train: a,b)", "c", "c (train: a,b)"]


def test_text_formats_print_the_wide_frames(tmp_path):
    """format_tables prints, for text and markdown, what tabulate prints for each table's ``wide`` frame, and
    leaves the caller's attrs alone."""
    from tabulate import tabulate

    random_domainbed_sweep(tmp_path, trials=(0, 1))
    sel = selection.select(load(tmp_path, progress=False), "training_domain")
    sel.attrs["jobs"] = {"read": 1}
    before = repr(sel.attrs)
    built = summaries.build_tables(sel, test_domains="all")
    assert repr(sel.attrs) == before and len(built) == 2
    text = tables.format_tables(built, "text", digits=2)
    md = tables.format_tables(built, "markdown")
    for t in built:
        assert tabulate(tables.wide(t, 2), headers="keys", tablefmt="simple", stralign="left", disable_numparse=True) in text
        assert tabulate(tables.wide(t), headers="keys", tablefmt="github", disable_numparse=True) in md


def test_test_domains_option(multi_test):
    doms = ["a", "b", "c", "d", "e"]
    write_run(multi_test, "single", [our_record("Toy", "ERM", doms, ["a", "b", "d"], ["c"], [], 0, 0, 10,
                                                [(.9, .9)] * 2 + [(.77, .7), (.9, .9), (.5, .5)])])
    df = load(multi_test, progress=False)
    auto = tables.selection_table(df, "training_domain", fmt="csv")
    assert "77.0" in auto and "40.5" not in auto  # auto: fewest test domains per dataset
    two = tables.selection_table(df, "training_domain", fmt="csv", test_domains=2)
    assert "40.5" in two and "77.0" not in two
    both = tables.selection_table(df, "training_domain", fmt="csv", test_domains="all")
    assert "c (train: a,b,d; test: c; val: -)" in both and "c (train: a,b; test: c,d; val: e)" in both
    with pytest.raises(ValueError, match="test_domains='x'"):
        tables.selection_table(df, "training_domain", test_domains="x")


def test_collect_verb(tiny_domainbed, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_collect_arguments(parser)
    out = tmp_path / "t.md"
    args = parser.parse_args([str(tiny_domainbed), "--format", "markdown", "-o", str(out)])
    buf = _io.StringIO()
    with redirect_stdout(buf):
        assert main_collect(args) == 0
    text = buf.getvalue()
    for name in ("training-domain validation set", "leave-one-domain-out", "test-domain validation set (oracle)"):
        assert f"## Model selection: {name}" in text
    assert out.read_text() == text
    args = parser.parse_args([str(tiny_domainbed), "--selection", "oracle", "--format", "csv", "--se-ddof", "0"])
    buf = _io.StringIO()
    with redirect_stdout(buf):
        main_collect(args)
    csv = pd.read_csv(_io.StringIO(buf.getvalue()))
    assert csv.loc[csv["column"] == "A", "mean"].item() == pytest.approx(55.0)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main_collect(parser.parse_args([str(empty)])) == 1
    assert "no finished jobs" in capsys.readouterr().err


# ---------------------------------------------------------------- DomainBed's ties and the setting key


def test_ties_follow_domainbed(tmp_path):
    """Equal validation accuracy: the earliest checkpoint of a run, then the highest hparams_seed (DomainBed's
    sorted-then-reversed ``hparams_accs``); oracle ties too."""
    for h in (0, 1, 2):
        recs = [db_record("PACS", "ERM", [0], h, 0, s, [(0.1 * h + 0.01 * s, 0.5), (.8, .8), (.8, .8), (.8, .8)])
                for s in (0, 1, 2)]
        write_run(tmp_path, f"h{h}", recs)
    df = load(tmp_path, progress=False)
    row = selection.select(df, "training_domain").iloc[0]
    assert (row["hparams_seed"], row["step"]) == (2, 0)
    assert row["acc"] == pytest.approx(0.2)
    row = selection.select(df, "oracle").iloc[0]
    assert (row["hparams_seed"], row["step"]) == (2, 2)
    row = selection.select(df, "training_domain_last").iloc[0]
    assert (row["hparams_seed"], row["step"]) == (2, 2)


def test_float_noise_ties_only_with_tie_tol(tmp_path):
    # mean(.3,.2,.1) = 0.2 exactly; mean(.1,.2,.3) = 0.20000000000000004: DomainBed picks the later step
    recs = [db_record("PACS", "ERM", [3], 0, 0, s, [(.5, o[0]), (.5, o[1]), (.5, o[2]), (t, .5)])
            for s, o, t in ((0, (.3, .2, .1), .25), (1, (.1, .2, .3), .75))]
    write_run(tmp_path, "r", recs)
    df = load(tmp_path, progress=False)
    assert selection.select(df, "training_domain")["acc"].item() == 0.75
    assert selection.select(df, "training_domain", tie_tol=1e-12)["acc"].item() == 0.25
    with pytest.raises(ValueError, match="tie_tol"):
        selection.select(df, "training_domain", tie_tol=-1)


def test_training_domain_last_compares_like_with_oracle(tiny_domainbed):
    df = load(tiny_domainbed, progress=False)
    early = selection.select(df, "training_domain").iloc[0]
    last = selection.select(df, "training_domain_last").iloc[0]
    assert early["step"] == 1 and last["step"] == 2  # early stopping vs last checkpoint
    # at the last step h1 has training-domain val 0.85 > h0's 0.80
    assert last["hparams_seed"] == 1 and last["acc"] == pytest.approx(0.55) and last["val_acc"] == pytest.approx(0.85)


def test_runs_with_different_settings_never_compete(tmp_path):
    """DomainBed would merge runs that share (trial, dataset, algorithm, test env, hparams_seed) whatever their other
    arguments; here steps, overrides (our spec.json) and DomainBed's --hparams each make a separate config."""
    doms = ["a", "b", "c"]
    for steps, acc_c in ((100, 0.9), (200, 0.3)):
        for h in (0, 1):
            rec = our_record("Toy", "ERM", doms, ["a", "b"], ["c"], [], h, 0, 10,
                             [(.9, .9 - 0.1 * h), (.9, .9), (acc_c + 0.01 * h, .5)])
            rec["args"]["steps"] = steps
            write_run(tmp_path / "store", f"s{steps}h{h}", [rec])
    # two jobs equal but for hparams_overrides (only in spec.json)
    for lr, acc_c in ((1e-3, 0.6), (1e-2, 0.1)):
        rec = our_record("Toy", "MMD", doms, ["a", "b"], ["c"], [], 0, 0, 10, [(.9, .9), (.9, .9), (acc_c, .5)])
        d = write_run(tmp_path / "store", f"mmd{lr}", [rec])
        (d / "spec.json").write_text(json.dumps({"hparams_overrides": {"lr": lr}, "search_overrides": {}}))
    df = load(tmp_path / "store", progress=False)
    assert df.groupby("algorithm")["setting"].nunique().to_dict() == {"ERM": 2, "MMD": 2}
    sel = selection.select(df, "training_domain")
    erm = sel[sel["algorithm"] == "ERM"].sort_values("acc")
    assert erm["acc"].tolist() == pytest.approx([0.3, 0.9])  # one pick per setting, each from its own runs
    assert sorted(sel.loc[sel["algorithm"] == "MMD", "acc"]) == pytest.approx([0.1, 0.6])
    text = tables.selection_table(df, "training_domain", fmt="csv")
    # ERM's runs differ in steps, MMD's in overrides: each algorithm's settings get their own column
    assert 'c (hparams_overrides=null; steps=100)' in text and 'c (hparams_overrides=null; steps=200)' in text
    assert 'c (hparams_overrides={""lr"": 0.001}; steps=null)' in text
    # per-algorithm overrides alone (one setting per algorithm) share the column
    one = df[df["setting"].isin([df.loc[df["algorithm"] == a, "setting"].iloc[0] for a in ("ERM", "MMD")])]
    assert ',c,' in tables.selection_table(one, "training_domain", fmt="csv")
    # DomainBed records: --hparams and steps are part of the setting, output_dir and seed are not
    db = tmp_path / "db"
    for i, hp in enumerate((None, '{"lr": 0.1}')):
        rec = db_record("PACS", "ERM", [0], 0, 0, 0, [(.5, .5)] * 4)
        rec["args"].update(hparams=hp, output_dir=str(db / f"r{i}"), seed=i)
        write_run(db, f"r{i}", [rec])
    rec = db_record("PACS", "ERM", [0], 1, 0, 0, [(.5, .5)] * 4)
    rec["args"].update(hparams=None, output_dir=str(db / "r9"), seed=9)
    write_run(db, "r9", [rec])
    dbf = load(db, progress=False)
    assert dbf["setting"].nunique() == 2
    assert len(selection.select(dbf, "oracle")) == 2


def test_picks_tells_where_methods_chose_different_runs():
    rows = []
    for method, choice in {"training_domain": [(0, 99), (1, 40)], "oracle": [(0, 99), (2, 99)]}.items():
        for trial, (h, step) in enumerate(choice):
            rows.append({"domain": "0", "trial_seed": trial, "selection": method, "hparams_seed": h, "step": step})
    got = selection.picks(pd.DataFrame(rows))
    assert list(got.columns) == ["training_domain", "oracle", "agree"]
    assert got.loc[("0", 0)].tolist() == ["draw 0, step 99", "draw 0, step 99", True]
    assert got.loc[("0", 1)].tolist() == ["draw 1, step 40", "draw 2, step 99", False]
    with pytest.raises(ValueError, match="repeat"):
        selection.picks(pd.DataFrame(rows + rows[:1]))
    with pytest.raises(ValueError, match="lacks columns"):
        selection.picks(pd.DataFrame(rows).drop(columns="step"))


# ---------------------------------------------------------------- every registered method: the contract of select()


@pytest.fixture(scope="module")
def every_role(tmp_path_factory):
    """Our multi-test-domain store (train, test, val roles) beside a DomainBed sweep with pair runs (helpers)."""
    tmp = tmp_path_factory.mktemp("every_role")
    random_domainbed_sweep(tmp / "db", algorithms=("ERM",), n_hparams=2, trials=(0, 1), steps=(0, 100))
    return load_many([write_multi_test(tmp / "store"), tmp / "db"], progress=False)


@pytest.mark.parametrize("method", selection_methods.methods())
def test_registered_method_keeps_the_select_contract(every_role, method):
    """Columns, one row per (config, test domain), the reported accuracy is the chosen checkpoint's test 'in'
    accuracy, and the chosen score is the best candidate's score of its config."""
    how = selection_methods.get_method(method)
    assert how.key == method and how.title and selection_methods.METHODS[method] == how.title
    df = every_role
    sel = selection.select(df, method)
    assert not sel.empty, f"{method} selects nothing on a frame with train, test and val domains and helper runs"
    assert list(sel.columns) == selection_methods.OUTPUT and set(sel["selection"]) == {method}
    assert not sel.duplicated([*selection_methods.CONFIG, "domain"]).any()
    test_in = df[(df["role"] == "test") & (df["split"] == "in")].set_index(["job_id", "step", "domain"])["acc"]
    for r in sel.itertuples():
        assert r.acc == test_in[(r.job_id, r.step, r.domain)]
    scorer, per_test_domain = SCORERS[method]  # the frame computation of the method's scores (the test oracle)
    assert how.per_test_domain == per_test_domain and how.scores is None  # a built-in: computed by records.rules
    scores = with_meta(scorer(df), df)
    keys = [*selection_methods.CONFIG, "domain"] if how.per_test_domain else selection_methods.CONFIG
    best = scores.groupby(keys, dropna=False)["val_acc"].max()
    for r in sel.itertuples():
        assert r.val_acc == best[tuple(getattr(r, k) for k in keys)]


def test_register_method_rejects_a_second_scorer_under_one_name():
    with pytest.raises(ValueError, match="registered twice"):
        selection_methods.register_method("oracle", "again")(lambda df: df)
    with pytest.raises(ValueError, match="unknown selection method 'nope'"):
        selection_methods.get_method("nope")


# ---------------------------------------------------------------- one implementation: the frame oracle agrees


def _frames(every_role: pd.DataFrame, tmp_path: Path) -> dict[str, pd.DataFrame]:
    """The frame in the dtypes and orders select() meets: load's, the index's (categorical and str), reordered,
    filtered to fewer roles, splits or jobs."""
    from dganalysis.records.index import load_indexed

    random_domainbed_sweep(tmp_path / "db", algorithms=("ERM",), n_hparams=2, trials=(0, 1), steps=(0, 100))
    roots = [write_multi_test(tmp_path / "store"), tmp_path / "db"]
    strings = ["job_id", "domain", "dataset", "split", "role", "hparams"]
    return {"load": every_role, "index": load_indexed(roots), "index_str": load_indexed(roots, categorical=False),
            "str": every_role.astype(dict.fromkeys(strings, "str")), "reversed": every_role.iloc[::-1],
            "shuffled": every_role.sample(frac=1, random_state=0), "no_val": every_role[every_role["role"] != "val"],
            "no_test": every_role[every_role["role"] != "test"], "in_only": every_role[every_role["split"] == "in"],
            "one_job": every_role[every_role["job_id"] == every_role["job_id"].iloc[0]]}


@pytest.mark.parametrize("method", selection_methods.methods())
def test_select_equals_the_frame_oracle(every_role, tmp_path, method):
    """select() runs every built-in method on record arrays (dganalysis.records.rules); the tidy-frame computation
    of the same rules (tests/records/_frame_oracle.py) gives the same frame — columns, dtypes, row order, bits —
    on frames of every dtype and order, with ties widened or not, per config and per draw."""
    for name, df in _frames(every_role, tmp_path).items():
        for tol, per_draw in itertools.product((0.0, 0.05), (False, True)):
            want = select_frame(df, method, tie_tol=tol, per_draw=per_draw)
            got = selection.select(df, method, tie_tol=tol, per_draw=per_draw)
            pd.testing.assert_frame_equal(want, got, check_exact=True, obj=f"{method} on {name}")


def test_select_refuses_a_checkpoint_row_twice(every_role):
    """A (job_id, step, domain, split) twice (two frames concatenated, a resumed job read without load): refused
    with a message naming what load does, instead of a silent choice between the copies."""
    doubled = pd.concat([every_role, every_role.iloc[:1]], ignore_index=True)
    with pytest.raises(ConfigError, match="more than once.*keeps the last record"):
        selection.select(doubled, "training_domain")


def test_a_registered_scorer_runs_through_the_same_argmax(every_role, monkeypatch):
    """A user's scorer gives candidates on the frame; select() takes their argmax with the built-in ties: a scorer
    returning the built-in scores selects what the built-in method selects."""
    monkeypatch.setattr(selection_methods, "_METHODS", dict(selection_methods._METHODS))
    selection_methods.register_method("mine", "my scores")(SCORERS["training_domain"][0])
    selection_methods.register_method("mine_oracle", "my oracle", per_test_domain=True)(SCORERS["oracle"][0])
    for mine, builtin in (("mine", "training_domain"), ("mine_oracle", "oracle")):
        for per_draw in (False, True):
            want = selection.select(every_role, builtin, per_draw=per_draw).drop(columns="selection")
            got = selection.select(every_role, mine, per_draw=per_draw)
            assert set(got["selection"]) == {mine}
            pd.testing.assert_frame_equal(want, got.drop(columns="selection"), check_exact=True)


@pytest.mark.parametrize("method", ["training_domain", "leave_one_out", "oracle"])
def test_records_without_training_accuracy_select_what_full_records_select(tmp_path, method):
    """Records of ``Job.evaluate_splits="held_out"`` jobs lack the training domains' ``in`` accuracies: DomainBed's
    three selections read none of them, so they choose and report what the full records do."""
    records = random_domainbed_sweep(tmp_path / "all")
    runs = sorted((tmp_path / "all").iterdir())
    assert len(runs) == len(records) // 3  # three checkpoints a run
    for run in runs:
        recs = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        for r in recs:
            for e in set(range(3)) - set(r["args"]["test_envs"]):
                del r[f"env{e}_in_acc"]
        write_run(tmp_path / "held_out", run.name, recs)
    full = selection.select(load(tmp_path / "all", progress=False), method)
    held = selection.select(load(tmp_path / "held_out", progress=False), method)
    assert len(full) >= 3 * 2 * 3  # each trial, algorithm and single test domain
    pd.testing.assert_frame_equal(held.drop(columns=["job_id"], errors="ignore"),
                                  full.drop(columns=["job_id"], errors="ignore"))
