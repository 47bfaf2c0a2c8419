"""What a job needs and can be checked without training is checked before any job folder is written: a missing
dataset root, a broken layout, a missing weight file stop `sweep` (nothing written) and make `sweep --dry-run`
exit non-zero naming each problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dganalysis.cli import main
from dganalysis.data.benchmarks import BENCHMARKS
from dganalysis.preflight import data_problem, job_problems
from dganalysis.sweep import Sweep
from dganalysis.sweep.grid import make_jobs
from dganalysis.sweep.launcher import run_sweep
from dganalysis.validation import ConfigError

NO_WEIGHTS = {"pretrained": None}


def _pacs(root: Path, skip_env: str | None = None, empty_env: str | None = None) -> Path:
    """A PACS layout with empty image files (the layout check reads names, not pixels)."""
    b = BENCHMARKS["PACS"]
    for env in b.env_folders:
        if env == skip_env:
            continue
        for c in b.classes:
            d = root / "PACS" / env / c
            d.mkdir(parents=True)
            if env != empty_env:
                (d / "0.jpg").write_bytes(b"")
    return root


@pytest.fixture(autouse=True)
def _empty_weight_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("DGANALYSIS_RESNET50_AUGMIX", raising=False)


def _argv(store: Path, kwargs: dict, *extra: str) -> list[str]:
    return ["sweep", "--dataset", "PACS", "--dataset-kwargs", json.dumps(kwargs), "--algorithms", "ERM",
            "--steps", "2", "--checkpoint-freq", "1", "--store", str(store), *extra]


def test_missing_root_fails_the_dry_run_and_writes_nothing(tmp_path, capsys):
    store = tmp_path / "store"
    kwargs = {"root": str(tmp_path / "nowhere")}
    assert main(_argv(store, kwargs, "--hparams-overrides", json.dumps(NO_WEIGHTS), "--dry-run")) == 2
    out, err = capsys.readouterr()
    assert "4 pending" in out and "1 problem(s)" in err and "nowhere/PACS not found" in err and "--datasets PACS" in err
    assert main(_argv(store, kwargs, "--hparams-overrides", json.dumps(NO_WEIGHTS), "--device", "cpu")) == 2
    assert "nowhere/PACS not found" in capsys.readouterr().err
    assert not store.exists()  # no job folder, not even the store


def test_layout_problems_name_the_folder(tmp_path):
    assert data_problem("PACS", {"root": str(_pacs(tmp_path / "ok"))}) is None
    p = data_problem("PACS", {"root": str(_pacs(tmp_path / "a", skip_env="sketch"))})
    assert "sketch" in p and "not found" in p
    p = data_problem("PACS", {"root": str(_pacs(tmp_path / "b", empty_env="photo"))})
    assert "photo has no images" in p
    assert "needs root=" in data_problem("PACS", {})
    assert data_problem("RotatedDigits", {}) is None  # synthetic: no files to check


def test_weight_files_are_checked(tmp_path, monkeypatch):
    root = str(_pacs(tmp_path / "data"))
    jobs = make_jobs(Sweep(dataset="PACS", dataset_kwargs={"root": root}, algorithms=["ERM"], splits="leave_one_out",
                           n_hparams=1, n_trials=1, steps=2, checkpoint_freq=1))
    (problem,) = job_problems(jobs)  # DomainBed's default: timm's resnet50.ram_in1k, absent from the empty caches
    assert "resnet50.ram_in1k" in problem and "ERM on PACS" in problem
    weights = tmp_path / "augmix.safetensors"
    weights.write_bytes(b"")
    monkeypatch.setenv("DGANALYSIS_RESNET50_AUGMIX", str(weights))
    assert job_problems(jobs) == []
    jobs = make_jobs(Sweep(dataset="PACS", dataset_kwargs={"root": root}, algorithms=["ERM"], splits="leave_one_out",
                           n_hparams=1, n_trials=1, steps=2, checkpoint_freq=1,
                           hparams_overrides={"pretrained": str(tmp_path / "missing.pt"), "featurizer": "resnet18"}))
    (problem,) = job_problems(jobs)
    assert "missing.pt not found" in problem and "'pretrained'" in problem
    with pytest.raises(ConfigError, match="missing.pt not found"):
        run_sweep(jobs, tmp_path / "store", progress=False)
    assert not (tmp_path / "store").exists()
    status = run_sweep(jobs, tmp_path / "store", progress=False, dry_run=True)
    assert len(status.attrs["problems"]) == 1 and set(status["status"]) == {"pending"}


def test_sound_sweep_has_no_problems(tmp_path, capsys):
    kwargs = {"root": str(_pacs(tmp_path / "data"))}
    assert main(_argv(tmp_path / "store", kwargs, "--hparams-overrides", json.dumps(NO_WEIGHTS), "--dry-run")) == 0
    assert "problem" not in capsys.readouterr().err


def test_a_weight_file_torch_cannot_read_is_a_problem(tmp_path):
    import torch

    root = str(_pacs(tmp_path / "data"))
    good = tmp_path / "good.pt"
    torch.save({"state_dict": {"conv1.weight": torch.zeros(4, 3, 3, 3)}}, good)
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    html = tmp_path / "page.pt"
    html.write_text("<html>403 Forbidden</html>")
    no_tensors = tmp_path / "no_tensors.pt"
    torch.save({"epoch": 3}, no_tensors)

    def problems(path):
        return job_problems(make_jobs(Sweep(dataset="PACS", dataset_kwargs={"root": root}, algorithms=["ERM"],
                                            splits="leave_one_out", n_hparams=1, n_trials=1, steps=2,
                                            checkpoint_freq=1, hparams_overrides={"pretrained": str(path),
                                            "featurizer": "resnet18"})))

    assert problems(good) == []
    for bad in (truncated, html, no_tensors):
        (problem,) = problems(bad)
        assert f"checkpoint {bad} cannot be read by torch.load" in problem and "'pretrained'" in problem, problem
