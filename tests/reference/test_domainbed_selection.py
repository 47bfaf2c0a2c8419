"""Our model selection against DomainBed's ``model_selection`` / ``collect_results`` (Gulrajani & Lopez-Paz, 2021).

Two kinds of sweep: DomainBed's own ``misc/test_sweep_data`` (real VLCS runs, with its printed tables in
``misc/test_sweep_results.txt``), and sweeps written here in DomainBed's output format (one folder per run with
``results.jsonl`` and ``done``; single-test-env runs plus the ``[test, val]`` pair runs leave-one-out needs) whose
accuracies are fractions with small denominators, so that equal validation accuracies — ties between checkpoints and
between hparams — and float rounding of the means are frequent. Every selected accuracy must be DomainBed's exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import re
from pathlib import Path

import numpy as np
import pytest

from dganalysis.collect import add_collect_arguments, main_collect
from dganalysis.records import load, selection, selection_methods, store
from dganalysis.records import read as results

# every registered method that names its DomainBed class is compared with that class
METHODS = {m: selection_methods.get_method(m).domainbed for m in selection_methods.methods()
           if selection_methods.get_method(m).domainbed}


def write_sweep(root: Path, seed: int, n_envs: int = 4, n_hparams: int = 4, trials=(0, 1, 2), steps=(0, 50, 100, 150),
                algorithms=("ERM", "CORAL"), dataset: str = "VLCS", denominators=(3, 4, 5, 6, 7)) -> None:
    """A DomainBed sweep: runs for every single test env and every pair; accuracies k/n with small n (many ties)."""
    rng = np.random.default_rng(seed)
    test_sets = [[i] for i in range(n_envs)] + [list(p) for p in itertools.combinations(range(n_envs), 2)]
    den = rng.choice(denominators, size=(n_envs, 2))  # one evaluation-set size per (env, split), as real data
    for alg, tenvs, h, t in itertools.product(algorithms, test_sets, range(n_hparams), trials):
        run = root / f"{alg}_{'-'.join(map(str, tenvs))}_h{h}_t{t}"
        run.mkdir(parents=True)
        lines = []
        for s in steps:
            rec = {"args": {"algorithm": alg, "dataset": dataset, "test_envs": tenvs, "hparams_seed": h,
                            "trial_seed": t, "holdout_fraction": 0.2, "steps": steps[-1] + 1, "hparams": None,
                            "output_dir": str(run), "seed": int(rng.integers(2**31))},
                   "step": s, "hparams": {"lr": 1e-3}}
            for i in range(n_envs):
                for j, split in enumerate(("in", "out")):
                    rec[f"env{i}_{split}_acc"] = int(rng.integers(den[i, j] + 1)) / int(den[i, j])
            lines.append(json.dumps(rec))
        (run / "results.jsonl").write_text("\n".join(lines) + "\n")
        (run / "done").write_text("done")


def domainbed_selected(domainbed, path: Path, method: str) -> dict[tuple, float]:
    """(trial_seed, dataset, algorithm, test_env) → DomainBed's ``sweep_acc`` (its own code)."""
    records = domainbed.reporting.load_records(str(path))
    groups = domainbed.reporting.get_grouped_records(records)
    cls = getattr(domainbed.model_selection, METHODS[method])
    out = {}
    for g in groups:
        acc = cls.sweep_acc(g["records"])
        if acc is not None:
            out[(g["trial_seed"], g["dataset"], g["algorithm"], g["test_env"])] = acc
    return out


def ours_selected(path: Path, method: str, **kw) -> dict[tuple, float]:
    df = load(path, progress=False)
    sel = selection.select(df, method, **kw)
    sel = sel[~sel["test_domains"].str.contains(",")]  # DomainBed reports the single-test-env configs
    envs = {ds: list(doms) for ds, doms in df.groupby("dataset", sort=False)["domain"].unique().items()}
    return {(r.trial_seed, r.dataset, r.algorithm, envs[r.dataset].index(r.domain)): r.acc for r in sel.itertuples()}


@pytest.mark.parametrize("method", list(METHODS))
def test_domainbed_test_sweep_data_exact(domainbed, method):
    path = domainbed.root / "domainbed" / "misc" / "test_sweep_data"
    theirs = domainbed_selected(domainbed, path, method)
    ours = ours_selected(path, method)
    assert len(theirs) == 8 and ours == theirs  # exact floats, every (trial, test env): 2 trials x 4 envs


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", list(METHODS))
def test_tie_heavy_sweeps_exact(domainbed, tmp_path, method, seed):
    write_sweep(tmp_path, seed, n_envs=3 + seed % 3)
    theirs = domainbed_selected(domainbed, tmp_path, method)
    ours = ours_selected(tmp_path, method)
    assert ours.keys() == theirs.keys()
    bad = {k: (ours[k], theirs[k]) for k in theirs if ours[k] != theirs[k]}
    assert not bad, f"{len(bad)} of {len(theirs)} selections differ from DomainBed's: {list(bad.items())[:5]}"


