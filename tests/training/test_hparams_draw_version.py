"""The hyperparameter-drawing rule and the job store: a rule change never reuses (or mixes in) old draws.

``DRAW_VERSION`` 1 kept the ids jobs had before the version existed; any other version (today 2) enters the hash. Records drawn under an older
rule than today's (same spec, other hparams) are refused by ``records.load`` with a clear error; a job whose
``spec.json`` holds its id under today's rule is read without drawing again.
"""

from __future__ import annotations

import json

import pytest
from _tiny import FAST_HPARAMS, TINY

from dganalysis.records import load
from dganalysis.training import hparams
from dganalysis.training.job import Job
from dganalysis.training.job_draw import drawn_under_todays_rule, job_hparams, recorded_draw_problem
from dganalysis.training.train import run_job

pytestmark = pytest.mark.usefixtures("one_thread")


def test_version_one_keeps_existing_ids_and_a_bump_changes_them(monkeypatch):
    job = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300)
    # version 2 (DomainBed's remaining base hparams and its featurizer on its datasets) enters the hash
    assert hparams.DRAW_VERSION == 2
    assert job.job_id == "3efaad128e309b02"
    monkeypatch.setattr(hparams, "DRAW_VERSION", 1)
    assert job.job_id == "014b1b758c2a8e98"  # the id this spec had before DRAW_VERSION existed (version 1)
    monkeypatch.setattr(hparams, "DRAW_VERSION", 3)
    assert job.job_id not in ("3efaad128e309b02", "014b1b758c2a8e98")


def test_the_torch_seed_does_not_follow_the_draw_version(monkeypatch):
    """A new drawing rule moves a job to a new folder, not to new random numbers: the seed comes from the version-1
    hash (``Job.seed_key``), so a job whose drawn values are unchanged trains to the same numbers."""
    from dganalysis.training.train import job_seed

    job = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300)
    assert job.seed_key == "014b1b758c2a8e98"
    seeds = set()
    for version in (1, 2, 3):
        monkeypatch.setattr(hparams, "DRAW_VERSION", version)
        seeds.add(job_seed(job))
    assert len(seeds) == 1
    other = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=2, steps=5000, checkpoint_freq=300)
    assert job_seed(other) != job_seed(job)


def test_records_drawn_under_another_rule_are_refused(tmp_path, monkeypatch):
    job = Job(TINY, "ERM", ["d0", "d1"], ["d2"], hparams_seed=2, trial_seed=1, steps=2, checkpoint_freq=2,
              hparams_overrides=FAST_HPARAMS)
    store = tmp_path / "store"
    job_dir = run_job(job, store / job.job_id, device="cpu", precision="fp32")
    recs = [json.loads(line) for line in (job_dir / "results.jsonl").read_text().splitlines()]
    assert recorded_draw_problem(job.to_dict(), recs[0]["hparams"]) is None
    rows = len(load(store, progress=False))
    assert rows > 0  # today's draw: read as usual
    # simulate a job trained under an older drawing rule: its folder holds that rule's id (version 1's) and its
    # records another learning rate
    monkeypatch.setattr(hparams, "DRAW_VERSION", 1)
    old_id = job.job_id
    monkeypatch.undo()
    spec = json.loads((job_dir / "spec.json").read_text())
    (job_dir / "spec.json").write_text(json.dumps({**spec, "job_id": old_id}))
    old = dict(recs[0]["hparams"], lr=recs[0]["hparams"]["lr"] * 3)
    (job_dir / "results.jsonl").write_text("".join(json.dumps(dict(r, hparams=old)) + "\n" for r in recs))
    assert "lr: recorded" in recorded_draw_problem(job.to_dict(), old)
    with pytest.raises(ValueError, match=r"results.jsonl:1: hparams differ from today's draw for this job spec "
                                         r"\(lr: recorded .*older hyperparameter-drawing rule.*delete"):
        load(store, progress=False)
    df = load(store, progress=False, strict=False)
    assert df.empty and df.attrs["jobs"]["unreadable"] == 1 and "older hyperparameter-drawing rule" in \
        df.attrs["problems"][0]
    # the same records under today's id are read as drawn today (the id carries the rule), without drawing again
    (job_dir / "spec.json").write_text(json.dumps(spec))
    assert drawn_under_todays_rule(spec) and not drawn_under_todays_rule({**spec, "job_id": old_id})
    assert len(load(store, progress=False)) == rows


def test_specs_this_process_cannot_draw_are_not_judged():
    """A dataset or algorithm not registered here (e.g. registered by a notebook session) is not judged: its regime
    (small or large images) comes from its registered builder, so a redraw here could differ without any rule
    change."""
    spec = Job("NotRegisteredHere", "ERM", ["a"], ["b"], hparams_seed=1).to_dict()
    assert recorded_draw_problem(spec, {"lr": 123.0}) is None
    spec = Job(TINY, "NoSuchAlgorithm", ["d0"], ["d1"], hparams_seed=1).to_dict()
    assert recorded_draw_problem(spec, {"lr": 123.0}) is None
    job = Job(TINY, "ERM", ["d0"], ["d1"], hparams_seed=1)
    drawn = json.loads(json.dumps(job_hparams(job)))
    assert recorded_draw_problem(job.to_dict(), drawn) is None
    assert recorded_draw_problem(job.to_dict(), dict(drawn, lr=123.0)).endswith(
        f"(lr: recorded 123.0, drawn now {drawn['lr']!r})")
