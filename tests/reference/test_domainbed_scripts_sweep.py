"""``dganalysis.scripts.sweep`` against DomainBed's unmodified ``scripts/sweep.py``: the same job list.

DomainBed's ``make_args_list`` and ``Job`` (imported from ``$DOMAINBED_SRC``) and ours, on the same command lines:
equal argument dicts in the same order, equal output folders (the MD5 of the dict), equal commands once
``domainbed`` reads ``dganalysis``. Then both CLIs, run with the ``dummy`` launcher (DomainBed's through ``runpy`` in
a subprocess): the same printed job list and counts, the same commands (DomainBed shuffles them unseeded, so they
are compared as sets), and the same ``delete_incomplete`` on a sweep folder with done, incomplete and unlaunched runs.
Last, a real three-run sweep with the ``local`` launcher (our ``train`` in subprocesses) read by ``collect_results``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from dganalysis.scripts import collect_results
from dganalysis.scripts import sweep as drop_in
from tests.reference.conftest import import_with_stubs
from tests.reference.test_domainbed_scripts_collect import run_domainbed
from tests.reference.test_domainbed_train_e2e import data_root  # noqa: F401

CASES = [
    dict(n_trials=1, dataset_names=list(drop_in.DEFAULT_DATASETS), algorithms=["ERM", "CORAL"], n_hparams_from=0,
         n_hparams=2, steps=None, data_dir="/data", task="domain_generalization", holdout_fraction=0.2,
         single_test_envs=False, hparams=None),
    dict(n_trials=3, dataset_names=["VLCS", "RotatedMNIST"], algorithms=["IRM", "Fish", "URM"], n_hparams_from=3,
         n_hparams=7, steps=1234, data_dir="/scratch/my data", task="domain_generalization", holdout_fraction=0.3,
         single_test_envs=True, hparams='{"lr": 0.001, "batch_size": 8}'),
    dict(n_trials=2, dataset_names=["ColoredMNIST", "Debug28", "SpawriousM2M_hard"], algorithms=["ERM"],
         n_hparams_from=0, n_hparams=3, steps=0, data_dir="", task="domain_adaptation", holdout_fraction=0.1,
         single_test_envs=False, hparams="{}"),
]


@pytest.fixture(scope="module")
def db_sweep(domainbed):
    return import_with_stubs("domainbed.scripts.sweep")


@pytest.mark.parametrize("case", range(len(CASES)))
def test_job_list_equals_domainbeds(db_sweep, case):
    kw = CASES[case]
    theirs = db_sweep.make_args_list(**kw)
    ours = drop_in.make_args_list(**kw)
    assert len(theirs) > 10 and ours == theirs  # same dicts, same order, same seeds
    for t, o in zip(theirs, ours):
        tj, oj = db_sweep.Job(t, "/sweep/out"), drop_in.Job(o, "/sweep/out")
        assert oj.output_dir == tj.output_dir and oj.train_args == tj.train_args
        assert oj.command_str == tj.command_str.replace("domainbed.scripts.train", "dganalysis.scripts.train")
        assert str(oj) == str(tj)


def test_defaults_are_domainbeds(db_sweep, domainbed):
    """The flag defaults (datasets, algorithms, n_hparams, n_trials, ...) are DomainBed's."""
    import ast

    assert drop_in.DEFAULT_DATASETS == db_sweep.DATASETS
    assert list(drop_in.build_parser().get_default("algorithms")) == domainbed.algorithms.ALGORITHMS
    src = (domainbed.root / "domainbed" / "scripts" / "sweep.py").read_text()
    flags = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            kw = {k.arg: k.value for k in node.keywords}
            name = node.args[0].value.lstrip("-")
            if "default" in kw and isinstance(kw["default"], ast.Constant):
                flags[name] = kw["default"].value
            elif "action" in kw:
                flags[name] = False
    parsed = vars(drop_in.build_parser().parse_args(["launch", "--output_dir", "o", "--data_dir", "d",
                                                      "--command_launcher", "dummy"]))
    assert len(flags) >= 9 and {k: parsed[k] for k in flags} == flags


def _cli_lines(text: str) -> tuple[list[str], set[str]]:
    lines = text.replace("domainbed.scripts.train", "dganalysis.scripts.train").splitlines()
    return [x for x in lines if not x.startswith("Dummy launcher:")], {x for x in lines if x.startswith("Dummy")}


