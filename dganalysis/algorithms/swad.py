"""SWAD (Cha et al., 2021, "SWAD: Domain Generalization by Seeking Flat Minima", Alg. 1), simplified.

The online network is trained with ERM; the model SWAD returns is the uniform average of the online
weights taken after every step in a window [t_s, t_e] (dense, per-iteration averaging, Eq. 6).
SWAD picks t_s / t_e from the validation loss (start: first step where the loss of N_s steps is
below the minimum so far; end: after N_e steps above r × the minimum). ``update`` sees no validation loss,
so we **fix the window as fractions of the job**: ``swad_start`` (default 0.25) to ``swad_end``
(default 1.0) of ``steps``; see :func:`swad_window` to select it offline from recorded losses.
Buffers (e.g. BatchNorm statistics) are averaged like the weights (SWAD recomputes BN statistics; with
the GroupNorm CNN nothing changes).

``featurizer``/``classifier``/``network`` are the **averaged** model (so ``features``/``predict`` and
estimators see what SWAD outputs); before the window opens they track the online weights.
The trained network is ``online``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, fixed


def swad_window(
    losses: Sequence[float], n_converge: int = 3, n_tolerance: int = 6, tolerance_ratio: float = 0.3
) -> tuple[int, int]:
    """SWAD's averaging window from validation losses at successive evaluations (Cha et al., Alg. 1).

    start t_s: first i whose loss is the minimum of ``losses[i : i + n_converge]`` (the loss stopped
    decreasing); end t_e: the evaluation before the first run of ``n_tolerance`` consecutive losses above
    ``(1 + tolerance_ratio) × losses[t_s]`` (the last index when there is none). Returns ``(t_s, t_e)``.
    """
    losses = [float(v) for v in losses]
    n = len(losses)
    if n == 0:
        raise ValueError("swad_window: 'losses' is empty; expected at least one validation loss")
    start = next((i for i in range(n - n_converge + 1) if losses[i] == min(losses[i : i + n_converge])), n - 1)
    threshold = (1.0 + tolerance_ratio) * losses[start]
    for i in range(start + n_tolerance - 1, n):
        if all(v > threshold for v in losses[i - n_tolerance + 1 : i + 1]):
            return start, max(start, i - n_tolerance)
    return start, n - 1


@register_algorithm("SWAD")
class SWAD(Algorithm):
    """ERM + dense uniform weight averaging over a window of steps; predictions from the average."""

    HPARAMS = {
        "swad_start": HParam(0.25, fixed(0.25), "window start as a fraction of steps"),
        "swad_end": HParam(1.0, fixed(1.0), "window end as a fraction of steps"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        self.online = copy.deepcopy(self.network)
        for p in self.network.parameters():
            p.requires_grad_(False)
        self.register_buffer("n_averaged", torch.zeros((), dtype=torch.long))
        self.optimizer, self.scheduler = self.configure_optimizer(self.online.parameters())

    def in_window(self, step: int) -> bool:
        steps = int(self.hparams.get("steps", 1))
        return self.hparams["swad_start"] * steps <= step <= self.hparams["swad_end"] * steps

    @torch.no_grad()
    def _average(self, step: int) -> None:
        pairs = list(zip(self.network.parameters(), self.online.parameters()))
        pairs += [(a, b) for a, b in zip(self.network.buffers(), self.online.buffers()) if a.is_floating_point()]
        if not self.in_window(step):
            if int(self.n_averaged) == 0:  # window not open yet: track the online weights
                for avg, cur in pairs:
                    avg.copy_(cur)
            return
        self.n_averaged += 1
        k = float(self.n_averaged)
        for avg, cur in pairs:
            if k == 1:
                avg.copy_(cur)
            else:
                avg.add_(cur - avg, alpha=1.0 / k)

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        loss = F.cross_entropy(self.online(x), y)
        self.step(loss, self.optimizer, self.scheduler)
        self._average(step)
        return {"loss": loss.item(), "n_averaged": float(self.n_averaged)}
