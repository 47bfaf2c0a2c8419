"""Provenance (:mod:`dganalysis.provenance`): the stamp's values, where it is written (spec.json, records, the sweep
index, index.md, report.html, the audit's JSON), that it changes no job id, and the warnings of ``collect`` and the
audit when the runs they combine were made differently."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis import provenance
from dganalysis.cli import main
from dganalysis.training.job import Job
from dganalysis.training.job_draw import recorded_draw_problem
from dganalysis.training.train import run_job

ROOT = Path(__file__).resolve().parents[1]

AMX_CPUINFO = ("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
               "flags\t\t: fpu sse2 avx512f amx_bf16 amx_tile amx_int8\n")
AMD_CPUINFO = "processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\nflags\t\t: fpu sse2 avx512f avx512_bf16\n"


def test_environment_reports_this_interpreter_and_libraries():
    env = provenance.environment()
    assert env["python"] == platform.python_version()
    assert env["torch"].split("+")[0] == torch.__version__.split("+")[0]
    assert env["numpy"] == np.__version__
    assert env["cuda"] == torch.version.cuda  # read from torch's version.py, the value torch itself gives
    assert env["dganalysis"] and isinstance(env["cpu"], str) and env["cpu"]
    assert env["cpu_bf16"] == provenance.cpu_has_amx_bf16()
    assert provenance.environment() is env  # computed once per process


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs git and a git checkout (runs in the repository's CI)")
def test_commit_is_the_checkouts_head():
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    commit, dirty = provenance.git_state()
    assert commit == head and isinstance(dirty, bool)


def test_no_commit_outside_a_checkout(tmp_path):
    pkg = tmp_path / "site-packages" / "dganalysis"
    pkg.mkdir(parents=True)
    assert provenance.git_state(pkg) == (None, None)  # an installed wheel
    if shutil.which("git") is None:
        pytest.skip("needs git for the second half (a wheel installed inside another repository)")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert provenance.git_state(tmp_path / "site-packages" / "dganalysis") == (None, None)  # not our checkout


def test_cpu_model_and_amx_bf16_from_cpuinfo():
    assert provenance.cpu_model(AMX_CPUINFO) == "Intel(R) Xeon(R) Platinum 8480+"
    assert provenance.cpu_has_amx_bf16(AMX_CPUINFO) is True
    assert provenance.cpu_model(AMD_CPUINFO) == "AMD EPYC 9654 96-Core Processor"
    assert provenance.cpu_has_amx_bf16(AMD_CPUINFO) is False  # avx512_bf16 is not AMX
    assert provenance.cpu_has_bf16_instructions(AMX_CPUINFO) and provenance.cpu_has_bf16_instructions(AMD_CPUINFO)
    zen3 = AMD_CPUINFO.replace("avx512f avx512_bf16", "avx2")
    assert "avx2" in provenance.cpu_flags(zen3) and not provenance.cpu_has_bf16_instructions(zen3)
    assert provenance.cpu_flags("") == frozenset()
    assert provenance.cpu_model("") == (platform.processor() or platform.machine() or "unknown")


def test_stamp_fields_and_formats():
    s = provenance.stamp("cpu", "fp32", 3)
    assert list(s) == list(provenance.FIELDS)
    assert (s["device"], s["precision"], s["threads"], s["gpu"]) == ("cpu", "fp32", 3, None)
    g = provenance.stamp("cuda:NVIDIA H100 80GB HBM3", "bf16")  # an already worded device: no CUDA call
    assert g["gpu"] == "NVIDIA H100 80GB HBM3" and g["device"] == "cuda:NVIDIA H100 80GB HBM3"
    text = provenance.format_stamp({**s, "commit": "0123456789abcdef0123", "dirty": True})
    assert "commit:     0123456789ab (modified)" in text and "threads:    3" in text
    line = provenance.one_line(g)
    assert "GPU NVIDIA H100 80GB HBM3" in line and "precision bf16" in line and "\n" not in line
    assert "(commit 0123456789ab, modified), Python" in provenance.one_line({**g, "commit": "0123456789abcdef",
                                                                            "dirty": True})


def _run(where: str, job: str, algorithm: str = "ERM", **changes) -> tuple:
    return where, job, algorithm, {**provenance.stamp("cpu", "fp32", 2), **changes}


def test_differences_name_the_values_and_the_runs():
    same = [_run("/a", "j1"), _run("/b", "j2"), ("/c", "j3", "ERM", None)]
    assert provenance.differences(same) == []  # a run without a stamp (old store, DomainBed's) is left out
    lines = provenance.differences([_run("/a", "j1"), _run("/a", "j2"), _run("/b", "j3", torch="2.5.1")])
    assert len(lines) == 1
    assert lines[0].startswith("runs made under different torch versions: ")
    assert f"{provenance.environment()['torch']} (2 runs in /a; e.g. j1)" in lines[0]
    assert "2.5.1 (1 run in /b; e.g. j3)" in lines[0]
    cpus = provenance.differences([_run("/a", "j1", cpu="A", cpu_bf16=True, precision="bf16"),
                                   _run("/b", "j2", cpu="B", precision="fp32"), _run("/b", "j3", "Fish")])
    assert [line.split(":")[0] for line in cpus] == ["runs made under different CPUs",
                                                     "runs made under different precisions (ERM)"]
    # precision is compared within an algorithm: auto trains some algorithms in fp32 on purpose
    assert provenance.differences([_run("/a", "j1", precision="bf16"), _run("/a", "j2", "ADRMX")]) == []
    modified = provenance.differences([_run("/a", "j1", commit="c" * 40, dirty=False),
                                       _run("/a", "j2", commit="c" * 40, dirty=True)])
    assert modified and "cccccccccccc (modified) (1 run" in modified[0]


@pytest.mark.usefixtures("one_thread")
def test_job_spec_and_records_carry_the_stamp_and_keep_their_id(tmp_path):
    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=3, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS)
    before = job.job_id
    d = run_job(job, tmp_path / "job", device="cpu", precision="fp32", threads=1)
    spec = json.loads((d / "spec.json").read_text())
    want = {**provenance.environment(), "gpu": None, "device": "cpu", "precision": "fp32", "threads": 1,
            "cuda_backends": provenance.NOT_CUDA}
    assert spec["provenance"] == want and spec["job_id"] == before == job.job_id
    assert Job.from_dict(spec) == job and Job.from_dict(spec).job_id == before  # the stamp is no part of the job
    records = [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()]
    assert records and all(r["provenance"] == want for r in records)
    # the draw check still judges a stamped spec (it returns None for a spec it cannot read)
    drawn = dict(records[0]["hparams"], lr=123.0)
    assert recorded_draw_problem(spec, drawn) is not None and recorded_draw_problem(spec, records[0]["hparams"]) is None


def _stamp_records(store: Path, **changes) -> None:
    """Add a provenance stamp (this machine's, with ``changes``) to every record of a DomainBed-format store."""
    prov = {**provenance.stamp("cpu", "fp32", 2), **changes}
    for path in store.glob("*/results.jsonl"):
        lines = [json.dumps({**json.loads(line), "provenance": prov}) for line in path.read_text().splitlines()]
        path.write_text("\n".join(lines) + "\n")


def _stores(tmp_path: Path, stamp_b: dict | None) -> tuple[Path, Path]:
    from audit._simulated_sweep import write_sweep

    a = write_sweep(tmp_path / "a", {"ERM": 0.0, "Fish": 0.01}, {"PACS": 4}, trials=2, hparams=1, seed=1)
    b = write_sweep(tmp_path / "b", {"ERM": 0.0, "Fish": 0.01}, {"PACS": 4}, trials=2, hparams=1, seed=2)
    if stamp_b is not None:
        _stamp_records(a)
        _stamp_records(b, **stamp_b)
    return a, b


def test_collect_warns_once_per_difference_naming_the_stores(tmp_path, capsys):
    a, b = _stores(tmp_path, {"torch": "2.5.1", "cpu": "Intel(R) Xeon(R) Platinum 8480+", "cpu_bf16": True,
                              "precision": "bf16"})
    assert main(["collect", str(a), str(b), "--selection", "training_domain"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if "runs made under different" in line]
    assert [w.split(":")[1].strip() for w in warnings] == [
        "runs made under different torch versions", "runs made under different CPUs",
        "runs made under different precisions (ERM)", "runs made under different precisions (Fish)"]
    assert all(w.startswith("collect: ") and f"runs in {a};" in w and f"runs in {b};" in w for w in warnings)
    assert "(16 runs in" in warnings[0] and "(8 runs in" in warnings[2]  # every run of a store; one algorithm's


def test_collect_is_silent_on_alike_or_unstamped_runs(tmp_path, capsys):
    a, b = _stores(tmp_path, None)  # DomainBed's records, or ours from before stamps: nothing to compare
    assert main(["collect", str(a), str(b)]) == 0
    assert "runs made under" not in capsys.readouterr().err
    _stamp_records(a)
    _stamp_records(b)
    assert main(["collect", str(a), str(b), "--fresh"]) == 0
    assert "runs made under" not in capsys.readouterr().err


def test_index_keeps_the_stamps_of_unchanged_jobs(tmp_path):
    from dganalysis.records.index import provenance_runs, update_index

    a, _ = _stores(tmp_path, {})
    first = list(provenance_runs([(a, update_index(a))]))
    assert len(first) == 16 and {r[2] for r in first} == {"ERM", "Fish"}
    job = next(a.iterdir())  # one job rewritten: re-parsed; the others come from the index on disk
    _stamp_records(job.parent, torch="9.9")
    again = list(provenance_runs([(a, update_index(a))]))
    assert sorted(r[1] for r in again) == sorted(r[1] for r in first)
    assert {r[3]["torch"] for r in again} == {"9.9"}


def test_audit_notes_the_differences_and_stamps_its_json(tmp_path):
    from dganalysis.audit.contract import to_json
    from dganalysis.audit.inputs import read_inputs
    from dganalysis.audit.run import run_audit

    a, b = _stores(tmp_path, {})
    _stamp_records(b.parent / "a", numpy="1.24.0")  # store a: every run now says numpy 1.24.0
    for d in list(b.iterdir())[:3]:  # three runs of store b under another numpy
        shutil.copytree(d, a / f"{d.name}_copy")
    notes = read_inputs([a], ["training_domain"], "ERM")[1][0].notes
    assert [n for n in notes if n.startswith("runs made under different numpy versions: 1.24.0 (16 runs")]
    settings = to_json(run_audit(["shipped:domainbed"], sweep_analyses=False))["settings"]
    assert settings["provenance"] == json.loads(json.dumps(provenance.stamp()))


def test_local_stamp_follows_the_environment_variables(monkeypatch):
    monkeypatch.setenv("DGANALYSIS_THREADS", "3")
    monkeypatch.setenv("DGANALYSIS_CPU_PRECISION", "bf16")
    if torch.cuda.is_available():
        pytest.skip("on a CUDA machine the local stamp is the GPU's (bf16, no thread count)")
    got = provenance.local_stamp()
    assert (got["device"], got["precision"], got["threads"]) == ("cpu", "bf16", 3)
    monkeypatch.setenv("DGANALYSIS_THREADS", "many")  # a bad count fails the jobs, not the stamp
    assert provenance.local_stamp()["threads"] is None


def test_env_verb_prints_the_stamp(capsys):
    assert main(["env"]) == 0
    out = capsys.readouterr().out
    env = provenance.environment()
    assert f"torch:      {env['torch']}" in out and f"python:     {env['python']}" in out
    assert "precision:" in out and "cpu_bf16:" in out


def test_index_and_report_say_what_made_them(tmp_path):
    from dganalysis.studies.report import write_report
    from dganalysis.studies.runner import write_index

    out = tmp_path / "outputs" / "quick"
    out.mkdir(parents=True)
    write_index(out, "quick", [])
    index = (out / "index.md").read_text()
    line = next(line for line in index.splitlines() if line.startswith("Made with dganalysis "))
    assert f"torch {provenance.environment()['torch']}" in line and "precision " in line
    page = write_report(out, "quick").read_text()
    assert line.replace("Made with ", "").split(", CPU")[0] in page  # the index's line, shown once on the page
    assert page.count(f"dganalysis {provenance.environment()['dganalysis']}") == 1