def test_tie_breaking_is_exercised(tmp_path):
    """The sweeps above really hold ties: among checkpoints of a run and among hparams of a config."""
    write_sweep(tmp_path, 0)
    df = load(tmp_path, progress=False)
    single = df[~df["test_domains"].str.contains(",")]
    train_out = single[(single["role"] == "train") & (single["split"] == "out")]
    score = train_out.groupby(["job_id", "step"])["acc"].mean().round(12)
    assert score.groupby("job_id").apply(lambda s: (s == s.max()).sum() > 1).sum() >= 5  # tied checkpoints
    last = single[single["step"] == single["step"].max()]
    test_out = last[(last["role"] == "test") & (last["split"] == "out")]
    per_cfg = test_out.groupby(["algorithm", "test_domains", "trial_seed"])["acc"]
    assert (per_cfg.apply(lambda s: (s == s.max()).sum()) > 1).sum() >= 5  # tied hparams under the oracle


def test_float_rounding_decides_as_in_domainbed(domainbed, tmp_path):
    """mean(.1, .2, .3) and mean(.3, .2, .1) differ in the last bit; DomainBed's pick follows that rounding, and so
    does ours by default; ``tie_tol`` makes them a tie (then the earliest checkpoint wins)."""
    assert np.mean([0.1, 0.2, 0.3]) != np.mean([0.3, 0.2, 0.1])
    run = tmp_path / "r"
    run.mkdir()
    recs = []
    for step, outs, test_in in ((0, [0.3, 0.2, 0.1], 0.25), (1, [0.1, 0.2, 0.3], 0.75)):
        rec = {"args": {"algorithm": "ERM", "dataset": "VLCS", "test_envs": [3], "hparams_seed": 0, "trial_seed": 0},
               "step": step, "env3_in_acc": test_in, "env3_out_acc": 0.5}
        for i, o in enumerate(outs):
            rec[f"env{i}_in_acc"], rec[f"env{i}_out_acc"] = 0.5, o
        recs.append(json.dumps(rec))
    (run / "results.jsonl").write_text("\n".join(recs) + "\n")
    (run / "done").write_text("")
    theirs = domainbed_selected(domainbed, tmp_path, "training_domain")
    assert ours_selected(tmp_path, "training_domain") == theirs
    earliest = 0.25
    assert ours_selected(tmp_path, "training_domain", tie_tol=1e-12)[(0, "VLCS", "ERM", 3)] == earliest


def _cells(text: str) -> list[tuple[float, float | None]]:
    return [(float(m), float(e) if e else None) for m, e in re.findall(r"(\d+\.\d)(?: (?:\+/-|±) (\d+\.\d))?", text)]


def test_collect_prints_domainbeds_tables(domainbed, tmp_path):
    """``dganalysis collect --se-ddof 0`` prints DomainBed's numbers (means and ± values) on test_sweep_data and on a
    made sweep, compared with ``collect_results.print_results_tables`` and DomainBed's stored output."""
    import sys

    from tests.reference.conftest import import_with_stubs

    collect_results = import_with_stubs("domainbed.scripts.collect_results")
    assert sys.modules["domainbed.scripts.collect_results"] is collect_results
    ms = domainbed.model_selection
    sweep = tmp_path / "sweep"
    write_sweep(sweep, 1, algorithms=("ERM",))
    for path in (domainbed.root / "domainbed" / "misc" / "test_sweep_data", sweep):
        theirs = io.StringIO()
        with contextlib.redirect_stdout(theirs):
            records = domainbed.reporting.load_records(str(path))
            for m in (ms.IIDAccuracySelectionMethod, ms.LeaveOneOutSelectionMethod, ms.OracleSelectionMethod):
                collect_results.print_results_tables(records, m, False)
        parser = argparse.ArgumentParser()
        add_collect_arguments(parser)
        ours = io.StringIO()
        with contextlib.redirect_stdout(ours):
            assert main_collect(parser.parse_args([str(path), "--se-ddof", "0"])) == 0
        assert _cells(ours.getvalue()) == _cells(theirs.getvalue())
        assert len(_cells(theirs.getvalue())) >= 3 * 7
    stored = (domainbed.root / "domainbed" / "misc" / "test_sweep_results.txt").read_text()
    ours = io.StringIO()
    with contextlib.redirect_stdout(ours):
        main_collect(parser.parse_args([str(domainbed.root / "domainbed" / "misc" / "test_sweep_data"),
                                        "--se-ddof", "0"]))
    assert _cells(ours.getvalue()) == _cells(stored.split("Total records: 200", 1)[1])


def test_recorded_hparams_are_our_draws(domainbed):
    """The runs of test_sweep_data (real DomainBed runs, VLCS, ERM) recorded hparams that our resolve reproduces."""
    from dganalysis.algorithms import default_hparams

    path = domainbed.root / "domainbed" / "misc" / "test_sweep_data"
    n = 0
    for run in sorted(p for p in path.iterdir() if (p / "results.jsonl").is_file()):
        rec = json.loads((run / "results.jsonl").read_text().splitlines()[0])
        a = rec["args"]
        ours = default_hparams(a["algorithm"], a["hparams_seed"], trial_seed=a["trial_seed"], dataset=a["dataset"])
        shared = {k: v for k, v in rec["hparams"].items() if k in ours}
        assert shared == {k: ours[k] for k in shared}, run.name
        assert {"lr", "batch_size", "weight_decay", "resnet_dropout"} <= set(shared)
        n += 1
    assert n == 40


