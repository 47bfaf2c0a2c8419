"""GroupDRO, Mixup, MLDG, CORAL, MMD, RSC and SD against DomainBed's: identical weights and minibatches, float64,
several steps, identical global seeds before each side's update (Mixup's pairing permutation and Beta draw,
MLDG's meta-train/test split and RSC's quantiles all come out the same)."""

import pytest
import torch

from dganalysis.algorithms.registry import get_algorithm
from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps

STEPS = 4


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


def test_groupdro_matches_domainbed(domainbed):
    """DomainBed builds ``q`` lazily (an empty buffer until the first step): it is not copied, but compared
    after every step like the parameters."""
    pair = build_pair(domainbed, "GroupDRO", hparams={"groupdro_eta": 0.5}, ignore=("q",))
    run_steps(pair, STEPS)
    torch.testing.assert_close(pair.ours.q, pair.theirs.q, rtol=0, atol=1e-12)
    assert float(pair.ours.q.max() - pair.ours.q.min()) > 1e-3  # the weights moved away from uniform
    assert_same_predictions(pair)


def test_mixup_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "Mixup", hparams={"mixup_alpha": 0.4})
    run_steps(pair, STEPS)
    assert_same_predictions(pair)


@pytest.mark.parametrize("n_meta_test", [1, 2])
def test_mldg_matches_domainbed(domainbed, n_meta_test):
    pair = build_pair(domainbed, "MLDG", hparams={"n_meta_test": n_meta_test, "mldg_beta": 0.7})
    run_steps(pair, STEPS)
    assert_same_predictions(pair)


@pytest.mark.parametrize("name", ["CORAL", "MMD"])
def test_distribution_matching_matches_domainbed(domainbed, name):
    """DomainBed reports the classification loss as ``loss``; ours as ``nll`` (``loss`` is the objective): the
    class's DOMAINBED_KEYS, which exact mode writes records through."""
    pair = build_pair(domainbed, name, hparams={"mmd_gamma": 3.0})
    assert get_algorithm(name).DOMAINBED_KEYS == {"loss": "nll"}
    run_steps(pair, STEPS, loss_keys={"penalty": "penalty", **get_algorithm(name).DOMAINBED_KEYS})
    assert_same_predictions(pair)


@pytest.mark.parametrize("f_drop,b_drop", [(1 / 3, 1 / 3), (0.1, 0.45)])
def test_rsc_matches_domainbed(domainbed, f_drop, b_drop):
    pair = build_pair(domainbed, "RSC", hparams={"rsc_f_drop_factor": f_drop, "rsc_b_drop_factor": b_drop})
    run_steps(pair, STEPS)
    assert_same_predictions(pair)


def test_sd_matches_domainbed(domainbed):
    """DomainBed reports the classification loss as ``loss``; ours as ``nll`` (``loss`` is the objective)."""
    pair = build_pair(domainbed, "SD", hparams={"sd_reg": 0.05})
    assert get_algorithm("SD").DOMAINBED_KEYS == {"loss": "nll"}
    run_steps(pair, STEPS, loss_keys={"penalty": "penalty", **get_algorithm("SD").DOMAINBED_KEYS})
    assert_same_predictions(pair)
