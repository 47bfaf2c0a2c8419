"""ANDMask, SANDMask and IGA against DomainBed's: per-domain gradients combined by the agreement masks
(ANDMask, SANDMask at DomainBed's default τ = 1 and at τ = 0.5) or penalised by their spread (IGA)."""

import pytest

from tests.reference._harness import assert_same_predictions, build_pair, run_steps


@pytest.mark.parametrize("name,hp", [
    ("ANDMask", {"tau": 0.7}),
    ("SANDMask", {}),  # DomainBed's default τ = 1: the mask is zero, no parameter moves
    ("SANDMask", {"tau": 0.5, "k": 10.0}),
])
def test_mask_matches_domainbed(domainbed, name, hp):
    pair = build_pair(domainbed, name, hparams=hp)
    before = [p.detach().clone() for p in pair.ours.parameters()]
    run_steps(pair, 3, batch_size=4)
    moved = any((a - b).abs().max() > 0 for a, b in zip(before, pair.ours.parameters()))
    assert moved == (pair.our_hparams["tau"] < 1.0)
    assert_same_predictions(pair)


def test_iga_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "IGA", hparams={"penalty": 100.0})
    run_steps(pair, 3, loss_keys={"loss": "loss", "penalty": "penalty"}, batch_size=4)
    assert_same_predictions(pair)


def test_sandmask_tau05_variant_is_sandmask_at_half(domainbed):
    """``SANDMask_tau05`` (our preferred default) is DomainBed's SANDMask with τ = 0.5."""
    pair = build_pair(domainbed, "SANDMask", our_name="SANDMask_tau05", hparams={"tau": 0.5})
    assert pair.our_hparams["tau"] == 0.5
    run_steps(pair, 2, batch_size=4)
