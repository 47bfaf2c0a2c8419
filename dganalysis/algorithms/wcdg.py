"""WCDG: add the worst-case loss in the representation space to any registered algorithm (the WC-DG poster).

The poster: "the objective of minimizing the worst-case loss of a DG model at any distance in the
representation space can be combined with losses of other DG methods". Design (a wrapper):

- ``WCDG`` builds the base algorithm named by hparam ``wc_base`` (default ``ERM``) and shares its
  featurizer/classifier/network (so ``features``/``predict`` and the saved state are the base's).
- ``update`` runs the **base's own update**, with one change: the loss passed to the base's
  ``step(loss, optimizer, ...)`` for the optimiser that updates the classifier gets
  ``+ wc_weight · WC`` added, computed at the current parameters on the same minibatches (pooled).
  Adversarial bases (G2DM, DANN) thus get the term on their encoder/classifier step only.
  A base that never calls ``step`` with that optimiser (it writes gradients itself) gets the term
  in a separate step of WCDG's own optimiser after its update; a warning says so once.
- The term (:func:`dganalysis.dro.training.worst_case_penalty`): with ``wc_mode = "rho"`` (default)
  the worst-case loss at radius ``wc_rho``, ``WC(ρ) = γ*ρ² + φ_{γ*}`` with γ* chosen per batch by
  the dual solver; with ``wc_mode = "penalty"`` Sinha et al.'s robust surrogate ``φ_γ`` at fixed
  ``wc_gamma``. Distances are in units of the batch representation spread (``wc_scale = "std"``),
  so the term cannot be lowered by inflating the feature norm.
- Convenience names ``<BASE>_WC`` (ERM_WC, CORAL_WC, MMD_WC, G2DM_WC, WM_WC) fix the base and expose
  the base's own hyperparameters as well (so sweeps search them); plain ``WCDG`` uses the base's
  defaults for hparams it is not given.
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from torch import nn

from dganalysis.algorithms.base import Algorithm, Minibatches
from dganalysis.algorithms.registry import create, default_hparams, get_algorithm, hparam_specs, register_algorithm
from dganalysis.dro.training import worst_case_penalty
from dganalysis.training.hparams import BASE_HPARAMS, HParam, HParams, choice, fixed, log10_uniform

log = logging.getLogger(__name__)

WC_HPARAMS: dict[str, HParam] = {
    "wc_weight": HParam(1.0, log10_uniform(-1, 1), "weight λ of the worst-case term"),
    "wc_mode": HParam("rho", fixed("rho"), "rho (worst-case loss at radius wc_rho) | penalty (robust surrogate at wc_gamma)"),
    "wc_rho": HParam(0.1, log10_uniform(-2, 0), "radius ρ, in units of the batch representation spread"),
    "wc_gamma": HParam(10.0, log10_uniform(0, 2), "γ of the penalty form (same units)"),
    "wc_loss": HParam("ce", choice(["ce", "hinge"]), "loss inside the worst case: ce | hinge"),
    "wc_steps": HParam(5, fixed(5), "inner gradient-ascent steps"),
    "wc_scale": HParam("std", fixed("std"), "distance unit: std (batch spread) | none (raw)"),
}
VARIANT_BASES = ("ERM", "CORAL", "MMD", "G2DM", "WM")


class _VariantHParams:
    """``HPARAMS`` of ``<BASE>_WC``: the base's (looked up when read) plus the WC ones."""

    def __init__(self, base: str) -> None:
        self.base = base

    def __get__(self, obj: Any, owner: type) -> dict[str, HParam]:
        return {**get_algorithm(self.base).HPARAMS, **WC_HPARAMS}


