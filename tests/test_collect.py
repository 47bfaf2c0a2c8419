"""`dganalysis collect` degrades gracefully: bad jobs are reported (file and line) and skipped unless --strict,
left-out jobs are counted under every table, exploded runs are flagged, unusable paths are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dganalysis import results
from dganalysis.cli import main


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
    assert "jobs: 8 read; not in the table: 1 failed, 1 unfinished, 1 unreadable" in out
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
        assert out.count(f"{marker}jobs: 8 read; not in the table: 1 failed, 1 unfinished") == 3, out
    assert main(["collect", str(store), "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert "jobs:" not in out and "1 failed, 1 unfinished" in err


def test_exploded_loss_is_flagged(store, capsys):
    _job(store, "boom", [json.dumps(_record(1, s, 9, loss=loss)) for s, loss in ((0, 1.4), (1, 3.0e4), (2, 2.0e5))])
    df = results.load(store, progress=False)
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
    from dganalysis.runner import write_index

    out = store.parent
    text = write_index(out, "quick", []).read_text()
    assert "Job store `store/`: 8 done, 1 failed, 1 unfinished or running" in text
