"""Every registered algorithm keeps the :class:`~dganalysis.algorithms.base.Algorithm` contract: a few updates on
tiny data (CPU) report finite losses and move the parameters, ``predict`` equals the head on ``features``, a saved
state reloads, and the optimiser and schedule hparams apply."""

from __future__ import annotations

import math

import pytest
import torch

from tests.algorithms._build import BATCH, N_CLASSES, make, registered, tiny_minibatches

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("name", registered())
def test_updates_finite_move_and_predict(name):
    alg = make(name)
    assert alg.__class__.__doc__ and alg.__class__.__module__.startswith("dganalysis.algorithms.")
    assert isinstance(alg.featurizer, torch.nn.Module) and isinstance(alg.classifier, torch.nn.Module)
    before = [p.detach().clone() for p in alg.parameters()]
    mbs = tiny_minibatches()
    reported = set()
    for step in range(4):
        out = alg.update(mbs, step)
        reported |= set(out)
        assert all(math.isfinite(v) for v in out.values()), out
    # a training loss is reported (adversarial algorithms alternate: DomainBed's DANN records disc_loss / gen_loss)
    assert reported & {"loss", "gen_loss"}, f"{name} reported only {sorted(reported)}"
    moved = any(not torch.equal(a, b) for a, b in zip(before, alg.parameters()))
    # DomainBed's SANDMask default τ = 1 zeroes the mask: no update (SANDMask_tau05 is the variant that moves)
    assert moved != (name == "SANDMask"), "no parameter moved" if name != "SANDMask" else "SANDMask(τ=1) moved"
    alg.eval()
    x = tiny_minibatches(seed=1)[0][0]
    with torch.no_grad():
        torch.manual_seed(0)  # DomainBed's MTL draws noise in predict: same seed, same draw
        logits = alg.predict(x)
        assert logits.shape == (BATCH, N_CLASSES)
        assert torch.isfinite(logits).all()
        # the representation and head the estimators use give the same predictions
        torch.manual_seed(0)
        torch.testing.assert_close(alg.classifier(alg.features(x)), logits)
    # a saved state loads into a fresh instance (what train.load_model does) and predicts the same
    fresh = make(name, seed=1)
    fresh.load_state_dict(alg.state_dict())
    fresh.eval()
    with torch.no_grad():
        torch.manual_seed(0)
        torch.testing.assert_close(fresh.predict(x), logits)


@pytest.mark.parametrize("optimizer,schedule", [("sgd", "cosine"), ("adamw", "step")])
def test_optimizer_and_schedule_hparams_apply(optimizer, schedule):
    alg = make("VREx", optimizer=optimizer, schedule=schedule, steps=2)
    assert type(alg.optimizer).__name__ == {"sgd": "SGD", "adamw": "AdamW"}[optimizer]
    lr0 = alg.optimizer.param_groups[0]["lr"]
    alg.update(tiny_minibatches(), 0)
    alg.update(tiny_minibatches(), 1)
    assert alg.optimizer.param_groups[0]["lr"] < lr0
