"""bench/behaviour_snapshot.py's ``compare``: clocks and provenance normalised, anything else a difference."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import behaviour_snapshot as bs  # noqa: E402

RECORD = {"args": {"job_id": "ab12", "steps": 20}, "elapsed": 3.1, "env0_in_acc": 0.5, "host": "vm",
          "provenance": {"commit": "5499a28a2be90fb8d7ea12d145fbc9b8b6680dc7", "dirty": False, "dganalysis": "0.1.0",
                         "python": "3.11.7", "threads": 1}, "step": 0, "step_time": 0.088}


def _snapshot(root: Path, work: str, record: dict, stamp: str, extra: dict | None = None,
              made: str = "2026-11-29 04:38 UTC", pilot: str = "2026-11-22") -> Path:
    (root / "sweep" / "ab12").mkdir(parents=True)
    (root / "sweep" / "ab12" / "results.jsonl").write_text(json.dumps(record) + "\n" + json.dumps(record) + "\n")
    audit = {"settings": {"seed": 0, "provenance": record["provenance"]}, "sweep": {f"{work}/store": {"n": 2}}}
    (root / "audit.json").write_text(json.dumps({**audit, **(extra or {})}, indent=1))
    (root / "index.md").write_text(f"Made with {stamp}, Python 3.11.7. Generated {made}.\n\n"
                                   f"audit {work}/store: 6 claims (pilot run of {pilot})\n")
    (root / "logs").mkdir()
    (root / "logs" / "a.stderr").write_text(f"{work}: took 3 s\n")
    (root / "manifest.json").write_text(json.dumps({"work": work, "checkout": "/c", "outdir": str(root)}))
    return root


def _later(record: dict) -> dict:
    """The same record made later, elsewhere, by another commit of a modified tree."""
    return {**record, "elapsed": 9.9, "step_time": 1.5, "host": "other",
            "provenance": {**record["provenance"], "commit": "f" * 40, "dirty": True, "dganalysis": "0.2.0"}}


def test_clocks_paths_and_provenance_are_normalised(tmp_path, capsys):
    before = _snapshot(tmp_path / "before", "/tmp/w1", RECORD, "dganalysis 0.1.0 (commit 5499a28a2be9)")
    later = "dganalysis 0.2.0 (commit ffffffffffff, modified)"
    after = _snapshot(tmp_path / "after", "/tmp/w2", _later(RECORD), later, made="2026-11-30T06:15:02Z")
    assert bs.compare(before, after) == 0
    out = capsys.readouterr().out
    assert "3 files: 3 identical" in out and "logs" not in out and "manifest" not in out


def test_a_result_a_key_order_or_a_file_is_a_difference(tmp_path, capsys):
    before = _snapshot(tmp_path / "before", "/tmp/w1", RECORD, "dganalysis 0.1.0 (commit 5499a28a2be9)")
    stamp = "dganalysis 0.1.0 (commit 5499a28a2be9)"
    changed = _snapshot(tmp_path / "acc", "/tmp/w2", {**_later(RECORD), "env0_in_acc": 0.51}, stamp)
    assert bs.compare(before, changed) == 1
    out = capsys.readouterr().out
    assert "sweep/ab12/results.jsonl" in out and "differs" in out and "0.51" in out
    reordered = dict(reversed(list(RECORD.items())))
    assert bs.compare(before, _snapshot(tmp_path / "order", "/tmp/w3", reordered, stamp)) == 1
    more = _snapshot(tmp_path / "more", "/tmp/w4", RECORD, stamp, {"notes": []})
    (more / "extra.txt").write_text("x\n")
    capsys.readouterr()
    assert bs.compare(before, more) == 1
    out = capsys.readouterr().out
    assert "only in more" in out and "audit.json" in out and "4 files: 2 identical" in out
    dated = _snapshot(tmp_path / "dated", "/tmp/w5", RECORD, stamp, pilot="2026-11-23")
    assert bs.compare(before, dated) == 1  # a date alone is content, not a clock


def test_blanking_keeps_every_other_byte_and_skips_escaped_keys():
    text = '{"a": 1, "elapsed":  2.5e-3 , "provenance": {"commit": "x", "dirty": false}, "note": "say \\"host\\": 1"}'
    assert bs._blank_json_values(text, ("elapsed", "commit", "dirty", "host")) == (
        '{"a": 1, "elapsed":  "<elapsed>" , "provenance": {"commit": "<commit>", "dirty": "<dirty>"}, '
        '"note": "say \\"host\\": 1"}')
    assert bs._blank_json_values('{"provenance": {"commit": "x"}}', ("provenance", "commit")) == \
        '{"provenance": "<provenance>"}'
