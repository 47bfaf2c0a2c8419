"""TRM against DomainBed's: identical weights (featurizer, classifier *and* the per-domain heads, which DomainBed
keeps outside its state_dict) and minibatches, float64; ``iters = 2`` so steps 0–1 are ERM and steps 2–4 TRM (the
head fitting, the Neumann series, the α updates and their in-place quirk); α and every head compared each step.
DomainBed's constructor calls ``.cuda()``; it is made a no-op while the CPU test builds it."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps

N_DOMAINS = 3
IGNORE = ["alpha"] + [f"domain_heads.{i}.{p}" for i in range(N_DOMAINS) for p in ("weight", "bias")]


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *a, **k: self)


def build_trm(domainbed, hp, our_extra=None):
    pair = build_pair(domainbed, "TRM", hparams=hp, ignore=IGNORE, our_extra=our_extra)
    with torch.no_grad():
        for ours, theirs in zip(pair.ours.domain_heads, pair.theirs.clist):
            ours.weight.copy_(theirs.weight)
            ours.bias.copy_(theirs.bias)
    return pair


#: Float64 tolerance of this comparison. DomainBed and we sum the same terms in other orders; TRM's losses reach ~7e2
#: at η = 0.5, and α (exp(η·loss) updates) and the heads (a 10-term Neumann series) carry those rounding errors
#: (eps64·|loss| ≈ 1.6e-13 per term) through 3 TRM steps. Measured: 9e-11 (Intel, AMX) and 1.04e-9 (another CPU)
#: at step 4, and predictions 3.4e-9 apart in one CI run; a one-line break of the update moves α or a head by
#: > 1e-3. 1e-7 keeps a factor 30 above the largest rounding seen and 4 decades below a break.
ATOL = 1e-7


def heads_and_alpha_agree(pair, atol=ATOL):
    def update_ours(model, mb, step):
        out = model.update(mb, step)
        diff = float((model.alpha - pair.theirs.alpha).abs().max())
        for ours, theirs in zip(model.domain_heads, pair.theirs.clist):
            diff = max(diff, (ours.weight - theirs.weight).abs().max().item(), (ours.bias - theirs.bias).abs().max().item())
        assert diff <= atol, f"step {step}: alpha/heads differ by {diff:.3g}"
        return out
    return update_ours


@pytest.mark.parametrize("cos_lambda,eta", [(1e-4, 1e-2), (0.5, 0.5)])
def test_trm_matches_domainbed(domainbed, no_cuda, cos_lambda, eta):
    hp = {"iters": 2, "cos_lambda": cos_lambda, "groupdro_eta": eta}
    pair = build_trm(domainbed, hp)
    hist = run_steps(pair, 5, loss_keys={"nll": "nll", "trm_loss": "trm_loss"}, batch_size=6, atol=ATOL,
                     update_ours=heads_and_alpha_agree(pair))
    assert [lt["trm_loss"] == 0 for lt, _ in hist] == [True, True, False, False, False]
    assert not torch.equal(pair.ours.alpha, torch.full_like(pair.ours.alpha, 0.5) - 0.5 * torch.eye(N_DOMAINS))
    assert_same_predictions(pair, atol=ATOL)


def test_trm_class_balanced_matches_domainbed(domainbed, no_cuda):
    hp = {"iters": 1, "cos_lambda": 0.1, "class_balanced": True}
    pair = build_trm(domainbed, hp, our_extra={"class_balanced": True})
    run_steps(pair, 3, loss_keys={"nll": "nll", "trm_loss": "trm_loss"}, batch_size=6, atol=ATOL,
              update_ours=heads_and_alpha_agree(pair))
    assert_same_predictions(pair, atol=ATOL)


def test_neumann_series_first_term_quirk():
    """DomainBed's series is 2·v₁ + v₂ + … (its in-place update overwrites v₀), pinned on a head with known H."""
    from dganalysis.algorithms.trm import head_hvp, neumann_inverse_hvp

    torch.manual_seed(0)
    head = torch.nn.Linear(3, 2)
    z, y = torch.randn(5, 3), torch.randint(0, 2, (5,))
    v0 = torch.randn(6) * 0.1
    vs, v = [], v0
    for _ in range(10):
        v = v - head_hvp(head, z, y, v)
        vs.append(v)
    expected = 2 * vs[0] + sum(vs[1:])
    got = neumann_inverse_hvp(head, z, y, v0)
    assert float(expected.abs().max()) < 10  # the series runs its 10 terms (no early stop) on this head
    torch.testing.assert_close(got, expected)
    assert not torch.allclose(got, v0 + sum(vs))  # the textbook series differs
