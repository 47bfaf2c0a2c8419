"""WCDG / G2DM / WM algorithms and the differentiable worst-case term (the WC-DG poster)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from dganalysis.algorithms import create, default_hparams, hparam_specs
from dganalysis.dro import robust_surrogate, worst_case_curve, worst_case_penalty

torch.set_num_threads(1)
SHAPE = (1, 4, 4)


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
    for s in range(steps):
        out = alg.update(data, s)
    return alg, out


def test_surrogate_gradient_is_danskin():
    torch.manual_seed(0)
    z = torch.randn(32, 5, requires_grad=True)
    y = torch.randint(0, 3, (32,))
    head = nn.Linear(5, 3)
    val, info = robust_surrogate(z, y, head, gamma=5.0, scale="none", steps=200)
    val.backward()
    # finite differences on z along a random direction (envelope theorem: u* held fixed is exact)
    v = torch.randn_like(z)
    eps = 1e-3
    with torch.no_grad():
        plus, _ = robust_surrogate(z + eps * v, y, head, 5.0, scale="none", steps=200)
        minus, _ = robust_surrogate(z - eps * v, y, head, 5.0, scale="none", steps=200)
    fd = (plus - minus) / (2 * eps)
    assert float((z.grad * v).sum()) == pytest.approx(float(fd), rel=2e-2, abs=1e-4)
    assert info["wc_loss"] >= float(nn.functional.cross_entropy(head(z), y))


def test_penalty_rho_form_matches_curve():
    torch.manual_seed(1)
    z = torch.randn(64, 6)
    y = torch.randint(0, 3, (64,))
    head = nn.Linear(6, 3)
    val, _ = worst_case_penalty(z, y, head, rho=0.2, loss="ce", scale="std", steps=30)
    ref = worst_case_curve(z, y, head, [0.2], "ce", scale="std").worst_case_loss[0]
    assert float(val) == pytest.approx(ref, rel=0.1)
    with pytest.raises(ValueError, match="exactly one"):
        worst_case_penalty(z, y, head)


@pytest.mark.parametrize("name", ["WCDG", "ERM_WC", "CORAL_WC", "G2DM_WC", "WM", "G2DM"])
def test_algorithms_update_predict_and_reload(name):
    alg, out = train(name, steps=4)
    assert all(np.isfinite(v) for v in out.values())
    if name.endswith("WC") or name == "WCDG":
        assert "wc_loss" in out or name == "G2DM_WC"
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
