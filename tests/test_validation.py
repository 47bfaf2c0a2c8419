"""Check before work: malformed sweep files, hyperparameters, dataset arguments and notebook parameters are
one-line errors naming the file and the key, raised before anything is trained."""

from __future__ import annotations

import pytest
from _tiny import TINY

from dganalysis.sweep import Sweep, load_sweep_yaml, make_jobs, run_sweep
from dganalysis.training.hparams import HParam, fixed, hparam_check
from dganalysis.training.job import Job
from dganalysis.validation import Check, ConfigError, LazyCheck, like

BASE = f"dataset: {TINY}\nalgorithms: [ERM]\nsplits: leave_one_out\nsteps: 4\ncheckpoint_freq: 2\n"

CASES = {
    "steps_float": (BASE.replace("steps: 4", "steps: 40.9"), r"steps: expected an integer.*40\.9"),
    "steps_bool": (BASE.replace("steps: 4", "steps: true"), r"steps: expected an integer.*True"),
    "freq_string": (BASE.replace("checkpoint_freq: 2", "checkpoint_freq: '2'"), r"checkpoint_freq: .*string '2'"),
    "save_model_no": (BASE + "save_model: 'no'\n", r"save_model: expected true or false, got the string 'no'"),
    "lr_yaml_string": (BASE + "hparams_overrides: {lr: 1.0e6}\n", r"hparams_overrides\.lr .*string '1\.0e6'.*1\.0e\+6"),
    "lr_huge": (BASE + "hparams_overrides: {lr: 1.0e+6}\n", r"hparams_overrides\.lr .*\(0, 10\]"),
    "batch_zero": (BASE + "hparams_overrides: {batch_size: 0}\n", r"hparams_overrides\.batch_size .*got 0"),
    "featurizer": (BASE + "hparams_overrides: {featurizer: resnet}\n", r"featurizer .*one of .*'resnet'"),
    "alg_hparam_kind": (BASE.replace("[ERM]", "[IRM]") + "hparams_overrides: {irm_lambda: 'big'}\n",
                        r"hparams_overrides\.irm_lambda \(IRM\): expected a number"),
    "search_draw": (BASE + "n_hparams: 3\nsearch_overrides: {batch_size: {uniform: [8, 16]}}\n",
                    r"search_overrides\.batch_size .*hparams_seed 1.*integer"),
    "search_spec": (BASE + "n_hparams: 2\nsearch_overrides: {lr: {gauss: [0, 1]}}\n", r"unknown distribution 'gauss'"),
    "n_trials": (BASE + "n_trials: 0\n", r"n_trials: expected an integer in \[1"),
    "holdout": (BASE + "holdout_fraction: 1.5\n", r"holdout_fraction: expected a number in \[0, 1\)"),
    "logo_k": (BASE.replace("leave_one_out", "{leave_one_group_out: 1.5}"), r"leave_one_group_out: expected an integer"),
    "unknown_domain": (BASE.replace("leave_one_out", "[{train: [d0], test: [zz]}]"), r"splits\[0\]\.test: unknown domains"),
    "empty_train": (BASE.replace("leave_one_out", "[{train: [], test: [d0]}]"), r"splits\[0\].*training domain"),
    "two_roles": (BASE.replace("leave_one_out", "[{train: [d0], test: [d0]}]"), r"splits\[0\].*two roles"),
    "dataset": (BASE.replace(TINY, "NoSuchData"), r"dataset: unknown dataset 'NoSuchData'; known: .*RotatedDigits"),
    "image_size": (BASE.replace(TINY, "RotatedDigits") + "dataset_kwargs: {image_size: -16}\n",
                   r"dataset_kwargs\.image_size: expected an integer in \[1"),
    "kwarg_name": (BASE.replace(TINY, "RotatedDigits") + "dataset_kwargs: {imagesize: 16}\n",
                   r"dataset_kwargs: RotatedDigits takes no argument\(s\) \['imagesize'\]; it takes .*image_size"),
    "kwargs_list": (BASE + "dataset_kwargs: [1]\n", r"dataset_kwargs: expected a mapping"),
    "algorithm": (BASE.replace("[ERM]", "[ERM, Nope]"), r"algorithms: unknown algorithm 'Nope'"),
    "unknown_key": (BASE + "stepz: 3\n", r"unknown key\(s\) \['stepz'\]"),
    "missing_key": (BASE.replace("steps: 4\n", ""), r"missing required key 'steps'"),
    "flat_override": (BASE + "hparams_overrides: {nope: 1}\n", r"hparams_overrides: hyperparameters \['nope'\]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_sweep_file_is_one_clear_error(tmp_path, name):
    text, pattern = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=pattern) as err:
        load_sweep_yaml(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ") and "\n" not in message  # names the file, one line


def test_good_file_still_loads(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text(BASE + "n_hparams: 2\nhparams_overrides: {lr: 1.0e-3, batch_size: 8}\nsave_model: false\n")
    assert len(load_sweep_yaml(path)) == 3 * 2


def test_nothing_is_trained_when_any_job_is_bad(tmp_path):
    good = Job(TINY, "ERM", ["d0"], ["d1"], steps=2, checkpoint_freq=1, hparams_overrides={"featurizer": "mlp"})
    bad = Job(TINY, "ERM", ["d0"], ["d2"], steps=2, checkpoint_freq=1, hparams_overrides={"batch_size": True})
    with pytest.raises(ConfigError, match=r"hparams_overrides\.batch_size .*True"):
        run_sweep([good, bad], tmp_path / "store", progress=False)
    assert not (tmp_path / "store").exists()


def test_job_fields_are_not_coerced():
    for field, value in (("steps", 40.9), ("steps", True), ("save_model", "no"), ("trial_seed", -1),
                         ("checkpoint_freq", "5"), ("holdout_fraction", 1.0)):
        with pytest.raises(ConfigError, match=f"Job.{field}: expected"):
            Job(TINY, "ERM", ["d0"], ["d1"], **{field: value})
    with pytest.raises(ConfigError, match="n_hparams"):
        make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out", n_hparams=1.0,
                        n_trials=1, steps=10, checkpoint_freq=5), domains=["a", "b"])


def test_kind_rules_and_declared_checks():
    assert like(3)(4, "x") == 4 and like(0.5)(1, "x") == 1  # an int is a number
    for default, value in ((3, 3.0), (3, True), (0.5, "0.5"), (0.5, float("nan")), (False, 0), ("a", 1)):
        with pytest.raises(ConfigError):
            like(default)(value, "x")
    own = HParam(1.0, fixed(1.0), check=Check("float", low=0.0, low_open=True))
    assert hparam_check("gamma", own) is own.check
    with pytest.raises(ConfigError, match=r"gamma: expected a number in \(0, inf\), got 0"):
        hparam_check("gamma", own)(0, "gamma")


def test_lazy_check_builds_its_rule_when_asked():
    built = []

    def factory():
        built.append(1)
        return Check(choices=("a", "b"))

    check = LazyCheck(factory)
    assert not built
    assert check("a", "x") == "a" and check.describe() == "one of 'a', 'b'"
    with pytest.raises(ConfigError, match="x: expected one of 'a', 'b', got the string 'c'"):
        check("c", "x")
    assert len(built) == 3  # read at every use: names registered later count


def test_validation_is_a_leaf():
    """validation.py holds generic checks only: it imports nothing from dganalysis (at module level or inside a
    function); the rules about datasets, featurizers and notebooks live with their owners."""
    import ast
    from pathlib import Path

    import dganalysis.validation as validation

    tree = ast.parse(Path(validation.__file__).read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0]
    relative = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 0]
    assert imported and not relative
    assert [m for m in imported if m == "dganalysis" or m.startswith("dganalysis.")] == []


