"""URM against DomainBed's: identical weights (featurizer, classifier and discriminator) and minibatches, float64,
the same seeded torch generator before each side's update (the uniform noise, and the soft targets with label
smoothing), over 4 steps; every branch of its hparams: tanh / relu / sigmoid outputs, 1–3 hidden discriminator
layers, adam / sgd discriminator optimiser, with and without label smoothing."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


CASES = [
    {},
    {"urm_generator_output": "relu", "urm_discriminator_hidden_layers": 3, "urm_adv_lambda": 0.2},
    {"urm_generator_output": "sigmoid", "urm_discriminator_hidden_layers": 2, "urm_discriminator_optimizer": "sgd",
     "urm_discriminator_lr": 1e-2},
    {"urm_discriminator_label_smoothing": 0.1, "urm_adv_lambda": 0.15},
]


@pytest.mark.parametrize("hp", CASES, ids=["default", "relu-3", "sigmoid-sgd", "smoothing"])
def test_urm_matches_domainbed(domainbed, hp):
    pair = build_pair(domainbed, "URM", hparams=hp)
    assert any(k.startswith("discriminator.") for k in pair.copied)
    run_steps(pair, 4, loss_keys={"loss": "loss"})
    assert_same_predictions(pair)
    # the output activation is part of the features (relu is bounded below only)
    with torch.no_grad():
        z = pair.ours.features(torch.rand(4, *pair.ours.input_shape, dtype=torch.float64))
    assert float(z.min()) >= pair.ours.noise_low
    if pair.our_hparams["urm_generator_output"] != "relu":
        assert float(z.max()) <= pair.ours.noise_high

def test_urm_rejects_identity_output_up_front():
    from dganalysis.algorithms import create, default_hparams

    hp = default_hparams("URM")
    hp.update(featurizer="cnn", urm_generator_output="identity")
    with pytest.raises(ValueError, match="urm_generator_output"):
        create("URM", (2, 28, 28), 3, 3, hp)
