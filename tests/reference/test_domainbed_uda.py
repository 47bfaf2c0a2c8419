"""``--task domain_adaptation`` / ``--uda_holdout_fraction``: the drop-in ``train`` against DomainBed's unmodified
``scripts/train.py`` with the same flags.

DomainBed splits each test environment's ``in`` split once more, with the same seed (``seed_hash(trial_seed, i)``),
into an unlabelled ``uda`` split (the first ``int(len(in) * uda_holdout_fraction)`` keys) and the new ``in`` split;
builds one ``InfiniteDataLoader`` per ``uda`` split after the training loaders (whatever ``--task``), evaluates each
as ``env{k}_uda_acc`` (k counting the uda splits, not the environments) and, with ``domain_adaptation``, draws one
batch per ``uda`` loader after the training batches of every step, passed to ``update`` as ``unlabeled`` (which no
DomainBed algorithm reads). ``domainbed_exact`` mode replays all of it; the records here must equal DomainBed's to
1e-6 (losses, every accuracy, the ``uda`` ones included; epochs exactly), on a CPU with one thread, DomainBed's
``N_WORKERS`` patched to 0 (ours ``--n_workers 0``) or left at its default 8 (Debug28: worker processes for every
loader). Algorithms: ERM, and DANN and CORAL, which DomainBed's papers list among domain-adaptation methods (its
code passes them the unlabelled batches and they ignore them, as ours do). Since no DomainBed algorithm reads the
unlabelled batches, their records cannot tell which images those batches held (nor, with workers, which loader drew
which seeds: only the count of draws shows); ``_UDAProbe`` (ERM plus the mean prediction entropy on the unlabelled
batches, defined here on both sides: injected into DomainBed's ``algorithms`` module, registered in ours) makes every
unlabelled image count, with 0 workers and with 8.

Each case that runs by default proves a property no other default case does:

- ``Debug28-ERM-da``: ERM given the unlabelled batches (and ignoring them), the ``uda`` split and its accuracy.
- ``Debug28-ERM-dg-with-uda``: ``--task domain_generalization`` with ``uda`` splits (loaders built, never drawn).
- ``Debug28-DANN-da``, ``Debug28-CORAL-da``: DANN's and CORAL's updates given the unlabelled batches.
- ``Debug28-probe-da``: which images the unlabelled batches hold (randn data); with 8 workers: which loader
  draws which seeds.
- ``Debug28-probe-da-two-test-envs``: two ``uda`` splits, their order and their numbering.
- ``RotatedMNIST-probe-da``: the ``uda`` split of the MNIST files, and which images its batches hold.

With ``DGA_SLOW_REFERENCE=1`` (skipped, saying what proves them, otherwise) also the cases whose every property
those prove: ``Debug28-ERM-da-two-test-envs``, ``RotatedMNIST-ERM-da``, ``RotatedMNIST-DANN-da``,
``RotatedMNIST-CORAL-da``, ``ColoredMNIST-ERM-da`` (ColoredMNIST's data: ``test_domainbed_exact_datasets.py``) and
``Debug28-ERM-da`` with 8 workers.

Debug28's environments hold 16 examples (13 in the ``in`` split of a test environment at holdout 0.2): batch 4
keeps its 6-example ``uda`` split above one batch (DomainBed's loader drops a partial batch and would never yield).
"""

from __future__ import annotations

import json
import textwrap

import pytest
import torch
import torch.nn.functional as F

from dganalysis.algorithms.erm import ERM
from dganalysis.scripts import train as drop_in
from tests.reference._zygote import run_train
from tests.reference.test_domainbed_exact_datasets import _records
from tests.reference.test_domainbed_train_e2e import data_root, repeat_of  # noqa: F401

