"""Transfer against DomainBed's: identical weights and minibatches, float64; the projection onto the δ-ball both
inactive (large δ) and active (small δ), and DomainBed's ``gda=True`` quirk (the network never trains)."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


def _adv_distance(model) -> float:
    from dganalysis.algorithms.transfer import state_distance

    return float(state_distance(model.adv_classifier, model.classifier))


@pytest.mark.parametrize("delta,nonlinear", [(0.05, True), (50.0, False)])
def test_transfer_matches_domainbed(domainbed, delta, nonlinear):
    hp = {"t_lambda": 2.0, "delta": delta, "d_steps_per_g": 2, "lr_d": 0.5, "nonlinear_classifier": nonlinear}
    pair = build_pair(domainbed, "Transfer", hparams=hp)
    hist = run_steps(pair, 3, loss_keys={"loss": "loss", "gap": "gap"}, batch_size=6)
    assert all(lt["gap"] > 0 for lt, _ in hist)
    dist = _adv_distance(pair.ours)
    assert (dist == pytest.approx(delta, rel=1e-9)) == (delta < 1), dist  # the projection ran iff δ is small
    assert_same_predictions(pair)


def test_transfer_gda_quirk_matches_domainbed(domainbed):
    """DomainBed's gda=True (drawn for every hparams_seed ≠ 0) steps only h': featurizer and classifier stay put."""
    pair = build_pair(domainbed, "Transfer", hparams={"gda": True, "d_steps_per_g": 1, "delta": 0.05})
    before = [p.detach().clone() for p in pair.ours.network.parameters()]
    run_steps(pair, 2, loss_keys={"loss": "loss", "gap": "gap"}, batch_size=6)
    assert all(torch.equal(a, b) for a, b in zip(before, pair.ours.network.parameters()))
    assert_same_predictions(pair)


def test_domain_loss_gap_first_domain_wins_ties():
    from dganalysis.algorithms.transfer import domain_loss_gap

    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(1.0, requires_grad=True)
    c = torch.tensor(0.5, requires_grad=True)
    losses = iter([a, b, c])
    gap = domain_loss_gap(lambda x, y: next(losses), [(None, None)] * 3)
    gap.backward()
    assert gap.item() == 0.5 and float(a.grad) == 1.0 and b.grad is None and float(c.grad) == -1.0


def test_transfer_nogda_variant_trains_in_every_draw(domainbed):
    """Transfer_NoGDA departs from DomainBed's draws only in ``gda`` (pinned), and then trains like Transfer."""
    from dganalysis.algorithms import default_hparams

    for seed in (1, 2, 3):
        theirs = domainbed.hparams_registry.random_hparams("Transfer", "PACS", domainbed.misc.seed_hash(seed, 0))
        ours = default_hparams("Transfer_NoGDA", seed, dataset="PACS")
        assert theirs["gda"] is True and ours["gda"] is False
        assert {k: v for k, v in theirs.items() if k != "gda" and k in ours} == {
            k: ours[k] for k in theirs if k != "gda" and k in ours}
    pair = build_pair(domainbed, "Transfer", our_name="Transfer_NoGDA", hparams={"d_steps_per_g": 1})
    run_steps(pair, 2, loss_keys={"loss": "loss", "gap": "gap"}, batch_size=6)  # gda False: DomainBed's own path
