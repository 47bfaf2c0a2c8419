"""The index's bulk reader of a job's ``results.jsonl`` (msgspec's per-line structs, ``index._uniform_structs``) and
its per-line reader (``index._fast_records``): whatever they accept, they read exactly as ``json.loads`` and
the record rules (read.read_record_at) do; the bulk reader accepts the usual records (DomainBed's and ours);
every accuracy it reads is ``float(json.loads(token))`` bit for bit."""

from __future__ import annotations

import json
import math
import os
import random
import struct
from decimal import Decimal, localcontext

import numpy as np
import pytest

from dganalysis.records import index, index_file
from dganalysis.records import read as results

ROW_KEYS = ("env0_in_acc", "env0_out_acc", "env1_in_acc", "env1_out_acc", "env2_in_acc", "env2_out_acc")


def record(step: int, rng: random.Random, **extra) -> dict:
    r = {"args": {"algorithm": "ERM", "dataset": "PACS", "hparams": None, "hparams_seed": 3, "holdout_fraction": 0.2,
                  "output_dir": "/sweeps/o", "seed": 12, "test_envs": [0], "trial_seed": 1, "steps": 5001},
         "epoch": step / 7, "hparams": {"batch_size": 32, "lr": 5e-05, "resnet_dropout": 0.1}, "loss": rng.random(),
         "mem_gb": 4.4, "step": step, "step_time": rng.random(), **extra}
    for k in ROW_KEYS:
        r[k] = rng.random()
    return r


def jsonl(records: list[dict]) -> bytes:
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in records).encode()


def json_records(data: bytes) -> list | None:
    """The records results.read_records reads from ``data`` when every line is one JSON object (None otherwise)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        recs = [json.loads(line) for line in lines]
    except ValueError:
        return None
    return recs if recs and all(type(r) is dict for r in recs) else None


def reference(data: bytes):
    """What the bulk reader must return for ``data``, from json.loads and the record rules (read.read_record_at):
    (first record, steps, accuracies in row order with NaN for null, losses); None where the standard-library
    reading (tests/records/_read_oracle.py) differs from "every line
    one object with the first line's keys, args, hparams and domain fields, an integer step in int64 and numeric or
    null accuracies" (the bulk reader must refuse those)."""
    recs = json_records(data)
    if recs is None or type(recs[0].get("args")) is not dict:
        return None
    first = recs[0]
    if index._usual_pairs(tuple(first)) is None:
        return None
    same = [k for k in ("args", "hparams", *index._DOMAIN_FIELDS) if k in first]
    pairs = sorted((results.env_pair(k), k) for k in first if results.env_pair(k))
    steps, accs, losses = [], [], []
    for r in recs:
        if set(r) != set(first) or any(r[k] != first[k] or json.dumps(r[k]) != json.dumps(first[k]) for k in same):
            return None
        if type(r["step"]) is not int or not -2**63 <= r["step"] < 2**63:
            return None
        for _, k in pairs:
            v = r[k]
            if v is not None and (type(v) not in (int, float) or not math.isfinite(float(v))):
                return None
            accs.append(math.nan if v is None else float(v))
        steps.append(r["step"])
        losses.append(r["loss"]) if "loss" in first else None
    return first, steps, accs, losses


def bulk(data: bytes):
    got = index._uniform_structs(data)
    if got is None:
        return None
    first, steps, accs, losses = got
    return first, steps, [math.nan if a is None else a for a in accs], losses


def bits(values):
    return [struct.pack("<d", v) for v in values]


def assert_same(got, want, data):
    assert got[0] == want[0] and got[1] == want[1], data
    assert all(type(a) is float for a in got[2]) and bits(got[2]) == bits(want[2]), data  # NaN, -0.0 as json
    assert [(type(x), x) for x in got[3]] == [(type(x), x) for x in want[3]], data


def test_usual_records_are_read_exactly():
    """DomainBed's lines and ours (domain fields) are accepted, with every value json.loads gives."""
    rng = random.Random(0)
    for extra in ({}, {"domains": ["a", "b", "c"], "train_domains": ["a"], "test_domains": ["c"], "val_domains": []}):
        data = jsonl([record(s, rng, **extra) for s in range(0, 5000, 300)])
        got, want = bulk(data), reference(data)
        assert got is not None and want is not None
        assert_same(got, want, data)
    data = jsonl([record(s, rng, env1_in_acc=None, loss=None if s else 2) for s in (0, 3)])  # null, integer loss
    assert_same(bulk(data), reference(data), data)
    assert bulk(data.rstrip(b"\n")) is not None  # no final newline
    reordered = data.splitlines()[0] + b"\n" + json.dumps(dict(reversed(json.loads(data.splitlines()[1]).items())),
                                                           sort_keys=False).encode() + b"\n"
    assert_same(bulk(reordered), reference(reordered), reordered)  # keys in another order: the same values


