"""Worst-case (Wasserstein DRO) estimators: dual solver, closed forms, input space (the WC-DG poster)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from dganalysis.dro import (
    DualConfig,
    compare_input_representation,
    inner,
    input_worst_case_curve,
    worst_case_curve,
    worst_case_samples,
)
from dganalysis.dro.losses import cross_entropy, multiclass_hinge, zero_one

torch.set_num_threads(1)


def toy(n=300, d=8, c=4, seed=0, sep=1.0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    means = torch.randn(c, d, generator=g) * sep
    y = torch.randint(0, c, (n,), generator=g)
    z = means[y] + torch.randn(n, d, generator=g)
    head = nn.Linear(d, c)
    opt = torch.optim.Adam(head.parameters(), lr=0.05)
    for _ in range(60):
        opt.zero_grad()
        nn.functional.cross_entropy(head(z), y).backward()
        opt.step()
    return z, y, head


def test_losses_values():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.5, 0.5]])
    y = torch.tensor([0, 2])
    assert torch.allclose(cross_entropy(logits, y), nn.functional.cross_entropy(logits, y, reduction="none"))
    assert torch.allclose(multiclass_hinge(logits, y), torch.tensor([0.0, 1.0]))
    assert torch.equal(zero_one(logits, y), torch.tensor([0.0, 1.0]))  # tie counts as an error


@pytest.mark.parametrize("loss", ["ce", "hinge", "01"])
def test_rho_zero_is_nominal_and_curve_non_decreasing(loss):
    z, y, head = toy()
    rhos = [0.0, 0.02, 0.05, 0.1, 0.2, 0.4, 0.8]
    df = worst_case_curve(z, y, head, rhos, loss=loss, scale="std")
    fn = {"ce": cross_entropy, "hinge": multiclass_hinge, "01": zero_one}[loss]
    with torch.no_grad():
        nominal = float(fn(head(z), y).mean())
    assert df.worst_case_loss[0] == pytest.approx(nominal, abs=1e-6)
    assert df.nominal[0] == pytest.approx(nominal, abs=1e-6)
    assert np.all(np.diff(df.worst_case_loss.to_numpy()) >= -1e-9)
    assert df.worst_case_loss.iloc[-1] > nominal + 0.05
    if loss != "01":  # dual certificate: the maximisers sit at distance ≈ ρ with loss ≈ the dual value
        assert (df.primal_loss <= df.worst_case_loss + 1e-6).all()
        mid = df.iloc[2:5]
        assert np.allclose(mid.transport_distance, mid.rho, rtol=0.05)
        assert np.allclose(mid.primal_loss, mid.worst_case_loss, rtol=0.03)


def test_zero_one_closed_form_matches_brute_force_2d():
    g = torch.Generator().manual_seed(1)
    W = torch.randn(3, 2, generator=g)
    b = torch.randn(3, generator=g) * 0.3
    head = nn.Linear(2, 3)
    with torch.no_grad():
        head.weight.copy_(W)
        head.bias.copy_(b)
    z = torch.randn(12, 2, generator=g) * 1.5
    y = head(z).argmax(1)
    y[:2] = (y[:2] + 1) % 3  # two misclassified samples
    # brute force: inner sup over a grid of z, outer inf over a grid of γ (computed independently)
    lin = torch.linspace(-6, 6, 481)
    grid = torch.stack(torch.meshgrid(lin, lin, indexing="ij"), -1).reshape(-1, 2)
    with torch.no_grad():
        wrong = (head(grid).argmax(1)[None, :] != y[:, None]).float()  # [n, G]
    sq = torch.cdist(z, grid).square()  # [n, G]
    d2_brute = torch.where(wrong > 0, sq, torch.full_like(sq, float("inf"))).min(1).values
    d2, _ = inner.zero_one_linear_distance(z, y, W, b)
    assert torch.allclose(d2.sqrt(), d2_brute.sqrt(), atol=0.03)
    # inner sup over the grid: max(ℓ(z0), max_{wrong grid points} 1 − γ‖z − z0‖²) = max(ℓ(z0), 1 − γ d²)
    with torch.no_grad():
        loss0 = (head(z).argmax(1) != y).float()
    gammas = torch.cat([torch.zeros(1), torch.logspace(-3, 4, 20000)])
    psi = torch.maximum(loss0[None, :], 1 - gammas[:, None] * d2_brute[None, :])  # [Γ, n]
    rhos = [0.0, 0.1, 0.3, 0.6, 1.0, 2.0, 5.0]
    brute = [float((gammas * r**2 + psi.mean(1)).min()) for r in rhos]
    df = worst_case_curve(z, y, head, rhos, loss="01", scale="none")
    assert np.allclose(df.worst_case_loss, brute, atol=0.02), (df.worst_case_loss.tolist(), brute)
    assert df.worst_case_loss[0] == pytest.approx(2 / 12)


def test_hinge_closed_form_matches_brute_force_2d():
    g = torch.Generator().manual_seed(2)
    W, b = torch.randn(3, 2, generator=g), torch.randn(3, generator=g) * 0.3
    z = torch.randn(6, 2, generator=g)
    y = torch.randint(0, 3, (6,), generator=g)
    lin = torch.linspace(-8, 8, 801)
    grid = torch.stack(torch.meshgrid(lin, lin, indexing="ij"), -1).reshape(-1, 2)
    hinge = multiclass_hinge((grid @ W.T + b)[None].expand(6, -1, -1), y[:, None].expand(6, len(grid)))  # [n, G]
    sq = torch.cdist(z, grid).square()
    for gamma in [0.3, 1.0, 5.0]:
        brute = (hinge - gamma * sq).max(1).values
        psi = inner.hinge_linear(z, y, W, b, torch.full((6,), gamma))[0]
        assert torch.allclose(psi, brute, atol=0.02)


def test_gradient_ascent_matches_squared_loss_closed_form():
    # sup_z (w·z − t)² − γ‖z − z0‖² = γ r² / (γ − ‖w‖²) for γ > ‖w‖², r = w·z0 − t
    g = torch.Generator().manual_seed(3)
    d = 5
    head = nn.Linear(d, 1, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(1, d, generator=g) * 0.5)
    w2 = float(head.weight.square().sum())
    z0 = torch.randn(50, d, generator=g)
    t = torch.randn(50, generator=g)

    def sq_loss(out, target):
        return (out.squeeze(-1) - target).square()

    r = (z0 @ head.weight[0].detach() - t)
    L = inner.estimate_smoothness(head, sq_loss, z0, t)
    assert L >= 2 * w2 * 0.99  # Hessian 2ww^T
    for gamma in [1.2 * w2, 2 * w2, 10 * w2]:
        psi, *_ = inner.gradient_ascent(head, sq_loss, z0, t, torch.full((50,), gamma), L, steps=500, tol=0)
        exact = gamma * r.square() / (gamma - w2)
        assert torch.allclose(psi, exact, rtol=1e-3, atol=1e-5)
    # whole dual curve: sup_{W2 ≤ ρ} E(w·z − t)² = (‖r‖_2 + ‖w‖ρ)²
    rhos = [0.0, 0.1, 0.3, 0.6]
    df = worst_case_curve(z0, t, head, rhos, loss=sq_loss, scale="none", config=DualConfig(steps=30, grid_ratio=1.1))
    R = float(r.square().mean().sqrt())
    exact = [(R + math.sqrt(w2) * rho) ** 2 for rho in rhos]
    assert np.allclose(df.worst_case_loss, exact, rtol=0.02)


def test_scale_std_is_invariant_to_rescaling_the_representation():
    z, y, head = toy(n=200)
    big = nn.Linear(z.shape[1], 4)
    with torch.no_grad():
        big.weight.copy_(head.weight / 10)
        big.bias.copy_(head.bias)
    rhos = [0.0, 0.05, 0.2]
    a = worst_case_curve(z, y, head, rhos, loss="hinge", scale="std")
    b = worst_case_curve(z * 10, y, big, rhos, loss="hinge", scale="std")
    assert np.allclose(a.worst_case_loss, b.worst_case_loss, rtol=1e-3)


@pytest.mark.parametrize("loss", ["ce", "hinge", "01"])
def test_worst_case_samples_move_by_about_rho(loss):
    z, y, head = toy(n=200)
    rho = 0.1
    ws = worst_case_samples(z, y, head, rho, loss=loss, scale="std")
    s = float(((z - z.mean(0)).square().sum(1).mean()).sqrt())
    moved = float((ws.z - ws.z0).square().sum(1).mean().sqrt()) / s
    assert moved <= rho * 1.3
    assert float(ws.loss.mean()) >= float(ws.loss0.mean())
    if loss != "01":
        assert moved == pytest.approx(rho, rel=0.3)


def test_nonlinear_head_and_bad_inputs():
    z, y, _ = toy(n=100)
    head = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    df = worst_case_curve(z, y, head, [0, 0.1, 0.3], loss="ce", scale="std")
    assert np.all(np.diff(df.worst_case_loss) >= 0)
    with pytest.raises(ValueError, match="affine head"):
        worst_case_curve(z, y, head, [0.1], loss="01")
    with pytest.raises(ValueError, match="rhos"):
        worst_case_curve(z, y, head, [-1.0])
    with pytest.raises(ValueError, match="loss"):
        worst_case_curve(z, y, head, [0.1], loss="l2")


def test_input_space_curve_and_comparison():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(4)
    x = torch.rand(40, 1, 4, 4, generator=g)
    y = (x.mean((1, 2, 3)) > 0.5).long()
    feat = nn.Sequential(nn.Flatten(), nn.Linear(16, 6), nn.Tanh())
    head = nn.Linear(6, 2)
    net = nn.Sequential(feat, head)
    opt = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(100):
        opt.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    df = input_worst_case_curve(x, y, net, [0.0, 0.1, 0.3, 0.6], featurizer=feat, rep_scale="std")
    assert df.worst_case_loss[0] == pytest.approx(df.nominal[0])
    assert np.all(np.diff(df.worst_case_loss) >= -1e-9)
    assert (df.rep_transport.iloc[1:] > 0).all()
    cmp = compare_input_representation(x, y, feat, head, [0.1, 0.3], rep_config=DualConfig(steps=20))
    # the representation problem at the induced radius contains g#P_x: its worst case is not smaller
    assert (cmp.gap > -0.02 * cmp.rep_wc).all(), cmp
    assert (cmp.input_primal <= cmp.input_wc + 1e-6).all()
