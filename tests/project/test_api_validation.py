"""Every public function of the analysis API checks its input before work (dganalysis.validation).

Functions are found by introspection, so a new public function of these modules is tested without touching this
file: called with a value of no sensible type for each required parameter, it must raise a ValueError or TypeError
whose message names one of those parameters (not an AttributeError or a bare torch/numpy error from deep inside).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

#: packages whose every submodule is public API, and single public modules
PACKAGES = ("dganalysis.dro", "dganalysis.shift", "dganalysis.protocols")
MODULES = ("dganalysis.records.selection", "dganalysis.records.read", "dganalysis.records.store",
           "dganalysis.studies.plans", "dganalysis.stats.ttests",
           "dganalysis.stats.rank_tests")
#: public entry points of modules whose other functions are array kernels called by checked callers
FUNCTIONS_ALSO = ("dganalysis.stats.multiplicity.adjust_pvalues", "dganalysis.stats.planning.trials_for_effect_size",
                  "dganalysis.stats.planning.paired_power", "dganalysis.stats.planning.trials_for_power",
                  "dganalysis.stats.planning.effect_from_trials", "dganalysis.stats.planning.effect_from_ci",
                  "dganalysis.stats.planning.holm_bound_effect",
                  "dganalysis.records.index.load", "dganalysis.records.index.load_many")
#: numerical kernels called in inner loops with arrays their public callers have checked (documented in
#: docs/validation.md): the per-sample losses and inner solvers of the dual, and the batched KDE
KERNELS = ("dganalysis.dro.inner", "dganalysis.dro.losses", "dganalysis.shift.kde")


def _modules() -> list[str]:
    names = list(MODULES)
    for pkg in PACKAGES:
        mod = importlib.import_module(pkg)
        names += [f"{pkg}.{m.name}" for m in pkgutil.iter_modules(mod.__path__) if not m.name.startswith("_")]
    return [n for n in names if n not in KERNELS]


def public_functions() -> list[tuple[str, object]]:
    out = []
    for name in _modules():
        mod = importlib.import_module(name)
        for fname, fn in inspect.getmembers(mod, inspect.isfunction):
            if fname.startswith("_") or fn.__module__ != name:
                continue
            out.append((f"{name}.{fname}", fn))
    for qualname in FUNCTIONS_ALSO:
        mod, fname = qualname.rsplit(".", 1)
        out.append((qualname, getattr(importlib.import_module(mod), fname)))
    return out


class _Bad:
    """A value of no sensible type for any parameter: not a number, array, frame, path, mapping or callable."""

    def __repr__(self) -> str:
        return "<bad input>"


FUNCTIONS = public_functions()


def test_the_api_is_found():
    names = {n.rsplit(".", 1)[1] for n, _ in FUNCTIONS}
    assert {"estimate_shift", "worst_case_curve", "select", "load", "summarize", "picks"} <= names
    assert len(FUNCTIONS) > 80


@pytest.mark.parametrize("qualname,fn", FUNCTIONS, ids=[n for n, _ in FUNCTIONS])
def test_bad_input_names_the_parameter(qualname, fn):
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    required = [p for p in params if p.default is inspect.Parameter.empty]
    given = required or params[:1]
    if not given:
        pytest.skip(f"{qualname} takes no parameters: nothing to check")
    args = [_Bad() for p in given if p.kind is not p.KEYWORD_ONLY]
    kwargs = {p.name: _Bad() for p in given if p.kind is p.KEYWORD_ONLY}
    with pytest.raises((ValueError, TypeError)) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    named = [p.name for p in given if re.search(rf"(?<![\w]){re.escape(p.name)}(?![\w])", msg)]
    assert named, f"{qualname}: the error does not name any of {[p.name for p in given]}: {msg!r}"
    assert "<bad input>" in msg or "_Bad" in msg or "bad input" in msg, f"{qualname}: the error does not say what " \
                                                                        f"arrived: {msg!r}"


# ----------------------------------------------------------------------------- known bad inputs, one by one
def _toy(n=40, d=4, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, d, generator=g)
    y = torch.randint(0, c, (n,), generator=g)
    return z, y, nn.Linear(d, c)


@pytest.mark.parametrize("name", ["worst_case_curve", "worst_case_samples"])
def test_dro_accepts_numpy_float_and_column_labels(name):
    from dganalysis import dro

    z, y, head = _toy()
    fn = getattr(dro, name)
    rho = 0.1 if name == "worst_case_samples" else [0.0, 0.1]
    ref = fn(z, y, head, rho)
    for zz, yy in [(z.numpy(), y.numpy()), (z, y.float()), (z, y[:, None]), (z.numpy().tolist(), y.tolist())]:
        out = fn(zz, yy, head, rho)
        if name == "worst_case_curve":
            pd.testing.assert_frame_equal(out, ref)
        else:
            assert out.worst_case_loss == pytest.approx(ref.worst_case_loss)


def test_dro_scalar_rho_is_one_radius():
    from dganalysis.dro import worst_case_curve

    z, y, head = _toy()
    assert worst_case_curve(z, y, head, 0.1).rho.tolist() == [0.1]


@pytest.mark.parametrize("bad,match", [
    (dict(y=np.arange(40) + 0.5), r"'y'.*whole numbers"),
    (dict(y=np.zeros((40, 2))), r"'y'.*shape \[40\]"),
    (dict(y=np.arange(40) % 3 + 3), r"'y'.*class ids in \[0, 2\]"),
    (dict(y=np.zeros(40, dtype=bool)), r"'y'.*booleans"),
    (dict(z=np.zeros(40)), r"'z'.*\[n, \.\.\.\].*shape \(40,\)"),
    (dict(z=np.full((40, 4), np.nan)), r"'z'.*finite"),
    (dict(z=np.zeros((40, 5))), r"'z' and 'head' do not fit"),
    (dict(rhos=-0.1), r"'rhos'"),
    (dict(rhos=[[0.1]]), r"'rhos'"),
    (dict(scale="sdt"), r"'scale'.*did you mean 'std'"),
    (dict(loss="hinj"), r"'loss'.*did you mean 'hinge'"),
    (dict(head=3), r"'head'"),
])
def test_dro_bad_input_messages(bad, match):
    from dganalysis.dro import worst_case_curve

    z, y, head = _toy()
    kw = dict(z=z, y=y, head=head, rhos=[0.1], **{})
    kw.update(bad)
    with pytest.raises(ValueError, match=match):
        worst_case_curve(**kw)


def test_dro_scale_defaults_agree_across_siblings():
    from dganalysis import dro
    from dganalysis.dro import study

    defaults = {}
    for fn, name in [(dro.worst_case_curve, "scale"), (dro.worst_case_samples, "scale"),
                     (dro.input_worst_case_curve, "rep_scale"), (dro.compare_input_representation, "rep_scale"),
                     (dro.robust_surrogate, "scale"), (dro.worst_case_penalty, "scale"),
                     (study.curves_for_models, "scale")]:
        defaults[fn.__name__] = inspect.signature(fn).parameters[name].default
    assert set(defaults.values()) == {"std"}, defaults


def test_shift_accepts_tensors_and_refuses_fractional_labels():
    from dganalysis.shift import estimate_shift

    rng = np.random.default_rng(0)
    z_p, z_q = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)) + 1
    y = np.arange(60) % 2
    ref = estimate_shift(z_p, y, z_q, y, n_samples=300)
    t = estimate_shift(torch.as_tensor(z_p), torch.as_tensor(y), torch.as_tensor(z_q), y[:, None], n_samples=300)
    assert t.diversity == ref.diversity and t.correlation == ref.correlation
    with pytest.raises(ValueError, match=r"'y_q'.*whole numbers"):
        estimate_shift(z_p, y, z_q, y + 0.5, n_samples=300)
    with pytest.raises(ValueError, match=r"'z_q'.*same number of features"):
        estimate_shift(z_p, y, z_q[:, :1], y, n_samples=300)


def test_selection_did_you_mean():
    from dganalysis.records import select

    df = pd.DataFrame({c: [] for c in ["dataset", "algorithm", "train_domains", "test_domains", "val_domains",
                                       "trial_seed", "job_id", "hparams_seed", "step", "domain", "split", "role",
                                       "acc"]})
    with pytest.raises(ValueError, match="did you mean 'oracle'"):
        select(df, "oracel")
    with pytest.raises(ValueError, match=r"lacks columns \['acc'\].*did you mean 'accuracy'"):
        select(df.rename(columns={"acc": "accuracy"}), "oracle")


def test_results_load_needs_an_existing_folder(tmp_path):
    from dganalysis.records import load

    with pytest.raises(ValueError, match=r"'path'.*does not exist"):
        load(tmp_path / "nope", progress=False)
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(ValueError, match=r"'path'.*is a file, not a folder"):
        load([tmp_path, tmp_path / "f.txt"], progress=False)
