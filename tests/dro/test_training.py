"""The differentiable worst-case term of the WC-DG poster (:mod:`dganalysis.dro.training`): Danskin's gradient of the
robust surrogate, and the constraint form equal to the worst-case curve."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dganalysis.dro import robust_surrogate, worst_case_curve, worst_case_penalty

torch.set_num_threads(1)


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
