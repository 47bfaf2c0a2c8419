"""bench/sweep_throughput.py's 224-px slice: DomainBed's ``train.py`` commands for the PACS-layout runs, and both
sides end to end on the smallest slice (one run of one step, one image per class, no loader workers). The end-to-end
run evaluates a ResNet-50 at 224 px on every split of both sides, ~25 s on a 2-core CPU for a bench's plumbing, so it
runs with the slow reference checks (``DGA_SLOW_REFERENCE=1``) and is skipped, saying so, otherwise."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import sweep_throughput as st  # noqa: E402


def _flags(argv: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    for i, a in enumerate(argv):
        if a.startswith("--"):
            out[a] = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else True
    return out


def test_domainbed_commands_number_pacs_test_envs_as_domainbed_and_keep_our_hparams_out(tmp_path):
    jobs = st.pacs_jobs(tmp_path / "pacs", runs=5, steps=3, freq=2, batch=4)
    cmds = st.domainbed_commands(jobs, tmp_path / "pacs", tmp_path / "out", 8, tmp_path / "runner.py")
    envs = ["A", "C", "P", "S"]  # DomainBed's PACS.ENVIRONMENTS: its --test_envs numbering
    for k, (job, cmd) in enumerate(zip(jobs, cmds)):
        argv = shlex.split(cmd)
        flags = _flags(argv[3:])
        assert argv[2] == "8" and flags["--skip_model_save"] is True and flags["--dataset"] == "PACS" and flags["--steps"] == "3"
        assert flags["--test_envs"] == str(envs.index(job.test_domains[0])) == str(k % 4)
        assert flags["--trial_seed"] == str(k // 4) and flags["--seed"] == str(job.domainbed_seed(envs))
        assert json.loads(flags["--hparams"]) == {"batch_size": 4, "resnet50_augmix": False, "resnet_dropout": 0.0}
        assert flags["--output_dir"] == str(tmp_path / "out" / f"run{k}")
    assert jobs[0].hparams_overrides["pretrained"] == "domainbed"  # ours loads the same weight file


def test_sides_and_their_precisions():
    assert st.parse_side("alone") == ("alone", "auto") and st.parse_side("batched:fp32") == ("batched", "fp32")
    assert st.parse_side("domainbed") == ("domainbed", "") and st.parse_side("domainbed:2") == ("domainbed", "2")
    for bad in ("domainbed:fp32", "alone:fp16", "solo"):
        with pytest.raises(SystemExit, match="unknown side"):
            st.parse_side(bad)


@pytest.mark.skipif(not os.environ.get("DOMAINBED_SRC") or os.environ.get("DGA_SLOW_REFERENCE") != "1",
                    reason="a bench's end-to-end run (~25 s on 2 cores): set DOMAINBED_SRC to a DomainBed checkout and "
                           "DGA_SLOW_REFERENCE=1 to run its train.py and ours on the 224-px slice")
def test_224_slice_runs_domainbeds_train_py_and_ours(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TORCH_HOME", raising=False)
    st.main(["--slices", "224", "--runs", "1", "--steps", "1", "--sides", "domainbed,alone:fp32",
             "--domainbed-workers", "0", "--pacs-per-class", "1", "--batch-size", "2", "--keep", str(tmp_path)])
    out = capsys.readouterr().out
    assert "FAKE torchvision ResNet-50 file" in out and "TORCH_HOME" not in os.environ
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.strip().startswith(("domainbed ", "alone:fp32 "))}
    assert rows["domainbed"][1] == rows["alone:fp32"][1] == "fp32" and float(rows["domainbed"][3]) == 1.0
    assert (tmp_path / "torch" / "hub" / "checkpoints" / "resnet50-0676ba61.pth").is_file()
    theirs = [json.loads(line) for line in (tmp_path / "224_domainbed_0" / "run0" / "results.jsonl").open()]
    assert [r["step"] for r in theirs] == [0] and theirs[0]["args"]["test_envs"] == [0]
    assert not theirs[0]["hparams"]["resnet50_augmix"] and not theirs[0]["hparams"]["resnet18"]  # ResNet-50
    ours = [json.loads(line) for f in (tmp_path / "224_alone_fp32_0").glob("*/results.jsonl") for line in f.open()]
    assert [r["step"] for r in ours] == [0] and ours[0]["precision"] == "fp32"
    assert ours[0]["args"]["test_envs"] == [0]
