"""The notebook runner behind `dganalysis run`: parameter checks, failing notebooks, index."""

import nbformat
import pytest

from dganalysis.runner import load_params, run_notebooks


def _project(tmp_path, body: str):
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell(
        'output_dir = "out"\nstore_dir = "store"\ndata_dir = "data"\nvalue = 1', metadata={"tags": ["parameters"]}
    )
    nb.cells = [params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "params" / "quick").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks" / "00_demo.ipynb")
    return tmp_path


WRITE = (
    "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt, pandas as pd\n"
    "from dganalysis import plots\nfig, ax = plt.subplots(); ax.plot([value, 2])\n"
    "plots.save_figure(fig, 'demo', output_dir)\n"
    "plots.save_table(pd.DataFrame({'v': [value]}), 'demo_table', output_dir)\n"
)


def test_run_writes_outputs_and_index(tmp_path):
    root = _project(tmp_path, WRITE)
    (root / "params" / "quick" / "00_demo.yaml").write_text("value: 5\n")
    runs = run_notebooks("quick", root=root, progress=False)
    assert runs[0].ok, runs[0].error
    out = root / "outputs" / "quick"
    assert (out / "notebooks" / "00_demo.ipynb").is_file()
    assert (out / "figures" / "demo.png").is_file() and (out / "tables" / "demo_table.csv").read_text() == "v\n5\n"
    index = (out / "index.md").read_text()
    assert "00_demo" in index and "figures/demo.png" in index and "tables/demo_table.md" in index
    # the HTML report is written after the run and linked from the index
    page = (out / "report.html").read_text()
    assert "[report.html](report.html)" in index and 'id="nb-00_demo"' in page and "data:image/png;base64," in page


def test_unknown_parameter_is_an_error_naming_the_file(tmp_path):
    root = _project(tmp_path, "pass")
    (root / "params" / "quick" / "00_demo.yaml").write_text("valeu: 5\n")
    with pytest.raises(ValueError, match=r"00_demo.yaml: unknown parameter\(s\) \['valeu'\]"):
        load_params("quick", "00_demo", root)
    (root / "params" / "quick" / "00_demo.yaml").write_text("output_dir: /x\n")
    with pytest.raises(ValueError, match="set by the runner"):
        load_params("quick", "00_demo", root)
    with pytest.raises(FileNotFoundError, match="profile 'paper'"):
        load_params("paper", "00_demo", root)
    with pytest.raises(ValueError, match="unknown notebook"):
        run_notebooks("quick", ["99_none"], root=root)


def test_failing_notebook_is_saved_and_reported(tmp_path):
    root = _project(tmp_path, "raise RuntimeError('boom in cell two')")
    (root / "params" / "quick" / "00_demo.yaml").write_text("{}\n")
    runs = run_notebooks("quick", root=root, progress=False)
    assert not runs[0].ok and "RuntimeError: boom in cell two" in runs[0].error
    saved = nbformat.read(root / "outputs" / "quick" / "notebooks" / "00_demo.ipynb", as_version=4)
    assert any(o.get("ename") == "RuntimeError" for c in saved.cells for o in c.get("outputs", []))
    assert "FAILED" in (root / "outputs" / "quick" / "index.md").read_text()


def test_index_keeps_notebooks_not_rerun(tmp_path):
    root = _project(tmp_path, WRITE)
    nb = root / "notebooks" / "00_demo.ipynb"
    (root / "notebooks" / "01_other.ipynb").write_text(nb.read_text().replace("'demo'", "'other'"))
    for n in ("00_demo", "01_other"):
        (root / "params" / "quick" / f"{n}.yaml").write_text("{}\n")
    run_notebooks("quick", root=root, progress=False)
    run_notebooks("quick", ["01_other"], root=root, progress=False)
    index = (root / "outputs" / "quick" / "index.md").read_text()
    assert "## 00_demo" in index and "## 01_other" in index and "figures/demo.png" in index
