"""Dataset input is checked before any work (dganalysis.data.checks): the name, the builder's argument names and
values, and a dataset object passed to a function — one-line ConfigErrors naming the key."""

from __future__ import annotations

import pytest

from dganalysis.data import load_dataset
from dganalysis.data.checks import builder_parameters, check_dataset_kwargs, check_domain_dataset, kwarg_check
from dganalysis.validation import ConfigError


def test_builder_arguments_follow_the_wrappers():
    params = builder_parameters("RotatedDigits")
    assert params is not None and "image_size" in params and "data_dir" not in params and "run_seed" not in params


def test_dataset_kwargs_are_checked_by_name_and_value():
    check_dataset_kwargs("RotatedDigits", {"image_size": 16}, "dataset_kwargs")
    with pytest.raises(ConfigError, match=r"dataset: unknown dataset 'RotatedDigit'.*did you mean 'RotatedDigits'"):
        check_dataset_kwargs("RotatedDigit", {}, "dataset_kwargs")
    with pytest.raises(ConfigError, match=r"dataset: expected a dataset name, got 3 \(int\)"):
        check_dataset_kwargs(3, {}, "dataset_kwargs")
    with pytest.raises(ConfigError, match=r"cfg\.yaml: expected a mapping of builder arguments"):
        check_dataset_kwargs("RotatedDigits", [1], "cfg.yaml")
    with pytest.raises(ConfigError, match=r"RotatedDigits takes no argument\(s\) \['imagesize'\]"):
        check_dataset_kwargs("RotatedDigits", {"imagesize": 16}, "dataset_kwargs")
    with pytest.raises(ConfigError, match=r"dataset_kwargs\.image_size: expected an integer in \[1, inf\)"):
        check_dataset_kwargs("RotatedDigits", {"image_size": 0}, "dataset_kwargs")


def test_kwarg_rules_by_name():
    assert kwarg_check("n_per_domain")(3, "x") == 3 and kwarg_check("seed")(0, "x") == 0
    for name, value in (("image_size", 1.5), ("seed", -1), ("val_fraction", 1.5)):
        with pytest.raises(ConfigError):
            kwarg_check(name)(value, "x")
    assert kwarg_check("angles")([0, 15], "x") == [0, 15]  # the builder's to check


def test_domain_dataset_check():
    ds = load_dataset("RotatedDigits", image_size=8)
    assert check_domain_dataset(ds, "ds", func="f") is ds
    with pytest.raises(ConfigError, match=r"f: parameter 'ds': expected a DomainDataset .*got list"):
        check_domain_dataset([1, 2], "ds", func="f")
