"""EQRM against DomainBed's: identical weights and minibatches, float64, 5 steps crossing the burn-in
(``eqrm_burnin_iters`` = 2: steps 0–1 the mean risk, step 2 restarts the optimiser at ``eqrm_lr``, steps 2–4 the
KDE quantile of the domain risks), for a high and a low quantile and for 4 domains.

DomainBed's α buffer (float64, from ``eqrm_quantile``) has no partner in ours (we read the hparam), so it is left
out of the weight copy. The quirk of a drawn, non-integer burn-in (no restart, ``eqrm_lr`` unused) is compared
step for step as well and pinned."""

import pytest

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@pytest.mark.parametrize("quantile,n_domains", [(0.75, 3), (0.3, 3), (0.95, 4)])
def test_eqrm_matches_domainbed(domainbed, quantile, n_domains):
    hp = {"eqrm_burnin_iters": 2, "eqrm_quantile": quantile, "eqrm_lr": 1e-3}
    pair = build_pair(domainbed, "EQRM", hparams=hp, n_domains=n_domains, ignore=["alpha"])
    hist = run_steps(pair, 5, loss_keys={"loss": "loss"})
    # from step 2 on the loss is a quantile of the risks, not their mean
    assert [abs(lo["loss"] - lo["mean_risk"]) > 1e-6 for _, lo in hist] == [False, False, True, True, True]
    assert pair.ours.optimizer.param_groups[0]["lr"] == 1e-3
    assert_same_predictions(pair)


def test_eqrm_float_burnin_never_restarts_as_domainbed(domainbed):
    """A drawn burn-in is a float: the quantile loss starts at ⌈2.5⌉ = 3, but the restart (equality with the step)
    never fires, on DomainBed's side and ours: the learning rate stays ``lr``."""
    hp = {"eqrm_burnin_iters": 2.5, "eqrm_quantile": 0.75, "eqrm_lr": 1e-5}
    pair = build_pair(domainbed, "EQRM", hparams=hp, ignore=["alpha"])
    hist = run_steps(pair, 5, loss_keys={"loss": "loss"})
    assert [abs(lo["loss"] - lo["mean_risk"]) > 1e-6 for _, lo in hist] == [False, False, False, True, True]
    lr = pair.db_hparams["lr"]
    assert pair.ours.optimizer.param_groups[0]["lr"] == lr == pair.theirs.optimizer.param_groups[0]["lr"] != 1e-5
    assert_same_predictions(pair)


def test_eqrm_restart_variant(domainbed):
    """``EQRM_restart`` is DomainBed's EQRM for an integer burn-in, and restarts at ⌈burn-in⌉ for a float one."""
    hp = {"eqrm_burnin_iters": 2, "eqrm_quantile": 0.75, "eqrm_lr": 1e-3}
    pair = build_pair(domainbed, "EQRM", our_name="EQRM_restart", hparams=hp, ignore=["alpha"])
    run_steps(pair, 5, loss_keys={"loss": "loss"})
    assert_same_predictions(pair)

    hp = {"eqrm_burnin_iters": 2.5, "eqrm_quantile": 0.75, "eqrm_lr": 1e-5}
    pair = build_pair(domainbed, "EQRM", our_name="EQRM_restart", hparams=hp, ignore=["alpha"])
    with pytest.raises(AssertionError, match="step 3: parameters differ"):  # the same until the restart at step 3
        run_steps(pair, 5, loss_keys={"loss": "loss"})
    assert pair.ours.optimizer.param_groups[0]["lr"] == 1e-5
    assert pair.theirs.optimizer.param_groups[0]["lr"] == pair.db_hparams["lr"]
