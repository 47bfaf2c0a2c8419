"""DomainBed's per-run RotatedMNIST / ColoredMNIST (``dganalysis.data.domainbed_mnist``): the partition rule, one
build per distinct run seed, the job's DomainBed seed, ids of older jobs unchanged. The comparison with DomainBed's
own classes is in ``tests/reference/test_domainbed_train_e2e.py``."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from dganalysis.data import load_dataset
from dganalysis.data.domainbed_mnist import colored_mnist, replay_draws, rotated_mnist
from dganalysis.training.hparams import seed_hash
from dganalysis.training.job import Job
from dganalysis.training.train import dataset_kwargs


def write_raw_mnist(root: Path, n_train: int = 40, n_test: int = 20, seed: int = 0) -> Path:
    """MNIST's four uncompressed IDX files under ``root/MNIST/raw`` (where torchvision looks), random images."""
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.RandomState(seed)
    for split, n in (("train", n_train), ("t10k", n_test)):
        for kind, arr in (("images-idx3-ubyte", rng.randint(0, 256, (n, 28, 28))),
                          ("labels-idx1-ubyte", rng.randint(0, 10, n))):
            arr = np.asarray(arr)
            head = struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
            (raw / f"{split}-{kind}").write_bytes(head + arr.astype(np.uint8).tobytes())
    return root


def test_partition_is_every_kth_image_of_the_run_seeds_randperm(tmp_path):
    root = write_raw_mnist(tmp_path)
    for seed in (0, 7):
        ds = rotated_mnist(root, run_seed=seed)
        perm = torch.randperm(60, generator=torch.Generator().manual_seed(seed)).numpy()
        for i, dom in enumerate(ds.domains):
            np.testing.assert_array_equal(dom.meta["source_index"], perm[i::6])
    a, b = rotated_mnist(root, run_seed=0), rotated_mnist(root, run_seed=1)
    assert not np.array_equal(a.domains[0].meta["source_index"], b.domains[0].meta["source_index"])
    fixed = load_dataset("RotatedMNIST_Fixed", mnist_dir=str(root / "MNIST" / "raw"))
    assert fixed.name == "RotatedMNIST_Fixed" and fixed.domain_names == a.domain_names


def test_colored_labels_follow_domainbed_rule_and_replay_moves_the_global_stream(tmp_path):
    root = write_raw_mnist(tmp_path, 300, 0)
    ds = colored_mnist(root, run_seed=3)
    for dom in ds.domains:
        clean = (dom.meta["digit"] < 5).astype(int)
        assert 0.6 < (dom.labels == clean).mean() < 0.9  # 25% label noise, DomainBed's digit < 5 -> 1
        assert (dom.images[np.arange(len(dom)), 1 - dom.meta["color"]] == 0).all()
    torch.manual_seed(3)
    torch.randperm(300)
    for n in (100, 100, 100):
        torch.rand(n), torch.rand(n)
    want = torch.rand(2)
    torch.manual_seed(3)
    replay_draws(ds.info)
    assert torch.equal(torch.rand(2), want)


def test_job_seed_is_domainbed_sweeps_and_each_seed_builds_its_own_dataset(tmp_path):
    root = write_raw_mnist(tmp_path)
    kw = {"mnist_dir": str(root)}
    a = Job("RotatedMNIST", "ERM", ["15", "30", "45", "60", "75"], ["0"], dataset_kwargs=kw)
    b = Job("RotatedMNIST", "ERM", ["0", "30", "45", "60", "75"], ["15"], dataset_kwargs=kw)
    names = ["0", "15", "30", "45", "60", "75"]
    assert a.domainbed_seed(names) == seed_hash("RotatedMNIST", "ERM", [0], 0, 0)  # DomainBed's sweep.py
    assert dataset_kwargs(a)["run_seed"] == a.domainbed_seed(names) != dataset_kwargs(b)["run_seed"]
    bare = Job("RotatedMNIST", "ERM", ["15", "30", "45", "60", "75"], ["0"], dataset_kwargs=kw, seed=0)
    assert dataset_kwargs(bare)["run_seed"] == 0 and bare.job_id != a.job_id  # a bare train.py call: --seed 0
    with pytest.raises(ValueError, match="run_seed"):
        dataset_kwargs(Job("RotatedMNIST", "ERM", ["15"], ["0"], dataset_kwargs={**kw, "run_seed": 1}))
    # our own datasets take no run seed, and their ids and specs do not name the new optional fields
    own = Job("RotatedFashionMNIST", "ERM", ["0"], ["15"])
    assert "run_seed" not in dataset_kwargs(own) and "seed" not in own.to_dict()
    assert "domainbed_exact" not in own.to_dict() and Job.from_dict(own.to_dict()) == own
    with pytest.raises(ValueError, match="Job.seed"):
        Job("RotatedMNIST", "ERM", ["15"], ["0"], seed=-1)
