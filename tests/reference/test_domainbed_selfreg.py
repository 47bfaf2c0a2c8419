"""SelfReg against DomainBed's: label sort, per-class partner permutations (global torch generator), λ from
numpy's global Beta(0.5, 0.5), the BatchNorm projection ``cdpl`` and DomainBed's feature-vs-projection terms."""

from tests.reference._harness import assert_same_predictions, build_pair, run_steps


def test_selfreg_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "SelfReg")
    run_steps(pair, 3, batch_size=4)
    assert_same_predictions(pair)
