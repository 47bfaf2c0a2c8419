"""One invariant per algorithm that a wrong implementation would break (CPU, tiny data)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import dganalysis.algorithms as A
from dganalysis.algorithms._utils import grad_reverse, restart_optimizer
from dganalysis.algorithms.andmask import and_mask, sand_mask_values
from dganalysis.algorithms.causirl import random_halves
from dganalysis.algorithms.coral import coral_penalty, mmd_penalty
from dganalysis.algorithms.eqrm import kde_quantile
from dganalysis.algorithms.fishr import corrected_ema, fishr_penalty, gradient_variance, per_sample_head_grads
from dganalysis.algorithms.groupdro import groupdro_weights
from dganalysis.algorithms.iga import iga_penalty
from dganalysis.algorithms.irm import ib_penalty, irm_penalty
from dganalysis.algorithms.mixup import mixup_loss
from dganalysis.algorithms.mldg import meta_train_test_pairs
from dganalysis.algorithms.rdm import worst_and_all_risks
from dganalysis.algorithms.rsc import below_quantile, rsc_mask
from dganalysis.algorithms.sagnet import sagnet_randomize
from dganalysis.algorithms.sd import sd_penalty
from dganalysis.algorithms.selfreg import class_blocks, same_class_partners, selfreg_penalty
from dganalysis.algorithms.swad import swad_window
from dganalysis.algorithms.vrex import vrex_penalty
from dganalysis.data.balanced import class_balanced_weights, domainbed_cdann_weights
from dganalysis.training.optim import make_optimizer, make_scheduler
from tests.algorithms._build import BATCH, N_CLASSES, make, tiny_minibatches

pytestmark = pytest.mark.usefixtures("one_thread")


def params_after_one_step(name: str, minibatches, init_from=None, **overrides):
    """Parameters of ``network`` after one SGD update (SGD, so the step is proportional to the gradient)."""
    alg = make(name, optimizer="sgd", lr=0.1, **overrides)
    if init_from is not None:
        alg.network.load_state_dict(init_from.network.state_dict())
    alg.update(minibatches, 0)
    return alg, [p.detach().clone() for p in alg.network.parameters()]


def assert_same_step_as_erm(name: str, minibatches=None, **overrides):
    mbs = minibatches or tiny_minibatches()
    erm = make("ERM", optimizer="sgd", lr=0.1)
    ref = make("ERM", optimizer="sgd", lr=0.1)
    ref.network.load_state_dict(erm.network.state_dict())
    _, got = params_after_one_step(name, mbs, init_from=erm, **overrides)
    ref.update(mbs, 0)
    for a, b in zip(got, ref.network.parameters()):
        torch.testing.assert_close(a, b.detach(), atol=1e-6, rtol=1e-5)


def test_erm_loss_is_pooled_cross_entropy():
    alg, mbs = make("ERM"), tiny_minibatches()
    x, y = torch.cat([b[0] for b in mbs]), torch.cat([b[1] for b in mbs])
    with torch.no_grad():
        expected = F.cross_entropy(alg.predict(x), y).item()
    assert alg.update(mbs, 0)["loss"] == pytest.approx(expected, rel=1e-5)


# --- distribution matching ----------------------------------------------------------------
def test_coral_penalty_vanishes_on_identical_domains_only():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 5, generator=g)
    assert coral_penalty(x, x).item() == pytest.approx(0.0, abs=1e-10)
    assert coral_penalty(x, x + 1.0).item() == pytest.approx(1.0, rel=1e-5)  # mean shift of 1 on every entry
    assert coral_penalty(x, 2 * x).item() > 0.01  # covariance ×4
    assert coral_penalty(x, x[torch.randperm(32, generator=g)]).item() == pytest.approx(0.0, abs=1e-10)


def test_mmd_penalty_vanishes_on_identical_domains_and_grows_with_shift():
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(16, 4, generator=g), torch.randn(16, 4, generator=g)
    assert mmd_penalty(x, x).item() == pytest.approx(0.0, abs=1e-5)
    assert mmd_penalty(x, y + 3).item() > mmd_penalty(x, y + 0.5).item() > 0
    torch.testing.assert_close(mmd_penalty(x, y), mmd_penalty(y, x))


# --- invariance penalties -----------------------------------------------------------------
def test_irm_penalty_zero_where_dummy_scale_gradient_is_zero():
    y = torch.tensor([0, 1, 2, 0, 1, 2])
    # logits 0: d/dw CE(w · 0, y) = 0 exactly
    assert irm_penalty(torch.zeros(6, 3), y).item() == 0.0
    assert irm_penalty(torch.zeros(6, 3), y, unbiased=False).item() == 0.0
    # the biased penalty is the squared derivative w.r.t. the scale (finite differences)
    logits = torch.randn(6, 3, generator=torch.Generator().manual_seed(1))
    eps = 1e-3
    d = (F.cross_entropy(logits * (1 + eps), y) - F.cross_entropy(logits * (1 - eps), y)) / (2 * eps)
    assert irm_penalty(logits, y, unbiased=False).item() == pytest.approx(d.item() ** 2, rel=1e-3)


def test_ib_penalty_is_mean_feature_variance():
    z = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    assert ib_penalty(torch.ones(10, 4)).item() == 0.0
    assert ib_penalty(z).item() == pytest.approx(z.var(0).mean().item())
    alg = make("IB_IRM")  # the IB term is part of IB_IRM's objective
    assert "ib_penalty" in alg.update(tiny_minibatches(), 0)


def test_ib_erm_without_bottleneck_equals_erm():
    assert_same_step_as_erm("IB_ERM", ib_lambda=0.0, ib_penalty_anneal_iters=0)


def test_vrex_penalty_zero_when_domain_losses_equal():
    assert vrex_penalty(torch.tensor([0.7, 0.7, 0.7])).item() == 0.0
    assert vrex_penalty(torch.tensor([1.0, 3.0])).item() == pytest.approx(1.0)


def test_fishr_penalty_zero_for_identical_domains_and_per_sample_grads_exact():
    head = torch.nn.Linear(5, 3)
    g = torch.Generator().manual_seed(0)
    z, y = torch.randn(6, 5, generator=g), torch.randint(0, 3, (6,), generator=g)
    ps = per_sample_head_grads(head, z, y)
    for i in range(6):
        gi = torch.autograd.grad(F.cross_entropy(head(z[i : i + 1]), y[i : i + 1]), list(head.parameters()))
        torch.testing.assert_close(ps[i], torch.cat([t.flatten() for t in gi]))
    v = gradient_variance(ps)
    # DomainBed's corrected moving average: the first value is the current one; later ones m_t / (1 − ema)
    out, m = corrected_ema(None, v, 0.9)
    torch.testing.assert_close(out, v)
    out2, _ = corrected_ema(m, 2 * v, 0.9)
    torch.testing.assert_close(out2, (0.9 * 0.1 * v + 0.1 * 2 * v) / 0.1)
    assert fishr_penalty(torch.stack([v, v, v])).item() == 0.0
    assert fishr_penalty(torch.stack([v, 2 * v])).item() > 0
    # Fishr's penalty is differentiable w.r.t. the features (it trains the featurizer)
    zr = z.clone().requires_grad_(True)
    pen = fishr_penalty(torch.stack([gradient_variance(per_sample_head_grads(head, zr[:3], y[:3])),
                                     gradient_variance(per_sample_head_grads(head, zr[3:], y[3:]))]))
    assert torch.autograd.grad(pen, zr)[0].abs().sum() > 0


def test_iga_identical_domains_zero_penalty_and_erm_step():
    grads = [[torch.ones(2, 2), torch.zeros(3)]] * 3
    assert iga_penalty(grads, [torch.ones(2, 2), torch.zeros(3)]).item() == 0.0
    x, y = tiny_minibatches()[0]
    # λ = 10: the penalty is zero analytically; float32 rounding of g_e − ḡ (two graphs) is amplified by λ
    assert_same_step_as_erm("IGA", [(x, y)] * 3, penalty=10.0)


# --- robust optimisation ------------------------------------------------------------------
def test_groupdro_weights_on_simplex_and_shift_to_worse_group():
    q = torch.full((3,), 1 / 3)
    losses = torch.tensor([0.5, 2.0, 1.0])
    for _ in range(5):
        q = groupdro_weights(q, losses, 0.1)
        assert q.min() >= 0 and q.sum().item() == pytest.approx(1.0)
    assert q.argmax().item() == 1 and q[1] > q[2] > q[0]
    alg = make("GroupDRO")
    mbs = tiny_minibatches()
    for s in range(3):
        alg.update(mbs, s)
        assert alg.q.sum().item() == pytest.approx(1.0, abs=1e-6) and (alg.q >= 0).all()


def test_groupdro_forwards_each_domain_separately():
    """As DomainBed, one forward pass per domain: with BatchNorm the batch statistics are per domain."""
    alg = make("GroupDRO", featurizer="smallcnn_bn")
    mbs = [(x.expand(-1, 1, 8, 8) * (1 + d), y) for d, (x, y) in enumerate(tiny_minibatches())]
    q = alg.q.clone()
    with torch.no_grad():
        per_domain = torch.stack([F.cross_entropy(copy.deepcopy(alg.network)(x), y) for x, y in mbs])
        logits = copy.deepcopy(alg.network)(torch.cat([x for x, _ in mbs])).split(BATCH)
        pooled = torch.stack([F.cross_entropy(lo, y) for lo, (_, y) in zip(logits, mbs)])
    assert (per_domain - pooled).abs().max() > 1e-4  # the check can tell the two apart
    expected = groupdro_weights(q, per_domain, float(alg.hparams["groupdro_eta"]))
    assert alg.update(mbs, 0)["loss"] == pytest.approx(float((expected * per_domain).sum()), rel=1e-5)


# --- data augmentation / regularisation ---------------------------------------------------
def test_mixup_at_lambda_one_equals_erm(monkeypatch):
    net = make("ERM").network
    (xi, yi), (xj, yj) = tiny_minibatches()[:2]
    torch.testing.assert_close(mixup_loss(net, xi, yi, xj, yj, 1.0), F.cross_entropy(net(xi), yi))
    monkeypatch.setattr(A.get_algorithm("Mixup"), "sample_lambda", lambda self: 1.0)
    assert_same_step_as_erm("Mixup")


def test_sd_without_penalty_equals_erm_and_penalty_value():
    logits = torch.tensor([[1.0, -2.0], [0.0, 3.0]])
    assert sd_penalty(logits).item() == pytest.approx((1 + 4 + 0 + 9) / 4)
    assert_same_step_as_erm("SD", sd_reg=0.0)


def test_rsc_mask_mutes_top_quantile_of_the_most_affected_examples():
    grads = torch.tensor([[0.1, 0.9, 0.5, -1.0], [2.0, 0.0, 1.0, 3.0]])
    assert below_quantile(grads, 0.5, dim=1).tolist() == [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]]
    # a drop factor of 0 (quantile 1) still mutes each example's largest entry, as DomainBed's percentile cut
    assert below_quantile(grads, 1.0, dim=1).tolist() == [[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]]
    full = rsc_mask(grads, torch.tensor([0.3, -0.1]), 0.5, 0.5)  # only example 0 (largest drop) is muted
    assert full.tolist() == [[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]
    # thresholds are numpy's linear-interpolation percentiles (DomainBed's np.percentile)
    g = torch.randn(6, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    thr = torch.as_tensor(np.percentile(g.numpy(), 70.0, axis=1)).unsqueeze(1)
    assert torch.equal(below_quantile(g, 0.7, dim=1), g.lt(thr).double())


def test_selfreg_pairs_same_class_and_penalty_zero_for_identical_class_members():
    torch.manual_seed(0)
    y, _ = torch.sort(torch.tensor([2, 0, 1, 0, 2, 2, 1, 0]))
    assert class_blocks(y) == [3, 5, 8]
    assert class_blocks(torch.tensor([1, 1, 2])) == [0, 2, 3]  # DomainBed's scan starts from label 0
    i2, i3 = same_class_partners(y)
    for idx in (i2, i3):
        assert sorted(idx.tolist()) == list(range(len(y))) and torch.equal(y[idx], y)
    proto_o, proto_f = torch.randn(3, 4), torch.randn(3, 6)
    # the feature term compares z with the partners' projections: zero when P(z) equals the class prototype
    pen = selfreg_penalty(proto_o[y], proto_f[y], proto_f[y], i2, i3, 0.3)
    assert pen.item() == pytest.approx(0.0, abs=1e-12)
    noisy = selfreg_penalty(proto_o[y] + torch.randn(8, 4), proto_f[y], proto_f[y], i2, i3, 0.3)
    assert noisy.item() > 0
    alg = make("SelfReg")
    before = [p.detach().clone() for p in alg.cdpl.parameters()]
    alg.update(tiny_minibatches(), 0)
    assert all(torch.equal(a, b) for a, b in zip(before, alg.cdpl.parameters()))  # as DomainBed: P not trained


# --- gradient agreement -------------------------------------------------------------------
def test_andmask_threshold_zero_equals_erm_and_mask_drops_disagreement():
    g = torch.tensor([[1.0, 1.0, -1.0], [2.0, -1.0, -3.0]])
    out = and_mask(g, 1.0)  # entries 0 and 2 agree → kept, rescaled by 3/2
    torch.testing.assert_close(out, torch.tensor([1.5, 0.0, -2.0]) * 1.5)
    assert_same_step_as_erm("ANDMask", tau=0.0)


def test_sandmask_values_in_unit_interval_zero_on_conflict():
    agree = torch.tensor([[1.0, 2.0, -1.0], [1.1, 2.5, -0.9], [0.9, 1.5, -1.2]])
    conflict = torch.tensor([[1.0, 2.0], [-1.0, -2.0]])
    m = sand_mask_values(agree, tau=0.5, k=10.0)
    assert ((m >= 0) & (m <= 1)).all() and (m > 0.99).all()
    assert (sand_mask_values(conflict, tau=0.5, k=10.0) == 0).all()


# --- adversarial ---------------------------------------------------------------------------
def test_dann_gradient_reversal_sign():
    alg = make("DANN_GRL", **{"lambda": 0.7})
    z = torch.randn(6, alg.featurizer.n_outputs, requires_grad=True)
    d, y = torch.tensor([0, 1, 2, 0, 1, 2]), torch.zeros(6, dtype=torch.long)
    g_rev = torch.autograd.grad(alg.domain_loss(z, y, d, 0.7), z)[0]
    g_plain = torch.autograd.grad(F.cross_entropy(alg.discriminator(z), d), z)[0]
    torch.testing.assert_close(g_rev, -0.7 * g_plain)
    # the discriminator itself descends its loss (no reversal on its own parameters)
    w = alg.discriminator[0].weight
    torch.testing.assert_close(torch.autograd.grad(alg.domain_loss(z, y, d, 0.7), w)[0],
                               torch.autograd.grad(F.cross_entropy(alg.discriminator(z), d), w)[0])
    x = torch.randn(3, requires_grad=True)
    assert torch.autograd.grad(grad_reverse(x, 2.0).sum(), x)[0].tolist() == [-2.0] * 3
    warm = make("DANN_GRL", **{"lambda": 2.0}, dann_lambda_schedule="ganin", steps=100)
    assert warm.current_lambda(0) == 0.0 and warm.current_lambda(100) == pytest.approx(2.0, rel=1e-3)


def test_dann_alternates_discriminator_and_generator_steps():
    alg = make("DANN", d_steps_per_g_step=2)
    assert [alg.is_disc_step(s) for s in range(6)] == [True, False, True, True, False, True]
    disc0 = [p.detach().clone() for p in alg.discriminator.parameters()]
    gen0 = [p.detach().clone() for p in alg.network.parameters()]
    assert "disc_loss" in alg.update(tiny_minibatches(), 0)  # discriminator step: only D moves
    assert all(torch.equal(a, b) for a, b in zip(gen0, alg.network.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(disc0, alg.discriminator.parameters()))
    disc1 = [p.detach().clone() for p in alg.discriminator.parameters()]
    assert "gen_loss" in alg.update(tiny_minibatches(), 1)  # generator step: only g, h move
    assert all(torch.equal(a, b) for a, b in zip(disc1, alg.discriminator.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(gen0, alg.network.parameters()))


def test_cdann_class_balanced_conditional_discriminator():
    y = torch.tensor([0, 0, 0, 1, 2, 2])
    w = class_balanced_weights(y)
    assert w.sum().item() == pytest.approx(1.0)
    for c in (0, 1, 2):
        assert w[y == c].sum().item() == pytest.approx(1 / 3)
    torch.testing.assert_close(domainbed_cdann_weights(y), w.to(torch.get_default_dtype()))  # all classes ≤ max present
    alg = make("CDANN_GRL")
    z, d = torch.randn(6, alg.featurizer.n_outputs), torch.tensor([0, 1, 2, 0, 1, 2])
    # the discriminator is conditioned on the class: other labels, other loss
    assert alg.domain_loss(z, y, d, 1.0).item() != pytest.approx(alg.domain_loss(z, (y + 1) % 3, d, 1.0).item())


def test_erdg_entropy_term_trains_featurizer_only_and_aux_heads_own_domain():
    alg = make("ERDG")
    t = alg.losses(tiny_minibatches())
    aux_params = list(alg.domain_classifiers.parameters())
    feat_params = list(alg.featurizer.parameters())
    g_er = torch.autograd.grad(t["er"], aux_params + feat_params, allow_unused=True, retain_graph=True)
    assert all(g is None or g.abs().sum() == 0 for g in g_er[: len(aux_params)])
    assert any(g is not None and g.abs().sum() > 0 for g in g_er[len(aux_params):])
    g_aux = torch.autograd.grad(t["aux"], feat_params, allow_unused=True, retain_graph=True)
    assert all(g is None or g.abs().sum() == 0 for g in g_aux)
    # auxiliary head k only sees domain k: changing domain 1's data leaves head 0's gradient unchanged
    mbs = tiny_minibatches()
    mbs2 = [mbs[0], tiny_minibatches(seed=5)[1], mbs[2]]
    h0 = list(alg.domain_classifiers[0].parameters())
    ga = torch.autograd.grad(alg.losses(mbs)["aux"], h0)
    gb = torch.autograd.grad(alg.losses(mbs2)["aux"], h0)
    for a, b in zip(ga, gb):
        torch.testing.assert_close(a, b)


def test_sagnet_randomizations_swap_only_style_or_content():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 10, generator=g) * torch.rand(6, 1, generator=g) * 3 + torch.randn(6, 1, generator=g)
    perm, alpha = torch.tensor([1, 2, 3, 4, 5, 0]), torch.rand(6, generator=g)

    def normed(t):
        return (t - t.mean(1, keepdim=True)) / t.std(1, keepdim=True)

    s = sagnet_randomize(z, "style", alpha, perm)
    torch.testing.assert_close(normed(s), normed(z), atol=1e-4, rtol=1e-4)  # content kept
    assert not torch.allclose(s.mean(1), z.mean(1))
    c = sagnet_randomize(z, "content", alpha, perm)
    torch.testing.assert_close(c.mean(1), z.mean(1), atol=1e-5, rtol=1e-5)  # style kept
    torch.testing.assert_close(normed(c), normed(z)[perm], atol=1e-4, rtol=1e-4)  # content swapped
    torch.testing.assert_close(sagnet_randomize(z, "style", torch.ones(6), perm), z, atol=1e-5, rtol=1e-5)


# --- meta-learning / weight averaging -------------------------------------------------------
def test_fish_meta_step_interpolates():
    mbs = tiny_minibatches()
    start = make("Fish")
    p0 = [p.detach().clone() for p in start.network.parameters()]
    moved = {}
    for eps in (1.0, 0.25):
        alg = make("Fish", meta_lr=eps)
        alg.network.load_state_dict(start.network.state_dict())
        torch.manual_seed(7)  # same domain order
        alg.update(mbs, 0)
        moved[eps] = [p.detach() - q for p, q in zip(alg.network.parameters(), p0)]
    for a, b in zip(moved[1.0], moved[0.25]):
        torch.testing.assert_close(b, 0.25 * a, atol=1e-6, rtol=1e-5)
    assert sum(a.abs().sum() for a in moved[1.0]) > 0


def test_mldg_split_and_first_order_meta_train_gradient():
    torch.manual_seed(0)
    pairs = meta_train_test_pairs(4, 2)
    torch.manual_seed(0)
    perm = torch.randperm(4).tolist()
    assert pairs == [(perm[0], perm[2]), (perm[1], perm[3])]
    # without the meta-test term the step follows (1/n) Σ_{meta-train i} ∇L_i (n = all training domains)
    mbs = tiny_minibatches()
    alg = make("MLDG", optimizer="sgd", lr=0.1, mldg_beta=0.0, n_meta_test=1)
    ref = copy.deepcopy(alg.network)
    torch.manual_seed(3)
    meta_train = torch.randperm(3).tolist()[:2]
    torch.manual_seed(3)
    alg.update(mbs, 0)
    loss = sum(F.cross_entropy(ref(mbs[i][0]), mbs[i][1]) for i in meta_train) / 3
    for p, q, g in zip(alg.network.parameters(), ref.parameters(), torch.autograd.grad(loss, list(ref.parameters()))):
        torch.testing.assert_close(p.detach(), (q - 0.1 * g).detach())


def test_swad_average_equals_mean_of_averaged_weights():
    alg = make("SWAD", steps=4, swad_start=0.5, swad_end=1.0)
    mbs = tiny_minibatches()
    snaps = []
    for step in range(5):
        alg.update(mbs, step)
        snaps.append([p.detach().clone() for p in alg.online.parameters()])
        if step == 0:  # before the window the returned model is the online one
            for a, b in zip(alg.network.parameters(), alg.online.parameters()):
                torch.testing.assert_close(a, b)
    assert int(alg.n_averaged) == 3
    for i, p in enumerate(alg.network.parameters()):
        torch.testing.assert_close(p, torch.stack([s[i] for s in snaps[2:]]).mean(0), atol=1e-6, rtol=1e-5)
    assert swad_window([5, 4, 3, 3.1, 3.2, 3.0, 5, 5, 5], n_converge=3, n_tolerance=3, tolerance_ratio=0.3) == (2, 5)


# --- adaptive / context models ----------------------------------------------------------------
def test_mtl_embedding_is_domain_mean_and_predict_uses_batch_mean():
    alg = make("MTL_KME", mtl_ema=1.0)
    mbs = tiny_minibatches()
    with torch.no_grad():
        means = [alg.featurizer.base(x).mean(0) for x, _ in mbs]
    alg.update(mbs, 0)
    for d in range(3):
        torch.testing.assert_close(alg.embeddings[d], means[d])
    x = mbs[0][0]
    with torch.no_grad():
        z = alg.featurizer.base(x)
        expected = alg.classifier(torch.cat([z, z.mean(0).expand_as(z)], 1))
        torch.testing.assert_close(alg.predict(x), expected)
        assert not torch.allclose(alg.predict(x)[:2], alg.predict(x[:2]))  # depends on the batch (domain)


def test_mtl_domainbed_feeds_noise_but_tracks_embeddings():
    alg = make("MTL", mtl_ema=1.0)
    mbs = tiny_minibatches()
    with torch.no_grad():
        means = [alg.featurizer.base(x).mean(0) for x, _ in mbs]
    alg.update(mbs, 0)
    for d in range(3):
        torch.testing.assert_close(alg.embeddings[d], means[d])
    x = mbs[0][0]
    with torch.no_grad():
        torch.manual_seed(1)
        a = alg.predict(x)
        torch.manual_seed(1)
        z = alg.featurizer.base(x)
        torch.testing.assert_close(a, alg.classifier(torch.cat([z, torch.empty_like(z).normal_()], 1)))
        assert not torch.allclose(alg.predict(x), a)  # a fresh draw each call


@pytest.mark.parametrize("name", ["ARM", "ARM_CML"])
def test_arm_context_is_shared_over_the_support_set(name):
    alg = make(name)
    ctx0 = [p.detach().clone() for p in alg.featurizer.context_net.parameters()]
    alg.update(tiny_minibatches(), 0)
    ctx_moved = any(not torch.equal(a, b) for a, b in zip(ctx0, alg.featurizer.context_net.parameters()))
    assert ctx_moved == (name == "ARM_CML")  # DomainBed's ARM never steps its context network
    alg.eval()
    x = tiny_minibatches(seed=2)[0][0]
    perm = torch.randperm(BATCH)
    with torch.no_grad():
        out = alg.predict(x)
        torch.testing.assert_close(alg.predict(x[perm]), out[perm], atol=1e-5, rtol=1e-5)
        x2 = x.clone()
        x2[-1] = 1.0 - x2[-1]  # change one member of the support set
        assert not torch.allclose(alg.predict(x2)[0], out[0])
        assert alg.predict(x).shape == (BATCH, N_CLASSES)


# --- trust regions, domain bottlenecks, adversarial heads: TRM, CAD, CondCAD, Transfer, ADRMX -------------------
def test_trm_is_erm_before_iters_and_alpha_stays_on_the_simplex():
    assert_same_step_as_erm("TRM", iters=5)
    alg = make("TRM", iters=0)
    for step in range(2):
        alg.update(tiny_minibatches(seed=step), step)
    rows = alg.alpha / alg.alpha.sum(1, keepdim=True)
    assert torch.all(alg.alpha.diagonal() == 0) and torch.all(alg.alpha >= 0)
    torch.testing.assert_close(rows.sum(1), torch.ones(len(rows)))


@pytest.mark.parametrize("name", ["CAD", "CondCAD"])
def test_cad_bottleneck_penalises_domain_information(name):
    """Without its weight CAD is ERM; its bottleneck is larger when z reveals the domain than when it does not."""
    from dganalysis.algorithms.cad import cad_bottleneck

    assert_same_step_as_erm(name, lmbda=0.0)
    g = torch.Generator().manual_seed(0)
    y = torch.arange(12) % 3
    d = torch.arange(12) // 4
    noise = 0.1 * torch.randn(12, 6, generator=g)
    by_class = F.one_hot(y, 6).float() + noise
    by_domain = by_class + 3.0 * F.one_hot(d + 3, 6).float()
    conditional = name == "CondCAD"
    assert cad_bottleneck(by_domain, y, d, 0.1, conditional) > cad_bottleneck(by_class, y, d, 0.1, conditional) + 1


def test_transfer_adversary_stays_in_the_delta_ball():
    from dganalysis.algorithms.transfer import state_distance

    alg = make("Transfer", delta=0.01, lr_d=1.0, d_steps_per_g=3)
    out = alg.update(tiny_minibatches(), 0)
    assert float(state_distance(alg.adv_classifier, alg.classifier)) <= 0.01 + 1e-6
    assert out["gap"] >= 0


def test_adrmx_discriminator_and_generator_turns_touch_their_own_parameters():
    alg = make("ADRMX")  # d_steps_per_g_step = 2: update 1 (step 0) trains D, update 2 the rest, update 3 D
    disc = lambda: [p.detach().clone() for p in alg.discriminator.parameters()]  # noqa: E731
    gen = lambda: [p.detach().clone() for p in alg.network.parameters()]  # noqa: E731
    for step, d_turn in [(0, True), (1, False), (2, True)]:
        d0, g0 = disc(), gen()
        alg.update(tiny_minibatches(seed=step), step)
        d_moved = any(not torch.equal(a, b) for a, b in zip(d0, disc()))
        g_moved = any(not torch.equal(a, b) for a, b in zip(g0, gen()))
        assert (d_moved, g_moved) == (d_turn, not d_turn), step


# --- risk extrapolation and causal matching (CausIRL_CORAL, CausIRL_MMD, EQRM, RDM, URM): with their penalty off
# they take ERM's step; the pieces (KDE quantile, random halves, risk pooling, optimiser restart, URM's parameter
# split) behave as their docstrings say
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
