"""Results kept for unchanged sweeps (dganalysis.records.memo) and the index file's head read alone
(dganalysis.records.index_file): a repeated command checks the job folders and prints what it kept without numpy or
pandas; any change to a job folder, or an index of another format, makes it compute again."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dganalysis.records import index, index_file, store
from dganalysis.records.index_file import sweep_key
from dganalysis.records.memo import SweepMemo
from tests.audit._simulated_sweep import write_sweep

ROOT = Path(__file__).resolve().parents[2]

#: runs a verb of the CLI in a fresh interpreter and reports the heavy modules it imported
_PROBE = """
import json, sys
from dganalysis.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "numpy": "numpy" in sys.modules, "pandas": "pandas" in sys.modules}))
"""


def _run(argv: list[str], cwd: Path) -> tuple[dict, str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    *printed, probe = proc.stdout.splitlines()
    return json.loads(probe), "\n".join(printed), proc.stderr


def _settled(root: Path) -> Path:
    """Date every folder under ``root`` back a day: a folder changed within the last seconds is listed again at the
    next scan (file-system clocks tick coarsely), which would change the sweep's key between two commands."""
    old = 1_000_000_000 * 1_700_000_000
    for d in [root, *root.rglob("*")]:
        if d.is_dir():
            os.utime(d, ns=(old, old))
    return root


@pytest.fixture
def sweep(tmp_path):
    return _settled(write_sweep(tmp_path / "s", {"ERM": 0.0, "Good": 0.1}, datasets={"PACS": 4}, trials=3, hparams=1))


def test_repeated_commands_import_neither_numpy_nor_pandas(sweep, tmp_path):
    """collect and audit repeated on an unchanged sweep: the same output, from the kept copy, without numpy or
    pandas (their import alone costs more CPU than the rest of the check on a large sweep)."""
    for argv in (["collect", str(sweep)], ["audit", str(sweep), "--selection", "training_domain",
                                           "--json", str(tmp_path / "a.json")]):
        first, out1, _ = _run(argv, tmp_path)
        assert first == {"code": 0, "numpy": True, "pandas": True}
        again, out2, err2 = _run(argv, tmp_path)
        assert again == {"code": 0, "numpy": False, "pandas": False}, err2
        assert out2 == out1 and "unchanged since" in err2


def test_memo_misses_on_any_change(sweep, tmp_path, monkeypatch):
    memo = SweepMemo([sweep], "t", ["a"])
    assert memo.get() is None  # no index yet
    memo.put({"v": 1})
    assert SweepMemo([sweep], "t", ["a"]).get() == {"v": 1}
    assert SweepMemo([sweep], "t", ["b"]).get() is None  # other parts
    run = next(p for p in sweep.iterdir() if p.is_dir() and not p.name.startswith("."))
    with open(run / "results.jsonl", "a") as fh:
        fh.write("\n")  # a job folder's key (results.jsonl's size) changes: the index is out of date
    assert SweepMemo([sweep], "t", ["a"]).get() is None
    again = SweepMemo([sweep], "t", ["a"])
    again.put({"v": 2})  # kept under the key of the index brought up to date
    assert SweepMemo([sweep], "t", ["a"]).get() == {"v": 2}
    monkeypatch.setattr(index_file, "__version__", "0.0.0+other")
    assert SweepMemo([sweep], "t", ["a"]).get() is None  # another version of the package


def test_key_is_the_same_from_the_head_and_from_a_fresh_index(sweep):
    fresh = index.update_index(sweep)
    head = index_file.unchanged_head(sweep)
    assert head is not None and not hasattr(head, "rec_step")
    assert sweep_key([(sweep, fresh)], 1) == sweep_key([(sweep, head)], 1) != sweep_key([(sweep, head)], 2)


def test_head_and_arrays_of_the_file(sweep):
    idx = index.update_index(sweep)
    path = index_file.index_location(sweep)
    data = path.read_bytes()
    assert data.startswith(index_file.MAGIC)
    head = index_file.IndexHead.read(path)
    assert head.jobs == idx.jobs
    full = index.Index.from_head(head)
    for name in ("rec_meta", "rec_layout", "rec_step", "acc"):
        assert (getattr(full, name) == getattr(idx, name)).all() and getattr(full, name).flags.writeable
    path.write_bytes(data[:-8])  # the last array cut short: the head reads, the arrays do not
    head = index_file.IndexHead.read(path)
    with pytest.raises(ValueError, match="truncated"):
        index.Index.from_head(head)
    version = f'"version":{index_file.INDEX_VERSION}'.encode()
    assert version in data
    path.write_bytes(data.replace(version, b'"version":4', 1))
    assert index_file.IndexHead.read(path) is None  # another format version: rebuilt by update_index
    assert len(index.update_index(sweep).jobs) == len(idx.jobs)


