"""When a finding is too small to decide: the Verdict enum, the Spearman exact p-value, the run-length rule."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from scipy.stats import spearmanr

from dganalysis.findings import (
    PAPER_STEPS,
    Verdict,
    decide,
    format_p,
    read_findings,
    replace_findings,
    spearman_min_p,
    spearman_test,
    spearman_too_small,
)


def brute_spearman_p(x, y) -> float:
    """Two-sided exact p by enumerating every pairing (the definition)."""
    obs = abs(spearmanr(x, y).statistic)
    stats = [abs(spearmanr(x, np.asarray(y)[list(p)]).statistic) for p in itertools.permutations(range(len(y)))]
    return float(np.mean(np.asarray(stats) >= obs - 1e-12))


@pytest.mark.parametrize("x,y", [([1, 2, 3, 4], [1, 2, 3, 4]), ([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]),
                                 ([3, 1, 2, 5, 4, 6], [1, 2, 3, 4, 6, 5])])
def test_spearman_exact_p_matches_enumeration(x, y):
    rho, p = spearman_test(x, y)
    assert rho == pytest.approx(spearmanr(x, y).statistic)
    assert p == pytest.approx(brute_spearman_p(x, y))


def test_four_models_cannot_decide_a_spearman_test():
    assert spearman_min_p(4) == pytest.approx(1 / 12)
    assert spearman_test([1, 2, 3, 4], [1, 2, 3, 4])[1] == pytest.approx(1 / 12)  # scipy's t approximation says 0
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
    out = decide(verdict, steps=10)
    assert out.startswith("not decided (too small: steps = 10 < 5,000")
    assert decide(verdict, steps=PAPER_STEPS) == verdict
    assert decide(verdict) == verdict  # steps unknown: unchanged


def test_a_short_run_keeps_a_positive_verdict():
    assert decide(Verdict.REPRODUCED, steps=10) == "reproduced"
    assert decide("not decided", steps=10) == "not decided"


def test_replace_findings_applies_the_rule_once(tmp_path):
    rows = [dict(paper="P", finding="f", ours="x", verdict=Verdict.NOT_REPRODUCED),
            dict(paper="P", finding="g", ours="y", verdict="reproduced")]
    replace_findings(tmp_path, "09", rows, steps=10)
    got = [r["verdict"] for r in read_findings(tmp_path)]
    assert got[0].startswith("not decided (too small: steps = 10") and got[1] == "reproduced"
    with pytest.raises(ValueError, match="verdict"):
        replace_findings(tmp_path, "09", [dict(rows[0], verdict="maybe")])
    assert len(read_findings(tmp_path)) == 2  # nothing removed before the check


def test_verdict_makers_use_the_enum():
    import pandas as pd

    from dganalysis.shift.findings import table3_findings

    t3 = pd.DataFrame({"rho_te": [0.9, 0.5, 0.1], "blue": [False] * 3, "diversity": [0.0] * 3,
                       "correlation": [0.6, 0.3, 0.0]})
    assert all(isinstance(r["verdict"], Verdict) for r in table3_findings(t3, rho_tr=0.1))
