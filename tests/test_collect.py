"""`dganalysis collect` degrades gracefully: bad jobs are reported (file and line) and skipped unless --strict,
left-out jobs are counted under every table, exploded runs are flagged, unusable paths are one-line errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dganalysis.cli import main
from dganalysis.records import load
from dganalysis.records import read as results
from dganalysis.records.store import classify_job, job_folders


def _record(test_env: int, step: int, tseed: int, loss: float = 1.0, **over) -> dict:
    rec = {"args": {"dataset": "PACS", "algorithm": "ERM", "test_envs": [test_env], "hparams_seed": 0,
                    "trial_seed": tseed}, "hparams": {"lr": 1e-3}, "step": step, "loss": loss}
    for i in range(4):
        rec[f"env{i}_in_acc"] = 0.5 + 0.01 * i
        rec[f"env{i}_out_acc"] = 0.5 + 0.02 * i
    rec.update(over)
    return rec


def _job(root: Path, name: str, lines: list[str] | bytes, status: str | None = "done") -> Path:
    d = root / name
    d.mkdir(parents=True)
    data = lines if isinstance(lines, bytes) else "".join(x + "\n" for x in lines).encode()
    (d / "results.jsonl").write_bytes(data)
    if status:
        (d / status).write_text("")
    return d


@pytest.fixture
def store(tmp_path) -> Path:
    root = tmp_path / "store"
    for env in range(4):
        for t in range(2):
            _job(root, f"ok{env}{t}", [json.dumps(_record(env, s, t)) for s in (0, 1)])
    _job(root, "failed", [json.dumps(_record(0, 0, 5))], status="failed")
    _job(root, "running", [json.dumps(_record(0, 0, 6))], status=None)
    return root


BAD = {
    "string_acc": ([json.dumps(_record(0, 0, 7, env1_in_acc="0.7"))], r"string_acc/results\.jsonl:1: env1_in_acc = '0\.7'"),
    "bad_json": ([json.dumps(_record(0, 0, 7)), "{oops", json.dumps(_record(0, 1, 7))],
                 r"bad_json/results\.jsonl:2: unreadable JSON"),
    "utf8": (b'{"step": 0}\n\xff\xfe{"x": 1}\n', r"utf8/results\.jsonl:2: not valid UTF-8"),
    "seed_text": ([json.dumps(_record(0, 0, 7, args={**_record(0, 0, 7)["args"], "hparams_seed": "x"}))],
                  r"seed_text/results\.jsonl:1: .*'x'"),
    "no_args": (['{"step": 0, "env0_in_acc": 0.5}'], r"no_args/results\.jsonl:1: record has no 'args'"),
    "list_record": (["[1, 2]"], r"list_record/results\.jsonl:1: expected a JSON object"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_one_bad_job_is_reported_and_skipped(store, capsys, name):
    lines, pattern = BAD[name]
    _job(store, name, lines)
    assert main(["collect", str(store), "--selection", "oracle"]) == 0
    out, err = capsys.readouterr()
    assert "Model selection" in out and "ERM" in out
    assert "jobs: 8 of 11 job folders read; not in the table: 1 failed, 1 unfinished, 1 unreadable" in out
    import re

    assert re.search(pattern, err), err
    # --strict: the same problem is one error line naming file and line, exit status 2
    assert main(["collect", str(store), "--strict"]) == 2
    err = capsys.readouterr().err.strip()
    assert re.search(pattern, err) and err.startswith("dganalysis collect: error:") and "\n" not in err


def test_counts_under_every_table_in_every_format(store, capsys):
    for fmt, marker in (("text", ""), ("markdown", "*"), ("latex", "% ")):
        assert main(["collect", str(store), "--format", fmt]) == 0
        out = capsys.readouterr().out
        assert out.count(f"{marker}jobs: 8 of 10 job folders read; not in the table: 1 failed, 1 unfinished") == 3, out
    assert main(["collect", str(store), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert "jobs:" not in out and "1 failed, 1 unfinished" in err


def test_exploded_loss_is_flagged(store, capsys):
    _job(store, "boom", [json.dumps(_record(1, s, 9, loss=loss)) for s, loss in ((0, 1.4), (1, 3.0e4), (2, 2.0e5))])
    df = load(store, progress=False)
    assert df.attrs["exploded"] == ["boom"] and df.attrs["jobs"]["read"] == 9
    assert main(["collect", str(store), "--selection", "oracle"]) == 0
    assert "1 run(s) whose loss exploded" in capsys.readouterr().out and "boom" in results.summary_line(df)


def test_unusable_paths_are_one_line_errors(store, tmp_path, capsys):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    for argv, pattern in (
        (["collect", str(a_file)], "a file, not a folder"),
        (["collect", str(store), "-o", str(tmp_path)], "a folder; expected a file name"),
        (["collect", str(store), "-o", str(a_file / "t.txt")], "is a file, not a folder"),
        (["collect", str(tmp_path / "missing")], "does not exist"),
        (["sweep", "--dataset", "RotatedDigits", "--algorithms", "ERM", "--steps", "2", "--checkpoint-freq", "1",
          "--dataset-kwargs", '{"image_size": 8, "angles": [0, 30]}', "--store", str(a_file)], "must be a folder"),
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert pattern in err and "\n" not in err and "Traceback" not in err, err
    assert main(["collect", str(store), "-o", str(tmp_path / "tables.txt")]) == 0  # a new file is fine
    assert "Model selection" in (tmp_path / "tables.txt").read_text()


def test_notebook_index_counts_the_store(store):
    from dganalysis.studies.runner import write_index

    out = store.parent
    text = write_index(out, "quick", []).read_text()
    assert "Job store `store/`: 10 job folders: 8 done, 1 failed, 1 unfinished or running" in text
    _early_crash(store, "our_crash", {"spec.json": "{}", "failed": "Traceback"})
    _early_crash(store, "db_crash", {"err.txt": "Traceback"})
    text = write_index(out, "quick", []).read_text()
    assert ("Job store `store/`: 12 job folders: 8 done, 2 failed (1 before their first record), "
            "2 unfinished or running") in text


def _early_crash(root: Path, name: str, files: dict[str, str]) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for f, text in files.items():
        (d / f).write_text(text)
    return d


def test_jobs_without_records_are_counted_never_none_left_out(store, capsys):
    """A DomainBed run that crashed before its first checkpoint leaves out.txt/err.txt only; ours leave spec.json
    and failed. Both are job folders: counted in load's attrs, in the line under every table, in the index."""
    _early_crash(store, "db_crash", {"out.txt": "Environment:\n", "err.txt": "Traceback ...\nOSError: PACS\n"})
    _early_crash(store, "our_crash", {"spec.json": "{}", "failed": "Traceback ...\nFileNotFoundError: PACS\n"})
    df = load(store, progress=False)
    c = df.attrs["jobs"]
    assert (c["folders"], c["read"], c["failed"], c["failed_no_records"], c["no_records"], c["unfinished"]) == \
        (12, 8, 2, 1, 1, 1)
    assert c["folders"] == sum(c[k] for k in ("read", "failed", "no_records", "unfinished", "unreadable", "duplicate"))
    line = results.summary_line(df)
    assert "8 of 12 job folders read" in line and "2 failed (1 before their first record)" in line
    assert "1 without records" in line and "none left out" not in line
    assert main(["collect", str(store), "--selection", "oracle"]) == 0
    assert line in capsys.readouterr().out


