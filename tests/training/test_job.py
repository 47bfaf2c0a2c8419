"""A job's identity is location-free: where its data or checkpoint lies changes neither its id nor its random numbers."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from PIL import Image

from dganalysis.data.registry import DATASETS, _import_builtin
from dganalysis.training.job import Job, identity_spec, is_location_kwarg
from dganalysis.training.train import job_seed, run_job
from dganalysis.validation import ConfigError

pytestmark = pytest.mark.usefixtures("one_thread")


def _job(root: str, pretrained: str | None = "/w/moco_v2-0a1b2c3d.pt", dataset: str = "PACS") -> Job:
    return Job(dataset, "ERM", ["A", "C", "P"], ["S"], hparams_seed=1, steps=300, checkpoint_freq=100,
               dataset_kwargs={"root": root, "image_size": 224}, hparams_overrides={"pretrained": pretrained})


def test_the_same_experiment_in_another_folder_has_the_same_id_and_seed():
    here, there = _job("/home/a/data"), _job("/scratch/b/c/data/", pretrained="/other/moco_v2-0a1b2c3d.pt")
    assert here.job_id == there.job_id and job_seed(here) == job_seed(there)
    # the spec keeps the paths themselves (training reads them; the records show them)
    assert here.to_dict()["dataset_kwargs"]["root"] == "/home/a/data"


def test_names_keep_jobs_apart_in_a_store_but_a_data_folder_name_never_changes_the_seed():
    base = _job("/data")
    renamed_data = _job("/datasets")
    assert renamed_data.job_id != base.job_id  # two image folders of different names never share a store folder
    assert job_seed(renamed_data) == job_seed(base)  # ... but the folder's name is not part of the experiment
    other_weights = _job("/data", pretrained="/w/imagenet_supervised-99ee.pt")
    assert other_weights.job_id != base.job_id and job_seed(other_weights) != job_seed(base)
    random_init = _job("/data", pretrained=None)
    assert random_init.job_id != base.job_id


def test_a_job_without_locations_keeps_its_pinned_id():
    job = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300,
              dataset_kwargs={"image_size": 224})
    assert identity_spec(job.to_dict()) == job.to_dict()
    plain = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300)
    assert plain.job_id == "3efaad128e309b02" and plain.seed_key == "014b1b758c2a8e98"


def test_every_location_argument_of_a_registered_dataset_is_recognised():
    """Each dataset factory's path-typed keyword (and those its ``**kw`` passes on, as the dry run reads them) is a
    location; ``data_dir`` is never part of a job (Job refuses it)."""
    _import_builtin()
    found = set()
    for name in DATASETS.names():
        for p in inspect.signature(DATASETS.get(name)).parameters.values():
            if "Path" in str(p.annotation) or p.name in ("root",):
                found.add(p.name)
    found |= {"mnist_dir", "fashion_dir", "gnt_dir", "handwritten_dir", "image_root"}
    assert {"root", "csv_path", "mnist_dir"} <= found
    assert all(is_location_kwarg(n) for n in found - {"data_dir"}), sorted(found)
    assert not any(is_location_kwarg(n) for n in ("image_size", "storage", "angles", "workers", "environments"))


def _folder(root):
    rng = np.random.RandomState(0)
    for d in ("photo", "sketch", "art"):
        for c in ("cat", "dog"):
            (root / d / c).mkdir(parents=True, exist_ok=True)
            for i in range(6):
                Image.fromarray(rng.randint(0, 255, (8, 8, 3), dtype=np.uint8)).save(root / d / c / f"{i}.png")


def test_a_copied_image_folder_trains_to_the_same_records(tmp_path):
    """End to end: the same ImageFolder job on two copies of a folder (same name, other parents) gets one id and
    trains to identical records (every number but the clocks)."""
    records = []
    ids = set()
    for side in ("a", "b"):
        root = tmp_path / side / "toy"
        _folder(root)
        job = Job("ImageFolder", "ERM", ["photo", "sketch"], ["art"], steps=4, checkpoint_freq=2,
                  dataset_kwargs={"root": str(root), "image_size": 8}, hparams_overrides={"featurizer": "mlp",
                                                                                          "batch_size": 4})
        ids.add(job.job_id)
        out = run_job(job, tmp_path / side / "store" / job.job_id, data_dir=tmp_path / side / "cache")
        lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        for r in lines:
            for k in ("elapsed", "step_time", "job", "args"):
                r.pop(k, None)
        records.append(lines)
    assert len(ids) == 1
    assert len(records[0]) >= 2 and records[0] == records[1]


def test_evaluating_the_last_step_only_is_another_job_with_the_same_seed():
    job = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300)
    last = Job.from_dict({**job.to_dict(), "evaluate_at": "last"})
    assert "evaluate_at" not in job.to_dict() and last.to_dict()["evaluate_at"] == "last"  # default ids unchanged
    assert last.job_id != job.job_id and job_seed(last) == job_seed(job)
    assert [s for s in range(5000) if job.records_at(s)] == [*range(0, 5000, 300), 4999]
    assert [s for s in range(5000) if last.records_at(s)] == [4999]
    with pytest.raises(ConfigError, match="evaluate_at"):
        Job("PACS", "ERM", ["A"], ["S"], evaluate_at="first")
    with pytest.raises(ConfigError, match="evaluate_at.*domainbed_exact"):
        Job("RotatedMNIST", "ERM", ["0"], ["15"], domainbed_exact=True, evaluate_at="last")


def test_evaluating_held_out_splits_only_is_another_job_with_the_same_seed():
    job = Job("PACS", "ERM", ["A", "C", "P"], ["S"], hparams_seed=3, trial_seed=1, steps=5000, checkpoint_freq=300)
    held = Job.from_dict({**job.to_dict(), "evaluate_splits": "held_out"})
    assert "evaluate_splits" not in job.to_dict() and held.to_dict()["evaluate_splits"] == "held_out"
    assert held.job_id != job.job_id and job_seed(held) == job_seed(job)
    assert job.unevaluated_in_splits([0, 1, 2]) == () and held.unevaluated_in_splits([0, 1, 2]) == (0, 1, 2)
    both = Job.from_dict({**held.to_dict(), "evaluate_at": "last"})
    assert len({job.job_id, held.job_id, both.job_id}) == 3 and job_seed(both) == job_seed(job)
    with pytest.raises(ConfigError, match="evaluate_splits"):
        Job("PACS", "ERM", ["A"], ["S"], evaluate_splits="test")
    with pytest.raises(ConfigError, match="evaluate_splits.*domainbed_exact"):
        Job("RotatedMNIST", "ERM", ["0"], ["15"], domainbed_exact=True, evaluate_splits="held_out")