DA = ["--task", "domain_adaptation", "--uda_holdout_fraction", "0.5"]
#: id → (dataset, flags); every case adds ``--seed 5 --trial_seed 2 --skip_model_save``
CASES = {
    "Debug28-ERM-da": ("Debug28", ["--algorithm", "ERM", "--test_envs", "1", *DA]),
    "Debug28-ERM-da-two-test-envs": ("Debug28", ["--algorithm", "ERM", "--test_envs", "0", "2", *DA]),
    "Debug28-ERM-dg-with-uda": ("Debug28", ["--algorithm", "ERM", "--test_envs", "1",
                                            "--uda_holdout_fraction", "0.5"]),
    "Debug28-DANN-da": ("Debug28", ["--algorithm", "DANN", "--test_envs", "1", *DA]),
    "Debug28-CORAL-da": ("Debug28", ["--algorithm", "CORAL", "--test_envs", "1", *DA]),
    "RotatedMNIST-ERM-da": ("RotatedMNIST", ["--algorithm", "ERM", "--test_envs", "1", *DA]),
    "RotatedMNIST-DANN-da": ("RotatedMNIST", ["--algorithm", "DANN", "--test_envs", "1", *DA]),
    "RotatedMNIST-CORAL-da": ("RotatedMNIST", ["--algorithm", "CORAL", "--test_envs", "1", *DA]),
    "ColoredMNIST-ERM-da": ("ColoredMNIST", ["--algorithm", "ERM", "--test_envs", "2", *DA]),
    "Debug28-probe-da": ("Debug28", ["--algorithm", "_UDAProbe", "--test_envs", "1", *DA]),
    "Debug28-probe-da-two-test-envs": ("Debug28", ["--algorithm", "_UDAProbe", "--test_envs", "0", "2", *DA]),
    "RotatedMNIST-probe-da": ("RotatedMNIST", ["--algorithm", "_UDAProbe", "--test_envs", "1", *DA]),
}
#: the probe's update in DomainBed's process (a subclass of its ERM, under DomainBed's update signature)
DOMAINBED_PROBE = textwrap.dedent('''
    import torch, torch.nn.functional as _F
    import domainbed.algorithms as _a

    class _UDAProbe(_a.ERM):
        def update(self, minibatches, unlabeled=None):
            all_x = torch.cat([x for x, y in minibatches])
            all_y = torch.cat([y for x, y in minibatches])
            loss = _F.cross_entropy(self.predict(all_x), all_y)
            if unlabeled is not None:
                z = self.predict(torch.cat(unlabeled))
                loss = loss - 0.5 * (_F.softmax(z, 1) * _F.log_softmax(z, 1)).sum(1).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            return {"loss": loss.item()}

    _a._UDAProbe = _UDAProbe
''')


class _UDAProbe(ERM):
    """ERM plus half the mean prediction entropy on the test domains' unlabelled batches (when given)."""

    def update(self, minibatches, step, unlabeled=None):
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        loss = F.cross_entropy(self.predict(x), y)
        if unlabeled is not None:
            z = self.predict(torch.cat(unlabeled))
            loss = loss - 0.5 * (F.softmax(z, 1) * F.log_softmax(z, 1)).sum(1).mean()
        self.step(loss, self.optimizer, self.scheduler)
        return {"loss": loss.item()}


@pytest.fixture(autouse=True, scope="module")
def _probe_registered():
    """``_UDAProbe`` registered in our registry while this module's tests run."""
    from dganalysis.algorithms.registry import ALGORITHMS

    ALGORITHMS.register("_UDAProbe")(_UDAProbe)
    try:
        yield
    finally:
        ALGORITHMS._items.pop("_UDAProbe", None)
        ALGORITHMS._tags.pop("_UDAProbe", None)
STEPS = ["--steps", "4", "--checkpoint_freq", "2", "--hparams", json.dumps({"batch_size": 4})]
#: record fields that are not numbers of the computation (or not DomainBed's)
NOT_COMPARED = ("step", "epoch", "step_time", "mem_gb", "elapsed", "threads")


def _argv(request, case: str) -> list[str]:
    dataset, flags = CASES[case]
    argv = ["--dataset", dataset, *flags, *STEPS, "--seed", "5", "--trial_seed", "2", "--skip_model_save"]
    if dataset in drop_in.MNIST_DATASETS:
        argv += ["--data_dir", str(request.getfixturevalue("data_root"))]
    return argv


def _compare(theirs: list[dict], ours: list[dict], case: str) -> None:
    assert len(ours) == len(theirs) >= 2 and [r["step"] for r in ours] == [r["step"] for r in theirs]
    numbers = [k for k in theirs[0] if k not in NOT_COMPARED and isinstance(theirs[0][k], (int, float))]
    uda = [k for k in numbers if k.endswith("_uda_acc")]
    assert uda, f"{case}: DomainBed wrote no uda accuracy ({sorted(theirs[0])})"
    for t, o in zip(theirs, ours):
        assert o["epoch"] == t["epoch"], (case, t["step"])
        assert {k for k in o if k.endswith("_acc")} == {k for k in t if k.endswith("_acc")}
        assert {k: o["args"][k] for k in ("task", "uda_holdout_fraction")} == \
               {k: t["args"][k] for k in ("task", "uda_holdout_fraction")}
        for k in [k for k in t if k not in NOT_COMPARED and isinstance(t[k], (int, float))]:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (case, t["step"], k, o[k], t[k])


