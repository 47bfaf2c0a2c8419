"""DomainBed end to end: its own ``scripts/train.py`` beside ours on the same small MNIST files.

The test writes MNIST's four raw IDX files (300 images with a class-dependent pattern, simulated) under ``<tmp>/MNIST/raw``, where ``torchvision.datasets.MNIST(root, download=True)`` finds them without
downloading, then

- builds DomainBed's ``RotatedMNIST`` / ``ColoredMNIST`` in this process after ``torch.manual_seed(seed)`` (as
  ``train.py`` does) and ours with ``run_seed=seed``: the same images in every environment, in the same order,
  equal tensors, and the global generator left at the same place (:func:`replay_draws`);
- runs DomainBed's ``train.py`` in its own process (ERM, default hparams, ``--seed`` as DomainBed's sweep gives it)
  and ours in ``domainbed_exact`` mode through a sweep's job (:func:`run_job_exact`), with DomainBed's
  ``N_WORKERS`` patched to 0: the same record keys, and the same numbers (steps and epochs exactly, losses and
  accuracies to 1e-6, all on a CPU in fp32 with one thread);
- the same for CORAL, whose penalty over RotatedMNIST's 5 training domains must be summed in DomainBed's order;
- runs ours in the default mode: same steps, epochs, keys and hparams, and the mean in-split accuracy distributed as
  in exact mode over seeds (a two-sample test, see its docstring; the
  default mode draws other minibatches and initial weights, see docs/domainbed.md).

With ``DGA_SLOW_REFERENCE=1`` (skipped, saying what proves them, otherwise) also RotatedMNIST at DomainBed's 8 loader
workers and ColoredMNIST's exact records, both proven by ``test_domainbed_exact_datasets.py``'s
``ColoredMNIST-workers8`` (ColoredMNIST's data, and the MNIST loaders at 8 workers).

DomainBed's runs are forked from a pre-imported helper process (``_zygote.py``): ``import dganalysis.compat`` first,
because importing torchvision before the shim fails in this venv ("operator torchvision::nms does not exist"); the
optional imports (wilds, timm, gdown) stubbed as ``conftest.py`` does; then ``domainbed.scripts.train`` with ``runpy``.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from dganalysis.data.domainbed_mnist import colored_mnist, replay_draws, rotated_mnist
from dganalysis.training.hparams import seed_hash
from dganalysis.training.job import Job
from dganalysis.training.train import run_job, run_job_exact, start_job_dir

from ._zygote import run_train
from .conftest import import_with_stubs

NAMES = ["0", "15", "30", "45", "60", "75"]
STEPS, FREQ = 12, 5
HPARAMS = {"batch_size": 8}  # DomainBed's --hparams: 5 x 8 images a step keeps one CPU thread at ~0.1 s a step

def _write_idx(path: Path, arr: np.ndarray) -> None:
    arr = np.asarray(arr)
    path.write_bytes(struct.pack(">HBB", 0, 8, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
                     + arr.astype(np.uint8).tobytes())


@pytest.fixture(scope="module")
def data_root(tmp_path_factory) -> Path:
    """DomainBed's ``--data_dir``: ``MNIST/raw`` with 200 training and 100 test images (50 per environment), each
    class its own brightness plus noise (simulated digits: MNIST_CNN's global average pooling keeps the brightness
    whatever the rotation, so 12 steps already lift accuracy well above chance)."""
    root = tmp_path_factory.mktemp("db_e2e")
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.RandomState(0)
    for split, n in (("train", 200), ("t10k", 100)):
        y = rng.randint(0, 10, n)
        x = 25 * y[:, None, None] + rng.randint(0, 20, (n, 28, 28))
        _write_idx(raw / f"{split}-images-idx3-ubyte", x)
        _write_idx(raw / f"{split}-labels-idx1-ubyte", y)
    return root


@pytest.mark.parametrize("seed", [0, 1234567])
def test_environments_hold_domainbeds_images(domainbed, data_root, seed):
    datasets = import_with_stubs("domainbed.datasets")
    for theirs_cls, ours_fn in ((datasets.RotatedMNIST, rotated_mnist), (datasets.ColoredMNIST, colored_mnist)):
        torch.manual_seed(seed)
        theirs = theirs_cls(str(data_root), [0], {})
        after = torch.rand(4)
        ours = ours_fn(str(data_root), run_seed=seed)
        assert len(theirs.datasets) == len(ours.domains)
        for env, dom in zip(theirs.datasets, ours.domains):
            x, y = env.tensors
            assert torch.equal(x, torch.from_numpy(dom.images).float().div(255)), (theirs_cls.__name__, dom.name)
            assert torch.equal(y, torch.from_numpy(dom.labels)), (theirs_cls.__name__, dom.name)
        torch.manual_seed(seed)
        replay_draws(ours.info)
        assert torch.equal(torch.rand(4), after)


def _domainbed_records(domainbed, data_root: Path, out: Path, seed: int, workers: int | None,
                       dataset: str = "RotatedMNIST", algorithm: str = "ERM") -> list[dict]:
    argv = ["--data_dir", str(data_root), "--dataset", dataset, "--algorithm", algorithm, "--test_envs", "0",
            "--steps", str(STEPS), "--checkpoint_freq", str(FREQ), "--seed", str(seed), "--skip_model_save",
            "--hparams", json.dumps(HPARAMS)]
    return run_train(domainbed.root, argv, out, workers=workers, timeout=300)


#: slow cases kept for a full check: run with DGA_SLOW_REFERENCE=1 (skipped, saying so, otherwise)
SLOW_REFERENCE = pytest.mark.skipif(
    os.environ.get("DGA_SLOW_REFERENCE") != "1",
    reason="minutes on a 2-core CPU: DGA_SLOW_REFERENCE=1 runs it")


def repeat_of(proof: str) -> pytest.MarkDecorator:
    """Like :data:`SLOW_REFERENCE`, for a case that proves nothing ``proof`` (the cases that do) does not."""
    return pytest.mark.skipif(os.environ.get("DGA_SLOW_REFERENCE") != "1",
                              reason=f"proven by {proof}: DGA_SLOW_REFERENCE=1 runs it too")


NUMBERS = ["loss"] + [f"env{i}_{s}_acc" for i in range(6) for s in ("in", "out")]


SEED = seed_hash("RotatedMNIST", "ERM", [0], 0, 0)  # what DomainBed's sweep passes as --seed for this run


@pytest.fixture(scope="module")
def theirs_workers0(domainbed, data_root, tmp_path_factory) -> list[dict]:
    """DomainBed's records with N_WORKERS=0 (shared by two tests: one run of DomainBed's train.py)."""
    return _domainbed_records(domainbed, data_root, tmp_path_factory.mktemp("db0") / "db", SEED, 0)


def _exact_job(data_root: Path, seed: int | None = None) -> Job:
    """Our RotatedMNIST ERM job in exact mode, DomainBed's sweep's seed unless ``seed`` says another."""
    return Job("RotatedMNIST", "ERM", NAMES[1:], NAMES[:1], steps=STEPS, checkpoint_freq=FREQ, seed=seed,
               dataset_kwargs={"mnist_dir": str(data_root)}, domainbed_exact=True, hparams_overrides=HPARAMS)


@pytest.fixture(scope="module")
def ours_workers0(data_root, tmp_path_factory) -> list[dict]:
    """Our exact-mode records of the run :func:`theirs_workers0` made, with 0 workers (shared by two tests)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)  # as ``one_thread``, which a module-scoped fixture cannot use
    try:
        job = _exact_job(data_root)
        d = start_job_dir(job, tmp_path_factory.mktemp("ours0") / "ours")
        run_job_exact(job, d, None, torch.device("cpu"), 0.0, num_workers=0)
    finally:
        torch.set_num_threads(n)
    return [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()]


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("workers", [pytest.param(None, marks=[pytest.mark.slow, repeat_of(
    "the MNIST loaders at DomainBed's 8 workers: test_domainbed_exact_datasets.py's ColoredMNIST-workers8")]), 0],
                         ids=["workers8", "workers0"])