@register_algorithm("WCDG", tags=("wc",))
class WCDG(Algorithm):
    """Base algorithm (hparam ``wc_base``) + ``wc_weight`` × worst-case loss in the representation space."""

    base_name: str | None = None
    # measured: under bf16 autocast the dual solver's γ* and the worst-case loss are 5-80% off fp32's
    BF16_AUTOCAST = False
    HPARAMS = {"wc_base": HParam("ERM", fixed("ERM"), "registered algorithm to wrap"), **WC_HPARAMS}

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        nn.Module.__init__(self)  # no network of our own: the base's is used
        self.input_shape, self.n_classes, self.n_domains = tuple(input_shape), n_classes, n_domains
        self.hparams = HParams(hparams, {**BASE_HPARAMS, **self.HPARAMS})
        base = self.base_name or str(self.hparams["wc_base"])
        if issubclass(get_algorithm(base), WCDG):
            raise ValueError(f"hparam 'wc_base': {base!r} is already a worst-case variant; expected a plain algorithm")
        specs = hparam_specs(base)
        base_hp = {**default_hparams(base), **{k: v for k, v in self.hparams.items() if k in specs}}
        base_hp["steps"] = self.hparams.get("steps", base_hp.get("steps", 1))
        self.base = create(base, self.input_shape, n_classes, n_domains, base_hp)
        self.featurizer, self.classifier, self.network = self.base.featurizer, self.base.classifier, self.base.network
        self._head_params = {id(p) for p in self.classifier.parameters()}
        self.base.step = self._step  # instance attribute: the base's step() now adds the WC term
        self._pending: Minibatches | None = None
        self._info: dict[str, float] = {}
        self._fallback_opt: torch.optim.Optimizer | None = None

    # -- the worst-case term ----------------------------------------------------------------
    def worst_case_term(self, minibatches: Minibatches) -> tuple[torch.Tensor, dict[str, float]]:
        """``WC(ρ)`` (or ``φ_γ``) on the pooled minibatches, differentiable in the network's parameters."""
        hp = self.hparams
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        z = self.featurizer(x)
        mode = hp["wc_mode"]
        if mode not in ("rho", "penalty"):
            raise ValueError(f"hparam 'wc_mode': expected 'rho' or 'penalty', got {mode!r}")
        kw = {"rho": float(hp["wc_rho"])} if mode == "rho" else {"gamma": float(hp["wc_gamma"])}
        return worst_case_penalty(z, y, self.classifier, loss=hp["wc_loss"], scale=hp["wc_scale"],
                                  steps=int(hp["wc_steps"]), **kw)

    def _updates_head(self, optimizer: torch.optim.Optimizer) -> bool:
        return any(id(p) in self._head_params for g in optimizer.param_groups for p in g["params"])

    def _step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer, scheduler: Any = None) -> None:
        if self._pending is not None and self._updates_head(optimizer):
            wc, info = self.worst_case_term(self._pending)
            self._pending = None
            loss = loss + float(self.hparams["wc_weight"]) * wc
            self._info = {**info, "wc_term": float(wc.detach())}
        Algorithm.step(self.base, loss, optimizer, scheduler)

    # -- interface ---------------------------------------------------------------------------
    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        self._pending, self._info = minibatches, {}
        out = dict(self.base.update(minibatches, step))
        if self._pending is not None and not self._is_adversarial_d_step(out):
            if self._fallback_opt is None:
                log.warning("WCDG: base %s did not call step() with its classifier optimiser; the worst-case term "
                            "gets a separate optimiser step", type(self.base).__name__)
                self._fallback_opt = self.configure_optimizer(self.network.parameters())[0]
            wc, info = self.worst_case_term(minibatches)
            Algorithm.step(self, float(self.hparams["wc_weight"]) * wc, self._fallback_opt)
            self._info = {**info, "wc_term": float(wc.detach())}
        self._pending = None
        out.update(self._info)
        return out

    @staticmethod
    def _is_adversarial_d_step(out: dict[str, float]) -> bool:
        """A discriminator-only step of an alternating base (no 'loss' reported): no WC term there."""
        return "loss" not in out

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.base.predict(x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.base.features(x)


def _register_variant(base: str) -> type[WCDG]:
    cls = type(f"{base}_WC", (WCDG,), {"base_name": base, "HPARAMS": _VariantHParams(base),
                                        "__doc__": f"{base} + worst-case term (see :class:`WCDG`)."})
    return register_algorithm(f"{base}_WC", tags=("wc",))(cls)


for _b in VARIANT_BASES:
    _register_variant(_b)