def test_cli_dummy_launch_and_delete_incomplete_as_domainbeds(domainbed, tmp_path, capsys):
    flags = ["--datasets", "VLCS", "ColoredMNIST", "--algorithms", "ERM", "SagNet", "--n_hparams", "2",
             "--n_trials", "2", "--data_dir", "/data", "--steps", "100", "--command_launcher", "dummy",
             "--skip_confirmation"]
    for who in ("theirs", "ours"):  # a sweep folder with every state: done, incomplete, not launched
        out = tmp_path / who / "sweep"
        jobs = drop_in.domainbed_jobs(drop_in.build_parser().parse_args(["launch", "--output_dir", str(out), *flags]))
        for k, job in enumerate(jobs[:9]):
            os.makedirs(job.output_dir)
            if k % 3 == 0:
                Path(job.output_dir, "done").write_text("done")
    jobs = []
    for cmd in ("launch", "delete_incomplete"):
        jobs.append(("domainbed.scripts.sweep", [cmd, "--output_dir", str(tmp_path / "theirs" / "sweep"), *flags],
                     tmp_path / f"theirs_{cmd}.out"))
    run_domainbed(domainbed, jobs, tmp_path)
    n_runs = 2 * 2 * 2 * (10 + 6)  # trials x algorithms x hparams x test-env sets (VLCS 4 + 6 pairs, CMNIST 3 + 3)
    for cmd in ("launch", "delete_incomplete"):
        capsys.readouterr()
        assert drop_in.main([cmd, "--output_dir", str(tmp_path / "ours" / "sweep"), *flags]) == 0
        ours = capsys.readouterr().out.replace(str(tmp_path / "ours"), "<tmp>")
        theirs = (tmp_path / f"theirs_{cmd}.out").read_text().replace(str(tmp_path / "theirs"), "<tmp>")
        assert _cli_lines(ours) == _cli_lines(theirs)
        assert len(_cli_lines(ours)[0]) > n_runs
        if cmd == "launch":
            assert len(_cli_lines(ours)[1]) == n_runs - 9
        else:
            assert f"Deleted {n_runs - 3} jobs!" in ours  # the launch made every folder; 3 were done
    assert sorted(p.name for p in (tmp_path / "ours" / "sweep").iterdir()) == \
        sorted(p.name for p in (tmp_path / "theirs" / "sweep").iterdir())


def test_refusals_name_the_flag(tmp_path, capsys):
    base = ["launch", "--output_dir", str(tmp_path), "--data_dir", "d", "--skip_confirmation"]
    assert drop_in.main([*base, "--command_launcher", "nope"]) == 2
    assert "--command_launcher nope" in capsys.readouterr().err
    assert drop_in.main([*base, "--command_launcher", "dummy", "--task", "domain_adaptation"]) == 2
    assert "--task domain_adaptation" in capsys.readouterr().err
    assert drop_in.main([*base, "--command_launcher", "dummy", "--datasets", "MNISTT"]) == 2
    assert "--datasets MNISTT" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_local_launch_then_collect(data_root, tmp_path, monkeypatch, capsys):  # noqa: F811
    """``launch --command_launcher local`` trains each run with our ``train`` (DomainBed's ``python -m`` command
    line, ``domainbed`` → ``dganalysis``) into DomainBed's folders; ``collect_results`` reads them."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("DGANALYSIS_THREADS", "1")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    out = tmp_path / "sweep"
    argv = ["launch", "--datasets", "ColoredMNIST", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
            "--single_test_envs", "--steps", "3", "--hparams", '{"batch_size": 8}', "--data_dir", str(data_root),
            "--output_dir", str(out), "--command_launcher", "local", "--skip_confirmation"]
    assert drop_in.main(argv) == 0
    jobs = drop_in.domainbed_jobs(drop_in.build_parser().parse_args(argv))
    assert len(jobs) == 3 and all(j.state == drop_in.Job.DONE for j in jobs)
    for j in jobs:
        assert {"out.txt", "err.txt", "results.jsonl", "done", "model.pkl"} <= {p.name for p in Path(j.output_dir).iterdir()}
    capsys.readouterr()
    assert collect_results.main(["--input_dir", str(out)]) == 0
    text = capsys.readouterr().out
    training_domain = text.split("leave-one-domain-out")[0]  # (leave-one-out needs the pair runs: "X" there)
    assert "Total records: 6" in text and text.count("ERM  ") == 6 and " X " not in training_domain
    shutil.rmtree(out)
