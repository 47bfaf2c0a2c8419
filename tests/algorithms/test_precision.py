"""bf16 autocast vs fp32, one ``update()`` at a time, for every registered algorithm; CPU, tiny learnable data.

Training runs ``update()`` under ``torch.autocast(device, bfloat16)`` (see ``dganalysis.training.train``). Here, along a
24-step fp32 trajectory (cnn featurizer, Adam, penalties switched on at step 1 or 2, so the anneal steps are
crossed), each step is also taken under bf16 autocast by a copy of the algorithm at the same parameters,
optimiser state and global seeds, and compared with the fp32 step:

- every value ``update()`` reports (losses, penalties) within ``REL`` of fp32, relative to max(1, |fp32 value|);
- the parameter change points the same way: cosine(Δθ_bf16, Δθ_fp32) ≥ ``COS``. Where fp32 takes no step
  (SANDMask at DomainBed's τ = 1 masks every gradient), neither may bf16: an Adam step moves nearly every parameter
  by about the learning rate, and bf16 may move fewer than 0.01% of them, each by less than it (measured: at most 7
  of 370,947 parameters, by at most 0.13 of it, where rounding lets a masked gradient through).

The check runs over the registry (:func:`tests.algorithms._build.registered`), so a new registration is checked
without touching this file, on CPUs with AMX-bf16 (where ``precision="auto"`` trains in bf16); on other CPUs with
bf16 instructions (AVX-512 BF16) one algorithm per update shape runs (:data:`tests.algorithms._build.UPDATE_SHAPES`),
and on CPUs without them, where bf16 is emulated, none (:func:`tests.algorithms._build.bf16_registry_param`;
``DGA_BF16_ALL_ALGORITHMS=1`` runs them all anywhere). Transfer and Transfer_NoGDA take 2 ascent steps per update instead of DomainBed's 10,
for time. Measured (2-core CPU): losses within 0.25% for most algorithms; 1.1% (IRM; WM's penalty), 1.6% (IB_IRM,
λ = 100 times a penalty computed from bf16 logits), 2.6% (Transfer's gap at the first update) and 2.8% (Fish's
loss at the first update); cosines ≥ 0.95 but ADRMX's (0.938, featurizers in bf16, its contrastive losses in fp32)
and WM's (0.943). MMD and MLDG run their whole update with autocast off (see their docstrings: in bf16 the MMD
penalty was off by 0.14 and MLDG's meta-test loss by 31%), so they agree exactly; so do TRM, CAD and CondCAD (see
their docstrings), CausIRL_MMD and RDM (whose kernels on per-example risks gave cosines of 0.28–0.70 otherwise).

Known gaps are listed in ``KNOWN_GAPS`` with what was measured and marked ``xfail(strict=True)``: a fix then fails
as XPASS, and its entry goes (``NEAR_THRESHOLD`` gaps, which another CPU's bf16 kernels may pass, are not strict).
Each known gap trains in fp32 under ``precision="auto"`` (``Algorithm.BF16_AUTOCAST = False``). Free-running bf16 and fp32 curves are compared in ``test_precision_curves.py``, not
step by step: training is chaotic at this scale (ERM's own curves drift 30% apart by step 24 while every single step
agrees to 0.1%).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import dganalysis.algorithms as A
from tests.algorithms._build import N_CLASSES, SHAPE, bf16_registry_param, make, registered

STEPS, REL, COS = 24, 0.03, 0.9

#: registered algorithms whose bf16 update does not track fp32's, with what was measured
KNOWN_GAPS = {
    **{name: "the worst-case term (tag 'wc') under bf16 autocast: the γ* its dual solver picks and the wc_loss and "
             "wc_term it reports are 5-80% off fp32 (γ* 40-51% off at the first update for CORAL_WC and MMD_WC), "
             "update cosines down to -0.04; only the inner solve runs in fp32, the features it starts from and the "
             "head at the worst-case points run in bf16"
       for name in registered(tag="wc")},
    "ADRMX_ClassRemix": "update direction cosine 0.855 at step 14 (ADRMX's own: 0.938 or more at every step)",
}


def test_known_gaps_train_in_fp32_under_auto():
    """Every algorithm whose bf16 update is a known gap declares BF16_AUTOCAST = False, so precision="auto" trains
    it in fp32 (dganalysis.training.train.run_job); and no other algorithm does (the flag is earned by a measurement here)."""
    off = {name for name in registered() if not A.get_algorithm(name).BF16_AUTOCAST}
    assert off == set(KNOWN_GAPS)


#: gaps close to the threshold, which another CPU's bf16 kernels may pass: not strict there
NEAR_THRESHOLD = {"ADRMX_ClassRemix"}


def _params(name: str):
    gap = (pytest.mark.xfail(strict=name not in NEAR_THRESHOLD, reason=KNOWN_GAPS[name]),) if name in KNOWN_GAPS else ()
    return bf16_registry_param(name, *gap)


pytestmark = pytest.mark.usefixtures("one_thread")


def learnable_minibatches(seed: int, n_domains: int = 3, batch: int = 8):
    """Class prototypes plus noise, scaled per domain (so penalties see a domain shift and the loss falls)."""
    protos = torch.rand((N_CLASSES, *SHAPE), generator=torch.Generator().manual_seed(42))
    g = torch.Generator().manual_seed(seed)
    out = []
    for d in range(n_domains):
        y = torch.randint(0, N_CLASSES, (batch,), generator=g)
        x = (0.6 * protos[y] + 0.4 * torch.rand((batch, *SHAPE), generator=g)) * (0.6 + 0.2 * d)
        out.append((x, y))
    return out


def _flat(alg) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in alg.parameters()])


def _seed(s: int) -> None:
    torch.manual_seed(s)
    np.random.seed(s)


def overrides(name: str) -> dict:
    """IRM-style penalties switched on at step 2 (not 1), and 2 adversarial ascent steps per update (for time)."""
    specs = A.hparam_specs(name)
    out = {"irm_penalty_anneal_iters": 2} if "irm_penalty_anneal_iters" in specs else {}
    if "d_steps_per_g" in specs:
        out["d_steps_per_g"] = 2
    return out


@pytest.mark.parametrize("name", [_params(n) for n in registered()])
def test_bf16_autocast_update_tracks_fp32(name):
    torch.manual_seed(0)
    alg = make(name, featurizer="cnn", **overrides(name))
    for step in range(STEPS):
        mbs = learnable_minibatches(100 + step)
        probe, before = copy.deepcopy(alg), _flat(alg)
        _seed(step)
        ref = alg.update(mbs, step)
        _seed(step)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = probe.update(mbs, step)
        for k, v in ref.items():
            assert abs(got[k] - v) <= REL * max(1.0, abs(v)), f"step {step}: {k} fp32 {v:.6g} vs bf16 {got[k]:.6g}"
        moved_fp32, moved_bf16 = _flat(alg) - before, _flat(probe) - before
        if not moved_fp32.any():  # no step in fp32: none in bf16 either (see the module docstring)
            share, largest = float((moved_bf16 != 0).double().mean()), float(moved_bf16.abs().max())
            assert share < 1e-4 and largest < alg.hparams["lr"], \
                f"step {step}: fp32 takes no step, bf16 moves {share:.2%} of the parameters, by up to {largest:.3g}"
            continue
        cos = torch.nn.functional.cosine_similarity(moved_fp32, moved_bf16, dim=0)
        assert cos >= COS, f"step {step}: update direction cosine {float(cos):.3f}"
