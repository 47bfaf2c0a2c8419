"""Algorithms by name: ``@register_algorithm("ERM", tags=("domainbed",))`` on an :class:`Algorithm` subclass.

Tags name families, so callers ask the registry instead of parsing names:

* ``"domainbed"`` — DomainBed's own algorithms (its ``ALGORITHMS`` list, Gulrajani & Lopez-Paz 2021), same names,
  same behaviour (``tests/reference/``);
* ``"variant"`` — our departures from a DomainBed algorithm, under their own names (e.g. ``DANN_GRL``);
* ``"grl"`` — the one-step gradient-reversal adversaries (``DANN_GRL``, ``CDANN_GRL``);
* ``"wc"`` — models trained with the worst-case term of the WC-DG poster (``WCDG`` and the ``<base>_WC`` variants),
  the ones that take ``wc_rho``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dganalysis.algorithms.base import Algorithm
from dganalysis.registry import Registry, suggest
from dganalysis.training.hparams import BASE_HPARAMS, HParam, resolve
from dganalysis.validation import ConfigError

ALGORITHMS: Registry[type[Algorithm]] = Registry("algorithm")
register_algorithm = ALGORITHMS.register


def available() -> list[str]:
    """Names of all registered algorithms."""
    return ALGORITHMS.names()


def names(tag: str | None = None) -> list[str]:
    """Registered algorithm names, sorted; with ``tag`` (e.g. ``"wc"``, ``"variant"``), the family carrying it."""
    if tag is not None and tag not in ALGORITHMS.all_tags():
        raise ConfigError(f"names: unknown algorithm tag {tag!r}; expected one of {ALGORITHMS.all_tags()}")
    return ALGORITHMS.names(tag)


def tags(name: str) -> frozenset[str]:
    """The family tags ``name`` was registered with."""
    return ALGORITHMS.tags(name)


def get_algorithm(name: str) -> type[Algorithm]:
    """The class registered as ``name``; unknown names fail listing the known ones."""
    return ALGORITHMS.get(name)


def hparam_specs(name: str) -> dict[str, HParam]:
    """Base hyperparameters plus those the algorithm declares (its own win)."""
    return {**BASE_HPARAMS, **get_algorithm(name).HPARAMS}


def unknown_hparams(name: str, keys: Iterable[str]) -> str | None:
    """None when the algorithm ``name`` has every hyperparameter of ``keys`` (the base ones or its declared
    ``HPARAMS``); else one line naming the algorithm, the unknown keys (with the closest known) and its keys."""
    specs = hparam_specs(name)
    bad = sorted({str(k) for k in keys} - set(specs))
    if not bad:
        return None
    close = [c for k in bad for c in suggest(k, specs)]
    hint = f" (did you mean {' or '.join(repr(c) for c in dict.fromkeys(close))}?)" if close else ""
    return (f"algorithm {name!r} has no hyperparameter {' or '.join(repr(k) for k in bad)}{hint}; its keys: "
            f"{', '.join(sorted(specs))} (an algorithm declares its own in its HPARAMS)")


def default_hparams(name: str, hparams_seed: int = 0, **kw: Any) -> dict[str, Any]:
    """Concrete hparams for ``name`` (defaults for seed 0, DomainBed's random-search draw otherwise).

    Keywords go to :func:`dganalysis.training.hparams.resolve`: ``overrides``, ``search_overrides``, ``trial_seed`` and
    ``dataset`` (which picks DomainBed's small- or large-image regime; None = small-image). An override of a
    hyperparameter the algorithm does not have is a ``KeyError`` naming the algorithm and its keys.
    """
    bad = unknown_hparams(name, [*(kw.get("overrides") or {}), *(kw.get("search_overrides") or {})])
    if bad:
        raise KeyError(bad)
    return resolve(hparam_specs(name), hparams_seed, **kw)


def create(name: str, input_shape: tuple[int, ...], n_classes: int, n_domains: int, hparams: dict[str, Any]) -> Algorithm:
    """Build the algorithm ``name``."""
    return get_algorithm(name)(input_shape, n_classes, n_domains, hparams)
