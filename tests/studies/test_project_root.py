"""Where ``run`` finds notebooks/ and params/ (:func:`dganalysis.studies.runner.repo_root`) and where it writes
(:func:`~dganalysis.studies.runner.outputs_root`): ``$DGANALYSIS_PROJECT``, the current folder, the checkout, the copy an
installed wheel ships; ``list`` without any of them. The wheel itself: tests/project/test_wheel.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from dganalysis.cli import main
from dganalysis.studies import runner


def _project(folder: Path) -> Path:
    (folder / "notebooks").mkdir(parents=True)
    (folder / "params" / "quick").mkdir(parents=True)
    (folder / "notebooks" / "00_demo.ipynb").write_text("{}")
    return folder


@pytest.fixture
def away(tmp_path, monkeypatch):
    """No project anywhere: an empty current folder, the package imported from outside a checkout, no wheel copy."""
    monkeypatch.delenv(runner.PROJECT_ENV, raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(runner, "__file__", str(tmp_path / "site-packages" / "dganalysis" / "studies" / "runner.py"))
    shared = tmp_path / "prefix" / "share" / "dganalysis"
    monkeypatch.setattr(runner, "installed_projects", lambda: [shared])
    return shared


def test_the_environment_variable_comes_first(tmp_path, monkeypatch, away):
    proj = _project(tmp_path / "mine")
    monkeypatch.setenv(runner.PROJECT_ENV, str(proj))
    assert runner.repo_root() == proj and runner.outputs_root(proj) == proj / "outputs"
    monkeypatch.setenv(runner.PROJECT_ENV, str(tmp_path / "nothing"))
    with pytest.raises(FileNotFoundError, match=r"\$DGANALYSIS_PROJECT=.*nothing: expected a folder holding"):
        runner.repo_root()


def test_the_wheels_copy_is_read_and_outputs_go_to_the_current_folder(away):
    with pytest.raises(FileNotFoundError, match=r"cannot find the notebooks/ and params/ folders: run from a "
                                                r"checkout .* or set \$DGANALYSIS_PROJECT"):
        runner.repo_root()
    _project(away)
    assert runner.repo_root() == away and runner.list_notebooks() == ["00_demo"]
    assert runner.outputs_root(away) == Path.cwd() / "outputs"  # never into the installed copy
    assert runner.injected_params("quick", away)["store_dir"] == str(Path.cwd() / "outputs" / "quick" / "store")


def test_the_current_folder_before_the_wheels_copy(tmp_path, monkeypatch, away):
    _project(away)
    here = _project(tmp_path / "checkout")
    monkeypatch.chdir(here)
    assert runner.repo_root() == here and runner.outputs_root(here) == here / "outputs"


def test_list_needs_no_notebooks(away, capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "notebooks:  none found (cannot find the notebooks/ and params/ folders" in out
    assert "ERM" in out and "RotatedMNIST" in out
