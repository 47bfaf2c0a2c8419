"""Our LARS (:mod:`dganalysis.training.lars`) against DomainBed's ``lib/misc.LARS``: the same updates, to 1e-14 in float64,
with and without weight decay, including the zero-norm cases where the trust ratio falls back to 1."""

from __future__ import annotations

import pytest
import torch

from dganalysis.training.lars import LARS


def _params(seed: int) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(seed)
    shapes = [(4, 3, 3, 3), (4,), (5, 4), (5,), (2, 2)]
    ps = [torch.nn.Parameter(torch.randn(s, generator=g, dtype=torch.float64)) for s in shapes]
    with torch.no_grad():
        ps[-1].zero_()  # ‖p‖ = 0: the trust ratio falls back to 1
    return ps


@pytest.mark.parametrize("wd", [0.0, 1e-2])
def test_lars_equals_domainbeds(domainbed, wd):
    theirs_cls = domainbed.misc.LARS
    ours_p, theirs_p = _params(0), _params(0)
    ours, theirs = LARS(ours_p, lr=0.1, weight_decay=wd), theirs_cls(theirs_p, lr=0.1, weight_decay=wd)
    g = torch.Generator().manual_seed(1)
    for step in range(6):
        for a, b in zip(ours_p, theirs_p):
            grad = torch.randn(a.shape, generator=g, dtype=torch.float64)
            if step == 2 and a.ndim == 2 and a.shape == (5, 4):
                grad = -wd * a.detach().clone()  # ‖g + wd·p‖ = 0: ratio 1
            a.grad, b.grad = grad.clone(), grad.clone()
        ours.step()
        theirs.step()
        for a, b in zip(ours_p, theirs_p):
            torch.testing.assert_close(a, b, rtol=0, atol=1e-14)
    assert float((ours_p[0] - _params(0)[0]).abs().max()) > 1e-4  # it moved
