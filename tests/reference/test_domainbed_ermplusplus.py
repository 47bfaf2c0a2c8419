"""ERMPlusPlus against DomainBed's class: linear probing for ``linear_steps`` then full fine-tuning, the SMA network
(copied, then averaged from ``sma_start_iter``) that predicts, with Adam and with LARS. DomainBed's class cannot
be built with ``lars`` (it passes ``foreach=False`` to a LARS that takes no such argument): a test pins that, and
the LARS comparison drops that argument on DomainBed's side."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_key_map, run_steps


def key_map(name: str) -> str:
    if name.startswith("network_sma.0."):
        return "network_sma.0." + default_key_map("featurizer." + name[len("network_sma.0."):])[len("featurizer."):]
    return default_key_map(name)


@pytest.fixture
def lars_without_foreach(domainbed, monkeypatch):
    base = domainbed.algorithms.LARS

    def lars(params, foreach=None, **kw):
        return base(params, **kw)
    monkeypatch.setattr(domainbed.algorithms, "LARS", lars)


def _pair(domainbed, lars: bool, sma_start: int):
    hp = {"linear_steps": 2, "lars": lars, "lr": 1e-2 if lars else 1e-3, "linear_lr": 3e-2 if lars else 1e-2,
          "weight_decay": 1e-3}
    pair = build_pair(domainbed, "ERMPlusPlus", hparams=hp, key_map=key_map)
    pair.theirs.sma_start_iter = pair.ours.sma_start_iter = sma_start
    return pair


def _clf_and_feat(pair):
    return pair.ours.classifier.weight.detach().clone(), pair.ours.featurizer.body[0].weight.detach().clone()


@pytest.mark.parametrize("lars", [False, True])
def test_ermplusplus_matches_domainbed_across_linear_steps_and_sma_start(domainbed, lars_without_foreach, lars):
    pair = _pair(domainbed, lars, sma_start=4)
    assert any(k.startswith("network_sma.0.body.0") for k in pair.copied)
    clf0, feat0 = _clf_and_feat(pair)
    run_steps(pair, 3, key_map=key_map, batch_size=4)  # updates 0, 1, 2: global_iter ≤ linear_steps → head only
    clf3, feat3 = _clf_and_feat(pair)
    assert torch.equal(feat3, feat0) and not torch.equal(clf3, clf0)
    run_steps(pair, 3, key_map=key_map, batch_size=4)  # full fine-tuning; SMA averages from global_iter 4
    assert not torch.equal(pair.ours.featurizer.body[0].weight, feat3)
    assert pair.ours.global_iter == pair.theirs.global_iter == 6 and pair.ours.sma_count == pair.theirs.sma_count == 3
    sma = pair.ours.network_sma.state_dict()
    live = pair.ours.network.state_dict()
    assert max(float((sma[k] - live[k]).abs().max()) for k in live) > 1e-6  # SMA ≠ live weights after averaging
    assert_same_predictions(pair)


def test_domainbed_ermplusplus_cannot_build_lars(domainbed):
    with pytest.raises(TypeError, match="foreach"):
        _pair(domainbed, True, sma_start=600)


def test_ermplusplus_predicts_with_the_sma_network(domainbed):
    pair = _pair(domainbed, False, sma_start=1)
    run_steps(pair, 4, key_map=key_map, batch_size=4)
    x = torch.rand(3, 2, 28, 28, dtype=torch.float64)
    pair.ours.eval()
    with torch.no_grad():
        torch.testing.assert_close(pair.ours.predict(x), pair.ours.network_sma(x), rtol=0, atol=0)
        assert float((pair.ours.predict(x) - pair.ours.network(x)).abs().max()) > 1e-9


@pytest.mark.parametrize("freeze_bn", [False, True])
def test_ermplusplus_with_batchnorm_featurizer(domainbed, freeze_bn):
    """At 32 px both sides build DomainBed's Wide-ResNet (BatchNorm): the SMA copies/averages running statistics,
    keeps its own ``num_batches_tracked``, and (unless ``freeze_bn``) refreshes them with a train-mode forward."""
    from tests.reference._harness import max_param_diff, seed_all

    shape = (3, 32, 32)
    pair = build_pair(domainbed, "ERMPlusPlus", input_shape=shape, key_map=lambda k: k,
                      hparams={"linear_steps": 1, "freeze_bn": freeze_bn, "lr": 1e-3, "linear_lr": 1e-2},
                      our_extra={"featurizer": "domainbed", "pretrained": None})
    pair.theirs.sma_start_iter = pair.ours.sma_start_iter = 3
    pair.theirs.train()
    pair.ours.train()
    g = torch.Generator().manual_seed(0)
    for step in range(4):
        mb = [(torch.rand((2, *shape), generator=g, dtype=torch.float64) * (0.5 + 0.25 * d),
               torch.randint(0, 3, (2,), generator=g)) for d in range(3)]
        seed_all(step)
        lt = pair.theirs.update([(x.clone(), y.clone()) for x, y in mb])
        seed_all(step)
        lo = pair.ours.update([(x.clone(), y.clone()) for x, y in mb], step)
        assert abs(lt["loss"] - lo["loss"]) <= 1e-9, (step, lt, lo)
        diff, where = max_param_diff(pair, lambda k: k)
        assert diff <= 1e-9, f"step {step}: {where} differs by {diff:.3g}"
    st, so = pair.theirs.network_sma.state_dict(), pair.ours.network_sma.state_dict()
    key = "0.bn1.num_batches_tracked"
    assert int(so[key]) == int(st[key]) == (0 if freeze_bn else 4)
    x = torch.rand((2, *shape), dtype=torch.float64)
    pair.theirs.eval()
    pair.ours.eval()
    with torch.no_grad():
        torch.testing.assert_close(pair.ours.predict(x), pair.theirs.predict(x), rtol=0, atol=1e-9)
