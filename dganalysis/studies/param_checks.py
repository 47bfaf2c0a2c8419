"""Checks of a notebook's params YAML against the notebook's own parameters cell, before papermill runs it.

The rule is :func:`dganalysis.validation.like`: a value must be of the kind of the notebook's default, as read by
papermill's ``inspect_notebook``; its messages name the YAML file and the parameter.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from dganalysis.validation import like


def check_notebook_params(params: Mapping[str, Any], inspected: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Each value of a params YAML must be of the kind of the notebook's default (papermill's
    ``inspect_notebook`` output); parameters whose default is not a literal, or ``None``, take anything."""
    for name, value in params.items():
        info = inspected.get(name)
        if info is None:
            continue
        try:
            default = ast.literal_eval(str(info.get("default")))
        except (ValueError, SyntaxError):
            continue
        like(default)(value, f"{where}: parameter {name!r} (the notebook's default is {info.get('default')})")
