"""Every params YAML names only parameters its notebook has, and every notebook is thin and parameterised."""

import json
from pathlib import Path

import papermill as pm
import pytest

from dganalysis.runner import INJECTED, list_notebooks, load_params

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = list_notebooks(ROOT)


def test_all_nine_studies_exist():
    assert [n[:2] for n in NOTEBOOKS] == ["00", "01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.mark.parametrize("name", NOTEBOOKS)
@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_profile_params_are_known(name, profile):
    params = load_params(profile, name, ROOT)  # raises on unknown names
    assert isinstance(params, dict)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_cell_and_no_outputs(name):
    path = ROOT / "notebooks" / f"{name}.ipynb"
    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{name}: exactly one cell tagged 'parameters'"
    assert set(INJECTED) <= set(pm.inspect_notebook(str(path)))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert not c.get("outputs"), f"{name}: notebooks are committed without outputs"
            assert "def " not in "".join(c["source"]), f"{name}: logic belongs in the library, not the notebook"
