"""One study per notebook in one registry (:mod:`dganalysis.studies.study`): its parameter class, plan and design."""

import pytest

from dganalysis.studies.params import WorstCaseParams
from dganalysis.studies.plans import worst_case_plan
from dganalysis.studies.study import STUDIES, design_for, has_study, study
from dganalysis.validation import ConfigError


def test_a_study_binds_its_three_parts_under_the_notebooks_name():
    s = study("07_worst_case@variant")  # a run label names its notebook's study
    assert (s.name, s.params, s.plan) == ("07_worst_case", WorstCaseParams, worst_case_plan)
    assert s is STUDIES.get("07_worst_case") and has_study("07_worst_case@x") and not has_study("99_none")
    assert [c.key for c in s.claims(WorstCaseParams())] == [c.key for c in design_for("07_worst_case",
                                                                                      WorstCaseParams())]
    assert study("00_quickstart").design is None and study("00_quickstart").claims(
        study("00_quickstart").params()) == []


def test_unknown_notebook_and_wrong_parameters_are_refused():
    with pytest.raises(ConfigError, match=r"unknown notebook '07_worstcase'.*did you mean '07_worst_case'"):
        study("07_worstcase")
    with pytest.raises(ConfigError, match=r"design_for: parameter 'params': expected a WorstCaseParams"):
        design_for("07_worst_case", {"rhos": [0.0]})
