"""Sweep progress reaches the terminal of `dganalysis run`: run_sweep writes jobs done to the file the runner
names, a watcher thread draws them with an ETA under papermill's counter, and the index records jobs and minutes."""

from __future__ import annotations

import io as _io
import json
import time

from dganalysis.progress import (
    PROGRESS_FILE_ENV,
    ProgressWatcher,
    SweepProgress,
    eta_seconds,
    read_progress,
    sweep_line,
    sweep_totals,
)
from dganalysis.studies.run_history import NotebookRun, read_history, record_run
from dganalysis.studies.runner import run_notebooks, sweep_progress, write_index
from dganalysis.sweep import Sweep
from dganalysis.sweep.grid import make_jobs
from dganalysis.sweep.launcher import run_sweep
from tests.studies.test_runner import _project  # the one-notebook project the runner tests use


def test_run_sweep_reports_to_the_progress_file(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv(PROGRESS_FILE_ENV, str(path))
    jobs = make_jobs(Sweep(dataset="RotatedDigits", dataset_kwargs={"image_size": 8, "angles": [0, 30]},
                           algorithms=["ERM"], splits="leave_one_out", n_hparams=1, n_trials=1, steps=2,
                           checkpoint_freq=1))
    run_sweep(jobs, tmp_path / "store", progress=False)
    run_sweep(jobs, tmp_path / "store", progress=False)  # all done: a second entry with 0 to train, 2 skipped
    first, second = read_progress(path)["sweeps"]
    assert (first["total"], first["done"], first["failed"], first["finished"]) == (2, 2, 0, True)
    assert (second["total"], second["done"], second["skipped"]) == (0, 0, 2)
    s = sweep_totals(path)
    assert (s["sweeps"], s["trained"], s["skipped"]) == (2, 2, 2) and s["minutes"] >= 0


def test_eta_and_description():
    entry = {"total": 10, "done": 4, "failed": 1, "skipped": 2, "started": 100.0, "updated": 180.0}
    assert eta_seconds(entry, now=180.0) == 120.0  # 20 s per job, 6 left
    assert sweep_line(entry, 2, now=180.0) == "sweep 2: 4/10 jobs (1 failed), 2 already done, ETA 02:00"
    assert eta_seconds({**entry, "done": 0}) is None


def test_watcher_draws_the_current_sweep(tmp_path):
    path = tmp_path / "p.json"
    out = _io.StringIO()
    with ProgressWatcher(path, "05_demo", interval=0.05, file=out) as w:
        p = SweepProgress(path, 3)
        for _ in range(3):
            time.sleep(0.15)
            p.tick()
        p.close()
        time.sleep(0.15)
    assert any(line.startswith("sweep 1: 1/3 jobs, ETA") for line in w.lines), w.lines
    assert w.lines[-1] == "sweep 1: 3/3 jobs, finished"
    assert "05_demo sweep 1" in out.getvalue()


def test_sweep_progress_sets_and_restores_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(PROGRESS_FILE_ENV, raising=False)
    import os

    with sweep_progress(tmp_path / ".progress" / "x.json", "x", show=False):
        assert os.environ[PROGRESS_FILE_ENV] == str(tmp_path / ".progress" / "x.json")
    assert PROGRESS_FILE_ENV not in os.environ


def test_index_records_jobs_and_minutes(tmp_path):
    run = NotebookRun("05_demo", tmp_path / "n.ipynb", True, 600.0,
                      jobs={"sweeps": 2, "trained": 12, "failed": 1, "skipped": 3, "minutes": 9.5})
    runs = record_run(tmp_path, run)
    assert read_history(tmp_path)[0].jobs == run.jobs
    text = write_index(tmp_path, "quick", runs).read_text()
    assert "| 10.0 | 12 trained (1 failed), 3 already done; 9.5 min in 2 sweeps |" in text


def test_run_shows_a_notebooks_sweep_under_papermill(tmp_path, capfd):
    """A notebook whose cell reports 3 jobs (no training: the plumbing only) through the kernel's environment."""
    body = ("import time\nfrom dganalysis.progress import SweepProgress, progress_file\n"
            "p = SweepProgress(progress_file(), 3, skipped=1)\n"
            "for _ in range(3):\n    time.sleep(1.2)\n    p.tick()\np.close()\n")
    root = _project(tmp_path, body)
    (root / "params" / "quick" / "00_demo.yaml").write_text("value: 1\n")
    runs = run_notebooks("quick", root=root, progress=True)
    assert runs[0].ok, runs[0].error
    assert (runs[0].jobs["trained"], runs[0].jobs["skipped"]) == (3, 1)
    err = capfd.readouterr().err
    assert "00_demo sweep 1" in err and "jobs" in err
    index = (root / "outputs" / "quick" / "index.md").read_text()
    assert "3 trained, 1 already done" in index
    assert json.loads((root / "outputs" / "quick" / "runs.json").read_text())["00_demo"]["jobs"]["trained"] == 3


def test_progress_file_is_optional(tmp_path, monkeypatch):
    monkeypatch.delenv(PROGRESS_FILE_ENV, raising=False)
    p = SweepProgress(None, 2)
    p.tick()
    p.close()  # writes nothing, raises nothing
    assert not list(tmp_path.iterdir())


def test_drawn_line_shows_jobs_and_eta_with_no_empty_field(tmp_path):
    """What the terminal shows, not only ``sweep_line``: the sweep's jobs done/total and a clock-time ETA, and none of
    tqdm's separators around an empty field (``[, ETA 02:13]`` or ``[]``)."""
    import re

    path = tmp_path / "p.json"
    out = _io.StringIO()
    p = SweepProgress(path, 12)
    w = ProgressWatcher(path, "03_demo", file=out)
    w.poll()
    p.entry["started"] -= 30.0  # the first job took 30 s: 11 left, ETA 05:30
    p.tick()
    w.poll()
    drawn = [s for s in re.split(r"[\r\n]", out.getvalue()) if s.strip()]
    assert drawn, out.getvalue()
    last = drawn[-1]
    assert re.search(r"03_demo sweep 1: 1/12 jobs, ETA 05:3\d\s+8%\|", last), last
    assert "[," not in out.getvalue() and "[]" not in out.getvalue(), out.getvalue()
    p.close()
    w.poll()
    assert "sweep 1: 1/12 jobs, finished" in out.getvalue()
