"""Users' own algorithms and datasets (:mod:`dganalysis.plugins`), with the module of ``docs/extending.md``.

The page's Python block is written into a folder outside the package and imported by name (``--import mylab_dg``)
or by path (``$DGANALYSIS_IMPORT=/…/mylab_dg.py``); its algorithm ``ERMLogitPenalty`` (ERM plus a new hyperparameter
``logit_penalty``) and dataset ``Stripes`` then go through the drop-in ``train``, the drop-in sweep (its ``dummy``
launcher, then one of its commands in a fresh process that only the exported variable tells about the module) and
``dganalysis sweep`` with two spawned workers. An ``--hparams`` key the algorithm does not declare is one line naming
the algorithm and its keys. The registrations are removed again at the end (the registries are process-wide).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dganalysis import cli, plugins
from dganalysis.scripts import sweep as drop_in_sweep
from dganalysis.scripts import train as drop_in_train

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"
MODULE = "mylab_dg"


@pytest.fixture(scope="module")
def user_module(tmp_path_factory):
    """The docs' module file, importable as ``mylab_dg`` while this module's tests run; unregistered after."""
    from dganalysis.algorithms.registry import ALGORITHMS
    from dganalysis.data.registry import DATASETS

    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks, f"{DOC}: no python block"
    folder = tmp_path_factory.mktemp("userlab")
    path = folder / f"{MODULE}.py"
    path.write_text(blocks[0], encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        yield path
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(MODULE, None)
        for registry, name in ((ALGORITHMS, "ERMLogitPenalty"), (DATASETS, "Stripes")):
            registry._items.pop(name, None)
            registry._tags.pop(name, None)


TRAIN = ["--dataset", "Stripes", "--algorithm", "ERMLogitPenalty", "--test_envs", "2", "--steps", "2",
         "--checkpoint_freq", "1", "--threads", "1", "--device", "cpu", "--skip_model_save"]


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def test_drop_in_train_takes_the_users_names_and_hparam(user_module, tmp_path, monkeypatch):
    monkeypatch.delenv(plugins.IMPORT_ENV, raising=False)
    out = tmp_path / "run"
    hp = '{"logit_penalty": 0.5, "batch_size": 8}'
    assert drop_in_train.main(["--import", MODULE, *TRAIN, "--hparams", hp, "--output_dir", str(out)]) == 0
    recs = _records(out)
    assert [r["step"] for r in recs] == [0, 1] and recs[0]["hparams"]["logit_penalty"] == 0.5
    assert recs[0]["domains"] == ["clean", "noisy", "noisier"] and recs[0]["test_domains"] == ["noisier"]
    assert "nll" in recs[0] and recs[0]["args"]["algorithm"] == "ERMLogitPenalty"


def test_an_undeclared_hparam_is_one_line_naming_the_algorithm(user_module, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(plugins.IMPORT_ENV, raising=False)
    base = ["--import", MODULE, "--dataset", "Debug28", "--output_dir", str(tmp_path / "o")]
    for argv in ([*base, "--algorithm", "ERM", "--hparams", '{"logit_penalty": 1}'],
                 [*base, "--algorithm", "ERM", "--hparams", '{"my_new_lambda": 1}'],
                 [*base, "--algorithm", "ERMLogitPenalty", "--hparams", '{"my_new_lambda": 1}']):
        for main, args in ((drop_in_train.main, argv), (cli.main, ["train", *argv])):
            status, err = main(args), capsys.readouterr().err
            assert status == 2 and len(err.strip().splitlines()) == 1, err
            name = argv[argv.index("--algorithm") + 1]
            assert f"algorithm {name!r} has no hyperparameter" in err and "batch_size, " in err
            assert ("logit_penalty" in err.split("its keys:")[1]) == (name == "ERMLogitPenalty")
    assert not (tmp_path / "o").exists()
    assert cli.main(["train", "--algorithm", "NoSuchAlgorithm", "--output_dir", str(tmp_path / "o")]) == 2
    assert "--import MODULE" in capsys.readouterr().err


def test_unknown_module_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(plugins.IMPORT_ENV, "no_such_lab_module")
    assert drop_in_train.main(["--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "no module named 'no_such_lab_module'" in err and plugins.IMPORT_ENV in err and len(err.splitlines()) == 1


@pytest.mark.slow  # one train in a fresh process: ~10 s on a busy 2-core machine
def test_drop_in_sweep_commands_import_the_module(user_module, tmp_path, capsys, monkeypatch):
    """The dummy launcher lists the runs of the user's dataset and algorithm; one of its commands, run in a fresh
    process that finds the module only through the exported ``$DGANALYSIS_IMPORT``, trains."""
    monkeypatch.delenv(plugins.IMPORT_ENV, raising=False)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # dganalysis, not the user's folder
    out = tmp_path / "sweep"
    argv = ["launch", "--import", str(user_module), "--datasets", "Stripes", "--algorithms", "ERMLogitPenalty",
            "--n_hparams", "1", "--n_trials", "1", "--single_test_envs", "--steps", "2",
            "--hparams", '{"batch_size": 8, "logit_penalty": 0.25}', "--data_dir", str(tmp_path / "data"),
            "--output_dir", str(out), "--command_launcher", "dummy", "--skip_confirmation"]
    assert drop_in_sweep.main(argv) == 0
    commands = [x.removeprefix("Dummy launcher: ") for x in capsys.readouterr().out.splitlines()
                if x.startswith("Dummy launcher:")]
    assert len(commands) == 3 and all("--algorithm ERMLogitPenalty" in c for c in commands)
    assert os.environ[plugins.IMPORT_ENV] == str(user_module.resolve())
    proc = subprocess.run(commands[0] + " --threads 1 --device cpu", shell=True, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = next(p for p in out.iterdir() if (p / "done").exists())
    assert _records(run)[-1]["hparams"]["logit_penalty"] == 0.25
    capsys.readouterr()
    bad = list(argv)
    bad[bad.index("--algorithms") + 1] = "ERM"
    bad[bad.index("--output_dir") + 1] = str(tmp_path / "s2")
    assert drop_in_sweep.main(bad) == 2
    assert "algorithm 'ERM' has no hyperparameter 'logit_penalty'" in capsys.readouterr().err


@pytest.mark.slow  # two spawned workers: ~20 s on a busy 2-core machine
def test_dganalysis_sweep_workers_import_the_module(user_module, tmp_path, capsys, monkeypatch):
    """``$DGANALYSIS_IMPORT`` (a file path) reaches the spawned workers of ``dganalysis sweep --workers 2``."""
    monkeypatch.setenv(plugins.IMPORT_ENV, str(user_module))
    split = json.dumps([{"train": ["clean", "noisy"], "test": ["noisier"]}])
    status = cli.main(["sweep", "--dataset", "Stripes", "--algorithms", "ERMLogitPenalty", "--splits", split,
                       "--n-hparams", "2", "--steps", "2", "--checkpoint-freq", "1", "--hparams",
                       '{"batch_size": 8}', "--store", str(tmp_path / "store"), "--workers", "2", "--device", "cpu",
                       "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "jobs: 2 done" in out
    draws = {_records(p)[0]["hparams"]["logit_penalty"] for p in (tmp_path / "store").iterdir() if p.is_dir()}
    assert 0.1 in draws and len(draws) == 2  # seed 0: the declared default; seed 1: a draw from 10**U(-3, 0)
