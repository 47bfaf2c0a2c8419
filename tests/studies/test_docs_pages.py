"""dganalysis.studies.docs_pages: an executed run published into the docs folder (``dganalysis report --docs``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dganalysis.cli import main
from dganalysis.studies.docs_pages import publish
from dganalysis.studies.run_history import NotebookRun, record_run


def _run(out: Path, names: list[str]) -> None:
    (out / "notebooks").mkdir(parents=True)
    for name in names:
        nb = {"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "execution_count": 1,
                         "outputs": [{"output_type": "stream", "name": "stdout", "text": f"store at {out}/store\n"}]}],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (out / "notebooks" / f"{name}.ipynb").write_text(json.dumps(nb))
        record_run(out, NotebookRun(name, out / "notebooks" / f"{name}.ipynb", True, 60.0))
    rows = "\n".join(f"| [{n}](notebooks/{n}.ipynb) | ok | 1.0 | — |" for n in names)
    (out / "index.md").write_text(f"# dganalysis outputs — profile `quick`\n\nMade with dganalysis 0.1.0.\n\n"
                                  f"- audit {out}/store (sweep)\n\n| notebook | status | minutes | jobs |\n"
                                  f"|---|---|---|---|\n{rows}\n\n## {names[0]}\n\ndetails\n")


def test_publish_copies_the_notebooks_and_writes_a_page_without_machine_paths(tmp_path):
    out, docs = tmp_path / "outputs" / "quick", tmp_path / "docs" / "executed"
    _run(out, ["00_a", "01_b"])
    docs.mkdir(parents=True)
    (docs / "99_stale.ipynb").write_text("{}")
    written = publish(out, docs)
    assert [p.name for p in written] == ["00_a.ipynb", "01_b.ipynb", "index.md"]
    assert not (docs / "99_stale.ipynb").exists()
    nb = json.loads((docs / "00_a.ipynb").read_text())
    assert nb["cells"][0]["outputs"][0]["text"] == "store at outputs/quick/store\n"
    page = (docs / "index.md").read_text()
    assert str(tmp_path) not in page and "audit outputs/quick/store" in page
    assert "[00_a](00_a.ipynb)" in page and "](notebooks/" not in page
    assert "details" not in page  # only the summary above the first per-notebook section
    assert page.rstrip().endswith("00_a\n01_b\n```")


def test_publish_names_the_folder_when_there_is_no_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="no run recorded"):
        publish(tmp_path, tmp_path / "docs")
    out = tmp_path / "o"
    _run(out, ["00_a"])
    (out / "notebooks" / "00_a.ipynb").unlink()
    with pytest.raises(FileNotFoundError, match="00_a.ipynb"):
        publish(out, tmp_path / "docs")


def test_report_docs_flag(tmp_path, capsys):
    out = tmp_path / "outputs" / "quick"
    _run(out, ["00_a"])
    assert main(["report", "--outputs", str(out), "--docs", str(tmp_path / "d")]) == 0
    assert "1 executed notebook(s)" in capsys.readouterr().out
    assert (tmp_path / "d" / "00_a.ipynb").is_file()
