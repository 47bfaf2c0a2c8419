"""Notebook 06's Table 3 findings: verdicts on hand-made tables."""

import pandas as pd
import pytest

from dganalysis.shift.findings import table3_findings


def _t3(cor, div=(0.0, 0.0, 0.0), blue=(1.0, 0.0)):
    rows = [{"rho_te": r, "blue": False, "diversity": d, "correlation": c, "correlation_se": 0.01}
            for r, c, d in zip((0.9, 0.5, 0.1), cor, div)]
    rows.append({"rho_te": 0.1, "blue": True, "diversity": blue[0], "correlation": blue[1], "correlation_se": 0.0})
    return pd.DataFrame(rows)


def test_paper_like_table_is_reproduced():
    rows = table3_findings(_t3((0.69, 0.43, 0.04)), rho_tr=0.1)
    assert [r["verdict"] for r in rows] == ["reproduced", "reproduced"]
    assert "0.69 / 0.43 / 0.04 at ρ_te 0.9 / 0.5 / 0.1" in rows[0]["ours"]


@pytest.mark.parametrize("cor,div", [((0.3, 0.43, 0.04), (0, 0, 0)),   # not monotone
                                     ((0.69, 0.43, 0.04), (0.2, 0, 0)),  # spurious diversity
                                     ((0.05, 0.045, 0.04), (0, 0, 0))])  # rise within noise
def test_failures_are_not_reproduced(cor, div):
    assert table3_findings(_t3(cor, div), rho_tr=0.1)[0]["verdict"] == "not reproduced"


def test_blue_row_needs_diversity_not_correlation():
    assert table3_findings(_t3((0.69, 0.43, 0.04), blue=(0.3, 0.0)), rho_tr=0.1)[1]["verdict"] == "not reproduced"
    assert table3_findings(_t3((0.69, 0.43, 0.04), blue=(0.9, 0.2)), rho_tr=0.1)[1]["verdict"] == "not reproduced"


def test_missing_columns_named():
    with pytest.raises(ValueError, match="lacks columns"):
        table3_findings(pd.DataFrame({"rho_te": [0.9]}), rho_tr=0.1)
