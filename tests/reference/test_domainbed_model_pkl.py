"""``model.pkl`` from ``python -m dganalysis.scripts.train`` loads into DomainBed's algorithm class.

A couple of steps with our drop-in, then DomainBed's class of the same name is built from the file's
``model_input_shape``, ``model_num_classes``, ``model_num_domains`` and ``model_hparams`` (as a DomainBed user
rebuilds a model from its ``model.pkl``), ``load_state_dict(model_dict, strict=True)``, and its logits in eval mode
equal those of our model rebuilt from ``model.pt`` (:func:`dganalysis.training.train.load_model`). On Debug28 (DomainBed's
MNIST-CNN, whose layer names differ from ours) for ERM and kin, and on Debug224 for ERM (DomainBed's ResNet-18 with
the random stand-in weights of ``test_domainbed_exact_datasets.py``).
"""

from __future__ import annotations

import json

import pytest
import torch

from dganalysis.scripts import train as drop_in
from dganalysis.training import train
from dganalysis.training.exact import UPDATE_COUNT_ALGORITHMS
from tests.reference.test_domainbed_exact_datasets import torch_home  # noqa: F401

#: ERM's kin (DomainBed's featurizer + classifier + network layout); IRM and VREx carry DomainBed's update_count
ALGORITHMS = ["ERM", "CORAL", "Mixup", "IRM", "VREx", "SD"]


def _train_and_load(domainbed, out, argv, algorithm):
    assert drop_in.main(["--algorithm", algorithm, "--test_envs", "1", "--output_dir", str(out), "--n_workers", "0",
                         "--threads", "1", *argv]) == 0
    saved = torch.load(out / "model.pkl", map_location="cpu", weights_only=False)
    theirs = domainbed.algorithms.get_algorithm_class(algorithm)(
        saved["model_input_shape"], saved["model_num_classes"], saved["model_num_domains"], saved["model_hparams"])
    theirs.load_state_dict(saved["model_dict"], strict=True)
    ours = train.load_model(out)
    theirs.eval()
    x = torch.randn(4, *saved["model_input_shape"], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(theirs.predict(x), ours.predict(x), rtol=0, atol=1e-6)
    return saved


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_domainbed_loads_model_pkl_small_images(domainbed, tmp_path, algorithm):
    saved = _train_and_load(domainbed, tmp_path / "o", ["--dataset", "Debug28", "--hparams_seed", "1", "--trial_seed",
                                                        "2", "--steps", "2"], algorithm)
    assert "featurizer.conv1.weight" in saved["model_dict"] and "network.0.bn3.bias" in saved["model_dict"]
    if algorithm in UPDATE_COUNT_ALGORITHMS:
        assert saved["model_dict"]["update_count"].tolist() == [2]


@pytest.mark.usefixtures("one_thread")
def test_domainbed_loads_model_pkl_resnet(domainbed, tmp_path, monkeypatch, torch_home):  # noqa: F811
    monkeypatch.setenv("TORCH_HOME", str(torch_home))
    _train_and_load(domainbed, tmp_path / "o", ["--dataset", "Debug224", "--steps", "1", "--hparams",
                                                json.dumps({"batch_size": 4, "resnet18": True,
                                                            "resnet50_augmix": False})], "ERM")