def _damaged(rng: random.Random) -> bytes:
    """A valid file with random damage: bytes changed, inserted, deleted; lines swapped, doubled, joined, split."""
    alphabet = b' \t\r\n{}[]",:0123456789.eE+-tfnul\\/abc'
    data = bytearray(jsonl([record(s, rng) for s in (0, 300, 600)]))
    for _ in range(rng.choice((1, 1, 2, 3))):
        op, at = rng.random(), rng.randrange(len(data))
        if op < 0.3:
            data[at] = rng.choice(alphabet)
        elif op < 0.5:
            data.insert(at, rng.choice(alphabet))
        elif op < 0.7:
            del data[at:at + rng.randint(1, 4)]
        else:
            lines = bytes(data).split(b"\n")
            i = rng.randrange(len(lines))
            choice = rng.random()
            if choice < 0.3:
                lines.insert(i, lines[rng.randrange(len(lines))])
            elif choice < 0.6 and i + 1 < len(lines):
                lines[i:i + 2] = [lines[i] + b" " + lines[i + 1]]
            else:
                lines[i] = lines[i].replace(b", ", b",\n", 1)
            data = bytearray(b"\n".join(lines))
    return bytes(data)


@pytest.mark.parametrize("seed", range(4))
def test_whatever_it_accepts_is_what_json_reads(seed):
    """Random damage to valid files: the bulk reader never accepts a file that the standard-library reader
    (tests/records/_read_oracle.py) reads otherwise, and reads what it accepts exactly; the per-line reader gives json.loads's records for every file it accepts."""
    rng = random.Random(seed)
    accepted = refused = per_line = 0
    for _case in range(600):
        data = _damaged(rng)
        got, want = bulk(data), reference(data)
        if got is None:
            refused += 1
        else:
            accepted += 1
            assert want is not None, data
            assert_same(got, want, data)
        recs = index._fast_records(data)
        if recs is not None:
            per_line += 1
            blank_free = b"\n".join(line for line in data.split(b"\n") if line.strip())
            assert json.dumps(recs) == json.dumps(json_records(blank_free + b"\n")), data
    assert accepted > 50 and refused > 50 and per_line > 50  # both sides of the line were exercised


def test_what_it_refuses():
    """Each case the exact path must read: the bulk reader returns None (and the per-line reader too for what msgspec
    refuses: then results.read_records reads the file with json and words its errors)."""
    rng = random.Random(1)
    good = [json.dumps(record(s, rng), sort_keys=True) for s in (0, 300)]
    cases = {
        "blank line": good[0] + "\n\n" + good[1] + "\n",
        "two objects on a line": good[0] + " " + good[1] + "\n",
        "object across lines": good[0].replace(', "step"', ',\n"step"') + "\n",
        "other args": good[0] + "\n" + good[1].replace('"seed": 12', '"seed": 13') + "\n",
        "args written otherwise": good[0] + "\n" + good[1].replace('"seed": 12', '"seed":12') + "\n",
        "a key more": good[0] + "\n" + good[1].replace('"loss": ', '"x": 1, "loss": ') + "\n",
        "NaN loss": good[0] + "\n" + good[1].replace('"loss": ', '"loss": NaN, "x": ') + "\n",
        "float step": good[0] + "\n" + good[1].replace('"step": 300', '"step": 300.0') + "\n",
        "bool accuracy": good[0] + "\n" + good[1].replace('"env0_in_acc": ', '"env0_in_acc": true, "y": ') + "\n",
        "string accuracy": good[0] + "\n" + good[1].replace('"env0_in_acc": ', '"env0_in_acc": "0.5", "y": ') + "\n",
        "overflowing accuracy": good[0] + "\n" + good[1].replace('"env0_in_acc": ', '"env0_in_acc": 1e999, "y": ') + "\n",
        "huge step": good[0] + "\n" + good[1].replace('"step": 300', '"step": 9223372036854775808') + "\n",
        "torn last line": good[0] + "\n" + good[1][:-20],
        "lone surrogate": good[0] + "\n" + good[1].replace('"mem_gb"', '"m\\ud800"', 1) + "\n",
    }
    for name, text in cases.items():
        assert bulk(text.encode("utf-8")) is None, name
    for name in ("NaN loss", "overflowing accuracy", "torn last line", "lone surrogate", "two objects on a line"):
        assert index._fast_records(cases[name].encode()) is None, name
    assert index._fast_records(b"\xff" + cases["blank line"].encode()) is None  # not UTF-8
    assert bulk(("\n".join(good) + "\n").encode()) is not None  # the cases are built on an accepted file
    assert index._fast_records(cases["blank line"].encode()) == [json.loads(g) for g in good]