def test_old_format_files_are_removed_when_the_index_is_written(sweep):
    (sweep / ".dganalysis_index.npz").write_bytes(b"old")
    (sweep / ".dganalysis_index.npz.select").mkdir()
    (sweep / ".dganalysis_index.npz.select" / "collect-0.json").write_text("{}")
    index.update_index(sweep)
    assert not (sweep / ".dganalysis_index.npz").exists() and not (sweep / ".dganalysis_index.npz.select").exists()
    assert (sweep / index_file.INDEX_NAME).is_file()


def _job(root: Path, name: str, *files: str) -> Path:
    d = root / name
    d.mkdir(parents=True)
    for f in files:
        (d / f).write_text('{"step": 0}\n' if f == "results.jsonl" else "{}")
    return d


def _flat_store(root: Path) -> Path:
    _job(root, "a", "results.jsonl", "done")
    _job(root, "b", "results.jsonl", "spec.json")
    _job(root, "c", "done")  # a job folder without records
    _job(root, "d", "failed", "spec.json")
    (root / "notes").mkdir()  # a folder holding no job
    (root / "notes" / "readme.txt").write_text("x")
    (root / "link").symlink_to(root / "a")  # a link to a job folder: not followed
    return _settled(root)


def _append(p: Path) -> None:
    with open(p, "a") as fh:
        fh.write('{"step": 1}\n')


_CHANGES = {
    "nothing": lambda r: None,
    "records appended": lambda r: _append(r / "a" / "results.jsonl"),
    "records of a job without them": lambda r: (r / "c" / "results.jsonl").write_text("{}\n"),
    "done written": lambda r: (r / "b" / "done").write_text(""),
    "spec rewritten": lambda r: os.utime(r / "b" / "spec.json", ns=(1, 1)),
    "job removed": lambda r: [os.remove(f) for f in (r / "c").iterdir()] and os.rmdir(r / "c"),
    "job added": lambda r: _job(r, "e", "results.jsonl"),
    "job nested in a folder holding none": lambda r: _job(r / "notes", "deep", "results.jsonl"),
    "the store itself made a job": lambda r: (r / "results.jsonl").write_text("{}\n"),
    "records file removed": lambda r: os.remove(r / "a" / "results.jsonl"),
}


@pytest.mark.parametrize("change", list(_CHANGES))
def test_fast_check_of_a_flat_store_agrees_with_the_scan(tmp_path, change):
    """index_file.up_to_date's fast path (one listing, stats relative to the open store) gives what the scan and the
    comparison of every key give, for each kind of change a job folder sees, and is taken for a flat store."""
    root = _flat_store(tmp_path / "s")
    keys = index_file.scan(root)
    assert all(k[5] >= 0 for k in keys) and {k[0] for k in keys} == {"a", "b", "c", "d"}
    _CHANGES[change](root)
    fast = index_file.flat_up_to_date(str(root), keys)
    assert fast is not None  # the fast path applies to this layout
    assert fast == index_file.same_keys(keys, index_file.scan(root, index_file.known_keys(keys)))
    assert fast == (change == "nothing")


