"""CausIRL_CORAL and CausIRL_MMD against DomainBed's: identical weights and minibatches, float64, the same seeded
numpy generator before each side's update (the per-domain cut points are ``np.random.randint`` draws).

Batch size 8 exercises the penalty; batch size 2 (cuts in {0, 1}) also reaches DomainBed's branch where one pool
has fewer than two rows and the penalty is 0 (asserted to happen, so both branches are compared)."""

import pytest

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps

NAMES = ["CausIRL_CORAL", "CausIRL_MMD"]


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("gamma", [1.0, 7.5])
def test_causirl_matches_domainbed(domainbed, name, gamma):
    pair = build_pair(domainbed, name, hparams={"mmd_gamma": gamma})
    hist = run_steps(pair, 5, loss_keys={"loss": "loss", "penalty": "penalty"})
    assert all(lt["penalty"] > 0 for lt, _ in hist)  # the penalty is live
    assert_same_predictions(pair)


@pytest.mark.parametrize("name", NAMES)
def test_causirl_small_pools_match_domainbed(domainbed, name):
    pair = build_pair(domainbed, name, hparams={"mmd_gamma": 3.0})
    hist = run_steps(pair, 6, batch_size=2, loss_keys={"loss": "loss", "penalty": "penalty"})
    penalties = [float(lt["penalty"]) for lt, _ in hist]
    assert 0.0 in penalties and any(p > 0 for p in penalties), penalties  # both branches were taken
    assert_same_predictions(pair)
