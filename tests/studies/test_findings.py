"""dganalysis.studies.findings: findings records and the index summary; when a finding is too small to decide (the Verdict
enum, when a Spearman test over n items cannot reach p < α, the run-length rule)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dganalysis.studies.findings import (
    findings_markdown,
    findings_prose,
    read_findings,
    record_finding,
    replace_findings,
)
from dganalysis.studies.runner import NotebookRun, write_index
from dganalysis.verdicts import PAPER_STEPS, Verdict, format_p, spearman_too_small, verdict_to_record


def test_record_read_and_index_summary(tmp_path):
    record_finding(tmp_path, "07a", "WC-DG poster", "worst case high near sources", "2.1 vs 0.3", "reproduced")
    record_finding(tmp_path, "03a", "Zhang, Zhang & Liu", "reversals | swap", "0 of 10", "not decided")
    rows = read_findings(tmp_path)
    assert [r["key"] for r in rows] == ["03a", "07a"]
    md = findings_markdown(rows)
    assert md[0].startswith("| paper") and "reversals \\| swap" in md[2] and "**not decided**" in md[2]
    record_finding(tmp_path, "03a", "Zhang, Zhang & Liu", "reversals", "1 of 10", "reproduced")  # replaced
    assert len(read_findings(tmp_path)) == 2
    (tmp_path / "findings" / "bad.json").write_text("{")
    assert read_findings(tmp_path)[-1]["ours"] == "unreadable record bad.json"
    index = write_index(tmp_path, "quick", [NotebookRun("03_x", Path("n.ipynb"), True, 90.0, "", [], [])]).read_text()
    assert index.index("## Summary") < index.index("| notebook | status")
    assert "1 of 10" in index and "1.5 min in total" in index
    with pytest.raises(ValueError, match="verdict"):
        record_finding(tmp_path, "x", "p", "f", "o", "maybe")
    with pytest.raises(ValueError, match="key"):
        record_finding(tmp_path, "../x", "p", "f", "o", "partly")
    assert findings_markdown([]) == ["(no notebook recorded a finding yet)"]


def test_replace_findings_drops_stale_lines(tmp_path):
    row = dict(paper="P", finding="f", ours="1", verdict="partly")
    replace_findings(tmp_path, "04", [row, row, row])
    replace_findings(tmp_path, "07", [row])
    replace_findings(tmp_path, "04", [row])
    assert [r["key"] for r in read_findings(tmp_path)] == ["04a", "07a"]
    with pytest.raises(ValueError, match="verdict"):
        replace_findings(tmp_path, "04", [dict(row, verdict="?")])
    assert len(read_findings(tmp_path)) == 2  # nothing removed on bad input


def test_every_row_states_its_data(tmp_path):
    import numpy as np

    from dganalysis.data.dataset import Domain, DomainDataset
    from dganalysis.data.provenance import data_label

    def ds(info, n=(5, 7)):
        doms = [Domain(name, np.zeros((k, 1, 4, 4), np.uint8), np.zeros(k, np.int64), {}) for name, k in zip("ab", n)]
        return DomainDataset("X", ["0"], doms, info)

    real = data_label(ds({"source": "Fashion-MNIST (Xiao et al. 2017): 70,000", "n_per_domain": 5}), ["a", "b"])
    assert real.startswith("real Fashion-MNIST (X, 5 a domain, subsampled), 4×4 px") and "images per test domain: a: 5, b: 7" in real
    sim = data_label(ds({"source": "PaHCC (Zhang) + SIMULATED handwriting", "writers_simulated": True}), ["b"], "gray")
    assert sim.startswith("SIMULATED PaHCC (X)") and sim.endswith("images per test domain: b: 7; gray")
    with pytest.raises(ValueError, match=r"\['z'\] not in X's domains \['a', 'b'\]"):
        data_label(ds({}), ["z"])
    row = dict(paper="P", finding="f", ours="1", verdict="partly")
    replace_findings(tmp_path, "04", [row, dict(row, data="published numbers")], data=real)
    rows = read_findings(tmp_path)
    assert [r["data"] for r in rows] == [real, "published numbers"]
    md = findings_markdown(rows + [dict(row, key="old")])  # a record from before this column
    assert md[0].endswith("| data (real or SIMULATED; test images) |") and all(line.count(" | ") == 4 for line in md[2:])
    assert md[2].endswith(f"| {real} |") and md[4].endswith("| not stated |")


def test_findings_prose_is_written_from_the_rows():
    """The notebooks' sentences about their run come from the findings rows: other numbers, other words."""
    rows = [dict(paper="P", finding="leakage at K=1 is positive", ours="+4.09 [+1.86, +6.32] pts", verdict="reproduced",
                 data="real Fashion-MNIST"),
            dict(paper="P", finding="leakage falls with K", ours="Δ=-0.10", verdict="not decided")]
    text = findings_prose(rows)
    assert text.splitlines() == [
        "* leakage at K=1 is positive: **reproduced**; this run: +4.09 [+1.86, +6.32] pts (data: real Fashion-MNIST).",
        "* leakage falls with K: **not decided**; this run: Δ=-0.10."]
    other = findings_prose([{**rows[0], "ours": "+0.20 [-1.0, +1.4] pts", "verdict": "not decided"}])
    assert "+4.09" not in other and "+0.20" in other and "**not decided**" in other
    assert findings_prose([]) == "No finding was recorded by this run."


