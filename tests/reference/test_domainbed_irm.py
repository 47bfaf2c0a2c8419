"""IRM, IB_IRM, IB_ERM and VREx against DomainBed's: identical weights and minibatches, float64, steps crossing
every anneal step (anneal iters 2, so steps 0–1 use the warm-up weight, step 2 resets Adam, 2–4 the full one).

DomainBed's IB_ERM/IB_IRM report as ``nll`` the whole objective (``loss = nll; loss += ...`` adds in place to
the ``nll`` tensor), and its VREx the last domain's risk; those ``nll`` keys are not compared (ours report the
mean per-domain risk); ``loss``, the penalties and every parameter are."""

import pytest

from dganalysis.algorithms.registry import get_algorithm
from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps

ANNEAL = 2
STEPS = 5


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


def test_irm_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "IRM", hparams={"irm_penalty_anneal_iters": ANNEAL, "irm_lambda": 100.0})
    hist = run_steps(pair, STEPS, loss_keys={"loss": "loss", "nll": "nll", "penalty": "penalty"})
    assert all(abs(lt["penalty"]) > 0 for lt, _ in hist)  # the penalty is live, not trivially zero
    assert_same_predictions(pair)


def test_ib_irm_matches_domainbed(domainbed):
    hp = {"irm_penalty_anneal_iters": ANNEAL, "irm_lambda": 50.0, "ib_penalty_anneal_iters": ANNEAL + 1, "ib_lambda": 10.0}
    pair = build_pair(domainbed, "IB_IRM", hparams=hp)
    run_steps(pair, STEPS + 1, loss_keys={"loss": "loss", **get_algorithm("IB_IRM").DOMAINBED_KEYS})
    assert_same_predictions(pair)


def test_ib_erm_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "IB_ERM", hparams={"ib_penalty_anneal_iters": ANNEAL, "ib_lambda": 10.0})
    run_steps(pair, STEPS, loss_keys={"loss": "loss", **get_algorithm("IB_ERM").DOMAINBED_KEYS})
    assert_same_predictions(pair)


def test_vrex_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "VREx", hparams={"vrex_penalty_anneal_iters": ANNEAL, "vrex_lambda": 10.0})
    run_steps(pair, STEPS, loss_keys={"loss": "loss", "penalty": "penalty"})
    assert_same_predictions(pair)