def _domainbeds(domainbed, argv: list[str], out, workers: int | None) -> list[dict]:
    """DomainBed's records for ``argv``, its ``N_WORKERS`` patched to ``workers`` (None: its default); the probe
    injected when ``argv`` names it."""
    prelude = DOMAINBED_PROBE if "_UDAProbe" in argv else ""
    return run_train(domainbed.root, argv, out, workers=workers, prelude=prelude)


def _ours(tmp_path, argv: list[str], workers: int) -> list[dict]:
    out = tmp_path / "ours"
    assert drop_in.main([*argv, "--output_dir", str(out), "--threads", "1", "--n_workers", str(workers)]) == 0
    return _records(out / "results.jsonl")


#: cases whose every property another default case proves (see the module docstring): case → what proves it
REPEATS = {
    "Debug28-ERM-da-two-test-envs": "Debug28-probe-da-two-test-envs (two uda splits) and Debug28-ERM-da (ERM)",
    "RotatedMNIST-ERM-da": "RotatedMNIST-probe-da (its uda split) and Debug28-ERM-da (ERM)",
    "RotatedMNIST-DANN-da": "RotatedMNIST-probe-da (its uda split) and Debug28-DANN-da (DANN)",
    "RotatedMNIST-CORAL-da": "RotatedMNIST-probe-da (its uda split), Debug28-CORAL-da (CORAL given unlabelled "
                             "batches) and test_domainbed_train_e2e.py's RotatedMNIST-CORAL (its penalty over 5 domains)",
    "ColoredMNIST-ERM-da": "RotatedMNIST-probe-da (the MNIST files' uda split) and test_domainbed_exact_datasets.py's "
                           "ColoredMNIST-workers8 (its data)",
}


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("case", [pytest.param(c, marks=[repeat_of(REPEATS[c])] if c in REPEATS else [])
                                  for c in CASES])
def test_uda_records_equal_domainbeds_without_workers(request, domainbed, tmp_path, case):
    argv = _argv(request, case)
    theirs = _domainbeds(domainbed, argv, tmp_path / "db", 0)
    _compare(theirs, _ours(tmp_path, argv, 0), case)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("case", [
    pytest.param("Debug28-ERM-da", marks=repeat_of("Debug28-probe-da with 8 workers (every draw counts)")),
    "Debug28-probe-da"])
def test_uda_records_equal_domainbeds_with_its_default_workers(request, domainbed, tmp_path, case):
    """DomainBed's ``N_WORKERS`` (8) on Debug28: each loader's prefetching draws its pass seeds when it is made, the
    ``uda`` loader's between the training loaders' and the evaluation loaders'. Not ``slow``: Debug28's 10 loaders
    start their workers in ~7 s a case here (RotatedMNIST's 17 take ~60 s)."""
    argv = _argv(request, case)
    theirs = _domainbeds(domainbed, argv, tmp_path / "db", None)
    _compare(theirs, _ours(tmp_path, argv, 8), f"{case} workers 8")


def test_domain_adaptation_without_unlabelled_examples_is_refused(tmp_path, capsys):
    """DomainBed's ``train.py`` raises "Not enough unlabeled samples" for ``--task domain_adaptation`` at
    ``--uda_holdout_fraction`` 0; the drop-in refuses it by name before training (exit status 2)."""
    status = drop_in.main(["--dataset", "Debug28", "--task", "domain_adaptation", "--output_dir",
                           str(tmp_path / "o")])
    assert status == 2 and "not enough unlabeled samples" in capsys.readouterr().err
    assert not (tmp_path / "o" / "results.jsonl").exists()


@pytest.mark.usefixtures("one_thread")
def test_default_mode_runs_the_same_experiment(tmp_path):
    """``--mode default`` (our engine, our draws) on the same flags: the records of ``domainbed_exact`` mode's keys,
    ``uda`` accuracies included, and DomainBed's ``args``."""
    argv = ["--dataset", "Debug28", *CASES["Debug28-ERM-da-two-test-envs"][1], *STEPS, "--skip_model_save",
            "--threads", "1"]
    runs = {}
    for mode in ("default", "domainbed_exact"):
        assert drop_in.main([*argv, "--mode", mode, "--output_dir", str(tmp_path / mode), "--n_workers", "0"]) == 0
        runs[mode] = _records(tmp_path / mode / "results.jsonl")
    keys = [{k for k in r if k.endswith("_acc")} for r in runs["default"]]
    assert keys == [{k for k in r if k.endswith("_acc")} for r in runs["domainbed_exact"]]
    assert {"env0_uda_acc", "env1_uda_acc"} <= keys[0] and runs["default"][0]["mode"] == "default"
    assert runs["default"][0]["args"]["task"] == "domain_adaptation"