def test_scan_with_known_keys_finds_what_a_fresh_walk_finds(tmp_path):
    """index_file.scan given an index's known keys (settled folders not listed again) gives the keys a fresh walk
    gives, and the folders of results.job_folders (load's rule), on a store with every kind of entry a job folder can
    hold, nested jobs, links, and after changes."""
    root = _flat_store(tmp_path / "s")
    _job(root, "e", "err.txt")  # DomainBed's crashed job: err.txt only
    _job(root, "f", "claim")
    (root / "g" / "done").mkdir(parents=True)  # a folder named like a job file is no job file
    _job(root / "g", "inner", "results.jsonl", "done")  # ... and its sub-folders are searched
    (root / "h").mkdir()
    (root / "h" / "done").symlink_to(root / "a" / "done")  # a link to a file counts as the file
    (root / "h" / "results.jsonl").symlink_to(root / "nowhere")  # a broken link: a file, its records absent
    (root / "i").mkdir()
    (root / "i" / "sub").symlink_to(root / "a")  # a link to a folder: not followed, not a file
    (root / "k").mkdir()
    (root / "k" / "done").symlink_to(root / "g")  # ... so a link named like a job file to a folder makes no job
    _job(root / "deep" / "er", "j", "results.jsonl", "out.txt")
    _settled(root)

    def both(known=None):
        got = index_file.scan(root, known)
        assert got == index_file.scan(root)
        assert [k[0] for k in got] == [str(p.relative_to(root)) for p in store.job_folders(root)]
        return got

    keys = both()
    assert {k[0] for k in keys} == {"a", "b", "c", "d", "e", "f", "g/inner", "h", "deep/er/j"}
    h = next(k for k in keys if k[0] == "h")
    assert h[1] == -1 and h[3] == index_file.DONE
    _append(root / "a" / "results.jsonl")  # a file changed: its folder's mtime is not
    (root / "b" / "done").write_text("")
    os.remove(root / "c" / "done")
    later = 1_000_000_000 * 1_700_000_100  # the changed folders settled too, at a later time than the others
    for d in ("b", "c"):
        os.utime(root / d, ns=(later, later))
    changed = both(index_file.known_keys(keys))
    assert changed != keys and [k[0] for k in changed] == [k[0] for k in keys if k[0] != "c"]
    assert both(index_file.known_keys(changed)) == changed


def test_fast_check_leaves_nested_and_freshly_changed_stores_to_the_scan(tmp_path):
    nested = tmp_path / "n"
    _job(nested / "group", "a", "results.jsonl", "done")
    keys = index_file.scan(_settled(nested))
    assert keys[0][0] == "group/a" and index_file.flat_up_to_date(str(nested), keys) is None
    assert index_file.up_to_date(nested, keys)  # decided by the scan
    fresh = tmp_path / "f"
    _job(fresh, "a", "results.jsonl")  # changed just now: its folder's mtime is not kept (-1), listed next time
    keys = index_file.scan(fresh)
    assert keys[0][5] == -1 and index_file.flat_up_to_date(str(fresh), keys) is None


def test_put_under_the_indexes_the_caller_read(sweep, tmp_path):
    """put(indexes=...) keys the value by the stores as the computation read them (the same key a later get finds
    for an unchanged sweep); indexes of other stores are refused, naming the parameter."""
    read = [(sweep, index.update_index(sweep, lazy=True))]
    memo = SweepMemo([sweep], "t", ["a"])
    memo.put({"v": 3}, indexes=read)
    assert SweepMemo([sweep], "t", ["a"]).get() == {"v": 3}
    with pytest.raises(ValueError, match="parameter 'indexes'"):
        memo.put({"v": 4}, indexes=[(tmp_path, read[0][1])])


@pytest.mark.parametrize("verb", ["collect", "audit"])
def test_a_command_checks_each_sweep_once(verb, sweep, tmp_path, monkeypatch):
    """collect and audit missing their output memo check a sweep's job folders once: the memo's check of the index is
    the one the reading uses (the walk of a large sweep's folders is most of a repeated command's time); on a changed
    sweep, that check is followed by the one scan that finds the changed folders."""
    import shutil

    from dganalysis.cli import main

    checks = []

    def counted(walk):
        def walked(*a, **k):
            checks.append((walk.__name__, a[0]))
            return walk(*a, **k)
        return walked

    for name in ("flat_up_to_date", "scan"):  # the two walks of a store's job folders
        monkeypatch.setattr(index_file, name, counted(getattr(index_file, name)))
    argv = {"collect": ["collect", str(sweep)],
            "audit": ["audit", str(sweep), "--selection", "training_domain", "--json", str(tmp_path / "a.json")]}[verb]
    assert main(argv) == 0  # builds the index, reads and selects
    checks.clear()
    assert main([*argv, "--digits", "2"] if verb == "collect" else [*argv, "--rope", "0.5"]) == 0  # a memo miss
    assert [(name, Path(p)) for name, p in checks] == [("flat_up_to_date", sweep)]
    first = sorted(p.parent for p in sweep.glob("*/results.jsonl"))[0]
    shutil.copytree(first, sweep / "copy")  # one more job folder
    _settled(sweep)
    checks.clear()
    assert main(argv) == 0
    assert [(name, Path(p)) for name, p in checks] == [("flat_up_to_date", sweep), ("scan", sweep)]
