"""The studies' designs (:mod:`dganalysis.studies.design`): each claim's power from stats.planning (its planning
functions are tested in tests/stats/test_planning.py), undecidable claims flagged, skipped claims recorded as
"not run", and the design shown by the dry run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from dganalysis.studies import design as d
from dganalysis.studies.findings import read_findings, replace_findings
from dganalysis.studies.runner import load_params
from dganalysis.studies.study import build_params, design_for
from dganalysis.verdicts import Verdict

ROOT = Path(__file__).resolve().parents[2]


def _nct_power(effect: float, n: int, level: float) -> float:
    """Two-sided paired t power by the noncentral t, written out here independently of stats.planning."""
    df, nc = n - 1, effect * math.sqrt(n)
    c = stats.t.isf(level / 2, df)
    return float(stats.nct.sf(c, df, nc) + stats.nct.cdf(-c, df, nc))


def test_a_claims_power_is_recomputed_not_typed():
    """The quick 03 design's Domain+ claim: its power is the simulated share of "reproduced" verdicts of the
    finding's own decision function (findings.dynamic), recomputed here from the same simulation and seed."""
    from dganalysis.findings.power import REPS, simulated_power

    p = build_params("03_dynamic_dg", load_params("quick", "03_dynamic_dg", ROOT))
    claim = next(c for c in design_for("03_dynamic_dg", p) if c.key == "D+d2-named")
    assert claim.kind == "decision"
    assert claim.power == pytest.approx(simulated_power(claim.decide, claim.simulate, claim.n, REPS, 0).power)
    assert claim.n == p.sweep.n_trials and claim.power >= d.MIN_POWER and claim.decidable and claim.runs


def test_undecidable_claims_are_flagged_with_the_reason():
    low = d.ClaimDesign("x", "small effect", "pilot", "paired", effect=0.5, n=6, level=0.05)
    assert not low.decidable and "power" in low.blocker and "< 0.5" in low.blocker
    short = d.ClaimDesign("y", "negative reading", "pilot", "measurement", negative_only=True, steps=300)
    assert not short.decidable and "steps = 300 < 5,000" in short.blocker
    assert d.ClaimDesign("y2", "same at paper length", "pilot", "measurement", negative_only=True,
                         steps=5000).decidable
    rank = d.ClaimDesign("z", "reorder", "pilot", "spearman", n=3)
    assert not rank.decidable and "n ≥ 5" in rank.blocker
    assert d.ClaimDesign("z5", "reorder", "pilot", "spearman", n=5).decidable
    assert "no expected effect" in d.ClaimDesign("w", "?", "none", "paired", effect=None, n=6).blocker
    big = d.ClaimDesign("v", "big", "pilot", "paired", effect=2.5, n=6, level=0.05)
    assert big.decidable and big.blocker == ""
    with pytest.raises(Exception, match="kind"):
        d.ClaimDesign("k", "c", "e", "anova")


@pytest.mark.parametrize("notebook", ["03_dynamic_dg", "04_leakage_oracle", "05_leaderboards", "07_worst_case"])
def test_quick_profile_trains_nothing_for_a_claim_it_cannot_decide(notebook):
    """A claim with runs of its own in the quick profile is decidable; one that is not is skipped or shares runs."""
    p = build_params(notebook, load_params("quick", notebook, ROOT))
    claims = design_for(notebook, p)
    assert claims
    own = [c for c in claims if c.runs and not c.shared]
    assert all(c.decidable for c in own), [(c.key, c.blocker) for c in own]


def test_skipped_claims_are_recorded_as_not_run(tmp_path):
    p = build_params("03_dynamic_dg", load_params("quick", "03_dynamic_dg", ROOT))
    claims = design_for("03_dynamic_dg", p)
    rows = d.not_run_findings(claims, "Zhang, Zhang & Liu (dynamic DG)")
    assert len(rows) == sum(not c.runs for c in claims) >= 4
    for r in rows:
        assert r["ours"].startswith("not run: ") and "the paper profile decides it with" in r["ours"]
        assert Verdict.parse(r["verdict"])[0] is Verdict.NOT_DECIDED
    replace_findings(tmp_path, "03", rows, steps=300)
    assert [r["verdict"] for r in read_findings(tmp_path)] == [r["verdict"] for r in rows]


def test_design_table_and_index_markdown(tmp_path):
    p = build_params("04_leakage_oracle", load_params("quick", "04_leakage_oracle", ROOT))
    claims = design_for("04_leakage_oracle", p)
    frame = d.design_frame(claims)
    assert isinstance(frame, pd.DataFrame) and list(frame["key"]) == ["LPFT", "C1", "C2", "C3", "C4"]
    c1 = next(c for c in claims if c.key == "C1")
    assert frame.loc[frame["key"] == "C1", "power"].iloc[0].startswith(f"{c1.power:.2f} ± ")  # simulated, with its SE
    d.write_design(tmp_path, "04_leakage_oracle", claims)
    d.write_design(tmp_path, "00_quickstart", [])
    lines = d.read_design_markdown(tmp_path)
    assert lines[0] == "### 00_quickstart" and "no claim tested" in lines[2]
    assert any(line.startswith("| C3 |") and "steps = 100 < 5,000" in line for line in lines)


def test_dry_run_prints_each_design_and_minutes(tmp_path):
    from dganalysis.studies.dryrun import dry_run, format_dry_run, notebook_minutes

    # an empty output root: every job still to train, whatever the repository's outputs/ holds
    result = dry_run("quick", ["03_dynamic_dg", "05_leaderboards"], root=ROOT, output_root=tmp_path)
    text = format_dry_run(result)
    assert "D+d2-named" in text and "CANNOT DECIDE" in text and "power 0." in text
    minutes = notebook_minutes(result)
    # 05 trains nothing on the quick profile: its one claim on our runs cannot be decided there (skip_undecidable)
    assert minutes["05_leaderboards"] == 0 and minutes["03_dynamic_dg"] > 0
    assert f"{minutes.sum():6.1f} min" in text
