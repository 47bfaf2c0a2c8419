"""URM: uniform risk minimisation (Krishnamachari, Ng & Foo, 2024, "Uniformly Distributed Feature
Representations for Fair and Robust Learning", TMLR), as DomainBed (b93c22a), its adversarial form.

The featurizer's output goes through a bounded activation σ (``urm_generator_output``: tanh → features in
(−1, 1), sigmoid → (0, 1), relu → [0, ∞)) and the target is the uniform distribution U on [−1, 1) or [0, 1)
(for relu a box the features are not confined to, as DomainBed). A
discriminator D (an MLP on the features: 100 units, ``1 + urm_discriminator_hidden_layers`` hidden layers with
LeakyReLU, one logit) learns to tell uniform noise n ~ U from features z; the network (featurizer + classifier) is
trained to fool it. Each step, on the pooled batch of all training domains:

1. network: ``min CE(h(z), y) + λ · BCE(D(z), 1)`` (λ = ``urm_adv_lambda``), one step of the job's optimiser over
   featurizer and classifier only;
2. discriminator: with the features z of step 1 (detached, computed before the network's step) and fresh noise
   n of z's shape (torch's global generator), ``min BCE(D(n), 1) + λ · BCE(D(z), 0)``, one step of its own
   optimiser (``urm_discriminator_optimizer``: adam, or sgd with momentum 0.9; learning rate
   ``urm_discriminator_lr``, the job's ``weight_decay``). With ``urm_discriminator_label_smoothing`` s > 0 the
   targets are drawn uniformly from [1 − s, 1] and [0, s] instead (after the noise).

σ is applied to the featurizer's output as DomainBed's ``featurizer.activation`` (after ResNet dropout): it is part
of ``features`` and ``predict``. Ours applies it with a forward hook, so any featurizer works (DomainBed asserts one
of its four CNN/MLP classes). DomainBed accepts ``identity`` as an activation but its noise sampler then fails at
the first step; ours rejects it up front. Hyperparameters (DomainBed's): ``urm`` "adversarial" (the only form);
``urm_adv_lambda`` 0.1, U(0, 0.2); ``urm_discriminator_label_smoothing`` 0 (never drawn otherwise);
``urm_discriminator_optimizer`` adam; ``urm_discriminator_hidden_layers`` 1, {1, 2, 3};
``urm_generator_output`` tanh, {tanh, relu}; ``urm_discriminator_lr`` 1e-3, 10^U(−5.5, −3.5) on small images,
5e-5, 10^U(−6, −4.5) on large ones.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.algorithms._utils import concat, no_autocast, upcast
from dganalysis.algorithms.base import Algorithm, Minibatches, fresh_casts
from dganalysis.algorithms.registry import register_algorithm
from dganalysis.training.hparams import HParam, choice, log10_uniform, uniform
from dganalysis.validation import Check

#: the output activation σ and the box [a, b) its uniform target lives on
OUTPUTS: dict[str, tuple[type[nn.Module], float, float]] = {
    "tanh": (nn.Tanh, -1.0, 1.0),
    "relu": (nn.ReLU, 0.0, 1.0),
    "sigmoid": (nn.Sigmoid, 0.0, 1.0),
}


def _apply_output_activation(module: nn.Module, inputs, output: torch.Tensor) -> torch.Tensor:
    """Forward hook: the featurizer's output through its ``urm_activation``."""
    return module.urm_activation(output)


def urm_discriminator(n_features: int, hidden_layers: int, width: int = 100) -> nn.Sequential:
    """D: Linear(n_features, 100), LeakyReLU, ``hidden_layers`` × (Linear(100, 100), LeakyReLU), Linear(100, 1);
    layers named as DomainBed's (dense1, dense2, …, output)."""
    d = nn.Sequential()
    d.add_module("dense1", nn.Linear(n_features, width))
    d.add_module("act1", nn.LeakyReLU())
    for i in range(2, 2 + hidden_layers):
        d.add_module(f"dense{i}", nn.Linear(width, width))
        d.add_module(f"act2{i}", nn.LeakyReLU())
    d.add_module("output", nn.Linear(width, 1))
    return d


