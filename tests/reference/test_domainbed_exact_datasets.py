"""``--mode domainbed_exact`` on every dataset it accepts, against DomainBed's unmodified ``scripts/train.py``.

For each of :data:`dganalysis.training.exact.EXACT_DATASETS` both programs run with the same flags (ERM, ``--test_envs 1``,
``--seed 5``, a few steps) on a CPU with one thread, DomainBed's ``N_WORKERS`` left at its default (8: worker
processes for every loader, ``slow``) or patched to 0, ours with ``--n_workers`` saying the same. Checked: the same
steps and epochs, and losses and accuracies equal to 1e-6.

Each case that runs by default proves a property no other default case does (DomainBed's data kinds: ``torch.randn``
tensors (Debug28), the 224-px ResNet path (Debug224), the MNIST files (RotatedMNIST, ColoredMNIST, one loader code);
each at 0 and at 8 loader workers):

- ``Debug28-workers0``, ``Debug28-workers8``: the randn data at 0 and 8 workers.
- ``Debug224-workers0``: the ResNet featurizer's draws and 224-px data.
- ``ColoredMNIST-workers8``: ColoredMNIST's per-run partition and colouring, and the MNIST loaders at 8 workers.
- MNIST at 0 workers through this drop-in: ``test_domainbed_scripts_train.py`` (RotatedMNIST, 12 steps), and through
  a sweep's job ``test_domainbed_train_e2e.py``.

With ``DGA_SLOW_REFERENCE=1`` (skipped, saying what proves them, otherwise) also: ``RotatedMNIST-workers0``,
``RotatedMNIST-workers8``, ``ColoredMNIST-workers0`` (each a combination of the properties above), Debug224 at 8
workers (minutes on a 2-core CPU; the loader code the other 8-worker cases run) and Debug224 with DomainBed's default
``resnet50_augmix`` network.

- Debug28: the flags of the issue that found the Debug datasets trained on other data (``--hparams_seed 1
  --trial_seed 2``, batch 10); DomainBed's data are ``torch.randn`` floats drawn after its seeding.
- Debug224: DomainBed's ResNet at 224 px, its ``resnet18`` choice (``resnet50_augmix`` off; batch 8, 2 steps) to
  keep a CPU run to ~20 s a side. The ImageNet file torchvision would download is replaced by a seeded random
  ResNet-18 state dict under a temporary ``$TORCH_HOME`` that both programs read (torchvision loads a cached file
  without checking its hash).
- RotatedMNIST, ColoredMNIST: the small MNIST files of ``test_domainbed_train_e2e.py`` (its ``data_root`` fixture).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from dganalysis.scripts import train as drop_in
from dganalysis.training.exact import EXACT_DATASETS
from tests.reference._zygote import run_train
from tests.reference.test_domainbed_train_e2e import SLOW_REFERENCE, data_root, repeat_of  # noqa: F401

COMMON = ["--algorithm", "ERM", "--test_envs", "1", "--seed", "5", "--trial_seed", "2"]
#: per dataset: its flags beyond COMMON (steps, checkpoints, hparams)
FLAGS = {
    "Debug28": ["--hparams_seed", "1", "--steps", "3", "--checkpoint_freq", "2"],
    "Debug224": ["--steps", "2", "--checkpoint_freq", "1",
                 "--hparams", json.dumps({"batch_size": 8, "resnet18": True, "resnet50_augmix": False})],
    "RotatedMNIST": ["--steps", "3", "--checkpoint_freq", "2", "--hparams", json.dumps({"batch_size": 8})],
    "ColoredMNIST": ["--steps", "3", "--checkpoint_freq", "2", "--hparams", json.dumps({"batch_size": 8})],
}


@pytest.fixture(scope="module")
def torch_home(tmp_path_factory) -> Path:
    """A ``$TORCH_HOME`` holding a random ResNet-18 (seed 0) under torchvision's ImageNet file name."""
    from dganalysis.compat import torchvision
    from dganalysis.nets.torchhub import torchvision_weights_file

    home = tmp_path_factory.mktemp("torch_home")
    old = os.environ.get("TORCH_HOME")
    os.environ["TORCH_HOME"] = str(home)
    try:
        path = torchvision_weights_file("resnet18")
    finally:
        if old is None:
            os.environ.pop("TORCH_HOME")
        else:
            os.environ["TORCH_HOME"] = old
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        torch.save(torchvision().models.resnet18().state_dict(), path)
    return home


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _theirs(domainbed, argv: list[str], out: Path, workers: int | None, env: dict[str, str]) -> list[dict]:
    return run_train(domainbed.root, argv, out, workers=workers, env=env)


def _argv(request, dataset: str) -> tuple[list[str], dict[str, str]]:
    argv = ["--dataset", dataset, *COMMON, *FLAGS[dataset], "--skip_model_save"]
    env: dict[str, str] = {}
    if dataset in drop_in.MNIST_DATASETS:
        argv += ["--data_dir", str(request.getfixturevalue("data_root"))]
    if dataset == "Debug224":
        env["TORCH_HOME"] = str(request.getfixturevalue("torch_home"))
    return argv, env


def test_every_exact_dataset_is_tested():
    assert set(FLAGS) == set(EXACT_DATASETS)


#: dataset-workers cases whose every property another default case proves (see the module docstring)
REPEATS = {
    "RotatedMNIST-workers0": "MNIST at 0 workers through the drop-in: test_domainbed_scripts_train.py",
    "RotatedMNIST-workers8": "the MNIST loaders at 8 workers: ColoredMNIST-workers8",
    "ColoredMNIST-workers0": "ColoredMNIST's data: ColoredMNIST-workers8; MNIST at 0 workers: "
                             "test_domainbed_scripts_train.py",
}


