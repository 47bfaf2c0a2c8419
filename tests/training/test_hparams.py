"""Hyperparameter draws as DomainBed draws them (Gulrajani & Lopez-Paz, 2021), without the reference checkout.

The full differential test against DomainBed's ``hparams_registry`` is tests/reference/test_domainbed_hparams.py;
the pinned values below were printed by DomainBed (commit b93c22a) so CI without ``$DOMAINBED_SRC`` still catches a
changed draw.
"""

from __future__ import annotations

import pytest

from dganalysis import algorithms as A
from dganalysis.training.hparams import (
    BASE_HPARAMS,
    SMALL_IMAGE_DATASETS,
    HParam,
    choice,
    draw_seed,
    fixed,
    is_small_images,
    log10_uniform,
    parse_distribution,
    resolve,
    seed_hash,
    uniform,
)
from dganalysis.training.job import Job
from dganalysis.training.job_draw import job_hparams

# DomainBed: random_hparams(alg, dataset, seed_hash(hparams_seed, trial_seed)) — printed values
PINNED = [
    ("ERM", "PACS", 1, 0, {"resnet_dropout": 0.5, "lr": 2.7028930742148706e-05,
                           "weight_decay": 0.00044832883881609976, "batch_size": 39}),
    ("ERM", "RotatedMNIST", 1, 0, {"resnet_dropout": 0.5, "lr": 0.00011906162909279594, "weight_decay": 0.0,
                                   "batch_size": 372}),
    ("DANN", "DomainNet", 3, 2, {"resnet_dropout": 0.1, "lambda": 55.61452995071441, "mlp_width": 272, "mlp_depth": 4,
                                 "lr": 2.259509333895171e-05, "weight_decay": 0.0038093795402535276, "batch_size": 19}),
    ("ARM", "PACS", 2, 1, {"lr": 0.0002692684204277505, "weight_decay": 3.539788355410888e-06, "batch_size": 8}),
    ("Fishr", "ColoredMNIST", 5, 0, {"lambda": 8089.489683014979, "penalty_anneal_iters": 4264,
                                     "ema": 0.9269723464224017, "lr": 0.00023968517445719083, "weight_decay": 0.0,
                                     "batch_size": 39}),
]


@pytest.mark.parametrize("alg, dataset, hp_seed, trial, expected", PINNED)
def test_pinned_domainbed_draws(alg, dataset, hp_seed, trial, expected):
    got = A.default_hparams(alg, hp_seed, trial_seed=trial, dataset=dataset)
    assert {k: got[k] for k in expected} == expected


def test_seed_hash_values():
    # DomainBed's misc.seed_hash: md5 of str(args) mod 2^31
    assert seed_hash(0, 0) == draw_seed(0, 0)
    assert seed_hash(1, 0) != seed_hash(0, 1)
    assert 0 <= seed_hash(12345, "lr") < 2**31


@pytest.mark.parametrize("dataset", ["RotatedDigits", "PACS"])
def test_seed_zero_is_defaults_for_every_trial(dataset):
    specs = A.hparam_specs("DANN_GRL")  # the GRL variant has the extra dann_lambda_schedule
    d0 = resolve(specs, 0, trial_seed=0, dataset=dataset)
    assert resolve(specs, 0, trial_seed=3, dataset=dataset) == d0
    small = is_small_images(dataset)
    for name, hp in specs.items():
        if name != "image_regime":
            assert d0[name] == hp.regime(small, dataset)[0]


def test_trial_seed_changes_the_draw_as_domainbed():
    specs = A.hparam_specs("ERM")
    a = resolve(specs, 1, trial_seed=0, dataset="PACS")
    b = resolve(specs, 1, trial_seed=1, dataset="PACS")
    assert a["lr"] != b["lr"]
    assert resolve(specs, 1, trial_seed=1, dataset="PACS") == b  # reproducible


