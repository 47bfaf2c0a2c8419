"""Notebooks people can diff and review: each ``.ipynb`` has a ``py:percent`` twin kept in sync
(``notebooks/jupytext.toml``; re-sync with ``jupytext --sync notebooks/*.ipynb``), and notebooks stay thin:
no code cell but the ``parameters`` cell is longer than :data:`MAX_LINES` lines (logic belongs in the library).
"""

from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
IPYNB = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
MAX_LINES = 15


def _cells(nb) -> list[tuple[str, str]]:
    """(cell type, source) of every cell; outputs, ids and metadata are not compared."""
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


def test_notebooks_found():
    assert len(IPYNB) >= 8, f"expected the study notebooks in {NOTEBOOKS}, found {[p.name for p in IPYNB]}"
    assert 'formats = "ipynb,py:percent"' in (NOTEBOOKS / "jupytext.toml").read_text()


@pytest.mark.parametrize("ipynb", IPYNB, ids=lambda p: p.stem)
def test_py_percent_twin_in_sync(ipynb: Path):
    py = ipynb.with_suffix(".py")
    fix = f"run `jupytext --sync notebooks/{ipynb.name}` (or `jupytext --to py:percent` to take the .ipynb as the source)"
    assert py.is_file(), f"{py.name} missing: {fix}"
    text = jupytext.read(py, fmt="py:percent")
    assert _cells(nbformat.read(ipynb, as_version=4)) == _cells(text), f"{ipynb.name} and {py.name} differ: {fix}"


def test_out_of_sync_pair_is_detected(tmp_path):
    """The comparison above can fail: an edited cell in the .py is seen."""
    src = IPYNB[0]
    nb = nbformat.read(src, as_version=4)
    py = tmp_path / "x.py"
    jupytext.write(nb, py, fmt="py:percent")
    assert _cells(jupytext.read(py, fmt="py:percent")) == _cells(nb)
    py.write_text(py.read_text().replace("# %%", "# %%\nx = 1  # an edit only in the script", 1))
    assert _cells(jupytext.read(py, fmt="py:percent")) != _cells(nb)


def long_cells(nb, max_lines: int = MAX_LINES) -> list[tuple[int, int]]:
    """(cell index, line count) of each code cell over ``max_lines`` lines, the ``parameters`` cell excepted."""
    return [(i, len(c.source.strip().splitlines())) for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])
            and len(c.source.strip().splitlines()) > max_lines]


def test_long_cells_are_found():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("\n".join(f"p{i} = {i}" for i in range(40)), metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("\n".join(f"x{i} = {i}" for i in range(MAX_LINES))),
        nbformat.v4.new_code_cell("\n".join(f"y{i} = {i}" for i in range(MAX_LINES + 1))),
        nbformat.v4.new_markdown_cell("\n".join("text" for _ in range(40))),
    ])
    assert long_cells(nb) == [(2, MAX_LINES + 1)]


@pytest.mark.parametrize("ipynb", IPYNB, ids=lambda p: p.stem)
def test_code_cells_are_short(ipynb: Path):
    bad = long_cells(nbformat.read(ipynb, as_version=4))
    assert not bad, (f"{ipynb.name}: code cells over {MAX_LINES} lines (cell index, lines): {bad}; "
                     "move the logic into dganalysis/ (with tests) and call it from the notebook")


def test_library_does_not_name_notebooks_by_number():
    """Library modules say what they compute, not which notebook uses them ("notebook 06", "notebook 04's");
    notebooks may name library modules, not the other way round. The runner layer keys runs by notebook file name
    (``04_leakage_oracle``), which this does not count."""
    import re

    package = NOTEBOOKS.parent / "dganalysis"
    pattern = re.compile(r"\bnotebooks? \d\d\b|(?<![\w/.-])0\d's\b", re.IGNORECASE)
    hits = [f"{p.relative_to(package.parent)}:{i}: {line.strip()}" for p in sorted(package.rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not hits, "library modules naming notebooks by number:\n" + "\n".join(hits)
    assert pattern.search("as notebook 06 needs") and pattern.search("06's shift map")