@register_algorithm("URM", tags=("domainbed",))
class URM(Algorithm):
    """Uniform Risk Minimization: ERM + features pushed towards a uniform distribution by a discriminator."""

    HPARAMS = {
        "urm": HParam("adversarial", choice(["adversarial"]), "URM's form (only the adversarial one)",
                      check=Check(choices=("adversarial",))),
        "urm_adv_lambda": HParam(0.1, uniform(0.0, 0.2), "weight λ of the adversarial terms"),
        "urm_discriminator_label_smoothing": HParam(0, uniform(0.0, 0.0), "s: soft discriminator targets in "
                                                    "[1 − s, 1] / [0, s] when > 0", check=Check("float", low=0.0,
                                                                                                 high=1.0)),
        "urm_discriminator_optimizer": HParam("adam", choice(["adam"]), "adam | sgd (momentum 0.9)",
                                              check=Check(choices=("adam", "sgd"))),
        "urm_discriminator_hidden_layers": HParam(1, choice([1, 2, 3]), "discriminator hidden 100→100 layers",
                                                  check=Check("int", low=0, high=64)),
        "urm_generator_output": HParam("tanh", choice(["tanh", "relu"]), "σ on the features: tanh | relu | sigmoid",
                                       check=Check(choices=tuple(OUTPUTS))),
        "urm_discriminator_lr": HParam(1e-3, log10_uniform(-5.5, -3.5), "discriminator learning rate",
                                       large=(5e-5, log10_uniform(-6, -4.5))),
    }

    def __init__(self, input_shape, n_classes, n_domains, hparams) -> None:
        super().__init__(input_shape, n_classes, n_domains, hparams)
        hp = self.hparams
        out = hp["urm_generator_output"]
        if out not in OUTPUTS:
            raise ValueError(f"hparam 'urm_generator_output': expected one of {sorted(OUTPUTS)}, got {out!r}")
        if hp["urm"] != "adversarial":
            raise ValueError(f"hparam 'urm': expected 'adversarial' (the only form), got {hp['urm']!r}")
        self.optimizer, self.scheduler = self.configure_optimizer(self.network.parameters())
        self.discriminator = urm_discriminator(self.featurizer.n_outputs, int(hp["urm_discriminator_hidden_layers"]))
        kind = hp["urm_discriminator_optimizer"]
        lr, wd = float(hp["urm_discriminator_lr"]), float(hp["weight_decay"])
        if kind == "adam":
            self.d_optimizer: torch.optim.Optimizer = torch.optim.Adam(self.discriminator.parameters(), lr=lr,
                                                                       weight_decay=wd)
        elif kind == "sgd":
            self.d_optimizer = torch.optim.SGD(self.discriminator.parameters(), lr=lr, weight_decay=wd, momentum=0.9)
        else:
            raise ValueError(f"hparam 'urm_discriminator_optimizer': expected adam or sgd, got {kind!r}")
        act, self.noise_low, self.noise_high = OUTPUTS[out]
        self.featurizer.urm_activation = act()
        self.featurizer.register_forward_hook(_apply_output_activation)

    def _bce(self, logits: torch.Tensor, target: float | torch.Tensor) -> torch.Tensor:
        logits = upcast(logits.squeeze(1))
        if not torch.is_tensor(target):
            target = torch.full_like(logits, float(target))
        return F.binary_cross_entropy_with_logits(logits, target.to(logits.dtype))

    def _soft_targets(self, n: int, low: float, high: float, device) -> torch.Tensor:
        """n targets uniform in [low, high] (torch's default dtype, as DomainBed draws them)."""
        return (high - low) * torch.rand(n, device=device) + low

    def update(self, minibatches: Minibatches, step: int) -> dict[str, float]:
        lam = float(self.hparams["urm_adv_lambda"])
        x, y = concat(minibatches)
        z = self.featurizer(x)
        ce = F.cross_entropy(self.classifier(z), y)
        g_loss = self._bce(self.discriminator(z), 1.0)
        loss = ce + lam * g_loss
        self.step(loss, self.optimizer, self.scheduler)

        feats = upcast(z.detach())
        with no_autocast(feats):
            noise = (self.noise_high - self.noise_low) * torch.rand(feats.shape, dtype=feats.dtype,
                                                                    device=feats.device) + self.noise_low
            s = float(self.hparams["urm_discriminator_label_smoothing"])
            if s:
                true_y = self._soft_targets(len(noise), 1.0 - s, 1.0, noise.device)
                fake_y = self._soft_targets(len(feats), 0.0, s, feats.device)
            else:
                true_y, fake_y = 1.0, 0.0
            d_loss = self._bce(self.discriminator(noise), true_y) + lam * self._bce(self.discriminator(feats), fake_y)
        self.d_optimizer.zero_grad(set_to_none=True)
        d_loss.backward()
        self.d_optimizer.step()
        fresh_casts()
        return {"loss": loss.item(), "nll": ce.item(), "g_loss": g_loss.item(), "d_loss": d_loss.item()}
