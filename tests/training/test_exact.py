"""Records carry DomainBed's keys (``mem_gb`` 0.0 on a CPU, every ``train.py`` argument in ``args``), and the
``domainbed_exact`` mode runs, repeats itself and refuses what it cannot replay. Its equality with DomainBed's own
``train.py`` is checked in ``tests/reference/test_domainbed_train_e2e.py``."""

from __future__ import annotations

import json

import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis.training import train
from dganalysis.training.exact import Loader, PassStream
from dganalysis.training.job import Job
from dganalysis.training.train import run_job

#: the keys of DomainBed's train.py records (b93c22a) and of their ``args``
DOMAINBED_KEYS = {"step", "epoch", "loss", "step_time", "mem_gb", "hparams", "args"}
DOMAINBED_ARGS = {"data_dir", "dataset", "algorithm", "task", "hparams", "hparams_seed", "trial_seed", "seed", "steps",
                  "checkpoint_freq", "test_envs", "output_dir", "holdout_fraction", "uda_holdout_fraction",
                  "skip_model_save", "save_model_every_checkpoint"}

pytestmark = pytest.mark.usefixtures("one_thread")


def _records(path):
    return [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("exact", [False, True])
def test_records_have_domainbeds_keys(tmp_path, exact):
    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=3, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS,
              domainbed_exact=exact)
    recs = _records(run_job(job, tmp_path / "a", device="cpu", precision="fp32"))
    for r in recs:
        assert DOMAINBED_KEYS <= set(r) and DOMAINBED_ARGS <= set(r["args"])
        assert r["mem_gb"] == 0.0 and {f"env{i}_{s}_acc" for i in range(3) for s in ("in", "out")} <= set(r)
        assert r["args"]["output_dir"] == str(tmp_path / "a") and r["args"]["task"] == "domain_generalization"
    if exact:  # the run seed is DomainBed's sweep seed and the mode repeats itself
        assert recs[0]["args"]["seed"] == job.domainbed_seed(["d0", "d1", "d2"])
        again = _records(run_job(job, tmp_path / "b", device="cpu"))
        assert [r["loss"] for r in again] == [r["loss"] for r in recs]


def test_both_modes_train_in_the_one_loop_with_their_own_draws(tmp_path, monkeypatch):
    """One training loop: the default mode hands it our draws, ``domainbed_exact`` DomainBed's, and each record is
    written by it (the exact mode's records equal DomainBed's: ``tests/reference/test_domainbed_train_e2e.py``)."""
    seen = []
    loop = train.train_loop

    def spy(job, algorithm, draws, *args, **kw):
        seen.append(type(draws).__name__)
        return loop(job, algorithm, draws, *args, **kw)

    monkeypatch.setattr(train, "train_loop", spy)
    for exact in (False, True):
        job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=3, checkpoint_freq=2, hparams_overrides=FAST_HPARAMS,
                  domainbed_exact=exact)
        assert [r["step"] for r in _records(run_job(job, tmp_path / str(exact), device="cpu"))] == [0, 2]
    assert seen == ["SampledDraws", "DomainBedDraws"]


def test_exact_mode_refuses_what_it_cannot_replay(tmp_path):
    with pytest.raises(ValueError, match="every non-test domain"):
        run_job(Job(TINY, "ERM", ["d0"], ["d2"], val_domains=["d1"], steps=2, hparams_overrides=FAST_HPARAMS,
                    domainbed_exact=True), tmp_path / "v", device="cpu")
    with pytest.raises(ValueError, match="augment"):
        run_job(Job(TINY, "ERM", ["d0", "d1"], ["d2"], steps=2, hparams_overrides={**FAST_HPARAMS, "augment": True},
                    domainbed_exact=True), tmp_path / "a", device="cpu")


def test_loader_model_matches_torchs_dataloader():
    """Our model of ``DataLoader(batch_sampler=infinite BatchSampler(RandomSampler(replacement=True)))`` without
    workers: the same index batches, and the global generator left where torch leaves it."""

    class _Inf(torch.utils.data.Sampler):
        def __init__(self, s):
            self.s = s

        def __iter__(self):
            while True:
                yield from self.s

    for replacement, drop_last in ((True, True), (False, False)):
        data = torch.utils.data.TensorDataset(torch.arange(21))
        bs = torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(data, replacement=replacement), 4,
                                           drop_last=drop_last)
        torch.manual_seed(5)
        it = iter(torch.utils.data.DataLoader(data, batch_sampler=_Inf(bs)))
        theirs = [next(it)[0] for _ in range(13)]
        after = torch.rand(2)
        torch.manual_seed(5)
        loader = Loader(PassStream(21, 4, replacement, drop_last), 0)
        ours = [loader.next() for _ in range(13)]
        assert all(torch.equal(a, b) for a, b in zip(theirs, ours))
        assert torch.equal(torch.rand(2), after)


def test_sweep_yaml_turns_the_exact_mode_on(tmp_path):
    from dganalysis.sweep import load_sweep_yaml

    p = tmp_path / "s.yaml"
    p.write_text("dataset: RotatedDigits\nalgorithms: [ERM]\nsplits: leave_one_out\nsteps: 5\ncheckpoint_freq: 5\n"
                 "domainbed_exact: true\n")
    jobs = load_sweep_yaml(p)
    assert jobs and all(j.domainbed_exact for j in jobs)
    p.write_text(p.read_text().replace("domainbed_exact: true", "domainbed_exact: 2"))
    with pytest.raises(Exception, match="domainbed_exact"):
        load_sweep_yaml(p)


def test_domainbeds_datasets_are_named_once():
    """The exact mode tells DomainBed's datasets by :data:`dganalysis.training.hparams.DOMAINBED_DATASETS`: the datasets
    whose environment names the records' reader knows."""
    from dganalysis.records.read import DOMAINBED_ENVIRONMENTS
    from dganalysis.training.hparams import DOMAINBED_DATASETS

    assert DOMAINBED_DATASETS == tuple(DOMAINBED_ENVIRONMENTS)