def _unfinished_copy(src: Path, dst: Path) -> int:
    """A copy of a DomainBed sweep in which every 5th run is unfinished: ``done`` deleted and its ``results.jsonl``
    cut to its first checkpoints (a run killed mid-training). Returns how many runs were made unfinished."""
    import shutil

    shutil.copytree(src, dst)
    runs = sorted(p for p in dst.iterdir() if (p / "results.jsonl").is_file())
    for k, run in enumerate(runs[::5]):
        (run / "done").unlink()
        lines = (run / "results.jsonl").read_text().splitlines()
        (run / "results.jsonl").write_text("\n".join(lines[: 1 + k % 3]) + "\n")
    return len(runs[::5])


def test_collect_reads_unfinished_domainbed_runs_as_domainbed(domainbed, tmp_path):
    """On a DomainBed sweep dir holding unfinished runs, ``dganalysis collect`` prints the numbers of DomainBed's
    ``collect_results`` by default and says in its footer how many runs were unfinished and included;
    ``--skip-unfinished`` leaves them out (and the numbers then differ)."""
    from tests.reference.conftest import import_with_stubs

    collect_results = import_with_stubs("domainbed.scripts.collect_results")
    ms = domainbed.model_selection
    sweeps = {"test_sweep_data": domainbed.root / "domainbed" / "misc" / "test_sweep_data",
              "made": tmp_path / "made"}
    write_sweep(sweeps["made"], 3, algorithms=("ERM",))
    parser = argparse.ArgumentParser()
    add_collect_arguments(parser)
    for name, src in sweeps.items():
        path = tmp_path / f"{name}_unfinished"
        n_unfinished = _unfinished_copy(src, path)
        assert n_unfinished >= 8
        theirs = io.StringIO()
        with contextlib.redirect_stdout(theirs):
            records = domainbed.reporting.load_records(str(path))
            for m in (ms.IIDAccuracySelectionMethod, ms.LeaveOneOutSelectionMethod, ms.OracleSelectionMethod):
                collect_results.print_results_tables(records, m, False)
        ours = io.StringIO()
        with contextlib.redirect_stdout(ours):
            assert main_collect(parser.parse_args([str(path), "--se-ddof", "0"])) == 0
        assert len(_cells(theirs.getvalue())) >= 3 * 5
        assert _cells(ours.getvalue()) == _cells(theirs.getvalue()), name
        n_runs = len([p for p in path.iterdir() if (p / "results.jsonl").is_file()])
        assert ours.getvalue().count(f"jobs: {n_runs} of {n_runs} job folders read ({n_unfinished} of them "
                                     "unfinished") == 3, ours.getvalue()
        assert ours.getvalue().count("; none left out") == 3
        skipped = io.StringIO()
        with contextlib.redirect_stdout(skipped):
            assert main_collect(parser.parse_args([str(path), "--se-ddof", "0", "--skip-unfinished"])) == 0
        assert (f"jobs: {n_runs - n_unfinished} of {n_runs} job folders read; not in the table: {n_unfinished} "
                "unfinished") in skipped.getvalue(), skipped.getvalue()
        assert _cells(skipped.getvalue()) != _cells(theirs.getvalue())


def test_our_store_keeps_skipping_unfinished(tmp_path):
    """The same unfinished run is skipped when its folder is in one of our stores (a job folder holds spec.json), and
    read when the folder is a DomainBed sweep dir; ``include_unfinished`` forces either rule."""
    for kind in ("ours", "domainbed"):
        write_sweep(tmp_path / kind, 0, n_envs=3, n_hparams=1, trials=(0,), algorithms=("ERM",))
    (tmp_path / "ours" / "ERM_0_h0_t0" / "done").unlink()
    (tmp_path / "domainbed" / "ERM_0_h0_t0" / "done").unlink()
    (tmp_path / "ours" / "ERM_1_h0_t0" / "spec.json").write_text("{}")
    assert store.is_our_store(store.find_jobs(tmp_path / "ours"))
    assert not store.is_our_store(store.find_jobs(tmp_path / "domainbed"))
    ours = load(tmp_path / "ours", progress=False)
    assert ours.attrs["jobs"]["unfinished"] == 1 and not ours.attrs["jobs"]["unfinished_read"]
    assert results.summary_line(ours) == "jobs: 5 of 6 job folders read; not in the table: 1 unfinished"
    theirs = load(tmp_path / "domainbed", progress=False)
    assert theirs.attrs["jobs"]["unfinished_read"] == 1 and not theirs.attrs["jobs"]["unfinished"]
    assert "jobs: 6 of 6 job folders read (1 of them unfinished" in results.summary_line(theirs)
    assert load(tmp_path / "ours", include_unfinished=True, progress=False).attrs["jobs"]["unfinished_read"] == 1
    assert load(tmp_path / "domainbed", include_unfinished=False, progress=False).attrs["jobs"]["unfinished"] == 1