def test_every_trial_draw_is_checked(tmp_path):
    """A draw depends on trial_seed too (DomainBed: seed_hash(hparams_seed, trial_seed)): here hparams_seed 1 draws a
    valid lr for trials 0 and 1 but a negative one for trial 2, and both the grid and run_sweep refuse it."""
    from dganalysis.algorithms import default_hparams

    search = {"lr": {"uniform": [1, -1]}}
    lrs = [default_hparams("ERM", 1, search_overrides=search, trial_seed=t, dataset="RotatedDigits")["lr"]
           for t in range(3)]
    assert lrs[0] > 0 and lrs[1] > 0 and lrs[2] < 0, lrs  # the premise of this test
    with pytest.raises(ConfigError, match=r"search_overrides\.lr"):
        make_jobs(Sweep(dataset="RotatedDigits", dataset_kwargs={}, algorithms=["ERM"], splits="leave_one_out",
                        n_hparams=2, n_trials=3, steps=2, checkpoint_freq=1, search_overrides=search))
    by_hand = [Job("RotatedDigits", "ERM", ["0", "15"], ["30"], hparams_seed=1, trial_seed=t, search_overrides=search)
               for t in range(3)]
    with pytest.raises(ConfigError, match=r"search_overrides\.lr"):
        run_sweep(by_hand, tmp_path / "store")
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").iterdir())
