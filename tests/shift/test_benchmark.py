"""Notebook 06's Tables 1–2 inputs (dganalysis.shift.benchmark), moved out of the notebook."""

import math

import pandas as pd
import pytest

from dganalysis.shift.benchmark import accuracy_by_dataset, dominant_shift


def test_accuracy_by_dataset_by_hand():
    # trial 0 of ERM on A has two test-domain rows (0.7, 0.9 → 0.8); trial 1 one row (0.9)
    selected = pd.DataFrame({
        "dataset": ["A", "A", "A", "A", "B"], "algorithm": ["ERM", "ERM", "ERM", "VREx", "ERM"],
        "trial_seed": [0, 0, 1, 0, 0], "acc": [0.7, 0.9, 0.9, 0.5, 0.6]})
    out = accuracy_by_dataset(selected).set_index(["dataset", "algorithm"])
    assert math.isclose(out.loc[("A", "ERM"), "acc"], 85.0)
    assert math.isclose(out.loc[("A", "ERM"), "se"], 100 * 0.1 / math.sqrt(2) / math.sqrt(2))  # std(0.8, 0.9)/√2
    assert out.loc[("A", "ERM"), "n"] == 2 and math.isnan(out.loc[("A", "VREx"), "se"])  # one trial: SE undefined
    with pytest.raises(ValueError, match=r"lacks columns \['trial_seed'\]"):
        accuracy_by_dataset(selected.drop(columns="trial_seed"))


def test_dominant_shift_from_the_map_with_overrides():
    shift_map = pd.DataFrame({"dataset": ["ColoredDigits", "RotatedDigits"], "dominant": ["correlation", "diversity"]})
    assert dominant_shift(shift_map) == {"ColoredDigits": "correlation", "RotatedDigits": "diversity"}
    assert dominant_shift(shift_map, {"RotatedDigits": "correlation", "PACS": "diversity"}) == {
        "ColoredDigits": "correlation", "RotatedDigits": "correlation", "PACS": "diversity"}
    with pytest.raises(ValueError, match="ranking_dominant"):
        dominant_shift(shift_map, {"PACS": "both"})
