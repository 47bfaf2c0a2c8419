"""The columnar sweep index: load_indexed equals the standard-library reader (oracle.load, the test oracle
tests/records/_read_oracle.py), updates incrementally, survives concurrent writers and corrupt files."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import re
from pathlib import Path

import msgspec
import pandas as pd
import pytest

from dganalysis.records import gc_pause, index, index_file, indexed
from dganalysis.records import read as results
from dganalysis.records.index import load_indexed, update_index
from dganalysis.records.index_file import INDEX_NAME
from tests.records import _read_oracle as oracle


def write_run(root: Path, name: str, records: list[dict], status: str | None = "done", tail: str = "",
              spec: dict | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    if status:
        (d / status).write_text("")
    if spec is not None:
        (d / "spec.json").write_text(json.dumps(spec))
    return d


def rec(dataset="PACS", test_envs=(0,), step=0, n_envs=4, hseed=0, tseed=0, algorithm="ERM", **extra):
    r = {"args": {"dataset": dataset, "algorithm": algorithm, "test_envs": list(test_envs), "hparams_seed": hseed,
                  "trial_seed": tseed, "holdout_fraction": 0.2, "output_dir": f"x{hseed}{tseed}"},
         "hparams": {"lr": 5e-5 * (1 + hseed), "batch_size": 32}, "step": step, "loss": 1.0 + step / 100, **extra}
    for i in range(n_envs):
        r[f"env{i}_in_acc"] = round(0.1 * i + 0.01 * step + 0.003 * hseed, 4)
        r[f"env{i}_out_acc"] = round(0.1 * i + 0.02 * step + 0.001 * tseed, 4)
    return r


def domainbed_dir(root: Path) -> Path:
    """A DomainBed-style sweep dir with the cases oracle.load treats specially."""
    for h in range(3):
        for t in range(2):
            write_run(root, f"run_h{h}_t{t}", [rec(step=s, hseed=h, tseed=t) for s in (0, 10, 20)])
    write_run(root, "pair", [rec(test_envs=(1, 3), step=s) for s in (0, 10)])
    write_run(root, "unfinished", [rec(step=0, hseed=7)], status=None)
    write_run(root, "torn", [rec(step=0, hseed=8), rec(step=1, hseed=8)], tail='{"args": {"dataset": "PA')
    nan_loss = [rec(step=0, hseed=9), rec(step=5, hseed=9)]
    write_run(root, "nanloss", nan_loss)
    p = root / "nanloss" / "results.jsonl"
    p.write_text(p.read_text().replace('"loss": 1.05', '"loss": NaN'))  # msgspec refuses NaN: json reads it
    null = rec(step=3, hseed=10)
    null["env2_out_acc"] = None
    write_run(root, "nullacc", [rec(step=0, hseed=10), null, rec(step=6, hseed=10, env1_in_acc=1)])
    write_run(root, "resumed", [rec(step=0, hseed=11), rec(step=5, hseed=11), rec(step=5, hseed=11, env0_in_acc=0.99)])
    changed = rec(step=5, hseed=12, n_envs=5)  # a record unlike the first: other envs, other names
    write_run(root, "mixed", [rec(step=0, hseed=12), changed, rec(step=9, hseed=12, algorithm="CORAL")])
    write_run(root, "exploded", [rec(step=0, hseed=13, loss=1.0), rec(step=5, hseed=13, loss=50.0)])
    write_run(root / "nested" / "deeper", "inner", [rec(step=0, hseed=14, dataset="ColoredMNIST", n_envs=3)])
    (root / "crashed").mkdir()  # DomainBed run that died before its first checkpoint: err.txt only
    (root / "crashed" / "err.txt").write_text("Traceback ...")
    (root / "donenothing").mkdir()  # marked done without records
    (root / "donenothing" / "done").write_text("")
    val = rec(step=0, hseed=15, dataset="NICO")
    val["args"]["val_envs"] = [2]
    write_run(root, "val", [val, dict(val, step=4)])
    return root


def our_store(root: Path) -> Path:
    """A store written by our engine: spec.json, names, failed and unfinished jobs."""
    base = rec(dataset="PaHCC", n_envs=4, test_envs=(3,))
    base.pop("hparams")  # records without an hparams dict are not checked against the drawing rule
    base.update(domains=["kai", "song", "hei", "hw"], train_domains=["song", "kai"], test_domains=["hw"],
                val_domains=["hei"])
    write_run(root, "job1", [dict(base, step=s) for s in (0, 2, 4)], spec={"hparams_overrides": {"lr": 0.1}})
    write_run(root, "job2", [dict(base, train_domains=["kai"], val_domains=[], step=0)], spec={})
    write_run(root, "job3", [dict(base, step=0)], status="failed", spec={})
    write_run(root, "job4", [dict(base, step=0)], status=None, spec={})
    (root / "job5").mkdir()  # failed before writing any record
    (root / "job5" / "failed").write_text("")
    (root / "job5" / "spec.json").write_text("{}")
    return root


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cat = {c: "str" for c in b.columns if isinstance(b[c].dtype, pd.CategoricalDtype)}
    pd.testing.assert_frame_equal(a, b.astype(cat) if cat else b)
    assert a.attrs == b.attrs


@pytest.mark.parametrize("include_unfinished", [None, True, False])
@pytest.mark.parametrize("categorical", [False, True])
def test_equal_to_results_load(tmp_path, include_unfinished, categorical):
    roots = [domainbed_dir(tmp_path / "db"), our_store(tmp_path / "ours")]
    for path in (roots[0], roots[1], roots):
        want = oracle.load(path, include_unfinished=include_unfinished, progress=False)
        got = load_indexed(path, include_unfinished=include_unfinished, categorical=categorical)
        same(want, got)
        again = load_indexed(path, include_unfinished=include_unfinished, categorical=categorical)  # from the index
        same(want, again)
    assert (roots[0] / INDEX_NAME).is_file() and (roots[1] / INDEX_NAME).is_file()
    assert got.attrs["exploded"] == ["exploded"] and got.attrs["jobs"]["failed"] == 2
    assert got.attrs["jobs"]["no_records"] == 1 and got.attrs["jobs"]["failed_no_records"] == 1
    if categorical:
        assert list(got["dataset"].cat.categories) == sorted(got["dataset"].cat.categories)


def test_unreadable_jobs_same_errors_and_problems(tmp_path):
    root = domainbed_dir(tmp_path / "db")
    lines = (root / "pair" / "results.jsonl").read_text().splitlines()
    (root / "pair" / "results.jsonl").write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    bad = rec(step=3, hseed=4)
    del bad["args"]["trial_seed"]
    write_run(root, "zbad", [rec(step=0, hseed=4), bad])
    with pytest.raises(ValueError) as want:
        oracle.load(root, progress=False)
    with pytest.raises(ValueError) as got:
        load_indexed(root)
    assert str(got.value) == str(want.value) and "pair/results.jsonl:2: unreadable JSON" in str(got.value)
    same(oracle.load(root, strict=False, progress=False), load_indexed(root, strict=False))
    assert len(load_indexed(root, strict=False).attrs["problems"]) == 3  # two bad jobs and one done without records
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_indexed(tmp_path / "nope")
    with pytest.raises(ValueError, match="include_unfinished"):
        load_indexed(root, include_unfinished="yes")


def test_incremental_update_reads_only_changed_jobs(tmp_path, monkeypatch):
    root = domainbed_dir(tmp_path / "db")
    load_indexed(root)
    parsed = []
    real = index._parse_job
    monkeypatch.setattr(index, "_parse_job", lambda idx, folder, *a: parsed.append(os.path.basename(folder)) or real(idx, folder, *a))
    stamp = (root / INDEX_NAME).stat().st_mtime_ns
    same(oracle.load(root, progress=False), load_indexed(root))
    assert parsed == [] and (root / INDEX_NAME).stat().st_mtime_ns == stamp  # unchanged: nothing read or written
    write_run(root, "added", [rec(step=0, hseed=20), rec(step=10, hseed=20)])  # a new job
    same(oracle.load(root, progress=False), load_indexed(root))
    assert parsed == ["added"]
    with open(root / "run_h0_t0" / "results.jsonl", "a") as fh:  # a job grows
        fh.write(json.dumps(rec(step=30, hseed=0, tseed=0)) + "\n")
    df = load_indexed(root)
    same(oracle.load(root, progress=False), df)
    assert parsed == ["added", "run_h0_t0"] and 30 in set(df.loc[df["job_id"] == "run_h0_t0", "step"])
    (root / "run_h1_t1" / "done").unlink()  # marked failed instead of done
    (root / "run_h1_t1" / "failed").write_text("")
    df = load_indexed(root)
    same(oracle.load(root, progress=False), df)
    assert parsed[-1] == "run_h1_t1" and "run_h1_t1" not in set(df["job_id"])
    assert df.attrs["jobs"]["failed"] == 1
    for name in ("added", "pair"):  # jobs removed
        for f in (root / name).iterdir():
            f.unlink()
        (root / name).rmdir()
    same(oracle.load(root, progress=False), load_indexed(root))
    assert parsed[-1] == "run_h1_t1"  # removing jobs parses nothing


def _writer(root: str, n: int) -> None:
    for _ in range(n):
        update_index(root)


def test_concurrent_writers(tmp_path):
    root = domainbed_dir(tmp_path / "db")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(root), 6)) for _ in range(4)]
    for p in procs:
        p.start()
    for i in range(6):  # jobs appear while the writers update
        write_run(root, f"late{i}", [rec(step=0, hseed=30 + i), rec(step=10, hseed=30 + i)])
        load_indexed(root)  # a reader in the middle: never a half-written index
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert not [f for f in os.listdir(root) if f.endswith(".tmp")]  # no temporary file left behind
    same(oracle.load(root, progress=False), load_indexed(root))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "version"])
def test_corrupt_or_stale_index_rebuilt(tmp_path, caplog, damage):
    root = domainbed_dir(tmp_path / "db")
    load_indexed(root)
    path = root / INDEX_NAME
    if damage == "garbage":
        path.write_bytes(b"not an index")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        idx = index.Index.read(path)
        idx.jobs[0]["count"] += 1  # a job table that disagrees with the arrays
        path.write_bytes(idx.to_bytes())
    with caplog.at_level(logging.WARNING, logger="dganalysis.records.index"):
        df = load_indexed(root)
    assert "unreadable index" in caplog.text and "rebuilding" in caplog.text
    same(oracle.load(root, progress=False), df)
    assert index.Index.read(path) is not None  # rewritten whole


def test_unwritable_store_indexed_in_cache(tmp_path, monkeypatch):
    root = domainbed_dir(tmp_path / "db")
    monkeypatch.setattr(index.os, "access", lambda p, mode: False)
    cache = tmp_path / "cache"
    same(oracle.load(root, progress=False), load_indexed(root, cache_dir=cache))
    assert not (root / INDEX_NAME).exists()
    assert index.index_location(root, cache).parent == cache and index.index_location(root, cache).is_file()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert index.index_location(root).parent == tmp_path / "xdg" / "dganalysis" / "index"


def test_empty_and_single_job_folder(tmp_path):
    root = write_run(tmp_path / "one", "job", [rec(step=0), rec(step=1)])
    same(oracle.load(root, progress=False), load_indexed(root))  # a job folder itself
    (tmp_path / "empty").mkdir()
    got = load_indexed(tmp_path / "empty")
    assert got.empty and list(got.columns) == results.COLUMNS and got.attrs["jobs"]["read"] == 0


def test_known_folders_not_listed_again(tmp_path, monkeypatch):
    root = domainbed_dir(tmp_path / "db")
    old = 1_000_000_000 * 1_600_000_000
    for d in root.rglob("*"):
        if d.is_dir():
            os.utime(d, ns=(old, old))  # folders last changed long ago: their listing can be trusted
    load_indexed(root)
    listed = []
    real = os.scandir
    monkeypatch.setattr(index.os, "scandir", lambda p: listed.append(os.path.basename(p)) or real(p))
    got = load_indexed(root)
    assert listed == ["db", "nested", "deeper"]  # the job folders were only stat'ed
    same(oracle.load(root, progress=False), got)
    (root / "run_h0_t1" / "done").unlink()
    (root / "run_h0_t1" / "failed").write_text("")  # changes the folder's mtime: listed and re-read
    listed.clear()
    df = load_indexed(root)
    assert "run_h0_t1" in listed and "run_h0_t1" not in set(df["job_id"])
    same(oracle.load(root, progress=False), df)


def test_select_indexed_cached_and_invalidated(tmp_path, monkeypatch):
    from dganalysis.records import select

    root = domainbed_dir(tmp_path / "db")
    for h in range(3):  # leave-one-out helpers: the pair runs of test env 0
        for d in (1, 2, 3):
            write_run(root, f"helper_h{h}_{d}", [rec(test_envs=(0, d), step=s, hseed=h) for s in (0, 10, 20)])

    def check(got):
        want = oracle.load(root, progress=False)
        for method, sel in got.items():
            pd.testing.assert_frame_equal(select(want, method), sel, check_dtype=False)
            assert sel.attrs == want.attrs and len(sel)

    first = indexed.select_indexed(root)
    check(first)
    assert set(first) == {"training_domain", "leave_one_out", "oracle"}
    monkeypatch.setattr(index, "kept_jobs", lambda *a, **k: pytest.fail("an unchanged sweep is not re-read"))
    again = indexed.select_indexed(root)
    for method in first:
        pd.testing.assert_frame_equal(first[method], again[method])
    monkeypatch.undo()
    write_run(root, "newer", [rec(step=0, hseed=40, tseed=0), rec(step=10, hseed=40, tseed=0)])
    check(indexed.select_indexed(root))
    with pytest.raises(ValueError, match="unknown methods"):
        indexed.select_indexed(root, methods=["best"])


def test_per_draw_selections_are_selects_and_cached_with_the_others(tmp_path, monkeypatch):
    """select_for_tables(..., per_draw=...) adds select(df, m, per_draw=True) for the audit's expected-max curve,
    from one scan of the job folders and without the tidy frame; a repeated call reads every selection from the
    cache."""
    from dganalysis.records import select

    root = domainbed_dir(tmp_path / "db")
    update_index(root)  # the index exists; the selections are not cached yet
    scans = []
    real_scan = index_file.scan
    monkeypatch.setattr(index_file, "scan", lambda *a, **k: scans.append(1) or real_scan(*a, **k))
    got = indexed.select_for_tables(root, ["oracle"], per_draw=["training_domain", "oracle"])
    assert len(scans) == 1 and set(got.selections) == {"oracle"} and set(got.draws) == {"training_domain", "oracle"}
    want = oracle.load(root, progress=False)
    pd.testing.assert_frame_equal(select(want, "oracle"), got.selections["oracle"], check_dtype=False)
    for method in ("training_domain", "oracle"):
        assert got.draws[method]["hparams_seed"].nunique() > 1
        pd.testing.assert_frame_equal(select(want, method, per_draw=True), got.draws[method], check_dtype=False)
    import dganalysis.records.rules as rules
    import dganalysis.records.selection as selection

    for module in (selection, rules):
        monkeypatch.setattr(module, "select" if module is selection else "select_records",
                            lambda *a, **k: pytest.fail("cached by the call above"))
    again = indexed.select_for_tables(root, ["oracle"], per_draw="training_domain")
    assert set(again.draws) == {"training_domain"}
    pd.testing.assert_frame_equal(again.draws["training_domain"], got.draws["training_domain"])
    with pytest.raises(ValueError, match="select_for_tables: unknown methods"):
        indexed.select_for_tables(root, ["oracle"], per_draw=["best"])


def test_lazy_read_refuses_a_replaced_file(tmp_path):
    """A job table read alone (the head) gives the arrays of its own version of the file; once a writer has renamed a
    newer index over it, reading them fails (the caller reads the new one), and the selections still come out."""
    root = domainbed_dir(tmp_path / "db")
    load_indexed(root)
    lazy = index.Index.read(root / INDEX_NAME, lazy=True)
    assert isinstance(lazy, index_file.IndexHead) and not hasattr(lazy, "rec_step")  # only the job table so far
    full = index.Index.from_head(lazy)
    assert len(full.rec_step) == sum(j["count"] for j in full.jobs)
    write_run(root, "added", [rec(step=0, hseed=50)])
    load_indexed(root)  # a writer renames a newer index over the file
    with pytest.raises(ValueError, match="changed since its job table was read"):
        index.Index.from_head(lazy)
    assert len(index.Index.read(root / INDEX_NAME).jobs) == len(full.jobs) + 1
    got = indexed.select_for_tables(root, indexes=[(root, lazy)])  # falls back to the current index
    want = indexed.select_indexed(root)
    for method, frame in got.selections.items():
        pd.testing.assert_frame_equal(frame, want[method])


def test_lines_unlike_the_first_take_results_loads_path(tmp_path):
    """The bulk reading of a job (every line repeats the first line's args/hparams text) must give up on any line
    that differs, and then read the job as oracle.load does: same frame, same errors."""
    root = tmp_path / "db"
    reordered = rec(step=5, hseed=1)
    reordered["args"] = dict(reversed(list(reordered["args"].items())))  # equal dict, other text
    other_hp = rec(step=5, hseed=2)
    other_hp["hparams"]["lr"] = 1.0
    float_step = rec(step=5, hseed=3)
    float_step["step"] = 5.0
    no_hp = rec(step=5, hseed=4)
    del no_hp["hparams"]
    nested = rec(step=5, hseed=5)  # the first line's hparams text inside another value, none at the top
    nested["extra"] = {"hparams": nested.pop("hparams")}
    for name, later in (("reordered", reordered), ("other_hp", other_hp), ("float_step", float_step),
                        ("no_hp", no_hp), ("nested", nested)):
        write_run(root, name, [rec(step=0, hseed=later["args"]["hparams_seed"]), later])
    (root / "blank").mkdir()
    (root / "blank" / "results.jsonl").write_text("\n" + json.dumps(rec(step=0, hseed=6)) + "\n\n  \n"
                                                  + json.dumps(rec(step=4, hseed=6)) + "\n")
    (root / "blank" / "done").write_text("")
    same(oracle.load(root, progress=False), load_indexed(root))
    text_acc = rec(step=5, hseed=7)
    text_acc["env1_in_acc"] = "0.5"
    write_run(root, "text_acc", [rec(step=0, hseed=7), text_acc])
    with pytest.raises(ValueError) as want:
        oracle.load(root, progress=False)
    with pytest.raises(ValueError) as got:
        load_indexed(root)
    assert str(got.value) == str(want.value) and "text_acc/results.jsonl:2" in str(got.value)


def _raising(name):
    def fail(*a, **k):
        pytest.fail(f"{name}: a job whose lines repeat the first one's args/hparams is read in bulk")
    return fail


@pytest.mark.parametrize("path", ["bulk", "per_line", "json"])
def test_each_reading_path_gives_results_loads_frame(tmp_path, monkeypatch, path):
    """Every way the index reads a job gives oracle.load's frames: msgspec's per-line structs in bulk (the usual
    jobs), msgspec's dicts read record by record (bulk reading switched off here), and the standard library's
    ``json`` via results.read_records (both switched off: what a line msgspec refuses gets). The bulk path is taken
    for uniform jobs."""
    if path != "bulk":
        monkeypatch.setattr(index, "_uniform_structs", lambda data: None)
    if path == "json":
        monkeypatch.setattr(index, "_fast_records", lambda data: None)
    roots = [domainbed_dir(tmp_path / "db"), our_store(tmp_path / "ours")]
    for path in (roots[0], roots[1]):
        same(oracle.load(path, progress=False), load_indexed(path))
    uniform = tmp_path / "uniform"
    write_run(uniform, "job", [rec(step=s) for s in (0, 10, 20)])
    write_run(uniform, "ours", [rec(step=s, domains=["a", "b", "c", "d"], train_domains=["b", "a"],
                                    test_domains=["d"], val_domains=["c"]) for s in (0, 5)], spec={})
    if path == "bulk":
        monkeypatch.setattr(index, "_add_records", _raising("_add_records"))
    got = load_indexed(uniform)
    monkeypatch.undo()
    same(oracle.load(uniform, progress=False), got)
    assert set(got.loc[got["job_id"] == "ours", "role"]) == {"train", "test", "val"}


def test_bulk_reader_refuses_what_results_load_reads_otherwise(tmp_path):
    """Lines that msgspec's per-line structs would take but oracle.load reads differently (or refuses) go through
    oracle.load's code: same frame, same errors."""
    root = tmp_path / "db"
    extra_key = rec(step=5, hseed=1, domains=["p", "q", "r", "s"])  # a key the first line lacks: other names
    write_run(root, "extra_key", [rec(step=0, hseed=1), extra_key])
    fewer = rec(step=5, hseed=2)
    del fewer["env3_out_acc"]
    write_run(root, "fewer_keys", [rec(step=0, hseed=2), fewer])
    write_run(root, "odd_env_key", [rec(step=0, hseed=3, n_envs=2, env01_in_acc=0.5)])  # env01 is env 1
    nulls = rec(step=5, hseed=4)
    nulls.update(env0_in_acc=None, env2_out_acc=None)
    write_run(root, "nulls", [rec(step=0, hseed=4), nulls])
    write_run(root, "int_acc", [rec(step=0, hseed=5), rec(step=5, hseed=5, env1_out_acc=1)])
    d = write_run(root, "no_final_newline", [rec(step=0, hseed=6)])
    (d / "results.jsonl").write_text((d / "results.jsonl").read_text() + json.dumps(rec(step=4, hseed=6)))
    write_run(root, "unicode", [rec(step=s, hseed=7, note="héllo ✓") for s in (0, 3)])
    named = {"domains": ["a", "b", "c", "d"], "test_domains": ["d"], "val_domains": []}
    write_run(root, "roles_change", [rec(step=0, hseed=9, train_domains=["a", "b", "c"], **named),
                                     rec(step=5, hseed=9, train_domains=["a", "b"], **named)])  # c unused later
    want = oracle.load(root, progress=False)
    same(want, load_indexed(root))
    assert want.loc[want["job_id"] == "nulls", "acc"].isna().sum() == 2
    assert set(want.loc[want["job_id"] == "extra_key", "domain"]) == {"P", "A", "C", "S", "p", "q", "r", "s"}
    assert list(want.loc[(want["job_id"] == "roles_change") & (want["domain"] == "c"), "role"]) == ["train"] * 2 \
        + ["unused"] * 2
    spoilt_second_lines = {
        "two_per_line": lambda line: line + " " + line,  # json.loads: 'extra data'
        "split_record": lambda line: line.replace(', "step"', ',\n"step"'),
        "bool_acc": lambda line: re.sub(r'"env1_in_acc": [0-9.]+', '"env1_in_acc": true', line),
        "bool_step": lambda line: re.sub(r'"step": 1\b', '"step": true', line),  # read: int(True)
        "bad_utf8": lambda line: line.replace('"note": "ok"', '"note": "\udcff"'),  # a value none of ours reads
    }
    for name, spoil in spoilt_second_lines.items():
        lines = [json.dumps(rec(step=s, hseed=8, note="ok")) for s in (0, 1, 2)]
        bad = spoil(lines[1])
        assert bad != lines[1], name  # the case is really built
        write_run(tmp_path / name, "job", [])
        text = "\n".join([lines[0], bad, lines[2]]) + "\n"  # not the last line, which oracle.load skips if torn
        (tmp_path / name / "job" / "results.jsonl").write_bytes(text.encode("utf-8", "surrogateescape"))
        want, got = _outcome(oracle.load, tmp_path / name, progress=False), _outcome(load_indexed, tmp_path / name)
        if isinstance(want, str):
            assert got == want, name
        else:
            same(want, got)
            assert name == "bool_step"


def _outcome(func, *args, **kwargs):
    """``func``'s frame, or the message of the ValueError it raised."""
    try:
        return func(*args, **kwargs)
    except ValueError as err:
        return str(err)


def test_cached_layouts_follow_each_records_envs(tmp_path):
    """results._read_record computes a layout once per distinct (dataset, envs, domain fields): jobs that differ only
    in val_envs or test_envs get their own roles."""
    root = tmp_path / "db"
    write_run(root, "a", [rec(step=0, hseed=1, test_envs=(0,))])
    val = rec(step=0, hseed=2, test_envs=(0,))
    val["args"]["val_envs"] = [2]
    write_run(root, "b", [val])
    write_run(root, "c", [rec(step=0, hseed=3, test_envs=(1,))])
    df = load_indexed(root, categorical=False)
    same(oracle.load(root, progress=False), df)
    roles = {j: dict(zip(g["domain"], g["role"])) for j, g in df.groupby("job_id")}
    assert roles["a"] == {"A": "test", "C": "train", "P": "train", "S": "train"}
    assert roles["b"] == {"A": "test", "C": "train", "P": "val", "S": "train"}
    assert roles["c"] == {"A": "train", "C": "test", "P": "train", "S": "train"}


def test_tables_json_falls_back_for_what_msgspec_refuses():
    """The index's tables are written by msgspec, and by json where msgspec refuses them (lone surrogates of a path
    that is not UTF-8, in a problem message); both read back the same (by json where msgspec refuses)."""
    plain = {"jobs": [{"key": ["a/b", 1, -1, 5], "problem": None, "exploded": False}]}
    assert json.loads(index_file.dumps(plain)) == plain and index_file.dumps(plain) == msgspec.json.encode(plain)
    odd = {"problem": "/runs/caf\udce9/results.jsonl:1: bad"}
    assert index_file.dumps(odd) == json.dumps(odd).encode() and index_file.read_json(index_file.dumps(odd)) == odd
    assert index_file.read_json(index_file.dumps(plain)) == plain


def test_read_only_folder_is_not_written_even_by_root(tmp_path):
    """A store whose mode has no write bit (a reference sweep made read-only) keeps its index in the cache folder,
    also for root, whom os.access lets write anywhere."""
    root = domainbed_dir(tmp_path / "db")
    root.chmod(0o555)
    try:
        assert index.index_location(root).parent == index_file.default_cache_dir()
        assert index.index_location(root, cache_dir=tmp_path / "c").parent == tmp_path / "c"
    finally:
        root.chmod(0o755)
    assert index.index_location(root) == root / INDEX_NAME


def test_progress_bar_while_a_large_store_is_indexed(tmp_path, monkeypatch, capsys):
    """A bar on stderr while an index build reads many jobs: where the caller asked (progress.bars, as the command
    line does on a terminal, or load_indexed(progress=True)), never unasked; it counts the jobs read."""
    from dganalysis.progress import bars

    root = domainbed_dir(tmp_path / "db")
    n_jobs = len(index_file.scan(root))
    monkeypatch.setattr(index, "PROGRESS_MIN_JOBS", n_jobs)
    monkeypatch.setattr(index, "_BAR_STEP", 2)
    made = []
    real_bar = index._bar
    monkeypatch.setattr(index, "_bar", lambda *a: made.append(real_bar(*a)) or made[-1])
    update_index(root)
    assert "indexing" not in capsys.readouterr().err  # unasked: nothing
    (root / INDEX_NAME).unlink()
    with bars():
        update_index(root)
    err = capsys.readouterr().err
    assert f"indexing {root}" in err and f"0/{n_jobs}" in err and made[-1].n == n_jobs  # every job counted
    update_index(root)  # up to date: nothing read, no bar
    (root / INDEX_NAME).unlink()
    with bars(False):
        update_index(root)
    assert "indexing" not in capsys.readouterr().err
    write_run(root, "one_more", [rec(step=0, hseed=20)])
    with bars():
        update_index(root)  # one job to read: below the threshold
    assert "indexing" not in capsys.readouterr().err
    (root / INDEX_NAME).unlink()
    load_indexed(root, progress=True)
    assert f"indexing {root}" in capsys.readouterr().err


def test_collector_paused_restores_the_collector_and_promotes_what_it_made():
    """collector.paused: the collector off inside (nested uses leave it off), on again after, nothing left
    frozen, and the objects made inside moved to the oldest generation (so the young collections after it do not walk
    them again); a cycle made inside is still collected by a full collection."""
    import gc
    import weakref

    class Node:
        pass

    assert gc.isenabled()
    with gc_pause.paused():
        assert not gc.isenabled()
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        made = [[i] for i in range(1000)]
        cyc = Node()
        cyc.me = cyc
        ref = weakref.ref(cyc)
        del cyc
    assert gc.isenabled() and gc.get_freeze_count() == 0
    young = {id(o) for o in gc.get_objects(generation=0)} | {id(o) for o in gc.get_objects(generation=1)}
    assert not any(id(m) in young for m in made)
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("step", [2**63, -(2**63) - 1, 10**30])
def test_a_step_beyond_int64_is_refused_naming_file_and_line(tmp_path, step, capsys):
    """A record whose step does not fit the int64 step column (read record by record: the bulk readers leave it
    to load's code) is refused by load and by the index alike, naming the file and line; with strict=False (and in
    collect) that job is skipped as unreadable and the others are read."""
    from dganalysis.cli import main

    root = tmp_path / "s"
    write_run(root, "good", [rec(step=s) for s in (0, 10)])
    bad = write_run(root, "big", [rec(step=0, hseed=1), rec(step=step, hseed=1), rec(step=20, hseed=1)])
    where = f"{bad / 'results.jsonl'}:2: step = {step}"
    for read in (lambda **k: oracle.load(root, progress=False, **k), lambda **k: load_indexed(root, **k)):
        with pytest.raises(ValueError, match=re.escape(where) + " does not fit a 64-bit integer"):
            read()
        df = read(strict=False)
        assert set(df["job_id"].astype(str)) == {"good"} and df.attrs["jobs"]["unreadable"] == 1
        assert df.attrs["problems"][0].startswith(where)
    assert main(["collect", str(root), "--fresh"]) == 0
    out = capsys.readouterr()
    assert f"collect: skipped a job: {where}" in out.err and "1 unreadable" in out.out
