"""CAD and CondCAD against DomainBed's: identical weights and minibatches, float64, every (conditional, flipped,
normalized) branch of the contrastive bottleneck; ``is_project`` (a NameError in DomainBed) is refused."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@pytest.mark.parametrize("name", ["CAD", "CondCAD"])
@pytest.mark.parametrize("flipped,normalized", [(True, False), (False, True), (True, True)])
def test_cad_matches_domainbed(domainbed, name, flipped, normalized):
    hp = {"lmbda": 1.0, "temperature": 0.05, "is_flipped": flipped, "is_normalized": normalized}
    pair = build_pair(domainbed, name, hparams=hp)
    keys = {"clf_loss": "clf_loss", "bn_loss": "bn_loss", "total_loss": "total_loss"}
    hist = run_steps(pair, 4, loss_keys=keys, batch_size=6)
    assert all(abs(lt["bn_loss"]) > 1e-6 for lt, _ in hist)  # the bottleneck is active, not a finite_mean of nothing
    assert_same_predictions(pair)


def test_cad_bottleneck_edge_cases():
    from dganalysis.algorithms.cad import cad_bottleneck

    z = torch.randn(4, 3, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0])
    one_domain = torch.zeros(4, dtype=torch.long)
    # a single domain: no cross-domain partner, every row is −inf → B = 0 (DomainBed's finite_mean)
    assert float(cad_bottleneck(z, y, one_domain, 0.1, conditional=False)) == 0.0
    assert float(cad_bottleneck(z, y, one_domain, 0.1, conditional=True)) == 0.0
    two = torch.tensor([0, 0, 1, 1])
    assert torch.isfinite(cad_bottleneck(z, y, two, 0.1, conditional=True))


@pytest.mark.parametrize("name", ["CAD", "CondCAD"])
def test_is_project_is_refused(name):
    from dganalysis.algorithms import create, default_hparams

    hp = default_hparams(name, overrides={"featurizer": "mlp", "is_project": True})
    with pytest.raises(ValueError, match="is_project"):
        create(name, (1, 8, 8), 3, 3, hp)
