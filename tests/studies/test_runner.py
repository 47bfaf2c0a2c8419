"""The notebook runner behind `dganalysis run`: parameter checks, failing notebooks, index."""

import json

import nbformat
import pytest

from dganalysis.studies.runner import load_params, run_notebooks


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


# --- variants: several runs of one notebook from one YAML (dganalysis.studies.runner module docstring) ---

FINDING = ("from dganalysis.studies.findings import record_finding\n"
           "record_finding(output_dir, '00a', 'Demo et al.', 'value is set', f'value {value}', 'reproduced')\n")


def test_variants_are_the_base_with_overrides_and_are_checked(tmp_path):
    from dganalysis.studies.runner import load_all_params, load_variants, run_targets

    root = _project(tmp_path, "pass")
    y = root / "params" / "quick" / "00_demo.yaml"
    y.write_text("value: 5\nvariants:\n  seven: {value: 7}\n  same_as_base: {}\n")
    base, variants = load_all_params("quick", "00_demo", root)
    assert base == {"value": 5} and variants == {"seven": {"value": 7}, "same_as_base": {"value": 5}}
    assert load_params("quick", "00_demo", root) == {"value": 5}  # the reserved key is no parameter
    targets = run_targets("quick", ["00_demo"], root)
    assert [(t.label, t.params) for t in targets] == [("00_demo", {"value": 5}), ("00_demo@seven", {"value": 7}),
                                                      ("00_demo@same_as_base", {"value": 5})]
    assert [t.label for t in run_targets("quick", ["00_demo"], root, {"00_demo": ["seven"]})] == \
        ["00_demo", "00_demo@seven"]
    assert [t.label for t in run_targets("quick", ["00_demo"], root, {})] == ["00_demo"]
    with pytest.raises(ValueError, match=r"00_demo.yaml: no variant\(s\) \['nine'\]"):
        run_targets("quick", ["00_demo"], root, {"00_demo": ["nine"]})
    bad = {
        "value: 5\nvariants:\n  'bad name': {value: 7}\n": r"00_demo.yaml \(variant 'bad name'\): a variant name is",
        "value: 5\nvariants:\n  a/b: {value: 7}\n": r"00_demo.yaml \(variant 'a/b'\): a variant name is",
        "value: 5\nvariants:\n  odd: {valeu: 7}\n": r"00_demo.yaml \(variant 'odd'\): unknown parameter\(s\) \['valeu'\]",
        "value: 5\nvariants:\n  odd: {output_dir: /x}\n": r"00_demo.yaml \(variant 'odd'\): \['output_dir'\] are set by",
        "value: 5\nvariants:\n  odd: {value: seven}\n": r"00_demo.yaml \(variant 'odd'\)",
        "value: 5\nvariants:\n  odd: [1]\n": r"00_demo.yaml \(variant 'odd'\): expected a mapping",
        "value: 5\nvariants:\n  odd: {variants: {}}\n": r"00_demo.yaml \(variant 'odd'\): variants cannot be nested",
        "value: 5\nvariants: [seven]\n": r"00_demo.yaml: 'variants' must map variant names",
    }
    for text, message in bad.items():
        y.write_text(text)
        with pytest.raises(ValueError, match=message):
            load_variants("quick", "00_demo", root)
        with pytest.raises(ValueError, match=message):  # before anything runs
            run_notebooks("quick", root=root, progress=False)
    assert not (root / "outputs").exists()


def test_injected_folders_of_a_variant(tmp_path):
    from dganalysis.studies.runner import injected_params

    base = injected_params("paper", tmp_path, tmp_path / "o")
    assert base == {"output_dir": str((tmp_path / "o" / "paper").resolve()),
                    "store_dir": str((tmp_path / "o" / "paper" / "store").resolve()),
                    "data_dir": str((tmp_path / "o" / "data").resolve())}
    var = injected_params("paper", tmp_path, tmp_path / "o", "pacs")
    assert var == {**base, "output_dir": str((tmp_path / "o" / "paper" / "variants" / "pacs").resolve())}


def test_variant_runs_write_their_own_outputs_and_index_rows(tmp_path):
    root = _project(tmp_path, WRITE + FINDING)
    (root / "params" / "quick" / "00_demo.yaml").write_text("value: 5\nvariants:\n  seven: {value: 7}\n")
    runs = run_notebooks("quick", root=root, progress=False)
    assert [r.name for r in runs] == ["00_demo", "00_demo@seven"] and all(r.ok for r in runs), runs
    out = root / "outputs" / "quick"
    var = out / "variants" / "seven"
    assert (out / "notebooks" / "00_demo.ipynb").is_file() and (out / "notebooks" / "00_demo@seven.ipynb").is_file()
    # nothing of the base run is overwritten: each run has its own figures, tables and findings
    assert (out / "tables" / "demo_table.csv").read_text() == "v\n5\n"
    assert (var / "tables" / "demo_table.csv").read_text() == "v\n7\n" and (var / "figures" / "demo.png").is_file()
    assert "value 5" in (out / "findings" / "00a.json").read_text()
    assert "value 7" in (var / "findings" / "00a.json").read_text()
    assert runs[1].figures and all(var in p.parents for p in runs[1].figures + runs[1].tables)
    index = (out / "index.md").read_text()
    assert "| [00_demo@seven](notebooks/00_demo@seven.ipynb) | ok |" in index and "## 00_demo@seven" in index
    assert "[png](variants/seven/figures/demo.png)" in index and "[png](figures/demo.png)" in index
    assert "| Demo et al. | value is set | **reproduced** | value 5 |" in index
    assert "| Demo et al. [variant seven] | value is set | **reproduced** | value 7 |" in index
    assert set(json.loads((out / "runs.json").read_text())) == {"00_demo", "00_demo@seven"}
    page = (out / "report.html").read_text()
    assert 'id="nb-00_demo_seven"' in page and 'id="fig-variants_seven_demo"' in page and 'id="fig-demo"' in page


def test_without_variants_nothing_changes(tmp_path):
    root = _project(tmp_path, WRITE + FINDING)
    (root / "params" / "quick" / "00_demo.yaml").write_text("value: 5\n")
    runs = run_notebooks("quick", root=root, progress=False)
    out = root / "outputs" / "quick"
    assert [r.name for r in runs] == ["00_demo"] and not (out / "variants").exists()
    index = (out / "index.md").read_text()
    assert "variant" not in index and "variants/" not in (out / "report.html").read_text()
    assert "- figure `demo`: [png](figures/demo.png) · [pdf](figures/demo.pdf)" in index
    assert "- table `demo_table`: [md](tables/demo_table.md) · [csv](tables/demo_table.csv) · " \
           "[tex](tables/demo_table.tex)" in index


def test_no_quick_yaml_declares_variants():
    """The quick profile runs exactly as before variants existed."""
    from pathlib import Path

    import yaml

    from dganalysis.studies.runner import VARIANTS_KEY

    root = Path(__file__).resolve().parents[2]
    assert not [p.name for p in (root / "params" / "quick").glob("*.yaml")
                if VARIANTS_KEY in (yaml.safe_load(p.read_text()) or {})]
