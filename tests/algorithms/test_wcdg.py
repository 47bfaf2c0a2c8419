"""WCDG, its ``<base>_WC`` variants, G2DM and WM (the WC-DG poster's algorithms) on simulated data: they update,
predict and reload, the variants expose their base's hparams, and the worst-case term lowers the worst-case loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dganalysis.algorithms import create, default_hparams, hparam_specs
from dganalysis.dro import worst_case_curve
from tests.algorithms._build import registered

pytestmark = pytest.mark.usefixtures("one_thread")
SHAPE = (1, 4, 4)
#: the worst-case family (by its registry tag) and the two poster baselines it is combined with
POSTER = [*registered(tag="wc"), "G2DM", "WM"]


def domains(seed=0, n=64, shift=0.0):
    """Two simulated domains, 3 classes: class c brightens pixel block c; domain 1 is shifted."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for d in range(2):
        y = torch.randint(0, 3, (n,), generator=g)
        x = torch.rand(n, *SHAPE, generator=g) * 0.5 + d * shift
        for c in range(3):
            x[y == c, 0, c, :] += 0.35
        out.append((x.clamp(0, 1), y))
    return out


def hp(name, **kw):
    h = default_hparams(name, overrides={"featurizer": "mlp", "lr": 3e-3, **kw})
    h["steps"] = 200
    return h


def train(name, steps=150, seed=0, **kw):
    torch.manual_seed(seed)
    alg = create(name, SHAPE, 3, 2, hp(name, **kw))
    data = domains()
    return alg, [alg.update(data, s) for s in range(steps)]


@pytest.mark.parametrize("name", POSTER)
def test_algorithms_update_predict_and_reload(name):
    alg, outs = train(name, steps=4)
    assert all(np.isfinite(v) for out in outs for v in out.values())
    # the worst-case term comes with every update that steps the classifier (G2DM's discriminator turns do not), and
    # only in the worst-case family
    assert any("loss" in out for out in outs)
    for step, out in enumerate(outs):
        if "loss" in out:
            assert ("wc_loss" in out) == (name in registered(tag="wc")), (step, sorted(out))
    x = domains()[0][0]
    assert alg.predict(x).shape == (len(x), 3)
    assert alg.features(x).shape[0] == len(x)
    clone = create(name, SHAPE, 3, 2, alg.hparams)
    clone.load_state_dict(alg.state_dict())
    alg.eval()
    clone.eval()
    assert torch.allclose(clone.predict(x), alg.predict(x))


def test_variant_exposes_base_hparams():
    specs = hparam_specs("CORAL_WC")
    assert "mmd_gamma" in specs and "wc_rho" in specs
    assert "wc_base" in hparam_specs("WCDG")
    with pytest.raises(ValueError, match="wc_base"):
        create("WCDG", SHAPE, 3, 2, hp("WCDG", wc_base="ERM_WC"))


def test_wcdg_lowers_worst_case_loss_vs_erm():
    data = domains(seed=3)
    x = torch.cat([d[0] for d in data])
    y = torch.cat([d[1] for d in data])
    res = {}
    for name, kw in [("ERM", {}), ("ERM_WC", {"wc_rho": 0.3, "wc_weight": 1.0})]:
        alg, _ = train(name, steps=100, **kw)
        alg.eval()
        with torch.no_grad():
            z = alg.features(x)
        res[name] = worst_case_curve(z, y, alg.classifier, [0.0, 0.1, 0.3], "ce", scale="std")
    assert res["ERM_WC"].worst_case_loss.iloc[-1] < 0.8 * res["ERM"].worst_case_loss.iloc[-1], res
