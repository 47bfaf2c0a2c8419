"""The WC-DG poster's table for claim (b) (dganalysis.dro.study.attainment_table); the claims themselves are decided
by dganalysis.findings.worst_case (tests/findings/test_worst_case.py)."""

import pandas as pd
import pytest

from dganalysis.dro import study


def test_attainment_table():
    cmp = pd.DataFrame({"rho_input": [0.0, 1.0, 2.0], "input_primal": [0.5, 0.9, 1.5], "rep_wc": [0.5, 1.3, 1.5],
                        "nominal": [0.5, 0.5, 0.5]})
    a = study.attainment_table(cmp)
    assert list(a["rho_input"]) == [1.0, 2.0]  # no excess at ρ = 0
    assert a["attained"].tolist() == pytest.approx([0.4 / 0.8, 1.0])
    assert a["rep/input"].iloc[0] == pytest.approx(1.3 / 0.9)
