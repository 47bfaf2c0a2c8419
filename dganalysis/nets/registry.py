"""Featurizers by name: ``@register_featurizer("cnn")`` on a builder ``(input_shape, hparams) -> nn.Module``.

The ``featurizer`` hparam names one of :func:`featurizer_names`; an unknown name fails listing them all (the
list is the registry's, so the error text and the docs cannot drift from what exists).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from dganalysis.registry import Registry
from dganalysis.validation import Check, ConfigError

FeaturizerBuilder = Callable[[tuple[int, ...], Mapping[str, Any]], nn.Module]

FEATURIZERS: Registry[FeaturizerBuilder] = Registry("featurizer")
register_featurizer = FEATURIZERS.register

#: the ``pretrained`` value meaning "the weights DomainBed loads for DomainBed's network" (nets.domainbed)
DOMAINBED_WEIGHTS = "domainbed"


def featurizer_names() -> list[str]:
    """Every registered featurizer name (the built-ins are registered when ``dganalysis.nets`` is imported, which
    importing this module does first)."""
    return FEATURIZERS.names()


def get_featurizer_builder(name: str) -> FeaturizerBuilder:
    """The builder registered as ``name``; unknown names raise ``ValueError`` naming the hparam and the known ones."""
    if name not in FEATURIZERS:
        raise ConfigError(f"hparam 'featurizer': unknown {name!r}; expected one of {', '.join(FEATURIZERS.names())}")
    return FEATURIZERS.get(name)


class FeaturizerCheck(Check):
    """The rule for the ``featurizer`` hyperparameter's value (:data:`dganalysis.training.hparams.BASE_CHECKS`): one of the
    registered featurizer names, read when checking, so a featurizer registered later is accepted."""

    def __call__(self, value: Any, where: str) -> Any:
        return Check(choices=tuple(featurizer_names()))(value, where)

    def describe(self) -> str:
        """``one of 'auto', 'cnn', ...``: the names registered now."""
        return Check(choices=tuple(featurizer_names())).describe()
