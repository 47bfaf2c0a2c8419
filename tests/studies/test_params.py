"""Every params YAML names only parameters its notebook has, every notebook is thin and parameterised, and each
notebook's parameters are one frozen, validated object (:mod:`dganalysis.studies.params`) that papermill, a YAML and
Python can each set, parameter by parameter."""

import ast
import copy
import dataclasses
import functools
import inspect
import json
import shutil
import typing
from pathlib import Path

import papermill as pm
import papermill.cli
import pytest
import yaml
from papermill.iorw import load_notebook_node
from papermill.parameterize import parameterize_notebook

from dganalysis.studies import runner
from dganalysis.studies.params import SHARED_RULES
from dganalysis.studies.runner import INJECTED, list_notebooks, load_params
from dganalysis.studies.study import STUDIES, build_params, params_class
from dganalysis.sweep import Sweep
from dganalysis.validation import ConfigError

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = list_notebooks(ROOT)


def test_all_nine_studies_exist():
    assert [n[:2] for n in NOTEBOOKS] == ["00", "01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.mark.parametrize("name", NOTEBOOKS)
@pytest.mark.parametrize("profile", ["quick", "paper"])
def test_profile_params_are_known(name, profile):
    params = load_params(profile, name, ROOT)  # raises on unknown names
    assert isinstance(params, dict)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_parameters_cell_and_no_outputs(name):
    path = ROOT / "notebooks" / f"{name}.ipynb"
    nb = json.loads(path.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{name}: exactly one cell tagged 'parameters'"
    assert set(INJECTED) <= set(pm.inspect_notebook(str(path)))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            assert not c.get("outputs"), f"{name}: notebooks are committed without outputs"
            assert "def " not in "".join(c["source"]), f"{name}: logic belongs in the library, not the notebook"


# --------------------------------------------------------------------------- one parameter object per notebook


@functools.cache
def _inspected(name: str) -> dict:
    return pm.inspect_notebook(str(ROOT / "notebooks" / f"{name}.ipynb"))


def test_every_notebook_has_a_parameter_object():
    assert STUDIES.names() == NOTEBOOKS
    assert all(STUDIES.get(n).params.notebook == n for n in NOTEBOOKS)


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_object_fields_are_the_parameters_cell(name):
    """Names, order and defaults of the object are those papermill reads from the parameters cell (so every
    parameter of the cell parses: a comment papermill cannot parse hides its parameter from the runner)."""
    cls = params_class(name)
    cell = _inspected(name)
    assert list(cell) == cls.names()
    defaults = cls.defaults()
    for n, info in cell.items():
        assert ast.literal_eval(info["default"]) == defaults[n], n
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls().output_dir = "elsewhere"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_builds_its_object_and_its_planner_takes_it(name):
    s = STUDIES.get(name)
    source = (ROOT / "notebooks" / f"{name}.py").read_text()
    assert f'S = study("{name}")' in source and "P = S.params.from_namespace(globals())" in source
    (arg,) = inspect.signature(s.plan).parameters
    assert typing.get_type_hints(s.plan)[arg] is s.params
    # the PaHCC build and the audit train nothing: their notebooks make no planner call (the dry run still does)
    if name not in ("01_dataset_construction", "08_audit"):
        assert "S.plan(P)" in source


#: a valid value other than the default, where the generic change (:func:`_new_value`) is not one
NEW_VALUES = {
    "baseline": "CORAL", "selections": "all", "reference": "shipped:domainbed",
    "bandwidth": "shared", "evaluate_on": "test_domain", "correction": "bonferroni", "selection_method": "oracle",
    "featurizer": "cnn",
    "test_domain": "60", "rho_small": 0.1, "test_like_angles": [30, 90], "frozen_stages": [1, 2],
    "loss_models": ["G2DM"], "compare_models": ["WM"], "rhos": [0.0, 0.05, 0.3],
    "published_weights": {"moco": {"path": "/w/moco.pth", "featurizer": "resnet50"}},
    "ranking_dominant": {"RotatedDigits": "diversity"},
    "leaderboards": {"A": {}, "B": {"steps": 5}}, "calibrate": True, "env_steps": None,
    "train_sets": [["d0", "d1"], ["d0", "d2"], ["d1", "d2"], ["d0", "d1", "d2"], ["d0"]],
    # nested sweeps: some keys only (the others keep the cell's values)
    "sweep": {"steps": 15, "checkpoint_freq": 3},
    "oracle": {"dataset": "ColoredDigits", "dataset_kwargs": {"image_size": 12}, "search_overrides": None,
               "splits": [{"train": ["+90%"], "test": ["-90%"]}], "steps": 15},
    "ranking": {"algorithms": ["ERM"], "n_trials": 1, "hparams_overrides": {"featurizer": "cnn"}},
    "full_dataset_kwargs": {"size": "full"},
    "logo_groups": {"RotatedDigits": [["0"]]}, "lodo_domains": {"RotatedDigits": ["15"]},
    "search_protocol": "yu2024", "family": "table",
}


def _new_value(name: str, default):
    """A value of the default's kind that differs from it (the parameter's consistency checks must accept it)."""
    if name in NEW_VALUES:
        return copy.deepcopy(NEW_VALUES[name])
    if name.endswith("_dir") or name in ("extra_bars_csv", "extra_bars_label"):
        return f"{default}_elsewhere"
    if default is None:
        return "/some/folder" if name in ("folder_root", "inception_weights", "fid_reference") else ["d0"]
    if isinstance(default, bool):
        return not default
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default * 2
    if isinstance(default, list):
        return default[:1] if len(default) > 1 else default * 2 or [3]
    raise AssertionError(f"{name}: no new value for {default!r}")


CASES = [(n, p) for n in NOTEBOOKS for p in params_class(n).names()]


def _got(obj, param: str, value):
    """``obj``'s ``param``; a nested sweep (:class:`dganalysis.sweep.Sweep`) as the keys ``value`` sets."""
    got = getattr(obj, param)
    if isinstance(got, Sweep):
        assert list(got.as_dict()) == list(type(obj).defaults()[param])  # the cell's keys, in order
        return {k: got.as_dict()[k] for k in value}
    return got


@pytest.mark.parametrize("name, param", CASES, ids=[f"{n[:2]}-{p}" for n, p in CASES])
def test_every_parameter_is_settable_by_papermill_yaml_and_object(name, param, tmp_path):
    """Each parameter of each notebook, set alone to a new value: (1) through papermill's injection (what ``papermill
    -p/-y`` and ``dganalysis run`` do: the parameters cell, then the injected cell, run in one namespace, then the
    notebook's ``from_namespace``); (2) through a params YAML read by the runner; (3) on the object."""
    cls = params_class(name)
    default = cls.defaults()[param]
    value = _new_value(param, default)
    if param == "selection_method" and value == default:
        value = "training_domain"
    assert value != default, f"{name}.{param}: pick a value other than the default"
    # (3) the object
    p = cls(**{param: value})
    assert _got(p, param, value) == value
    # (1) papermill: -p resolves scalars from the command line's text; -y and the runner pass them as they are
    if isinstance(value, (bool, int, float)) or value is None:
        assert papermill.cli._resolve_type(str(value)) == value
    nb = parameterize_notebook(load_notebook_node(str(ROOT / "notebooks" / f"{name}.ipynb")), {param: value})
    cells = [c.source for c in nb.cells if c.cell_type == "code"
             and {"parameters", "injected-parameters"} & set(c.metadata.get("tags", []))]
    namespace: dict = {}
    for src in cells:
        exec(src, namespace)  # noqa: S102 - the notebook's own literal assignments and papermill's injection
    assert namespace[param] == value
    assert _got(cls.from_namespace(namespace), param, value) == value
    # (2) a params YAML, through the runner's validation
    for sub in ("notebooks",):
        (tmp_path / sub).mkdir()
        shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", tmp_path / sub / f"{name}.ipynb")
    (tmp_path / "params" / "t").mkdir(parents=True)
    (tmp_path / "params" / "t" / f"{name}.yaml").write_text(yaml.safe_dump({param: value}, allow_unicode=True))
    if param in runner.INJECTED:
        with pytest.raises(ValueError, match="set by the runner"):
            runner.load_params("t", name, tmp_path)
        return
    assert runner.load_params("t", name, tmp_path)[param] == value


def test_consistency_checks_name_the_parameter():
    from dganalysis.studies.params import LeaderboardsParams, WorstCaseParams

    with pytest.raises(ConfigError, match=r"parameter 'rho_small': 0\.3 is not among rhos"):
        WorstCaseParams(rho_small=0.3)
    with pytest.raises(ConfigError, match=r"parameter 'compare_models': \['MMD'\] are not in sweep\.algorithms"):
        WorstCaseParams(compare_models=["MMD"])
    with pytest.raises(ConfigError, match=r"parameter 'sweep\.steps' \(the notebook's default is 20\): expected an "
                                          r"integer"):
        WorstCaseParams(sweep={"steps": 20.5})
    with pytest.raises(ConfigError, match=r"parameter 'compare_models': \['G2DM'\] are not in sweep\.algorithms"):
        WorstCaseParams(sweep={"algorithms": ["ERM", "WM"]})
    with pytest.raises(ConfigError, match=r"parameter 'alpha'"):
        LeaderboardsParams(alpha=1.5)
    with pytest.raises(ConfigError, match=r"parameter 'fid_n_samples'"):  # a covariance needs two images
        build_params("04_leakage_oracle", {"fid_n_samples": 1}, "04.yaml")
    with pytest.raises(ConfigError, match=r"07\.yaml: unknown parameter\(s\) \['bogus'\]"):
        build_params("07_worst_case", {"bogus": 1}, "07.yaml")
    with pytest.raises(ConfigError, match=r"p\.yaml: parameter 'test_domain'|trains on the test domain"):
        build_params("03_dynamic_dg", {"test_domain": "15"}, "p.yaml")


def test_bad_yaml_fails_in_the_runner_before_anything_runs(tmp_path):
    """The consistency checks run on a YAML (and on each variant) when the runner reads it."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "07_worst_case.ipynb", tmp_path / "notebooks")
    (tmp_path / "params" / "t").mkdir(parents=True)
    yml = tmp_path / "params" / "t" / "07_worst_case.yaml"
    yml.write_text("rho_small: 0.07\n")
    with pytest.raises(ConfigError, match=r"07_worst_case\.yaml: parameter 'rho_small': 0\.07 is not among rhos"):
        runner.load_params("t", "07_worst_case", tmp_path)
    yml.write_text("variants:\n  wide:\n    rhos: [0.0, 0.5]\n")
    with pytest.raises(ConfigError, match=r"variant 'wide'\): parameter 'rho_small'"):
        runner.load_params("t", "07_worst_case", tmp_path)


#: a bad value for every parameter name several notebooks share and check the same way
_SHARED_BAD = {"n_workers": 0, "batch_size": 0, "image_size": 0, "seed": -1, "lr": 0.0, "alpha": 1.5,
               "selection_method": "trainig_domain"}
#: shared names checked by kind only, or by a rule across parameters in the class's own check
_SHARED_KIND_ONLY = {"featurizer"}
#: a bad value for each key of a sweep (every notebook's nested sweep refuses it, naming ``parameter.key``)
_SWEEP_BAD = {"n_hparams": 0, "n_trials": 0, "steps": 0, "checkpoint_freq": 0, "algorithms": [],
              "splits": [{"train": ["0"], "test": ["0"]}], "datasets": [{"name": "X", "train": ["0"]}], "dataset_kwargs": [1],
              "dataset": "", "hparams_overrides": [1], "search_overrides": [1]}


def test_every_shared_parameter_name_is_ruled():
    from collections import Counter

    from dganalysis.studies.params import NotebookParams

    counts = Counter(n for nb in STUDIES.names() for n in params_class(nb).names()
                     if n not in NotebookParams.names())
    shared = {n for n, k in counts.items() if k > 1}
    assert shared - set(_SHARED_BAD) - _SHARED_KIND_ONLY == {"sweep"}  # a sweep checks its own keys
    assert set(_SHARED_BAD) <= set(SHARED_RULES)


@pytest.mark.parametrize("notebook", sorted(STUDIES.names()))
def test_shared_parameter_names_have_one_rule(notebook):
    """A parameter name several notebooks share ("steps", "alpha", "algorithms", ...) is refused with the same rule
    wherever it appears (SHARED_RULES), before the notebook's own checks."""
    cls = params_class(notebook)
    for name, bad in _SHARED_BAD.items():
        if name in cls.names():
            with pytest.raises(ConfigError, match=f"parameter '{name}'"):
                cls.from_mapping({name: bad})


# --------------------------------------------------------------------------- nested sweep settings


def test_sweep_settings_fill_missing_keys_and_feed_the_planner():
    """04's ``sweep`` and ``oracle`` and 06's ``ranking`` become :class:`Sweep`; keys left out take the cell's
    values."""
    from dganalysis.studies.params import LeakageOracleParams, ShiftEstimationParams

    p = LeakageOracleParams(oracle={"steps": 7})
    assert isinstance(p.oracle, Sweep) and p.oracle.steps == 7
    assert p.oracle.dataset == "RotatedDigits" and p.oracle.n_hparams == 2 and p.oracle.n_trials == 2
    assert p.as_dict()["oracle"] == {**LeakageOracleParams.defaults()["oracle"], "steps": 7}  # a plain mapping
    assert {j.steps for j in STUDIES.get("04_leakage_oracle").plan(p).sweeps["oracle-K"]} == {7}
    assert LeakageOracleParams.sweep_names() == ["sweep", "oracle"]
    assert ShiftEstimationParams.sweep_names() == ["ranking"]
    r = ShiftEstimationParams(ranking={"algorithms": ["ERM", "IRM", "CORAL"]}).ranking
    assert r.algorithms == ["ERM", "IRM", "CORAL"] and r.checkpoint_freq == 5


@pytest.mark.parametrize("key, bad", list(_SWEEP_BAD.items()))
def test_nested_sweep_keys_follow_the_sweeps_rules(key, bad):
    """A key of any notebook's nested sweep is refused by :class:`Sweep`'s one rule for it, naming
    ``parameter.key``."""
    checked = 0
    for name in NOTEBOOKS:
        for param in params_class(name).sweep_names():
            if key in params_class(name).defaults()[param]:
                checked += 1
                with pytest.raises(ConfigError, match=rf"x\.yaml: parameter '{param}\.{key}"):
                    build_params(name, {param: {key: bad}}, "x.yaml")
    assert checked, f"no notebook's sweep has the key {key!r}"


def test_nested_sweep_errors_name_the_file_parameter_and_key():
    with pytest.raises(ConfigError, match=r"x\.yaml: parameter 'oracle': unknown key 'stesp'; did you mean 'steps'\?"):
        build_params("04_leakage_oracle", {"oracle": {"stesp": 10}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"x\.yaml: parameter 'ranking': unknown key 'bogus' \(the keys"):
        build_params("06_shift_estimation", {"ranking": {"bogus": 1}}, "x.yaml")
    with pytest.raises(ConfigError, match=r"parameter 'oracle': expected a mapping of sweep settings"):
        build_params("04_leakage_oracle", {"oracle": 10}, "x.yaml")
    with pytest.raises(ConfigError, match=r"parameter 'oracle\.steps' \(the notebook's default is 10\): expected an "
                                          r"integer"):
        build_params("04_leakage_oracle", {"oracle": {"steps": 2.5}}, "x.yaml")


def test_variant_merges_a_nested_sweep_key_by_key(tmp_path):
    """A variant's ``oracle: {steps: ...}`` replaces that key of the base's ``oracle`` only; any other parameter,
    and each key's value (``splits``, ``dataset_kwargs``), is replaced whole; an unknown nested key in a variant
    names the file, the variant, the parameter and the key."""
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "04_leakage_oracle.ipynb", tmp_path / "notebooks")
    (tmp_path / "params" / "t").mkdir(parents=True)
    yml = tmp_path / "params" / "t" / "04_leakage_oracle.yaml"
    base = {"dataset": "ColoredDigits", "dataset_kwargs": {"image_size": 12, "n_per_domain": 50}, "n_hparams": 3,
            "splits": [{"train": ["+90%"], "test": ["-90%"]}, {"train": ["-90%"], "test": ["+90%"]}], "steps": 40}
    yml.write_text(yaml.safe_dump({"oracle": base, "test_like_angles": [30, 90], "variants": {
        "long": {"oracle": {"steps": 400, "dataset_kwargs": {"image_size": 8},
                            "splits": [{"train": ["+80%"], "test": ["-90%"]}]},
                 "test_like_angles": [60, 90]}}}))
    got_base, variants = runner.load_all_params("t", "04_leakage_oracle", tmp_path)
    assert got_base["oracle"] == base
    assert variants["long"] == {"oracle": {**base, "steps": 400, "dataset_kwargs": {"image_size": 8},
                                           "splits": [{"train": ["+80%"], "test": ["-90%"]}]},
                                "test_like_angles": [60, 90]}
    p = build_params("04_leakage_oracle", variants["long"])
    assert (p.oracle.dataset, p.oracle.n_hparams, p.oracle.steps) == ("ColoredDigits", 3, 400)
    yml.write_text(yaml.safe_dump({"oracle": base, "variants": {"long": {"oracle": {"n_hparam": 4}}}}))
    with pytest.raises(ConfigError, match=r"04_leakage_oracle\.yaml \(variant 'long'\): parameter 'oracle': unknown "
                                          r"key 'n_hparam'; did you mean 'n_hparams'\?"):
        runner.load_all_params("t", "04_leakage_oracle", tmp_path)


def test_paper_variant_overrides_only_the_oracle_keys_it_names():
    """The paper profile's 04 variant ``domainnet`` trains Table 4 on DomainNet at 15,000 steps and keeps the base's
    draws, trials and dataset arguments."""
    base, variants = runner.load_all_params("paper", "04_leakage_oracle", ROOT)
    merged = [v["oracle"] for v in variants.values() if v["oracle"] != base["oracle"]]
    assert merged, "a paper variant changes the oracle sweep"
    for o in merged:
        assert set(o) == set(base["oracle"])
        assert (o["n_hparams"], o["n_trials"], o["dataset_kwargs"]) == (base["oracle"]["n_hparams"],
                                                                       base["oracle"]["n_trials"],
                                                                       base["oracle"]["dataset_kwargs"])


def test_a_flat_sweep_key_says_where_it_belongs(tmp_path):
    """A profile written with the sweep's keys at the top level is refused, naming the nested mapping they go in."""
    with pytest.raises(ConfigError, match=r"x\.yaml: unknown parameter\(s\) \['steps'\]; .* \['steps'\] are sweep "
                                          r"settings: give them in the nested mapping 'sweep' \(sweep: \{steps: \.\.\.\}\)"):
        build_params("07_worst_case", {"steps": 5}, "x.yaml")
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "04_leakage_oracle.ipynb", tmp_path / "notebooks")
    (tmp_path / "params" / "t").mkdir(parents=True)
    (tmp_path / "params" / "t" / "04_leakage_oracle.yaml").write_text("n_trials: 3\n")
    with pytest.raises(ConfigError, match=r"04_leakage_oracle\.yaml: unknown parameter\(s\) \['n_trials'\]; .* "
                                          r"give them in the nested mapping 'sweep'"):
        runner.load_params("t", "04_leakage_oracle", tmp_path)
    with pytest.raises(ConfigError, match=r"unknown parameter\(s\) \['rhos'\]; [^;]*$"):  # not a sweep key: no hint
        build_params("04_leakage_oracle", {"rhos": [0.0]}, "x.yaml")