def _tokens(rng: random.Random, n: int):
    for _ in range(n):
        r = rng.random()
        if r < 0.3:  # any finite double, as repr writes it
            x = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(x):
                yield repr(x)
        elif r < 0.5:
            yield repr(rng.random() * 10 ** rng.randint(-25, 25))
        elif r < 0.8:  # digit strings: up to 22 digits, a point anywhere, an exponent or not
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22)))
            at = rng.randint(1, len(digits))
            whole = digits[:at].lstrip("0") or "0"
            tok = ("-" if rng.random() < 0.3 else "") + whole + ("." + digits[at:] if at < len(digits) else "")
            if rng.random() < 0.4:
                tok += rng.choice("eE") + rng.choice(("", "+", "-")) + str(rng.randint(0, 30))
            yield tok
        else:  # near the midpoint of two neighbouring doubles: the rounding decides
            x = rng.random() * 10 ** rng.randint(-8, 8)
            with localcontext() as ctx:
                ctx.prec = 60
                mid = (Decimal(x) + Decimal(float(np.nextafter(x, math.inf)))) / 2
            text = format(mid, "f")[:rng.choice((17, 18, 19, 20, 21, 30))].rstrip(".")
            if text:
                yield text


def test_numbers_are_floats_of_json_bit_for_bit():
    """An accuracy token is read as float(json.loads(token)) exactly (integers, long mantissas, exponents at every
    limit, midpoints of neighbouring doubles), -0 as +0.0 (json.loads reads it as the integer 0); one that is not
    finite as a double is refused."""
    rng = random.Random(7)
    checked = 0
    for tok in [*_tokens(rng, 30000), "-0", "-0.0", "0", "1", "9007199254740993", "0.1", "1e-21", "1e19",
                "123456789012345678.9e-30", "179769313486231570000000000000e280",
                *(f"{m}e{e}" for m in ("1", "7", "8.5", "9007199254740993", "12345678901234567")
                  for e in range(-25, 26))]:  # each side of every path's exponent limits
        got = index._uniform_structs(f'{{"args": {{}}, "env0_in_acc": {tok}, "step": 1}}'.encode())
        want = float(json.loads(tok))
        if not math.isfinite(want):
            assert got is None, tok
            continue
        assert got is not None, tok
        assert struct.pack("<d", got[2][0]) == struct.pack("<d", want), tok
        checked += 1
    assert checked > 29000


def test_key_check_of_a_flat_store(tmp_path):
    """``index_file._keys_unchanged`` says True for unchanged keys only, False for each kind of change, and None (the
    scan decides) or False for malformed keys; on a folder that cannot be read, False."""
    for name, files in (("a", ("results.jsonl", "done")), ("b", ("results.jsonl", "spec.json")), ("c", ("done",))):
        (tmp_path / name).mkdir()
        for f in files:
            (tmp_path / name / f).write_text("{}\n")
    (tmp_path / "plain").write_text("a file where a job folder was")
    for p in [*tmp_path.glob("*/*"), *tmp_path.iterdir()]:  # settled: an index keeps the mtimes of older folders
        os.utime(p, ns=(10**18, 10**18))
    keys = [list(k) for k in index_file.scan(tmp_path) if k[0] != "."]
    assert all(k[5] == 10**18 for k in keys)
    assert [k[0] for k in keys] == ["a", "b", "c"]
    st = os.stat(tmp_path / "plain")

    def with_(i: int, j: int, value) -> list:
        out = [list(k) for k in keys]
        out[i][j] = value
        return out

    cases = {
        "unchanged": keys, "as tuples": [tuple(k) for k in keys], "none": [],
        "size": with_(0, 1, keys[0][1] + 1), "mtime": with_(0, 2, keys[0][2] - 1), "folder mtime": with_(2, 5, 7),
        "records gone": [*keys[:2], ["c", 5, 5, keys[2][3], -1, keys[2][5]]],
        "records appeared": [["a", -1, -1, keys[0][3], -1, keys[0][5]], *keys[1:]],
        "spec mtime": with_(1, 4, 3), "spec removed": [[*keys[0][:3], keys[0][3] | index_file.SPEC, 5, keys[0][5]],
                                                       *keys[1:]],
        "folder gone": [*keys, ["zz", -1, -1, 0, -1, 1]],
        "a file, not a folder": [["plain", -1, -1, 0, -1, st.st_mtime_ns]],
        "not a key": [["a", 1, 2]], "a number for a name": [[3, 1, 2, 0, -1, 1]], "a name for a number": with_(0, 1, "x"),
        "NUL in a name": [["a\0b", 1, 2, 0, -1, 1]],
    }
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for what, ks in cases.items():
            got = index_file._keys_unchanged(fd, ks)
            assert (got is True) == (what in ("unchanged", "as tuples", "none")), (what, got)
            assert got in (True, False, None), what
            if what in ("size", "mtime", "folder mtime", "records gone", "records appeared", "spec mtime",
                        "spec removed", "folder gone"):
                assert got is False, what
    finally:
        os.close(fd)
    assert [index_file._keys_unchanged(-1, keys), index_file._keys_unchanged(-1, [])] == [False, True]
