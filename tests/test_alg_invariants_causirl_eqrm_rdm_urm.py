"""Invariants of CausIRL_CORAL/CausIRL_MMD, EQRM, RDM and URM (DomainBed's algorithms added for issue 19; each is
also compared step for step with DomainBed's class in tests/reference/): with their penalty off they take ERM's
step; the pieces (KDE quantile, random halves, risk pooling, optimiser restart, URM's parameter split) behave as
their docstrings say."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_algorithms import make, tiny_minibatches

from dganalysis.algorithms._utils import restart_optimizer
from dganalysis.algorithms.causirl import random_halves
from dganalysis.algorithms.eqrm import kde_quantile
from dganalysis.algorithms.rdm import worst_and_all_risks
from dganalysis.optim import make_optimizer, make_scheduler

pytestmark = pytest.mark.usefixtures("one_thread")


def one_sgd_step(name: str, init_from=None, **overrides) -> list[torch.Tensor]:
    alg = make(name, optimizer="sgd", lr=0.1, **overrides)
    if init_from is not None:
        alg.network.load_state_dict(init_from.network.state_dict())
    np.random.seed(0)
    alg.update(tiny_minibatches(), 0)
    return [p.detach().clone() for p in alg.network.parameters()]


@pytest.mark.parametrize("name,overrides", [
    ("CausIRL_CORAL", {"mmd_gamma": 0.0}),
    ("CausIRL_MMD", {"mmd_gamma": 0.0}),
    ("RDM", {"rdm_penalty_anneal_iters": 5}),  # before the anneal step: the mean of the domain risks
    ("EQRM", {"eqrm_burnin_iters": 5}),  # during the burn-in: the mean of the domain risks
])
def test_penalty_off_is_erm_step(name, overrides):
    """With equal batch sizes and an MLP featurizer (no batch statistics), the mean of per-domain risks is ERM's."""
    ref = make("ERM", optimizer="sgd", lr=0.1)
    got = one_sgd_step(name, init_from=ref, **overrides)
    expected = one_sgd_step("ERM", init_from=ref)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_penalty_on_changes_the_step():
    ref = make("ERM", optimizer="sgd", lr=0.1)
    erm = one_sgd_step("ERM", init_from=ref)
    for name, over in [("CausIRL_MMD", {"mmd_gamma": 10.0}), ("RDM", {"rdm_penalty_anneal_iters": 0}),
                       ("EQRM", {"eqrm_burnin_iters": 0, "eqrm_quantile": 0.95})]:
        got = one_sgd_step(name, init_from=ref, **over)
        assert any(not torch.allclose(a, b, atol=1e-6) for a, b in zip(got, erm)), name


def test_kde_quantile_is_a_quantile():
    x = torch.randn(4000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    qs = [0.1, 0.5, 0.75, 0.95]
    got = [float(kde_quantile(x, q)) for q in qs]
    assert got == sorted(got)
    # the KDE of N(0, 1) is about N(0, 1 + bw²), bw = 1.06 · 4000^(-1/5) ≈ 0.20
    normal = torch.distributions.Normal(0.0, (1 + (1.06 * 4000 ** -0.2) ** 2) ** 0.5)
    for q, v in zip(qs, got):
        assert v == pytest.approx(float(normal.icdf(torch.tensor(q))), abs=0.06)
    # three domain risks: between the extremes' kernel quantiles, and it carries a gradient to the risks
    r = torch.tensor([0.5, 0.9, 2.0], dtype=torch.float64, requires_grad=True)
    k = kde_quantile(r, 0.75)
    k.backward()
    shift = 1.06 * float(r.detach().std()) * 3 ** -0.2 * 0.6745  # the 0.75-quantile of a kernel, above its centre
    assert 0.5 + shift <= k.item() <= 2.0 + shift
    assert r.grad is not None and float(r.grad.abs().sum()) > 0


def test_random_halves_split_every_domain_once():
    feats = [torch.arange(6.0).view(6, 1) + 10 * d for d in range(3)]
    np.random.seed(3)
    a, b = random_halves(feats)
    assert len(a) + len(b) == 18
    assert sorted(torch.cat([a, b]).flatten().tolist()) == sorted(torch.cat(feats).flatten().tolist())
    np.random.seed(3)
    cuts = [np.random.randint(0, 6) for _ in range(3)]
    assert len(a) == sum(cuts)


def test_rdm_risks_pooling():
    rows = [torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])]
    w, a = worst_and_all_risks(rows, 1)
    assert w.tolist() == [3.0, 4.0] and a.tolist() == [1.0, 2.0, 3.0, 4.0]
    w, a = worst_and_all_risks([torch.tensor([1.0, 2.0])], 0)  # DomainBed's squeeze: one domain → one entry
    assert w.tolist() == [1.0] and a.tolist() == [1.0, 2.0]


def _stepped(lr: float, schedule: str, n: int):
    w = torch.nn.Parameter(torch.ones(3))
    hp = {"lr": lr, "schedule": schedule, "steps": 10}
    opt = make_optimizer([w], hp)
    sched = make_scheduler(opt, hp)
    for _ in range(n):
        opt.zero_grad()
        w.sum().backward()
        opt.step()
        sched.step()
    return opt, sched


@pytest.mark.parametrize("schedule", ["constant", "cosine", "step"])
def test_restart_optimizer_new_base_lr_same_schedule_position(schedule):
    """After a restart at step 5 to base rate 0.01 the rates are those of a job run at 0.01 from the start."""
    opt, sched = _stepped(0.1, schedule, 5)
    restart_optimizer(opt, sched, 0.01)
    assert not opt.state  # Adam's moments forgotten
    ref_opt, _ = _stepped(0.01, schedule, 5)
    assert opt.param_groups[0]["lr"] == pytest.approx(ref_opt.param_groups[0]["lr"], rel=1e-12)
    for n in range(6, 10):
        opt.step()
        sched.step()
        ref_opt, _ = _stepped(0.01, schedule, n)
        assert opt.param_groups[0]["lr"] == pytest.approx(ref_opt.param_groups[0]["lr"], rel=1e-9), n


def test_urm_network_optimiser_excludes_discriminator_and_both_move():
    alg = make("URM", featurizer="mlp")
    net = {id(p) for g in alg.optimizer.param_groups for p in g["params"]}
    disc = {id(p) for p in alg.discriminator.parameters()}
    assert net == {id(p) for p in alg.network.parameters()} and not net & disc
    d0 = [p.detach().clone() for p in alg.discriminator.parameters()]
    out = alg.update(tiny_minibatches(), 0)
    assert {"loss", "d_loss", "g_loss"} <= set(out)
    assert all(not torch.equal(a, b) for a, b in zip(d0, alg.discriminator.parameters()))
    with torch.no_grad():
        z = alg.features(tiny_minibatches()[0][0])
    assert float(z.abs().max()) < 1.0  # tanh by default
