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
