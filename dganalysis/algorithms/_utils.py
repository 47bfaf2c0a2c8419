"""Small helpers shared by the algorithm modules (no algorithm is registered here).

Randomness inside ``update`` (pairings, permutations, mixing weights, masks) uses torch's
global generator, which the trainer seeds from the trial seed; so a job is reproducible.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import torch
from torch import nn

from dganalysis.algorithms.base import Minibatches, fresh_casts


def concat(minibatches: Minibatches) -> tuple[torch.Tensor, torch.Tensor]:
    """All minibatches pooled: ``(x, y)``."""
    return torch.cat([x for x, _ in minibatches]), torch.cat([y for _, y in minibatches])


def domain_index(minibatches: Minibatches) -> torch.Tensor:
    """For the pooled batch, the index of the training domain each example comes from."""
    return torch.cat(
        [torch.full((len(y),), i, dtype=torch.long, device=y.device) for i, (_, y) in enumerate(minibatches)]
    )


def minibatch_sizes(minibatches: Minibatches) -> list[int]:
    return [len(y) for _, y in minibatches]


def random_pairs(n: int) -> list[tuple[int, int]]:
    """DomainBed's pairing: a random permutation π of the domains, pairs (π_k, π_{k+1 mod n})."""
    perm = torch.randperm(n).tolist()
    return [(perm[k], perm[(k + 1) % n]) for k in range(n)]


def reset_optimizer_state(optimizer: torch.optim.Optimizer) -> None:
    """Forget moment estimates (DomainBed resets Adam when a penalty is switched on); the schedule goes on."""
    optimizer.state = defaultdict(dict)


def restart_optimizer(optimizer: torch.optim.Optimizer, scheduler, lr: float) -> None:
    """A fresh optimiser at base learning rate ``lr``, as DomainBed's ``self.optimizer = Adam(..., lr=new_lr)``
    (RDM, EQRM): moments forgotten, every group's base rate set to ``lr``. The schedule goes on where it was: the
    group's current rate keeps its factor relative to the base (with ``schedule: constant``, DomainBed's, the rate
    is exactly ``lr``)."""
    reset_optimizer_state(optimizer)
    base_lrs = list(getattr(scheduler, "base_lrs", [g.get("initial_lr", g["lr"]) for g in optimizer.param_groups]))
    for group, base in zip(optimizer.param_groups, base_lrs):
        factor = group["lr"] / base if base else 1.0
        group["lr"] = float(lr) * factor
        group["initial_lr"] = float(lr)
    if scheduler is not None and hasattr(scheduler, "base_lrs"):
        scheduler.base_lrs = [float(lr)] * len(optimizer.param_groups)


def apply_grads(
    params: Sequence[nn.Parameter],
    grads: Iterable[torch.Tensor | None],
    optimizer: torch.optim.Optimizer,
    scheduler=None,
) -> None:
    """Write ``grads`` into ``.grad`` of ``params`` and take one optimiser (and schedule) step."""
    optimizer.zero_grad(set_to_none=True)
    for p, g in zip(params, grads):
        p.grad = None if g is None else g.detach().clone()
    optimizer.step()
    fresh_casts()
    if scheduler is not None:
        scheduler.step()


def multi_step(loss: torch.Tensor, optimizers: Sequence[torch.optim.Optimizer]) -> None:
    """zero_grad on all ``optimizers`` → backward → step each (schedules are stepped by the caller)."""
    for opt in optimizers:
        opt.zero_grad(set_to_none=True)
    loss.backward()
    for opt in optimizers:
        opt.step()
    fresh_casts()


class _GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:  # type: ignore[override]
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        return -ctx.scale * grad, None


def grad_reverse(x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Gradient reversal layer (Ganin et al., 2016, Sec. 3.3): identity forward, ``-scale ×`` gradient backward."""
    return _GradReverse.apply(x, scale)


def mlp(n_in: int, n_out: int, width: int, depth: int, dropout: float = 0.0) -> nn.Sequential:
    """``depth`` linear layers (ReLU + dropout between), DomainBed's discriminator/projection MLP."""
    layers: list[nn.Module] = []
    d = n_in
    for _ in range(depth - 1):
        layers += [nn.Linear(d, width), nn.ReLU(), nn.Dropout(dropout)]
        d = width
    layers.append(nn.Linear(d, n_out))
    return nn.Sequential(*layers)


def upcast(t: torch.Tensor) -> torch.Tensor:
    """``t`` in float32 if it is a half-precision tensor (bf16/fp16 under autocast), else unchanged (float64 stays)."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


def no_autocast(t: torch.Tensor):
    """A context with autocast off on ``t``'s device: penalties computed inside run in the precision of their inputs
    (pass them through :func:`upcast`), so bf16 rounding does not reach cancellation-prone formulas."""
    return torch.autocast(t.device.type, enabled=False)