def test_extra_hparams_never_change_domainbed_draws():
    domainbed_names = ["lr", "batch_size", "weight_decay", "resnet_dropout", "nonlinear_classifier", "lambda",
                       "mlp_width", "mlp_depth", "mlp_dropout"]
    specs = A.hparam_specs("DANN_GRL")  # the GRL variant has the extra dann_lambda_schedule
    plain = resolve(specs, 4, trial_seed=1, dataset="PACS")
    extra = {"featurizer": "resnet18", "schedule": "cosine", "augment": True, "optimizer": "sgd",
             "dann_lambda_schedule": "ganin", "conv1_3x3": True}
    changed = resolve(specs, 4, overrides=extra, trial_seed=1, dataset="PACS")
    more = {**specs, "zz_new_hparam": HParam(1.0, lambda r: float(r.uniform()), "an added hparam")}
    added = resolve(more, 4, trial_seed=1, dataset="PACS")
    searched = resolve(specs, 4, search_overrides={"featurizer": {"choice": ["cnn", "mlp"]}}, trial_seed=1,
                       dataset="PACS")
    for name in domainbed_names:
        assert plain[name] == changed[name] == added[name] == searched[name], name


def test_regimes_by_dataset():
    assert {"RotatedMNIST", "ColoredMNIST", "Debug28", "RotatedDigits", "ColoredDigits"} <= SMALL_IMAGE_DATASETS
    for ds in ("RotatedDigits", "ColoredDigits", "RotatedMNIST", "ColoredMNIST", None):
        assert is_small_images(ds)
    for ds in ("PaHCC", "ImageFolder", "CSVImages", "PACS", "VLCS", "OfficeHome", "TerraIncognita", "DomainNet"):
        assert not is_small_images(ds), ds
    small = A.default_hparams("ERM", dataset="RotatedDigits")
    large = A.default_hparams("ERM", dataset="PaHCC")
    assert (small["lr"], small["batch_size"], small["weight_decay"], small["image_regime"]) == (1e-3, 64, 0.0, "small")
    assert (large["lr"], large["batch_size"], large["weight_decay"], large["image_regime"]) == (5e-5, 32, 0.0, "large")
    # small images never draw weight decay; large ones draw 10^U(-6,-2)
    assert all(A.default_hparams("ERM", s, dataset="RotatedDigits")["weight_decay"] == 0.0 for s in range(1, 6))
    assert all(1e-6 <= A.default_hparams("ERM", s, dataset="PACS")["weight_decay"] <= 1e-2 for s in range(1, 6))
    # DomainNet: batch int(2^U(3,5)) ≤ 32; ARM: 8 on every large dataset
    assert all(A.default_hparams("ERM", s, dataset="DomainNet")["batch_size"] <= 32 for s in range(1, 30))
    assert max(A.default_hparams("ERM", s, dataset="PACS")["batch_size"] for s in range(1, 60)) > 32
    assert {A.default_hparams("ARM", s, dataset=d)["batch_size"] for s in range(3) for d in ("PACS", "DomainNet")} == {8}
    assert A.default_hparams("ARM", dataset="RotatedDigits")["batch_size"] == 64


def test_image_regime_override_and_builder_flag(monkeypatch):
    forced = A.default_hparams("ERM", 2, overrides={"image_regime": "small"}, dataset="PaHCC")
    assert forced["image_regime"] == "small"
    assert forced == {**A.default_hparams("ERM", 2, dataset="RotatedDigits"), "image_regime": "small"}
    assert A.default_hparams("ERM", overrides={"image_regime": "large"}, dataset="RotatedDigits")["lr"] == 5e-5
    with pytest.raises(ValueError, match="image_regime"):
        A.default_hparams("ERM", overrides={"image_regime": "tiny"})
    from dganalysis.data import registry

    def builder(**kw):
        raise AssertionError("never built")

    builder.small_images = True
    monkeypatch.setitem(registry.DATASETS._items, "TinyFlagged", builder)
    assert is_small_images("TinyFlagged")
    builder.small_images = False
    assert not is_small_images("TinyFlagged")


def test_job_hparams_threads_trial_seed_and_dataset():
    job = Job(dataset="PACS", algorithm="ERM", train_domains=["A", "C", "P"], test_domains=["S"], hparams_seed=3,
              trial_seed=2, steps=7)
    hp = job_hparams(job)
    assert hp == {**A.default_hparams("ERM", 3, trial_seed=2, dataset="PACS"), "steps": 7}
    assert hp["lr"] != A.default_hparams("ERM", 3, trial_seed=0, dataset="PACS")["lr"]