def test_only_crashed_jobs_is_not_none_left_out(tmp_path, capsys):
    """The first-contact case: every job failed before its first record; collect must not say 'skipped 0'."""
    for i in range(4):
        _early_crash(tmp_path / "sweep", f"run{i}", {"out.txt": "", "err.txt": "FileNotFoundError"})
    assert [p.name for p in job_folders(tmp_path / "sweep")] == [f"run{i}" for i in range(4)]
    assert classify_job(tmp_path / "sweep" / "run0") == ("unfinished", False)
    assert main(["collect", str(tmp_path / "sweep")]) == 1
    err = capsys.readouterr().err
    assert "0 of 4 job folders read" in err and "4 without records" in err and "none left out" not in err
    # a single job folder given directly is itself the one job
    assert job_folders(tmp_path / "sweep" / "run1") == [tmp_path / "sweep" / "run1"]


def test_none_left_out_only_when_true(tmp_path):
    for env in range(2):
        _job(tmp_path, f"ok{env}", [json.dumps(_record(env, 0, 0))])
    df = load(tmp_path, progress=False)
    assert results.summary_line(df) == "jobs: 2 of 2 job folders read; none left out"


def test_latex_says_it_needs_booktabs(store, tmp_path, capsys):
    import pandas as pd

    from dganalysis.plots import save_table

    assert main(["collect", str(store), "--format", "latex", "--selection", "oracle"]) == 0
    out = capsys.readouterr().out
    assert "\\toprule" in out and "% needs \\usepackage{booktabs}" in out
    tex = save_table(pd.DataFrame({"a": [1.0]}), "t", tmp_path)[1].read_text()
    assert "\\toprule" in tex and tex.startswith("% needs \\usepackage{booktabs}")
    from dganalysis.cli import build_parser

    assert "usepackage{booktabs}" in build_parser()._subparsers._group_actions[0].choices["collect"].format_help()


