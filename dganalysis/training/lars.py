"""LARS, layer-wise adaptive rate scaling (You, Gitman & Ginsburg, 2017), in the variant DomainBed uses.

DomainBed (Gulrajani & Lopez-Paz, 2021, ``lib/misc.LARS``, taken from MoCo v3, Chen, Xie & He, 2021) applies it to
ERM++'s optimisers when the ``lars`` hparam is on. For a parameter p with gradient g, per step:

* weight matrices and kernels (``p.ndim > 1``): d = g + wd·p, then d ← d · η‖p‖/‖d‖ (η the trust coefficient,
  0.001), the ratio replaced by 1 when ‖p‖ = 0 or ‖d‖ = 0;
* biases and normalisation affine parameters (``p.ndim ≤ 1``): d = g (no weight decay, no scaling);
* heavy-ball momentum without dampening: μ ← m·μ + d (μ starts at 0), p ← p − lr·μ.

``tests/reference/test_domainbed_lars.py`` checks it equals DomainBed's class step for step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch


class LARS(torch.optim.Optimizer):
    """LARS with momentum (see the module doc); ``lr``, ``weight_decay``, ``momentum`` (0.9), ``trust_coefficient``
    (0.001) as DomainBed's defaults."""

    def __init__(self, params: Iterable[Any], lr: float = 0.0, weight_decay: float = 0.0, momentum: float = 0.9,
                 trust_coefficient: float = 0.001) -> None:
        for name, v in (("lr", lr), ("weight_decay", weight_decay), ("momentum", momentum),
                        ("trust_coefficient", trust_coefficient)):
            if not v >= 0:
                raise ValueError(f"LARS: {name} must be ≥ 0, got {v!r}")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      trust_coefficient=trust_coefficient))

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                d = p.grad
                if p.ndim > 1:
                    d = d.add(p, alpha=group["weight_decay"])
                    p_norm, d_norm = torch.linalg.vector_norm(p), torch.linalg.vector_norm(d)
                    ratio = group["trust_coefficient"] * p_norm / d_norm
                    ratio = torch.where((p_norm > 0) & (d_norm > 0), ratio, torch.ones_like(ratio))
                    d = d * ratio
                state = self.state[p]
                if "mu" not in state:
                    state["mu"] = torch.zeros_like(p)
                state["mu"].mul_(group["momentum"]).add_(d)
                p.add_(state["mu"], alpha=-group["lr"])
        return loss
