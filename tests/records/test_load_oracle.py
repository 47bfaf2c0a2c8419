"""records.load (the index's reader, in memory) against the standard-library reader kept as a test oracle
(tests/records/_read_oracle.py): the same frame — columns, dtypes, row order, values bit for bit, ``attrs`` — the
same errors, and the same warnings in the same order, on simulated sweeps and on every odd record the readers treat
specially; and DomainBed's own test sweep when ``$DOMAINBED_SRC`` names a DomainBed checkout."""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dganalysis.records import load, load_many
from tests.records import _read_oracle as oracle
from tests.records.test_index import domainbed_dir, our_store, rec, write_run


def identical(want: pd.DataFrame, got: pd.DataFrame) -> None:
    """Equal frames: columns, dtypes, index, every value (floats bit for bit, NaN where NaN) and ``attrs``."""
    pd.testing.assert_frame_equal(want, got, check_exact=True)
    assert list(want.dtypes) == list(got.dtypes)
    assert want["acc"].to_numpy().tobytes() == got["acc"].to_numpy().tobytes()
    assert want.attrs == got.attrs


def outcome(func, *args, caplog, **kwargs):
    """(frame or the ValueError's message, the (level, message) of every record dganalysis logged meanwhile)."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="dganalysis"):
        try:
            got = func(*args, **kwargs)
        except ValueError as err:
            got = str(err)
    logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("dganalysis")]
    return got, logged


def compare(path, caplog, **kwargs) -> pd.DataFrame | str:
    """load and the oracle on ``path`` with ``kwargs``: the same outcome and the same log; returns the outcome."""
    kwargs.setdefault("progress", False)
    want, want_log = outcome(oracle.load, path, caplog=caplog, **kwargs)
    got, got_log = outcome(load, path, caplog=caplog, **kwargs)
    if isinstance(want, str):
        assert got == want
    else:
        assert not isinstance(got, str), got
        identical(want, got)
    assert got_log == want_log
    return got


def files_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("include_unfinished", [None, True, False])
@pytest.mark.parametrize("strict", [True, False])
def test_simulated_stores(tmp_path, caplog, include_unfinished, strict):
    roots = [domainbed_dir(tmp_path / "db"), our_store(tmp_path / "ours")]
    before = {r: files_under(r) for r in roots}
    for path in (roots[0], roots[1], roots, roots[::-1]):
        got = compare(path, caplog, include_unfinished=include_unfinished, strict=strict)
        assert len(got) > 0
    assert {r: files_under(r) for r in roots} == before  # load writes nothing beside a store
    identical(oracle.load_many(roots, progress=False), load_many(roots, progress=False))


def odd_stores(root: Path) -> dict[str, Path]:
    """One DomainBed-style sweep per odd case (a job with the odd record among usual ones), by name."""
    lines = [json.dumps(rec(step=s, hseed=1, note="ok")) for s in (0, 5, 10)]
    cases = {
        "nan_loss": [lines[0], lines[1].replace('"loss": 1.05', '"loss": NaN'), lines[2]],
        "nan_acc": [lines[0], lines[1].replace('"env1_in_acc": ', '"env1_in_acc": NaN, "x": '), lines[2]],
        "infinite_acc": [lines[0], lines[1].replace('"env1_in_acc": ', '"env1_in_acc": 1e999, "x": '), lines[2]],
        "null_acc": [lines[0], lines[1].replace('"env2_out_acc": ', '"env2_out_acc": null, "x": '), lines[2]],
        "torn_last": [lines[0], lines[1], lines[2][:-25]],
        "torn_middle": [lines[0], lines[1][:-25], lines[2]],
        "duplicate_key": [lines[0], lines[1].replace('"env0_in_acc": ', '"env0_in_acc": 0.25, "env0_in_acc": '),
                          lines[2]],
        "float_step": [lines[0], lines[1].replace('"step": 5', '"step": 5.0'), lines[2]],
        "fractional_step": [lines[0], lines[1].replace('"step": 5', '"step": 5.5'), lines[2]],
        "huge_step": [lines[0], lines[1].replace('"step": 5', f'"step": {2**63}'), lines[2]],
        "string_acc": [lines[0], lines[1].replace('"env0_in_acc": ', '"env0_in_acc": "0.5", "y": '), lines[2]],
        "bool_acc": [lines[0], lines[1].replace('"env0_in_acc": ', '"env0_in_acc": true, "y": '), lines[2]],
        "not_an_object": [lines[0], "[1, 2]", lines[2]],
        "lone_surrogate": [lines[0], lines[1].replace('"note": "ok"', '"note": "\\ud800"'), lines[2]],
        "resumed": [lines[0], lines[1], lines[1].replace('"env0_in_acc": ', '"env0_in_acc": 0.99, "z": '),
                    lines[2]],
        "missing_arg": [lines[0], lines[1].replace('"trial_seed": 0, ', ''), lines[2]],
    }
    out = {}
    for name, text in cases.items():
        write_run(root / name, "job", [rec(step=0, hseed=2)])
        (root / name / "job" / "results.jsonl").write_text("\n".join(text) + "\n")
        out[name] = root / name
    raw = {
        "crlf": ("\r\n".join(lines) + "\r\n").encode(),
        "blank_lines": ("\n" + lines[0] + "\n\n  \n" + lines[1] + "\n" + lines[2] + "\n\n").encode(),
        "no_final_newline": "\n".join(lines).encode(),
        "invalid_utf8": ("\n".join(lines[:2]) + "\n").encode() + b'{"bad": "\xff"}\n' + lines[2].encode() + b"\n",
        "invalid_utf8_last": ("\n".join(lines) + "\n").encode() + b'{"args": "\xff',
        "empty_file": b"",
    }
    for name, data in raw.items():
        write_run(root / name, "job", [rec(step=0, hseed=2)])
        (root / name / "job" / "results.jsonl").write_bytes(data)
        out[name] = root / name
    write_run(root / "unfinished", "done_job", [rec(step=s, hseed=3) for s in (0, 5)])
    write_run(root / "unfinished", "running", [rec(step=s, hseed=4) for s in (0, 5)], status=None)
    (root / "unfinished" / "starting").mkdir()
    (root / "unfinished" / "starting" / "out.txt").write_text("")
    out["unfinished"] = root / "unfinished"
    (root / "folder_named_results" / "job" / "results.jsonl").mkdir(parents=True)  # no records, marked done
    (root / "folder_named_results" / "job" / "done").write_text("")
    out["folder_named_results"] = root / "folder_named_results"
    return out


def test_odd_records(tmp_path, caplog):
    stores = odd_stores(tmp_path)
    errors = set()
    for name, root in stores.items():
        # each odd job beside a usual one, before and after it in job order
        write_run(root, "a_usual", [rec(step=s, hseed=5) for s in (0, 5)])
        write_run(root, "z_usual", [rec(step=s, hseed=6) for s in (0, 5)])
        for strict in (True, False):
            for include_unfinished in (None, True, False):
                got = compare(root, caplog, strict=strict, include_unfinished=include_unfinished)
                if isinstance(got, str):
                    assert strict and "results.jsonl:" in got, (name, got)
                    errors.add(name)
                else:
                    assert set(got["job_id"]) >= {"a_usual", "z_usual"}, name
    # the cases are real: these are refused naming file and line, the others read
    assert errors == {"torn_middle", "huge_step", "string_acc", "bool_acc", "not_an_object", "missing_arg",
                      "invalid_utf8", "invalid_utf8_last"}  # a fractional step is truncated, as int() does
    compare(list(stores.values()), caplog, strict=False)


def test_random_sweep_bit_for_bit(tmp_path, caplog):
    """Accuracies and losses drawn over the whole double range (as repr writes them): load's numbers are json's."""
    rng = random.Random(0)
    for j in range(30):
        recs = []
        for s in range(rng.randint(1, 6)):
            r = rec(step=s * rng.randint(1, 1000), hseed=j, tseed=j % 3, n_envs=rng.choice((3, 4)),
                    dataset=rng.choice(("PACS", "VLCS", "Mine")))
            for key in r:
                if key.endswith("_acc"):
                    r[key] = rng.choice((rng.random(), rng.random() * 10 ** rng.randint(-300, 300), 0, 1, None))
            r["loss"] = rng.random() * 10 ** rng.randint(-5, 5)
            recs.append(r)
        write_run(tmp_path, f"job{j:02d}", recs, status=rng.choice(("done", "done", None)))
    got = compare(tmp_path, caplog)
    assert got["acc"].isna().any() and len(got) > 100


def test_progress_bar_as_before(tmp_path, capsys):
    for j in range(50):
        write_run(tmp_path, f"job{j:02d}", [rec(step=0, hseed=j)])
    load(tmp_path, progress=False)
    assert "reading records" not in capsys.readouterr().err
    load(tmp_path)
    assert "reading records" in capsys.readouterr().err
    load(tmp_path / "job00")  # one job: no bar
    assert "reading records" not in capsys.readouterr().err


def test_a_read_only_store_is_read_without_writing(tmp_path, caplog):
    root = domainbed_dir(tmp_path / "db")
    modes = {}
    for p in [root, *root.rglob("*")]:
        if p.is_dir():
            modes[p] = p.stat().st_mode
    try:
        for p in modes:
            os.chmod(p, 0o555)
        compare(root, caplog)
    finally:
        for p, mode in modes.items():
            os.chmod(p, mode)
    assert not any(".dganalysis" in name for name in files_under(root))


def test_domainbed_test_sweep(caplog):
    """DomainBed's own sweep output (``domainbed/misc/test_sweep_data``: 40 runs of its test suite)."""
    src = os.environ.get("DOMAINBED_SRC")
    if not src:
        pytest.skip("set $DOMAINBED_SRC to a DomainBed checkout (e.g. /work/shared/reference/DomainBed) to run this")
    root = Path(src) / "domainbed" / "misc" / "test_sweep_data"
    if not root.is_dir():
        pytest.skip(f"{root} is missing: $DOMAINBED_SRC must name a DomainBed checkout with its test sweep data")
    got = compare(root, caplog)
    # run folders only: a copy of DomainBed may hold an index an older reader left beside them (.dganalysis_index*)
    assert got["job_id"].nunique() == len([p for p in root.iterdir() if p.is_dir()
                                           and not p.name.startswith(".dganalysis")])
    assert np.isfinite(got["acc"]).all()