def test_exact_mode_records_equal_domainbeds(request, domainbed, data_root, tmp_path, workers):
    job = _exact_job(data_root)
    assert job.domainbed_seed(NAMES) == SEED
    if workers is None:
        theirs = _domainbed_records(domainbed, data_root, tmp_path / "db", SEED, None)
        run_job(job, tmp_path / "ours", device="cpu", threads=1)
        ours = [json.loads(line) for line in (tmp_path / "ours" / "results.jsonl").read_text().splitlines()]
    else:
        theirs, ours = request.getfixturevalue("theirs_workers0"), request.getfixturevalue("ours_workers0")
    assert [r["step"] for r in ours] == [r["step"] for r in theirs] == [0, 5, 10, 11]
    for t, o in zip(theirs, ours):
        assert set(t) <= set(o), sorted(set(t) - set(o))
        assert set(t["args"]) <= set(o["args"]), sorted(set(t["args"]) - set(o["args"]))
        assert o["epoch"] == t["epoch"] and o["mem_gb"] == t["mem_gb"] == 0.0 and o["args"]["seed"] == SEED
        assert {k: o["hparams"][k] for k in t["hparams"]} == t["hparams"]
        for k in NUMBERS:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (t["step"], k, o[k], t[k])


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("dataset,algorithm,names", [
    pytest.param("ColoredMNIST", "ERM", ["+90%", "+80%", "-90%"], marks=repeat_of(
        "ColoredMNIST's exact records: test_domainbed_exact_datasets.py's ColoredMNIST-workers8")),
    ("RotatedMNIST", "CORAL", NAMES)])
