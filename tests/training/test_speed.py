"""What the CPU speed settings may not change: a job's records (evaluation batch size, malloc thresholds)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from _tiny import TINY

import dganalysis
from dganalysis.sweep import Job
from dganalysis.training import speed
from dganalysis.training.train import computed_part, run_job

# the small CNN of the throughput benchmark (conv + GroupNorm, channels_last), on the tiny 16×16 data
CNN = {"featurizer": "cnn", "batch_size": 8}
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


pytestmark = pytest.mark.usefixtures("one_thread")


def _job() -> Job:
    return Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=6, checkpoint_freq=5, hparams_overrides=CNN)


def _records(job_dir):
    return [json.loads(line) for line in (Path(job_dir) / "results.jsonl").read_text().splitlines()]


def _strip(rec):
    return computed_part(rec)


def test_records_do_not_depend_on_the_eval_batch_size(tmp_path):
    # 512: the CPU default; 64: DomainBed's; 7: many partial batches (splits of 39 and 9 images)
    runs = {bs: _records(run_job(_job(), tmp_path / str(bs), device="cpu", eval_batch_size=bs)) for bs in (512, 64, 7)}
    ref = runs[512]
    assert [r["step"] for r in ref] == [0, 5]
    for bs, recs in runs.items():
        assert len(recs) == len(ref)
        for r, r0 in zip(recs, ref):
            assert r.keys() == r0.keys()
            # training is untouched: identical losses
            assert r["loss"] == r0["loss"], bs
            for k in (k for k in r0 if k.endswith("_acc")):
                # the same math; only float rounding of a near-tie could flip one prediction
                n = 9 if k.endswith("out_acc") else 39
                assert abs(r[k] - r0[k]) <= 1 / n + 1e-12, (bs, k, r[k], r0[k])


_CHILD = """
import json, sys, torch
sys.path.insert(0, sys.argv[1])
torch.set_num_threads(1)
from _tiny import TINY
from dganalysis.training import speed
from dganalysis.sweep import Job
from dganalysis.training.train import run_job
job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=6, checkpoint_freq=5, hparams_overrides={CNN!r})
run_job(job, sys.argv[2], device="cpu")
print(json.dumps(speed._applied))
"""


@pytest.mark.skipif(not GLIBC, reason="the malloc thresholds are a glibc setting; elsewhere run_job leaves malloc alone")
def test_records_do_not_depend_on_the_malloc_thresholds(tmp_path):
    """This process (thresholds raised by run_job) and a fresh one with glibc's defaults write the same records."""
    here = _records(run_job(_job(), tmp_path / "here", device="cpu"))
    assert speed._applied == 1 << 30
    root = str(Path(dganalysis.__file__).resolve().parent.parent)
    env = {**os.environ, "DGANALYSIS_MALLOPT": "0", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    child = _CHILD.replace("{CNN!r}", repr(CNN))
    out = subprocess.run([sys.executable, "-c", child, str(Path(__file__).parent.parent), str(tmp_path / "default")],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "null"  # glibc's defaults were left alone there
    assert [_strip(r) for r in _records(tmp_path / "default")] == [_strip(r) for r in here]


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's")
def test_keep_freed_memory(monkeypatch):
    assert speed.keep_freed_memory() is True
    assert speed.keep_freed_memory() is True  # once per process, then a no-op
    monkeypatch.setenv("DGANALYSIS_MALLOPT", "0")
    assert speed.keep_freed_memory() is False
    with pytest.raises(ValueError, match="threshold"):
        speed.keep_freed_memory(0)


def test_profile_split_finds_every_phase_of_a_job(tmp_path):
    """``bench/train_throughput.py --profile`` attributes a job's ops to phases through the labels in run_job;
    a label lost in a refactor would move its time to ``other`` unnoticed."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "train_throughput.py"
    spec = importlib.util.spec_from_file_location("bench_train_throughput", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    split, me, kids = bench.profile_split(lambda: run_job(_job(), tmp_path / "job", device="cpu"))
    by_phase = {ph: sum(v for (p, _), v in split.items() if p == ph) for ph in bench.PHASES}
    for ph in ("data", "forward", "backward", "optimizer", "evaluation"):
        assert by_phase[ph] > 0, (ph, by_phase)
    assert split.get(("forward", "conv"), 0) > 0 and split.get(("backward", "conv"), 0) > 0
    assert split.get(("evaluation", "conv"), 0) > 0
    assert kids == pytest.approx(0, abs=1e-6)  # no DataLoader workers in our loop
    assert sum(split.values()) == pytest.approx(me, rel=1e-6)  # op shares of the wall time, scaled to CPU-s
