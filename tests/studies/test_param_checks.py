"""A params YAML is checked against the notebook's own parameters cell (dganalysis.studies.param_checks): each value
of the kind of the notebook's default, the message naming the file and the parameter."""

from __future__ import annotations

import pytest

from dganalysis.studies.param_checks import check_notebook_params
from dganalysis.validation import ConfigError


def test_notebook_parameter_kinds():
    cell = {"steps": {"default": "40"}, "lr": {"default": "1e-3"}, "angles": {"default": "[0, 45]"},
            "flag": {"default": "False"}, "path": {"default": "None"}, "expr": {"default": "np.arange(3)"}}
    check_notebook_params({"steps": 100, "lr": 1, "angles": [0, 15], "flag": True, "path": "x", "expr": 3,
                           "not_in_the_cell": object()}, cell, "p.yaml")
    for name, value in (("steps", 40.9), ("steps", True), ("lr", "1.0e6"), ("angles", 15), ("flag", "no")):
        with pytest.raises(ConfigError, match=rf"p\.yaml: parameter '{name}' .*expected"):
            check_notebook_params({name: value}, cell, "p.yaml")
