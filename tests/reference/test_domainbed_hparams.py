"""Our hyperparameter draws against DomainBed's ``hparams_registry`` (Gulrajani & Lopez-Paz, 2021).

For every algorithm both projects have, a small-image and several large-image datasets, and (hparams_seed,
trial_seed) pairs, ``resolve`` must return DomainBed's very dict — ``default_hparams`` for seed 0,
``random_hparams(alg, dataset, seed_hash(hparams_seed, trial_seed))`` otherwise, as its ``scripts/train.py`` does —
restricted to the names we implement. Every DomainBed name we do not implement is listed below with its reason;
our own extra names must be names DomainBed never uses.
"""

from __future__ import annotations

import numbers

import numpy as np
import pytest

from dganalysis import algorithms as A
from dganalysis.training.hparams import BASE_HPARAMS, resolve, seed_hash

#: DomainBed base hyperparameters we do not implement, and why (a present name is compared like any other).
NOT_IMPLEMENTED_BASE: dict[str, str] = {}  # every DomainBed base name is ours now (compared like any other)

#: DomainBed algorithm hyperparameters we lack; the algorithm engineers may add them (then they are compared).
NOT_IMPLEMENTED_ALG: dict[tuple[str, str], str] = {
    **{(alg, name): "our DANN/CDANN train one optimiser through a gradient-reversal layer (dann.py), not "
                    "DomainBed's alternating discriminator/generator steps, so these have no meaning yet"
       for alg in ("DANN", "CDANN")
       for name in ("weight_decay_d", "d_steps_per_g_step", "grad_penalty", "beta1", "lr_g", "lr_d",
                    "weight_decay_g")},
    ("MLDG", "n_meta_test"): "our MLDG pairs each meta-train domain with one random meta-test domain "
                             "(random_pairs); DomainBed's number of meta-test domains is not an hparam here yet",
}

SMALL = ["RotatedMNIST", "ColoredMNIST", "Debug28"]
LARGE = ["PACS", "VLCS", "OfficeHome", "TerraIncognita", "DomainNet"]
SEEDS = [(0, 0), (0, 2), (1, 0), (1, 1), (2, 0), (3, 2), (7, 1), (19, 4)]


def _shared(domainbed) -> list[str]:
    ours = set(A.available())
    return [a for a in domainbed.algorithms.ALGORITHMS if a in ours]


def _domainbed_dict(domainbed, alg: str, dataset: str, hp_seed: int, trial: int) -> dict:
    reg = domainbed.hparams_registry
    if hp_seed == 0:
        return reg.default_hparams(alg, dataset)
    return reg.random_hparams(alg, dataset, domainbed.misc.seed_hash(hp_seed, trial))


def _kind(v) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, numbers.Number):
        return "number"
    return type(v).__name__


def test_every_domainbed_algorithm_is_ours(domainbed):
    """All of DomainBed's ALGORITHMS list (33 at b93c22a) is registered here under the same names."""
    missing = [a for a in domainbed.algorithms.ALGORITHMS if a not in A.available()]
    assert not missing, f"DomainBed has {missing}, our registry does not"
    assert len(_shared(domainbed)) == len(domainbed.algorithms.ALGORITHMS) >= 33


def test_domainbed_tag_is_domainbeds_list(domainbed):
    """The registry's ``domainbed`` family is DomainBed's ALGORITHMS list, no more, no less."""
    assert A.names(tag="domainbed") == sorted(domainbed.algorithms.ALGORITHMS)


def test_seed_hash_is_domainbeds(domainbed):
    for args in [(0, 0), (1, 0), (3, 2), (12345, "lr"), (7, "batch_size")]:
        assert seed_hash(*args) == domainbed.misc.seed_hash(*args)


@pytest.mark.parametrize("dataset", SMALL + LARGE)
def test_draws_equal_domainbeds(domainbed, dataset):
    checked = 0
    for alg in _shared(domainbed):
        specs = A.hparam_specs(alg)
        for hp_seed, trial in SEEDS:
            theirs = _domainbed_dict(domainbed, alg, dataset, hp_seed, trial)
            ours = resolve(specs, hp_seed, trial_seed=trial, dataset=dataset)
            where = f"{alg} on {dataset}, hparams_seed={hp_seed}, trial_seed={trial}"
            for name, value in theirs.items():
                if name not in ours:
                    assert name in NOT_IMPLEMENTED_BASE or (alg, name) in NOT_IMPLEMENTED_ALG, (
                        f"{where}: DomainBed's {name!r} is neither implemented nor listed as not implemented")
                    continue
                assert ours[name] == value, f"{where}: {name} = {ours[name]!r}, DomainBed {value!r}"
                assert _kind(ours[name]) == _kind(value), f"{where}: {name} type {type(ours[name])} vs {type(value)}"
                checked += 1
    assert checked > 1000


def test_our_extra_names_are_not_domainbeds(domainbed):
    """Our extra hparams use names DomainBed never uses (for any algorithm or dataset), so they cannot collide."""
    reg = domainbed.hparams_registry
    theirs_all = set()
    for alg in domainbed.algorithms.ALGORITHMS:
        for ds in ("RotatedMNIST", "PACS", "DomainNet"):
            theirs_all |= set(reg.default_hparams(alg, ds))
    for alg in _shared(domainbed):
        theirs = set(reg.default_hparams(alg, "PACS"))
        extra = set(A.hparam_specs(alg)) - theirs
        clash = extra & theirs_all
        assert not clash, f"{alg}: our extra hparams {sorted(clash)} are DomainBed names of other algorithms"


def test_not_implemented_lists_name_real_domainbed_names(domainbed):
    reg = domainbed.hparams_registry
    base = set(reg.default_hparams("ERM", "PACS"))
    assert set(NOT_IMPLEMENTED_BASE) <= base
    for alg, name in NOT_IMPLEMENTED_ALG:
        assert name in reg.default_hparams(alg, "PACS"), (alg, name)
    # the base names we keep are DomainBed's (compared above); the rest of our base is extra
    assert {"lr", "batch_size", "weight_decay", "resnet_dropout", "nonlinear_classifier"} <= set(BASE_HPARAMS)
    assert base - set(NOT_IMPLEMENTED_BASE) - {"lr", "batch_size", "weight_decay"} <= set(BASE_HPARAMS), (
        f"DomainBed base names missing from BASE_HPARAMS: {sorted(base - set(BASE_HPARAMS))}")
