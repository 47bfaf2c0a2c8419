"""The drop-in's ``multi_gpu`` launcher packs several commands per GPU (fake GPUs: shell commands that report the
environment they were started with; a fake ``nvidia-cuda-mps-control``)."""

from __future__ import annotations

import json

import pytest

from dganalysis.scripts import sweep as drop_in_sweep
from dganalysis.sweep import packing
from dganalysis.validation import ConfigError
from tests.sweep._fake_mps import _calls, install_fake_mps


@pytest.fixture
def dropin_mps(tmp_path, monkeypatch):
    """The fake MPS control on PATH, two fake GPUs, and the drop-in's launcher polling fast."""
    bin_dir = install_fake_mps(tmp_path, monkeypatch)
    monkeypatch.setattr(drop_in_sweep, "POLL_S", 0.05)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    return bin_dir


def _report(path) -> str:
    """A command reporting the environment it runs in (the launcher's assignments apply to its first command)."""
    report = "\"$CUDA_VISIBLE_DEVICES|$DGANALYSIS_PACKING|$CUDA_MPS_PIPE_DIRECTORY\""
    return f"sh -c 'echo {report} > {path}'"


def test_gpu_slots_and_env_field():
    assert packing.gpu_slots(["0", "1"], 2) == ["0", "1", "0", "1"]
    assert packing.gpu_slots(["3"], 1) == ["3"]
    assert packing.packing_from_env({}) == {}
    assert packing.packing_from_env({packing.PACKING_ENV: '{"runs_per_device": 2, "mps": true, "batched": 1}'}) == {
        "packing": {"runs_per_device": 2, "mps": True, "batched": 1}}
    with pytest.raises(ConfigError, match="DGANALYSIS_PACKING"):
        packing.packing_from_env({packing.PACKING_ENV: '{"runs": 2}'})


def test_multi_gpu_two_runs_per_gpu_under_mps(tmp_path, dropin_mps):
    outs = [tmp_path / f"out{k}" for k in range(5)]
    cmds = [f"{_report(p)}; exit {k}" for k, p in enumerate(outs)]
    assert drop_in_sweep.multi_gpu_launcher(cmds, 2) == [0, 1, 2, 3, 4]
    seen = [p.read_text().strip().split("|") for p in outs]
    assert [s[0] for s in seen[:4]] == ["0", "1", "0", "1"]  # the first four spread over both GPUs, two each
    assert {s[1] for s in seen} == {json.dumps({"runs_per_device": 2, "mps": True, "batched": 1})}
    assert all(s[2] for s in seen)  # the commands connect to the launcher's MPS daemon
    assert [c.split(" pipe=")[0] for c in _calls(dropin_mps)] == ["args=[] stdin=[get_server_list]", "args=[-d] stdin=[]",
                                                                "args=[] stdin=[quit]"]


def test_multi_gpu_default_is_domainbeds_one_per_gpu(tmp_path, dropin_mps):
    outs = [tmp_path / f"out{k}" for k in range(3)]
    assert drop_in_sweep.multi_gpu_launcher([_report(p) for p in outs]) == [0, 0, 0]
    assert json.loads(outs[0].read_text().split("|")[1]) == {"runs_per_device": 1, "mps": False, "batched": 1}
    assert _calls(dropin_mps) == []  # no MPS for one run per GPU


def test_multi_gpu_auto_probes_first(tmp_path, dropin_mps, monkeypatch):
    monkeypatch.setattr(drop_in_sweep, "_free_bytes", lambda gpus: 20 * 2**30)
    monkeypatch.setattr(packing, "default_cap", lambda cpu_cores=None, n_devices=1: 8)
    run0 = tmp_path / "run0"
    probe = (f"mkdir -p {run0} && echo '{{\"mem_gb\": 2.0}}' > {run0}/results.jsonl && touch {run0}/done && "
             f"true --output_dir {run0}")
    outs = [tmp_path / f"out{k}" for k in range(2)]
    assert drop_in_sweep.multi_gpu_launcher([probe, *(_report(p) for p in outs)], "auto") == [0, 0, 0]
    n = packing.runs_per_device(20 * 2**30, 2 * 2**30, 8)  # floor(18 / 3.25) = 5
    assert n == 5
    assert json.loads(outs[0].read_text().split("|")[1])["runs_per_device"] == n