def test_distributions_and_errors():
    import numpy as np

    r = np.random.RandomState(0)
    assert isinstance(parse_distribution({"choice": [1, 2]})(r), int)  # Python scalars, not numpy
    assert isinstance(parse_distribution({"choice": ["a", "b"]})(r), str)
    assert isinstance(parse_distribution({"log10_uniform_int": [0, 4]})(r), int)
    assert 0 <= parse_distribution({"uniform_int": [0, 5]})(r) < 5
    assert parse_distribution(3)(r) == 3
    with pytest.raises(ValueError, match="'x'.*unknown distribution"):
        parse_distribution({"gauss": [0, 1]}, "x")
    with pytest.raises(ValueError, match="'x'.*bad arguments"):
        parse_distribution({"uniform": [0]}, "x")
    with pytest.raises(KeyError, match="unknown hyperparameters"):
        resolve(BASE_HPARAMS, 0, overrides={"lrr": 1})
    with pytest.raises(ValueError, match="trial_seed"):
        resolve(BASE_HPARAMS, 1, trial_seed=-1)
    assert fixed(None)(r) is None


def test_resolved_hparams_read_declared_defaults_and_list_only_given_values():
    from dganalysis.training.hparams import BASE_HPARAMS, HParams

    hp = HParams({"lr": 0.5})
    assert hp["lr"] == 0.5 and hp["resnet_dropout"] == BASE_HPARAMS["resnet_dropout"].default
    assert dict(hp) == {"lr": 0.5} and len(hp) == 1  # records of the values are unchanged
    assert HParams.of(hp) is hp
    with pytest.raises(KeyError, match="'no_such_name' is neither set nor declared"):
        hp["no_such_name"]


def test_algorithms_and_networks_never_restate_a_declared_default():
    """``hparams.get("name", default)`` in algorithms/ and nets/ would restate a default declared by an HParam
    (and could drift from it): read ``hparams["name"]`` from the resolved HParams instead."""
    import re
    from pathlib import Path

    import dganalysis.algorithms as A
    from dganalysis.training.hparams import BASE_HPARAMS

    declared = set(BASE_HPARAMS).union(*(A.get_algorithm(n).HPARAMS for n in A.available()))
    root = Path(A.__file__).resolve().parents[1]
    found = []
    for path in [*(root / "algorithms").glob("*.py"), *(root / "nets").glob("*.py")]:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            for m in re.finditer(r'\b(?:hparams|hp)\.get\("(\w+)",', line):
                if m.group(1) in declared and m.group(1) != "mlp_width":  # unused: DomainBedMLP refuses hparams without it
                    found.append(f"{path.name}:{i} {m.group(0)}")
    assert not found, "defaults restated:\n" + "\n".join(found)


def test_hparams_one_rng_per_name():
    specs = {"a": HParam(1.0, uniform(0, 1)), "b": HParam(2, choice([5, 6, 7]))}
    h1 = resolve(specs, 3)
    more = {**specs, "c": HParam(0.0, log10_uniform(-2, 0))}
    h2 = resolve(more, 3)
    assert h1["a"] == h2["a"] and h1["b"] == h2["b"]  # adding c changes nothing else
    assert resolve(specs, 0) == {"a": 1.0, "b": 2}
    assert resolve(specs, 4) != resolve(specs, 5)
    g = resolve(more, 7, search_overrides={"c": {"log10_uniform": [-2, -1]}})
    assert 0.01 <= g["c"] <= 0.1
    assert resolve(specs, 7, overrides={"a": 9})["a"] == 9
    with pytest.raises(KeyError, match="unknown hyperparameters"):
        resolve(specs, 1, overrides={"zz": 1})
    with pytest.raises(ValueError, match="unknown distribution"):
        parse_distribution({"gauss": [0, 1]}, "c")


def test_name_state_draws_as_a_new_domainbed_random_state():
    """name_state reuses one reseeded state per thread: every kind of draw must equal a fresh
    ``np.random.RandomState(seed_hash(seed, name))``'s, even after the reused state drew Gaussians (cached)."""
    import numpy as np

    from dganalysis.training.hparams import name_state, seed_hash

    draws = (lambda r: r.uniform(-5, -3), lambda r: r.choice([0.0, 0.1, 0.5]), lambda r: r.normal(),
             lambda r: r.randint(8, 64), lambda r: r.normal())
    for seed in (0, 1, 17, 2**31 - 1):
        for name in ("lr", "batch_size", "resnet_dropout"):
            name_state(seed + 1, "warm").normal()  # leave a cached Gaussian behind
            mine, fresh = name_state(seed, name), np.random.RandomState(seed_hash(seed, name))
            assert [f(mine) for f in draws] == [f(fresh) for f in draws]
