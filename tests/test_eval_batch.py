"""The CPU evaluation batch size changes speed only: a job's records are the same at any batch size."""

from __future__ import annotations

import json

import pytest
import torch
from _tiny import TINY

from dganalysis import train
from dganalysis.sweep import Job
from dganalysis.train import CPU_EVAL_BATCH_SIZE, run_job

# the small CNN of the throughput benchmark (conv + GroupNorm, channels_last), on the tiny 16×16 data
CNN = {"featurizer": "cnn", "batch_size": 8}


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _job() -> Job:
    return Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=6, checkpoint_freq=5, hparams_overrides=CNN)


def _records(job_dir):
    return [json.loads(line) for line in (job_dir / "results.jsonl").read_text().splitlines()]


def test_records_do_not_depend_on_the_eval_batch_size(tmp_path):
    # 512: the CPU default before; 7: many partial batches (splits of 39 and 9 images); None: the default
    runs = {bs: _records(run_job(_job(), tmp_path / str(bs), device="cpu", eval_batch_size=bs)) for bs in (512, 7, None)}
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


def test_cpu_default_eval_batch_is_domainbeds(tmp_path, monkeypatch):
    seen = []
    real = train.evaluate

    def spy(algorithm, splits, batch_size, autocast):
        seen.append(batch_size)
        return real(algorithm, splits, batch_size, autocast)

    monkeypatch.setattr(train, "evaluate", spy)
    run_job(Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=1, hparams_overrides={"featurizer": "mlp", "batch_size": 8}),
            tmp_path / "j", device="cpu")
    assert CPU_EVAL_BATCH_SIZE == 64
    assert seen == [64]
