"""Test-only helpers of the algorithm tests: a registered algorithm built on tiny inputs, and tiny minibatches.

``make(name)`` builds ``name`` with an MLP featurizer on 1×8×8 inputs, 3 classes and 3 domains, 4 steps, with every
annealed penalty switched on at step 1 so that its branch runs within a few updates; ``tiny_minibatches`` draws one
(x, y) batch of ``BATCH`` uniform images per domain. Deterministic in ``seed``.
"""

from __future__ import annotations

import torch

import dganalysis.algorithms as A

SHAPE, N_CLASSES, N_DOMAINS, BATCH = (1, 8, 8), 3, 3, 8


def tiny_minibatches(seed: int = 0, n_domains: int = N_DOMAINS, batch: int = BATCH):
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.rand(batch, *SHAPE, generator=g), torch.randint(0, N_CLASSES, (batch,), generator=g))
        for _ in range(n_domains)
    ]


def make(name: str, seed: int = 0, **overrides):
    hp = A.default_hparams(
        name, overrides={"featurizer": "mlp", **{k: v for k, v in overrides.items() if k != "steps"}}
    )
    hp["steps"] = overrides.get("steps", 4)
    # switch annealed penalties on early so the penalty branch runs in a few steps
    for k in (
        "irm_penalty_anneal_iters",
        "vrex_penalty_anneal_iters",
        "penalty_anneal_iters",
        "ib_penalty_anneal_iters",
        "rdm_penalty_anneal_iters",
        "eqrm_burnin_iters",
        "iters",  # TRM
    ):
        if k in hp and k not in overrides:
            hp[k] = 1
    torch.manual_seed(seed)
    return A.create(name, SHAPE, N_CLASSES, N_DOMAINS, hp)


def registered(tag: str | None = None) -> list[str]:
    """The algorithms the package registers (``A.names(tag)``), without the test-only ones other test modules
    register (their names start with an underscore), so that a parametrization over it does not depend on which
    test modules were imported first."""
    return [n for n in A.names(tag) if not n.startswith("_")]


#: one registered algorithm per shape of ``update()``, for checks too slow to run over the whole registry on CPUs
#: without AMX-bf16 (:func:`bf16_registry_param`)
UPDATE_SHAPES = {
    "ERM": "one gradient step on the pooled risk",
    "IRM": "a penalty on per-domain risks, switched on by an anneal step",
    "CORAL": "feature statistics matched across domains",
    "DANN": "a two-player game (discriminator and featurizer steps)",
    "Fish": "an inner loop on a copy, then a meta step",
    "ANDMask": "per-domain gradients masked by sign agreement",
    "SelfReg": "contrastive pairs within the batch",
}

#: set to 1 to run the bf16 checks over the whole registry on any CPU
ALL_BF16_ENV = "DGA_BF16_ALL_ALGORITHMS"


def bf16_registry_param(name: str, *marks):
    """``name`` as a pytest param that runs where bf16 training is this machine's default (an AMX-bf16 CPU:
    ``precision="auto"`` picks bf16 there, so every algorithm's ``BF16_AUTOCAST`` flag is earned there), for the
    :data:`UPDATE_SHAPES` representatives on other CPUs that compute in bf16 (AVX-512 BF16), and skips elsewhere,
    naming the CPU and how to run it: a CPU without bf16 instructions emulates bf16 with fp32 kernels (one check
    took 27-47 s there against ≤ 6 s on the other kinds) and trains in fp32 under ``precision="auto"``; what the
    check proves is a property of each algorithm's code, shown on the kinds that have bf16."""
    import os

    import pytest

    from dganalysis.provenance import cpu_has_amx_bf16, cpu_has_bf16_instructions, cpu_kind

    everywhere = cpu_has_amx_bf16() or os.environ.get(ALL_BF16_ENV) == "1"
    reason = None
    if not everywhere and not cpu_has_bf16_instructions():
        reason = (f"{cpu_kind()} has no bf16 instructions (bf16 is emulated here, and precision='auto' trains in "
                  f"fp32): the bf16 check runs over the whole registry on AMX-bf16 CPUs and for one algorithm per "
                  f"update shape on AVX-512 BF16 ones; {ALL_BF16_ENV}=1 runs it here")
    elif not everywhere and name not in UPDATE_SHAPES:
        reason = (f"{cpu_kind()} has no AMX-bf16, so precision='auto' trains in fp32 here: the bf16 check runs over the "
                  f"whole registry on AMX CPUs and for one algorithm per update shape elsewhere "
                  f"({', '.join(UPDATE_SHAPES)}); {ALL_BF16_ENV}=1 runs it here")
    skip = () if reason is None else (pytest.mark.skip(reason=reason),)
    return pytest.param(name, marks=(*marks, *skip))
