"""The in/out split and the checkpoint records against DomainBed's ``scripts/train.py``.

Split: DomainBed holds out ``int(len(env) · holdout_fraction)`` examples of domain i, the first keys of a
permutation shuffled by ``np.random.RandomState(misc.seed_hash(trial_seed, i))``; ours must pick the same
indices. Records: DomainBed's own readers (``reporting.load_records``, ``get_grouped_records`` and the
training-domain validation selection) must read our ``results.jsonl`` and agree with a direct computation.
Every record carries DomainBed's keys: ``mem_gb`` (0.0 on a CPU, as DomainBed writes it) and every argument of
DomainBed's ``train.py`` in ``args``.
"""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dganalysis.training.hparams import seed_hash
from dganalysis.training.train import make_splits, split_indices

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ for the tiny engine dataset
from _tiny import FAST_HPARAMS, TINY  # noqa: E402

#: DomainBed command-line arguments our records do not carry (paths, task switches, a JSON copy of hparams)
ARGS_NOT_RECORDED: set[str] = set()  # none: every argument of DomainBed's train.py is in our records' args


@pytest.mark.parametrize("n,trial_seed,env_i", [(10, 0, 0), (97, 1, 2), (1000, 3, 1), (4, 0, 3)])
def test_split_matches_domainbed(domainbed, n, trial_seed, env_i):
    seed = domainbed.misc.seed_hash(trial_seed, env_i)
    assert seed == seed_hash(trial_seed, env_i)
    out, in_ = domainbed.misc.split_dataset(list(range(n)), int(n * 0.2), seed)
    ours_in, ours_out = split_indices(n, 0.2, seed)
    assert list(ours_out) == [out[i] for i in range(len(out))]
    assert list(ours_in) == [in_[i] for i in range(len(in_))]


def test_make_splits_seeds_each_domain_as_domainbed(domainbed):
    """``make_splits`` seeds domain i with ``seed_hash(trial_seed, i)`` (labels carry the example index)."""
    dataset = SimpleNamespace(domains=[_Dom(np.zeros((n, 1, 2, 2), np.uint8), np.arange(n)) for n in (20, 31)],
                              input_shape=(1, 2, 2))
    splits = make_splits(dataset, 0.2, 5, torch.device("cpu"), False)
    for i, (in_split, out_split) in enumerate(splits):
        n = len(dataset.domains[i])
        out, in_ = domainbed.misc.split_dataset(list(range(n)), int(n * 0.2), domainbed.misc.seed_hash(5, i))
        assert out_split.labels.tolist() == [out[k] for k in range(len(out))]
        assert in_split.labels.tolist() == [in_[k] for k in range(len(in_))]


class _Dom:
    def __init__(self, images, labels):
        self.images, self.labels, self.meta = images, labels, {}

    def __len__(self):
        return len(self.labels)


def _domainbed_args(domainbed) -> set[str]:
    src = (Path(domainbed.root) / "domainbed" / "scripts" / "train.py").read_text()
    return set(re.findall(r"add_argument\('--(\w+)'", src))


def test_records_read_by_domainbed(domainbed, tmp_path):
    from dganalysis.sweep import Job
    from dganalysis.training.train import run_job

    job = Job(dataset=TINY, algorithm="ERM", train_domains=["d0", "d1"], test_domains=["d2"], steps=6,
              checkpoint_freq=5, hparams_overrides=FAST_HPARAMS)
    job_dir = run_job(job, tmp_path / "store", device="cpu")
    records = [json.loads(line) for line in (job_dir / "results.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 5]  # DomainBed's checkpoint rule: step % freq == 0 or the last
    db_keys = {"step", "epoch", "loss", "step_time", "hparams", "args"}
    db_keys |= {f"env{i}_{s}_acc" for i in range(3) for s in ("in", "out")}
    for r in records:
        assert db_keys <= set(r), sorted(db_keys - set(r))
        assert r["mem_gb"] == 0.0  # DomainBed's key; 0.0 on a CPU, as DomainBed writes it
        assert set(_domainbed_args(domainbed)) - set(r["args"]) == ARGS_NOT_RECORDED
        assert r["args"]["test_envs"] == [2] and r["args"]["holdout_fraction"] == 0.2
    # DomainBed's readers on our store
    loaded = domainbed.reporting.load_records(str(job_dir.parent))
    assert len(loaded) == len(records)
    groups = domainbed.reporting.get_grouped_records(loaded)
    assert len(groups) == 1 and groups[0]["test_env"] == 2 and groups[0]["algorithm"] == "ERM"
    sel = domainbed.model_selection.IIDAccuracySelectionMethod.run_acc(groups[0]["records"])
    best = max(records, key=lambda r: np.mean([r["env0_out_acc"], r["env1_out_acc"]]))
    assert sel["test_acc"] == best["env2_in_acc"]
