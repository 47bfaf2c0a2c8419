"""One sweep's shape as one frozen, checked object (:class:`dganalysis.sweep.Sweep`): one key list, each value checked
where the object is built, errors naming the file or the notebook parameter and the key."""

import dataclasses

import pytest

from dganalysis.sweep import Sweep
from dganalysis.sweep.spec import KEYS
from dganalysis.validation import ConfigError

DEFAULTS = {"dataset": "RotatedDigits", "dataset_kwargs": {"image_size": 16}, "algorithms": ["ERM"], "steps": 10,
            "n_trials": 2}


def test_one_key_list_from_the_fields():
    from dganalysis.protocols.leaderboard import BOARD_SWEEP_KEYS
    from dganalysis.sweep.spec import _RULES

    assert KEYS == tuple(f.name for f in dataclasses.fields(Sweep) if f.name not in ("name", "keys"))
    assert set(_RULES) == set(KEYS) and set(BOARD_SWEEP_KEYS) <= set(KEYS)  # one check per key
    assert KEYS[:2] == ("dataset", "dataset_kwargs") and "checkpoint_freq" in KEYS and "save_model" in KEYS
    with pytest.raises(dataclasses.FrozenInstanceError):
        Sweep(algorithms=["ERM"]).steps = 3


@pytest.mark.parametrize("key, bad, match", [
    ("steps", 0, r"^x\.yaml: steps: expected an integer in \[1"),
    ("n_hparams", 1.5, r"^x\.yaml: n_hparams: expected an integer"),
    ("algorithms", ["ERM", "Nope"], r"^x\.yaml: algorithms: unknown algorithm 'Nope'"),
    ("splits", "leave_two_out", r"^x\.yaml: splits: unknown protocol 'leave_two_out'"),
    ("splits", [{"train": ["0"], "test": ["0"]}], r"^x\.yaml: splits\[0\]: domains \['0'\] in two roles"),
    ("datasets", [{"name": "X", "train": ["0"]}], r"^x\.yaml: datasets\[0\]: expected a mapping with keys"),
    ("datasets", [{"name": "X", "steps": 0}], r"^x\.yaml: datasets\[0\]\.steps: expected an integer in \[1"),
    ("holdout_fraction", 1.0, r"^x\.yaml: holdout_fraction: expected a number in \[0, 1\)"),
])
def test_a_file_value_is_checked_when_the_sweep_is_built(key, bad, match):
    with pytest.raises(ConfigError, match=match):
        Sweep.from_mapping({**DEFAULTS, key: bad}, "x.yaml")


def test_unknown_and_missing_keys_name_the_file():
    with pytest.raises(ConfigError, match=r"x\.yaml: unknown key\(s\) \['stesp'\]; did you mean 'steps'\?"):
        Sweep.from_mapping({**DEFAULTS, "stesp": 3}, "x.yaml")
    with pytest.raises(ConfigError, match=r"x\.yaml: missing required key 'checkpoint_freq'"):
        Sweep.from_mapping(DEFAULTS, "x.yaml", required=("checkpoint_freq",))


def test_a_notebooks_sweep_takes_its_cells_keys_and_defaults():
    s = Sweep.from_mapping({"steps": 7}, "oracle", DEFAULTS)
    assert s.as_dict() == {**DEFAULTS, "steps": 7} and s.keys == tuple(DEFAULTS)
    with pytest.raises(ConfigError, match=r"parameter 'oracle': unknown key 'n_hparams' \(the keys of 'oracle'"):
        Sweep.from_mapping({"n_hparams": 2}, "oracle", DEFAULTS)
    with pytest.raises(ConfigError, match=r"parameter 'oracle\.steps' \(the notebook's default is 10\)"):
        Sweep.from_mapping({"steps": "10"}, "oracle", DEFAULTS)
    with pytest.raises(ConfigError, match=r"parameter 'oracle\.n_trials': expected an integer in \[1"):
        Sweep.from_mapping({"n_trials": 0}, "oracle", DEFAULTS)


def test_replace_checks_the_changed_values_and_keeps_the_name():
    s = Sweep.from_mapping({}, "sweep", DEFAULTS)
    r = s.replace(checkpoint_freq=5, splits=[{"train": ["0"], "test": ["15"]}])
    assert r.checkpoint_freq == 5 and r.steps == 10 and r.keys == (*DEFAULTS, "checkpoint_freq", "splits")
    with pytest.raises(ConfigError, match=r"parameter 'sweep\.checkpoint_freq': expected an integer"):
        s.replace(checkpoint_freq=0)
    with pytest.raises(ConfigError, match=r"parameter 'sweep\.stepz': not a key of a sweep; did you mean 'steps'"):
        s.replace(stepz=1)
    assert s.replace() is s


def test_per_dataset_and_shrunk():
    s = Sweep(algorithms=["ERM", "CORAL", "Mixup"], n_hparams=5, n_trials=3, steps=100, checkpoint_freq=50,
              hparams_overrides={"lr": 0.1}, datasets=[
                  {"name": "RotatedDigits", "kwargs": {"image_size": 8}, "train": ["0"], "test": ["15"],
                   "hparams": {"featurizer": "mlp"}},
                  {"name": "ColoredDigits", "train": ["+90%"], "test": ["-90%"]}])
    one, two = s.per_dataset()
    assert (one.dataset, one.dataset_kwargs, one.splits) == ("RotatedDigits", {"image_size": 8},
                                                            [{"train": ["0"], "test": ["15"]}])
    assert one.hparams_overrides == {"lr": 0.1, "featurizer": "mlp"} and two.hparams_overrides == {"lr": 0.1}
    own = s.replace(splits="leave_one_out", datasets=[{"name": "VLCS", "kwargs": {"image_size": 8}, "steps": 7}])
    (vlcs,) = own.per_dataset()  # no split of its own: the sweep's; its own steps
    assert (vlcs.dataset, vlcs.splits, vlcs.steps, vlcs.datasets) == ("VLCS", "leave_one_out", 7, [])
    assert one.steps == two.steps == 100
    small = s.shrunk(1, {"n_trials": 2}, keep=["Mixup"], batch_size=8, one_per_kind=lambda d: d[:1])
    assert (small.steps, small.checkpoint_freq, small.n_hparams, small.n_trials) == (1, 1, 1, 2)
    assert small.algorithms == ["ERM", "CORAL", "Mixup"] and small.hparams_overrides == {"lr": 0.1, "batch_size": 8}
    assert [d["name"] for d in small.datasets] == ["RotatedDigits"]