def _cases():
    """Every dataset with 0 loader workers and DomainBed's 8; Debug224 at 8 workers (about a minute of ResNet
    passes through 8 worker processes per loader on a 2-core CPU, the same loader code as the other 8-worker cases)
    and the :data:`REPEATS` only with DGA_SLOW_REFERENCE=1."""
    for dataset in EXACT_DATASETS:
        for workers, wid in ((None, "workers8"), (0, "workers0")):
            case = f"{dataset}-{wid}"
            marks = [pytest.mark.slow] if workers is None else []
            if dataset == "Debug224" and workers is None:
                marks.append(SLOW_REFERENCE)
            if case in REPEATS:
                marks.append(repeat_of(REPEATS[case]))
            yield pytest.param(dataset, workers, marks=marks, id=case)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("dataset,workers", list(_cases()))
def test_exact_records_equal_domainbeds(request, domainbed, tmp_path, monkeypatch, dataset, workers):
    argv, env = _argv(request, dataset)
    theirs = _theirs(domainbed, argv, tmp_path / "db", workers, env)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    ours_argv = [*argv, "--output_dir", str(tmp_path / "ours"), "--threads", "1"]
    if workers is not None:
        ours_argv += ["--n_workers", str(workers)]
    assert drop_in.main(ours_argv) == 0
    ours = _records(tmp_path / "ours" / "results.jsonl")
    assert len(ours) == len(theirs) >= 2 and [r["step"] for r in ours] == [r["step"] for r in theirs]
    numbers = [k for k in theirs[0] if k == "loss" or k.endswith("_acc")]
    assert len(numbers) == 1 + 2 * len(drop_in.DOMAINBED_ENVIRONMENTS[dataset])
    for t, o in zip(theirs, ours):
        assert o["epoch"] == t["epoch"] and {k: o["hparams"][k] for k in t["hparams"]} == t["hparams"]
        for k in numbers:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (dataset, t["step"], k, o[k], t[k])


@pytest.mark.parametrize("dataset", ["VLCS", "PACS", "WILDSCamelyon", "SpawriousO2O_easy"])
def test_other_domainbed_datasets_are_refused_by_name(tmp_path, capsys, dataset):
    assert drop_in.main(["--dataset", dataset, "--output_dir", str(tmp_path / "o")]) == 2
    assert dataset in capsys.readouterr().err


def test_exact_mode_refuses_domainbeds_other_datasets_in_a_job():
    """The same refusal where a sweep's job asks for exact mode (not through the drop-in's flags)."""
    from dganalysis.training.exact import check_exact
    from dganalysis.training.job import Job

    names = list(drop_in.DOMAINBED_ENVIRONMENTS["VLCS"])
    job = Job("VLCS", "ERM", names[1:], names[:1], domainbed_exact=True)
    with pytest.raises(ValueError, match="'VLCS': domainbed_exact does not replay it"):
        check_exact(job, names, {}, {})


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory, torch_home) -> Path:
    """A ``$HF_HOME`` whose hub cache holds a random (seed 0) timm ``resnet50.ram_in1k`` as its ``model.safetensors``
    (DomainBed's default ``resnet50_augmix`` network), beside a random torchvision ResNet-50 in ``torch_home``
    (DomainBed builds it with ``pretrained=True`` first)."""
    timm = pytest.importorskip("timm")
    from safetensors.torch import save_file

    from dganalysis.compat import torchvision

    home = tmp_path_factory.mktemp("hf_home")
    snap = home / "hub" / "models--timm--resnet50.ram_in1k" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("0" * 40)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        save_file({k: v.contiguous() for k, v in timm.create_model("resnet50.ram_in1k").state_dict().items()},
                  str(snap / "model.safetensors"))
        rn50 = torch_home / "hub" / "checkpoints" / "resnet50-0676ba61.pth"
        torch.save(torchvision().models.resnet50().state_dict(), rn50)
    return home


#: in DomainBed's process: timm's hub download answered by the file in $HF_HOME (the installed timm does not import
#: the installed huggingface_hub, and nothing is downloaded here)
_TIMM_CACHE = ("import glob, timm.models._hub as _h\n"
               "_h._has_hf_hub = True\n"
               "_h.hf_hub_download = lambda *a, **k: glob.glob(os.environ['HF_HOME'] + "
               "'/hub/models--timm--resnet50.ram_in1k/snapshots/*/model.safetensors')[0]\n")


@pytest.mark.slow
@SLOW_REFERENCE
@pytest.mark.usefixtures("one_thread")
def test_exact_records_equal_domainbeds_resnet50_augmix(domainbed, tmp_path, monkeypatch, torch_home, hf_home):
    """Debug224 with DomainBed's default network (``resnet50_augmix``: timm's ResNet-50, built after a torchvision
    ResNet-50 DomainBed drops; :func:`dganalysis.training.exact.featurizer_draws`), 2 steps of batch 8 (~100 s for both here)."""
    argv = ["--dataset", "Debug224", *COMMON, "--steps", "2", "--checkpoint_freq", "1", "--skip_model_save",
            "--hparams", json.dumps({"batch_size": 8})]
    env = {"TORCH_HOME": str(torch_home), "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    theirs = run_train(domainbed.root, argv, tmp_path / "db", workers=0, prelude="import os\n" + _TIMM_CACHE, env=env)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert drop_in.main([*argv, "--output_dir", str(tmp_path / "ours"), "--threads", "1", "--n_workers", "0"]) == 0
    ours = _records(tmp_path / "ours" / "results.jsonl")
    assert theirs[0]["hparams"]["resnet50_augmix"] is True and len(ours) == len(theirs) == 2
    for t, o in zip(theirs, ours):
        for k in [k for k in t if k == "loss" or k.endswith("_acc")]:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (t["step"], k, o[k], t[k])
