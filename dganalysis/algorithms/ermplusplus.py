"""ERMPlusPlus, ERM++ (Teterwak et al., 2023, "ERM++: An Improved Baseline for Domain Generalization"), as
DomainBed's class of that name (Gulrajani & Lopez-Paz, 2021, b93c22a ``algorithms.ERMPlusPlus``) trains it.

Per ``update`` (pooled cross-entropy of all training minibatches, as ERM):

* **linear probing, then full fine-tuning**: while the update counter ``global_iter`` (updates done so far) is
  ``≤ linear_steps`` only the classifier is stepped (its own optimiser, learning rate ``linear_lr``); afterwards
  one optimiser over all parameters (``lr``). So the head alone takes ``linear_steps + 1`` updates (DomainBed's
  ``>``). Both optimisers are Adam, or :class:`dganalysis.training.lars.LARS` with ``lars``, with ``weight_decay``;
  our ``optimizer``/``schedule`` hparams are not read (DomainBed's class has neither).
* **simple moving average (SMA) of the weights** (``lib/misc.ErmPlusPlusMovingAvg``): after each step
  ``network_sma`` is a copy of the network's state (parameters and BatchNorm running statistics, not
  ``num_batches_tracked``) until ``global_iter`` reaches 600 (``sma_start_iter``), then their running mean
  ``(sma · k + θ) / (k + 1)``, k = 1, 2, ... Unless ``freeze_bn``, the SMA network then runs a train-mode forward
  on the step's inputs (refreshing its BatchNorm statistics and drawing dropout masks, as DomainBed does).
* **predictions come from the SMA network** in eval mode; :meth:`features` is the SMA featurizer's too.
* ``freeze_bn``: the featurizer's BatchNorm stays in eval mode (nets.archs.ResNet).

Not carried over: DomainBed's ``set_lr`` (a ReduceLROnPlateau on the SMA's validation loss) — DomainBed's
``scripts/train.py`` never calls it, so its runs train at constant learning rates, as ours do.

Where DomainBed's code fails, we do what it evidently means: with ``lars`` it passes ``foreach=False`` to its LARS,
whose constructor takes no such argument, so DomainBed's ``ERMPlusPlus`` raises ``TypeError`` when ``lars`` is
on; ours builds LARS (``tests/reference/test_domainbed_ermplusplus.py`` pins both facts and compares with
DomainBed's class after dropping that argument).
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, log10_uniform
from dganalysis.training.lars import LARS

SMA_START_ITER = 600  # DomainBed's ErmPlusPlusMovingAvg.sma_start_iter


@register_algorithm("ERMPlusPlus", tags=("domainbed",))
class ERMPlusPlus(Algorithm):
    """ERM++: linear probing for ``linear_steps`` updates, then full fine-tuning; predictions by the SMA network."""

    HPARAMS = {
        "linear_lr": HParam(5e-5, log10_uniform(-5, -3.5), "ERM++: learning rate of the linear-probing phase"),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        wd = float(self.hparams["weight_decay"])
        self.optimizer = self._optimizer(self.network.parameters(), float(self.hparams["lr"]), wd)
        self.linear_optimizer = self._optimizer(self.classifier.parameters(), float(self.hparams["linear_lr"]), wd)
        self.network_sma = copy.deepcopy(self.network)
        self.network_sma.eval()
        self.sma_start_iter = SMA_START_ITER
        self.global_iter = 0
        self.sma_count = 0

    def _optimizer(self, params, lr: float, wd: float) -> torch.optim.Optimizer:
        if self.hparams["lars"]:
            return LARS(params, lr=lr, weight_decay=wd)
        return torch.optim.Adam(params, lr=lr, weight_decay=wd, foreach=False)

    @torch.no_grad()
    def update_sma(self) -> None:
        """One step of DomainBed's ``ErmPlusPlusMovingAvg.update_sma`` (see the module doc)."""
        self.global_iter += 1
        current, sma = self.network.state_dict(), self.network_sma.state_dict()
        if self.global_iter >= self.sma_start_iter:
            self.sma_count += 1
            k = self.sma_count
            new = {n: (sma[n].detach().clone() * k + current[n].detach().clone()) / (1.0 + k)
                   for n in current if "num_batches_tracked" not in n}
        else:
            new = {n: v.detach().clone() for n, v in current.items() if "num_batches_tracked" not in n}
        self.network_sma.load_state_dict(new)  # BatchNorm keeps its own num_batches_tracked

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        optimizer = self.optimizer if self.global_iter > int(self.hparams["linear_steps"]) else self.linear_optimizer
        x = torch.cat([x for x, _ in minibatches])
        y = torch.cat([y for _, y in minibatches])
        loss = F.cross_entropy(self.network(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        fresh_casts()
        self.update_sma()
        if not self.hparams["freeze_bn"]:
            self.network_sma.train()
            self.network_sma(x)
        return {"loss": loss.item()}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        self.network_sma.eval()
        return self.network_sma(x)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The SMA featurizer's representation (the network that predicts)."""
        return self.network_sma[0](x)