def test_a_job_whose_records_cannot_be_read_is_counted_unreadable(store, monkeypatch):
    bad = _job(store, "noperm", [json.dumps(_record(0, 0, 9))])
    real = Path.read_bytes

    def read_bytes(self):  # no read permission (root ignores chmod, so the refusal is simulated)
        if self == bad / "results.jsonl":
            raise PermissionError(13, "Permission denied")
        return real(self)

    real_open = os.open

    def os_open(path, *args, **kwargs):  # the index's reader opens the file itself
        if os.fspath(path) == str(bad / "results.jsonl"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    monkeypatch.setattr(os, "open", os_open)
    df = load(store, progress=False, strict=False)
    assert df.attrs["jobs"]["unreadable"] == 1 and "cannot be read (Permission denied)" in df.attrs["problems"][0]
    assert "1 unreadable" in results.summary_line(df)
    with pytest.raises(ValueError, match="noperm/results.jsonl: cannot be read"):
        load(store, progress=False)


def test_output_equals_the_frames_tables_and_is_kept_for_an_unchanged_sweep(store, capsys, monkeypatch):
    """collect reads through the index and the array selections: its tables are selection_table's on
    records.load's frame; the same command on the unchanged store prints the kept output without reading or
    selecting; a changed job folder, or other options, make it read again."""
    from dganalysis import tables
    from dganalysis.records import indexed

    old = 1_000_000_000 * 1_700_000_000  # folders changed seconds ago are listed again by the next scan: date them back
    for d in [store, *store.rglob("*")]:
        if d.is_dir():
            os.utime(d, ns=(old, old))
    assert main(["collect", str(store)]) == 0
    first = capsys.readouterr()
    df = load(store, progress=False)
    for method in ("training_domain", "leave_one_out", "oracle"):
        assert tables.selection_table(df, method) in first.out
    assert results.summary_line(df) in first.out
    monkeypatch.setattr(indexed, "select_for_tables", lambda *a, **k: pytest.fail("the kept output is printed"))
    assert main(["collect", str(store)]) == 0
    again = capsys.readouterr()
    assert again.out == first.out and again.err.startswith("collect: the sweep(s), options and code are unchanged")
    assert again.err.endswith(first.err)
    with pytest.raises(pytest.fail.Exception, match="kept output"):  # asked to read again
        main(["collect", str(store), "--fresh"])
    with pytest.raises(pytest.fail.Exception, match="kept output"):  # other options: another output
        main(["collect", str(store), "--se-ddof", "0"])
    with pytest.raises(pytest.fail.Exception, match="kept output"):  # a job folder changed
        _job(store, "newer", [json.dumps(_record(1, s, 9)) for s in (0, 1)])
        main(["collect", str(store)])
    monkeypatch.undo()
    assert main(["collect", str(store), "--format", "csv", "-o", str(store.parent / "t.csv")]) == 0
    out = capsys.readouterr()
    assert out.out == (store.parent / "t.csv").read_text() and "jobs: 9 of 11" in out.err
