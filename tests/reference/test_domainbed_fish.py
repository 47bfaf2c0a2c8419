"""Fish against DomainBed's: inner Adam steps over the domains in order, inner optimiser state carried across
updates, meta step θ ← θ + ε (θ̃ − θ) and the last domain's loss as ``loss``."""

import re

import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_key_map, run_steps


def fish_key_map(name: str) -> str:
    return default_key_map(re.sub(r"^network\.net\.", "network.", name))


def _update_in_float64(model, minibatches):
    """DomainBed rebuilds its inner clone in the default dtype each update: make that float64 like the rest."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return model.update(minibatches)
    finally:
        torch.set_default_dtype(old)


def test_fish_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "Fish", hparams={"meta_lr": 0.1}, key_map=fish_key_map)
    run_steps(pair, 3, key_map=fish_key_map, batch_size=4, update_theirs=_update_in_float64)
    assert_same_predictions(pair)
