"""ERM against DomainBed's ERM: the harness's own check (weights copied, identical steps and predictions)."""

from tests.reference._harness import assert_same_predictions, build_pair, run_steps


def test_erm_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "ERM")
    assert any(k.startswith("featurizer.body.0") for k in pair.copied)
    run_steps(pair, 3)
    assert_same_predictions(pair)


def test_harness_detects_a_difference(domainbed):
    """The comparison can fail: a different learning rate on our side is caught."""
    import pytest

    pair = build_pair(domainbed, "ERM", our_extra={"lr": 2e-3})
    with pytest.raises(AssertionError, match="parameters differ"):
        run_steps(pair, 1)
