"""MTL against DomainBed's: per-domain EMA embeddings, the N(0, 1) overwrite of the classifier's embedding input
(same global-generator draws on both sides), the summed loss and the (random) prediction. ``MTL_KME`` is our
variant that feeds the mean embedding itself; a test pins that it departs."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_key_map, run_steps


def mtl_key_map(name: str) -> str:
    name = default_key_map(name)
    if name.startswith("featurizer."):
        name = "featurizer.base." + name[len("featurizer."):]
    return name


def test_mtl_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "MTL", hparams={"mtl_ema": 0.9}, key_map=mtl_key_map)
    run_steps(pair, 3, key_map=mtl_key_map, batch_size=4)
    torch.testing.assert_close(pair.ours.embeddings, pair.theirs.embeddings, rtol=0, atol=1e-12)
    torch.manual_seed(5)  # DomainBed's predict draws noise: seed both sides alike
    pt = pair.theirs.eval().predict(torch.rand(4, 2, 28, 28, dtype=torch.float64))
    torch.manual_seed(5)
    po = pair.ours.eval().predict(torch.rand(4, 2, 28, 28, dtype=torch.float64))
    torch.testing.assert_close(po, pt, rtol=0, atol=1e-9)


def test_mtl_kme_variant_departs(domainbed):
    """MTL_KME feeds the mean embedding (deterministic prediction), DomainBed's MTL feeds noise."""
    pair = build_pair(domainbed, "MTL", our_name="MTL_KME", key_map=mtl_key_map)
    with pytest.raises(AssertionError, match="parameters differ|DomainBed loss"):
        run_steps(pair, 1, key_map=mtl_key_map, batch_size=4)
    x = torch.rand(4, 2, 28, 28, dtype=torch.float64)
    pair.ours.eval()
    with torch.no_grad():
        torch.testing.assert_close(pair.ours.predict(x), pair.ours.predict(x))
    with pytest.raises(AssertionError, match="predict differs"):
        assert_same_predictions(pair)