def test_exact_mode_other_datasets_and_algorithms(domainbed, data_root, tmp_path, dataset, algorithm, names):
    """Exact mode beyond ERM on RotatedMNIST: ColoredMNIST's per-run partition and colouring, and CORAL, whose
    ``loss`` DomainBed reports as the classification loss (written under DomainBed's keys through
    ``Algorithm.DOMAINBED_KEYS``) and whose penalty must be summed in DomainBed's order for the floats to agree."""
    seed = seed_hash(dataset, algorithm, [0], 0, 0)
    theirs = _domainbed_records(domainbed, data_root, tmp_path / "db", seed, 0, dataset, algorithm)
    job = Job(dataset, algorithm, names[1:], names[:1], steps=STEPS, checkpoint_freq=FREQ,
              dataset_kwargs={"mnist_dir": str(data_root)}, domainbed_exact=True, hparams_overrides=HPARAMS)
    assert job.domainbed_seed(names) == seed
    d = start_job_dir(job, tmp_path / "ours")
    run_job_exact(job, d, None, torch.device("cpu"), 0.0, num_workers=0)
    ours = [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()]
    assert [r["step"] for r in ours] == [r["step"] for r in theirs] == [0, 5, 10, 11]
    numbers = [k for k in theirs[0] if k == "loss" or k == "penalty" or k.endswith("_acc")]
    assert len(numbers) == 2 * len(names) + 1 + (algorithm == "CORAL")
    for t, o in zip(theirs, ours):
        assert set(t) <= set(o), sorted(set(t) - set(o))
        assert o["epoch"] == t["epoch"]
        for k in numbers:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (t["step"], k, o[k], t[k])


def _mean_in(record: dict) -> float:
    return float(np.mean([record[f"env{i}_in_acc"] for i in range(6)]))


K_RUNS = 6  # runs per mode in the two-sample test below (~2.5 s each here)


@pytest.mark.usefixtures("one_thread")
def test_default_mode_same_experiment(theirs_workers0, ours_workers0, data_root, tmp_path):
    """Default mode runs DomainBed's experiment with other random draws (minibatches, initial weights), so its records
    cannot equal DomainBed's; what must hold is (a) everything fixed by the experiment is equal: steps, epochs,
    record keys, hyperparameters (checked on each of the default-mode runs of (b)); (b) its outcome has DomainBed's
    distribution over seeds.

    (b) is a two-sample test on the mean in-split accuracy after 12 steps: ``K_RUNS`` runs in default mode against
    ``K_RUNS`` runs in exact mode with ``N_WORKERS`` = 0 (equal to DomainBed's ``train.py`` run for run, tested above), seeds
    ``SEED + j`` (exact run 0 is the one tested above, shared through ``ours_workers0``). Welch's t at level 0.001: a false failure once in 1,000 CI runs when the two modes agree. Its power
    is shown on the same runs: their untrained (step 0) accuracies against their step-12 ones are rejected. One
    DomainBed run against one of ours (what this test did before) differed by 0.108 on a machine where the
    stated 0.1 tolerance had held: at 12 steps one run's accuracy has a standard deviation of ~0.1."""
    from scipy import stats

    theirs = theirs_workers0
    runs: dict[bool, list[list[dict]]] = {False: [], True: [ours_workers0]}  # exact run 0: the one tested above
    for exact in (False, True):
        for j in range(int(exact), K_RUNS):
            job = Job("RotatedMNIST", "ERM", NAMES[1:], NAMES[:1], steps=STEPS, checkpoint_freq=FREQ, seed=SEED + j,
                      dataset_kwargs={"mnist_dir": str(data_root)}, domainbed_exact=exact, hparams_overrides=HPARAMS)
            d = tmp_path / f"{'exact' if exact else 'default'}{j}"
            if exact:  # with N_WORKERS = 0, as DomainBed's run above
                run_job_exact(job, start_job_dir(job, d), None, torch.device("cpu"), 0.0, num_workers=0)
            else:
                run_job(job, d, device="cpu", precision="fp32", threads=1)
            runs[exact].append([json.loads(line) for line in (d / "results.jsonl").read_text().splitlines()])
    for ours in runs[False]:  # (a): what the experiment fixes, in every default-mode run
        assert [r["step"] for r in ours] == [r["step"] for r in theirs]
        assert [r["epoch"] for r in ours] == pytest.approx([r["epoch"] for r in theirs], abs=1e-12)
        for t, o in zip(theirs, ours):
            assert set(t) <= set(o) and {k: o["hparams"][k] for k in t["hparams"]} == t["hparams"]
    assert _mean_in(runs[True][0][-1]) == pytest.approx(_mean_in(theirs[-1]), abs=1e-6)  # exact run 0 = DomainBed's
    final = {exact: [_mean_in(r[-1]) for r in rs] for exact, rs in runs.items()}
    p_same = stats.ttest_ind(final[False], final[True], equal_var=False).pvalue
    assert p_same > 0.001, final
    untrained = [_mean_in(r[0]) for rs in runs.values() for r in rs]
    trained = final[False] + final[True]
    assert stats.ttest_ind(untrained, trained, equal_var=False).pvalue < 0.001, (untrained, trained)
