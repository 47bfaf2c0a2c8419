"""The Algorithm interface every DG method implements.

An algorithm is an ``nn.Module`` built from ``(input_shape, n_classes, n_domains, hparams)``
with a ``featurizer`` (g: x → z) and a ``classifier`` (h: z → logits) so estimators can
reach the representation, ``update(minibatches, step) -> dict[str, float]`` doing one
optimisation step on one minibatch per training domain (list of ``(x, y)`` with x float
in [0, 1], shape [B, C, H, W]), and ``predict(x) -> logits``.

Domain adaptation (DomainBed's ``--task domain_adaptation``): an algorithm whose ``update`` declares a keyword
parameter ``unlabeled`` is called as ``update(minibatches, step, unlabeled=[x, ...])`` with one batch of images
(no labels) per test domain's ``uda`` split (:func:`takes_unlabeled`); every other algorithm is called as before.
None of ours declares it, as none of DomainBed's reads its ``unlabeled`` argument (all accept and ignore it).

``hparams`` holds the base hyperparameters (:data:`dganalysis.training.hparams.BASE_HPARAMS`),
the algorithm's own (its ``HPARAMS``), and ``steps`` (the job length, set by the
trainer, used by schedules and warm-ups).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
from torch import nn

from dganalysis.nets import build_classifier, build_featurizer
from dganalysis.training.hparams import BASE_HPARAMS, HParam, HParams
from dganalysis.training.optim import make_optimizer, make_scheduler

Minibatches = Sequence[tuple[torch.Tensor, torch.Tensor]]


def fresh_casts() -> None:
    """Drop autocast's cached low-precision copies of the weights after an in-place optimiser step.

    The trainer runs the whole ``update()`` inside one ``torch.autocast`` region, and autocast caches the bf16
    cast of every weight until the region exits: a second forward after an optimiser step *within the same
    update* (Fish's inner steps, SagNet's three steps, MLDG ...) would otherwise see the stale pre-step weights
    (measured: Fish's loss curve under bf16 was 2–4× higher than fp32's before this). A no-op outside autocast.
    """
    torch.clear_autocast_cache()


def takes_unlabeled(algorithm: Any) -> bool:
    """Whether ``algorithm.update`` takes the test domains' unlabelled batches (a parameter named ``unlabeled``)."""
    import inspect

    try:
        return "unlabeled" in inspect.signature(algorithm.update).parameters
    except (TypeError, ValueError):  # no signature to read
        return False


def domainbed_outputs(out: Mapping[str, float], keys: Mapping[str, str]) -> dict[str, float]:
    """An ``update()`` output under DomainBed's keys: ``out`` with each DomainBed key of ``keys`` (DomainBed's key →
    ours, :attr:`Algorithm.DOMAINBED_KEYS`) set to our value of that meaning; our other keys kept."""
    return {**out, **{theirs: out[ours] for theirs, ours in keys.items() if ours in out}}


class Algorithm(nn.Module):
    """Base class: featurizer + classifier, one optimiser and schedule over all parameters."""

    HPARAMS: ClassVar[dict[str, HParam]] = {}
    #: DomainBed's name of an ``update()`` output whose name or meaning differs here (DomainBed's key → ours), e.g.
    #: CORAL's ``loss`` is DomainBed's classification loss, our ``nll`` (our ``loss`` is always the whole objective).
    #: ``domainbed_exact`` mode writes records under DomainBed's keys through it (:func:`domainbed_outputs`), and the
    #: differential tests compare through it.
    DOMAINBED_KEYS: ClassVar[dict[str, str]] = {}
    #: Whether ``precision="auto"`` may train it under bf16 autocast (on CUDA and AMX CPUs). False where
    #: ``tests/algorithms/test_precision.py`` measured bf16 updates that do not track fp32's: those jobs train in
    #: fp32 under ``auto`` (recorded as ``precision``); ``precision="bf16"`` still forces autocast.
    BF16_AUTOCAST: ClassVar[bool] = True

    def __init__(self, input_shape: tuple[int, ...], n_classes: int, n_domains: int, hparams: Mapping[str, Any]) -> None:
        super().__init__()
        self.input_shape = tuple(input_shape)
        self.n_classes = n_classes
        self.n_domains = n_domains
        self.hparams = HParams(hparams, {**BASE_HPARAMS, **self.HPARAMS})  # resolved once; declared defaults
        self.featurizer = build_featurizer(self.input_shape, self.hparams)
        self.classifier = build_classifier(self.featurizer.n_outputs, n_classes, bool(self.hparams["nonlinear_classifier"]))
        self.network = nn.Sequential(self.featurizer, self.classifier)

    # -- optimisation helpers --------------------------------------------------------
    def configure_optimizer(self, params=None, lr: float | None = None) -> tuple[torch.optim.Optimizer, Any]:
        """Optimiser and schedule from the hparams over ``params`` (default: all parameters)."""
        opt = make_optimizer(self.parameters() if params is None else params, self.hparams, lr=lr)
        return opt, make_scheduler(opt, self.hparams)

    def step(self, loss: torch.Tensor, optimizer: torch.optim.Optimizer, scheduler: Any = None) -> None:
        """zero_grad → backward → optimiser step → schedule step (then :func:`fresh_casts`)."""
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        fresh_casts()
        if scheduler is not None:
            scheduler.step()

    # -- interface -------------------------------------------------------------------
    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        raise NotImplementedError

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The representation z = g(x) used by the shift and worst-case estimators."""
        return self.featurizer(x)
