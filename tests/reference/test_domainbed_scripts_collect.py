"""``dganalysis.scripts.collect_results`` / ``list_top_hparams`` against DomainBed's unmodified scripts, byte for byte.

DomainBed's ``collect_results`` and ``list_top_hparams`` run as ``python -m`` would run them (``runpy``, in one
subprocess for every case, with the optional imports stubbed as ``conftest.py`` does), ours in this process, on:
DomainBed's own ``misc/test_sweep_data`` (real VLCS runs), a copy of it with every 5th run unfinished (no ``done``,
records cut), and a sweep written here over two datasets and three algorithms (one not DomainBed's) whose
accuracies have small denominators (many ties). Stdout must be equal, except our last line (the pointer to the
audit), and so must the ``results.txt`` / ``results.tex`` each writes into ``--input_dir``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dganalysis.scripts import collect_results, list_top_hparams
from tests.reference._harness import SCRIPT_PRELUDE
from tests.reference.test_domainbed_selection import _unfinished_copy, write_sweep

ROOT = Path(__file__).resolve().parents[2]

RUNNER = SCRIPT_PRELUDE + textwrap.dedent('''
    import io, json
    real = sys.stdout
    for module, argv, out in json.loads(sys.argv[1]):
        buf = io.StringIO()
        sys.stdout = buf  # collect_results wraps it in its Tee
        sys.argv = [module] + argv
        runpy.run_module(module, run_name="__main__")
        sys.stdout = real
        open(out, "w").write(buf.getvalue())
''')


def run_domainbed(domainbed, jobs: list[tuple[str, list[str], Path]], tmp: Path) -> None:
    """Run DomainBed's scripts: each job (module, argv, file for its stdout)."""
    runner = tmp / "runner.py"
    runner.write_text(RUNNER)
    env = {**os.environ, "PYTHONPATH": f"{domainbed.root}{os.pathsep}{ROOT}", "CUDA_VISIBLE_DEVICES": ""}
    spec = json.dumps([(m, a, str(o)) for m, a, o in jobs])
    proc = subprocess.run([sys.executable, str(runner), spec], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


def ours(capsys, main, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 0
    out = capsys.readouterr().out
    body, pointer = out.rsplit("\n", 2)[0] + "\n", out.rsplit("\n", 2)[1]
    assert pointer.endswith(f"dganalysis audit {argv[1]}"), pointer
    return body


def made_sweep(root: Path) -> Path:
    """Two datasets (VLCS, PACS), three algorithms (ERM, CORAL and one DomainBed does not have), 2 trials; one
    cell without runs."""
    for i, ds in enumerate(("VLCS", "PACS")):
        part = root.parent / f"part_{ds}"
        write_sweep(part, 10 + i, n_envs=4, n_hparams=3, trials=(0, 1), steps=(0, 50, 100),
                    algorithms=("CORAL", "MyAlg", "ERM"), dataset=ds)
        for run in part.iterdir():
            shutil.move(run, root / f"{ds}_{run.name}")
    for run in root.glob("PACS_MyAlg_3_h*"):  # no run of MyAlg on PACS tests env 3 alone: an "X" cell
        shutil.rmtree(run)
    return root


@pytest.fixture(scope="module")
def sweeps(domainbed, tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("scripts_collect")
    test_sweep_data = domainbed.root / "domainbed" / "misc" / "test_sweep_data"
    made = made_sweep(tmp / "made")
    out = {"test_sweep_data": tmp / "test_sweep_data", "made": made}
    shutil.copytree(test_sweep_data, out["test_sweep_data"])
    out["unfinished"] = tmp / "unfinished"
    assert _unfinished_copy(test_sweep_data, out["unfinished"]) == 8
    out["made_unfinished"] = tmp / "made_unfinished"
    assert _unfinished_copy(made, out["made_unfinished"]) >= 10
    return out


CASES = [(name, latex) for name in ("test_sweep_data", "unfinished", "made", "made_unfinished")
         for latex in (False, True)]
TOP = [("test_sweep_data", "VLCS", "ERM", 0), ("unfinished", "VLCS", "ERM", 2), ("made", "PACS", "CORAL", 1),
       ("made_unfinished", "VLCS", "MyAlg", 3), ("made", "VLCS", "ERM", 7)]


@pytest.fixture(scope="module")
def theirs(domainbed, sweeps, tmp_path_factory) -> dict[tuple, tuple[str, str]]:
    """DomainBed's stdout (and the results file it wrote) for every case, from one subprocess."""
    tmp = tmp_path_factory.mktemp("theirs")
    jobs, files = [], {}
    for name, latex in CASES:
        target = tmp / f"{name}_{latex}"
        shutil.copytree(sweeps[name], target)  # DomainBed writes results.txt into the sweep dir
        files[(name, latex)] = (target, tmp / f"collect_{name}_{latex}.out")
        jobs.append(("domainbed.scripts.collect_results", ["--input_dir", str(target)] + ["--latex"] * latex,
                     files[(name, latex)][1]))
    for case in TOP:
        name, ds, alg, env = case
        files[case] = (sweeps[name], tmp / f"top_{'_'.join(map(str, case))}.out")
        jobs.append(("domainbed.scripts.list_top_hparams", ["--input_dir", str(sweeps[name]), "--dataset", ds,
                                                             "--algorithm", alg, "--test_env", str(env)],
                     files[case][1]))
    run_domainbed(domainbed, jobs, tmp)
    got = {}
    for case, (target, out) in files.items():
        written = target / ("results.tex" if case[1] is True else "results.txt")
        got[case] = (out.read_text(), written.read_text() if len(case) == 2 else "")
    return got


@pytest.mark.parametrize("name,latex", CASES)
def test_collect_results_byte_for_byte(sweeps, theirs, capsys, tmp_path, name, latex):
    target = tmp_path / name
    shutil.copytree(sweeps[name], target)
    mine = ours(capsys, collect_results.main, ["--input_dir", str(target)] + ["--latex"] * latex)
    stdout, written = theirs[(name, latex)]
    assert stdout.count("+/-" if not latex else "$\\pm$") >= 3 * 5  # real tables, not an empty listing
    assert mine == stdout
    assert (target / ("results.tex" if latex else "results.txt")).read_text() == written == stdout


def test_made_sweep_exercises_the_layout(theirs):
    """The made sweep has what the layout must get right: a missing cell ("X"), two datasets, an algorithm outside
    DomainBed's list (last row), DomainBed's row order (ERM before CORAL)."""
    text = theirs[("made", False)][0]
    assert "Dataset: PACS" in text and "Dataset: VLCS" in text
    rows = [line.split()[0] for line in text.splitlines() if line.split() and line.split()[0] in ("ERM", "CORAL",
                                                                                                  "MyAlg")]
    assert rows[:3] == ["ERM", "CORAL", "MyAlg"]
    assert " X " in text


@pytest.mark.parametrize("case", TOP, ids=["_".join(map(str, c)) for c in TOP])
def test_list_top_hparams_byte_for_byte(sweeps, theirs, capsys, case):
    name, ds, alg, env = case
    mine = ours(capsys, list_top_hparams.main, ["--input_dir", str(sweeps[name]), "--dataset", ds, "--algorithm",
                                                  alg, "--test_env", str(env)])
    assert mine == theirs[case][0]
    if env < 4:
        assert mine.count("output_dirs:") >= 3 * 2  # every method lists draws


def test_auto_lr_is_refused_by_name(sweeps, capsys):
    assert collect_results.main(["--input_dir", str(sweeps["made"]), "--auto_lr"]) == 2
    assert "--auto_lr is not supported" in capsys.readouterr().err
