"""RDM against DomainBed's: identical weights and minibatches, float64, 5 steps crossing the anneal step
(``rdm_penalty_anneal_iters`` = 2: steps 0–1 plain ERM over the domain-mean risk, step 2 restarts the optimiser at
``rdm_lr``, steps 2–4 with both penalties), with and without the variance penalty, and DomainBed's per-dataset
defaults (PACS, DomainNet) for the weights.

DomainBed's update allocates its per-domain losses with ``.cuda()``; on a machine without a GPU
:func:`cuda_is_identity` makes that call a no-op during DomainBed's update (what it computes is unchanged)."""

import contextlib
import math

import pytest
import torch

from tests.reference._harness import (
    assert_same_predictions,
    build_pair,
    default_float64,
    make_minibatches,
    run_steps,
)

LOSS_KEYS = {k: k for k in ("total_loss", "erm_loss", "matching_penalty", "variance_penalty", "rdm_lambda")}


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@contextlib.contextmanager
def cuda_is_identity():
    original = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self
    try:
        yield
    finally:
        torch.Tensor.cuda = original


def update_domainbed_rdm(model, minibatches):
    with cuda_is_identity():
        return model.update(minibatches)


@pytest.mark.parametrize("dataset,variance_weight", [("RotatedMNIST", 0.004), ("PACS", 0.05), ("DomainNet", None)])
def test_rdm_matches_domainbed(domainbed, dataset, variance_weight):
    hp = {"rdm_penalty_anneal_iters": 2, "rdm_lr": 2e-3}
    if variance_weight is not None:
        hp["variance_weight"] = variance_weight
    pair = build_pair(domainbed, "RDM", hparams=hp, dataset=dataset)
    assert pair.our_hparams["rdm_lambda"] == pair.db_hparams["rdm_lambda"]
    hist = run_steps(pair, 5, loss_keys={"total_loss": "loss", **LOSS_KEYS}, update_theirs=update_domainbed_rdm)
    assert all(lt["matching_penalty"] > 0 and lt["variance_penalty"] > 0 for lt, _ in hist)
    # the penalties weigh in from step 2 on, not before
    assert [lt["total_loss"] > lt["erm_loss"] for lt, _ in hist] == [False, False, True, True, True]
    assert pair.ours.optimizer.param_groups[0]["lr"] == pytest.approx(2e-3)
    assert_same_predictions(pair)


def test_rdm_unequal_batches_pool_by_concatenation(domainbed):
    """Where DomainBed cannot stack unequal minibatches, ours pools them; with equal sizes both layouts agree."""
    from dganalysis.algorithms.rdm import worst_and_all_risks

    rows = [torch.rand(4), torch.rand(4), torch.rand(4)]
    w, a = worst_and_all_risks(rows, 1)
    assert torch.equal(w, rows[1]) and torch.equal(a, torch.cat(rows))
    w, a = worst_and_all_risks([rows[0], rows[1][:3]], 1)
    assert torch.equal(w, rows[1][:3]) and len(a) == 7


def test_rdm_single_domain_is_nan_as_domainbed(domainbed):
    """DomainBed's quirk kept: with one training domain the squeezed risk matrix makes the worst domain's risks a
    single number, its variance NaN, and the loss NaN from the first step (0 · NaN)."""
    pair = build_pair(domainbed, "RDM", hparams={"rdm_penalty_anneal_iters": 2}, n_domains=1)
    mb = make_minibatches(1, 8)
    with pytest.warns(UserWarning):  # torch warns about the variance of one element
        lt = update_domainbed_rdm(pair.theirs, [(x.clone(), y.clone()) for x, y in mb])
    with pytest.warns(UserWarning):
        lo = pair.ours.update([(x.clone(), y.clone()) for x, y in mb], 0)
    assert math.isnan(lt["total_loss"]) and math.isnan(lo["loss"])
    assert math.isnan(lt["variance_penalty"]) and math.isnan(lo["variance_penalty"])
    assert lt["matching_penalty"] == pytest.approx(lo["matching_penalty"], abs=1e-9)