def test_notebooks_type_no_run_numbers_into_their_prose():
    """The sentences that once carried one quick run's numbers are rendered from the findings instead."""
    root = Path(__file__).resolve().parents[2] / "notebooks"
    for name in ("04_leakage_oracle", "05_leaderboards"):
        text = (root / f"{name}.py").read_text()
        assert "The one quick run" not in text and "display(Markdown(findings_prose(" in text, name
    assert "+4.09" not in (root / "04_leakage_oracle.py").read_text()
    assert "p = 0.042" not in (root / "05_leaderboards.py").read_text()


def test_four_models_cannot_decide_a_spearman_test():
    assert spearman_too_small(4).startswith("not decided (too small: n = 4")
    assert spearman_too_small(5) is None
    assert Verdict.parse(spearman_too_small(4))[0] is Verdict.NOT_DECIDED


def test_p_is_never_printed_as_zero():
    assert format_p(0.0) == "p<0.0001" and format_p(1e-9) == "p<0.0001"
    assert format_p(1 / 12) == "p=0.083" and format_p(float("nan")) == "p=n/a"


def test_verdict_parse_and_text():
    assert Verdict.parse("not reproduced") == (Verdict.NOT_REPRODUCED, "")
    assert Verdict.parse("reproduced") == (Verdict.REPRODUCED, "")
    assert Verdict.parse("not decided (too small: n = 3)") == (Verdict.NOT_DECIDED, "too small: n = 3")
    assert f"{Verdict.PARTLY}" == "partly" and json.dumps([Verdict.PARTLY]) == '["partly"]'
    with pytest.raises(ValueError, match="verdict"):
        Verdict.parse("probably")


@pytest.mark.parametrize("verdict", ["not reproduced", "partly"])
def test_a_short_run_cannot_refute(verdict):
    out = verdict_to_record(verdict, steps=10)
    assert out.startswith("not decided (too small: steps = 10 < 5,000")
    assert verdict_to_record(verdict, steps=PAPER_STEPS) == verdict
    assert verdict_to_record(verdict) == verdict  # steps unknown: unchanged


def test_a_short_run_keeps_a_positive_verdict():
    assert verdict_to_record(Verdict.REPRODUCED, steps=10) == "reproduced"
    assert verdict_to_record("not decided", steps=10) == "not decided"


def test_replace_findings_applies_the_rule_once(tmp_path):
    rows = [dict(paper="P", finding="f", ours="x", verdict=Verdict.NOT_REPRODUCED),
            dict(paper="P", finding="g", ours="y", verdict="reproduced")]
    replace_findings(tmp_path, "09", rows, steps=10)
    got = [r["verdict"] for r in read_findings(tmp_path)]
    assert got[0].startswith("not decided (too small: steps = 10") and got[1] == "reproduced"
    with pytest.raises(ValueError, match="verdict"):
        replace_findings(tmp_path, "09", [dict(rows[0], verdict="maybe")])
    assert len(read_findings(tmp_path)) == 2  # nothing removed before the check
