"""Checks of user input before any work starts: one exception type, messages that say where and what.

Every message reads ``<where>: expected <what>, got <value>``, where ``where`` names the file and key (or the
parameter), so a user can fix it without a traceback. :class:`ConfigError` is a ``ValueError``, so callers that
catch ``ValueError`` keep working.

Types are strict, as in scikit-learn's parameter constraints: ``True`` is not an integer, ``40.9`` is not a
number of steps, ``"no"`` is not a boolean, and a string is never a number (YAML 1.1 reads ``1.0e6`` — no sign
after the ``e`` — as the *string* "1.0e6"; write ``1.0e+6``).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """Bad user input (a config file, a parameter, a command-line flag), found before any work starts."""


_KINDS = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
          "list": "a list", "dict": "a mapping", "any": "a value"}


def _got(value: Any) -> str:
    if isinstance(value, str):
        hint = ""
        try:
            float(value)
            hint = " (YAML reads numbers like 1.0e6 as strings: write 1.0e+6)" if "e" in value.lower() else ""
        except ValueError:
            pass
        return f"the string {value!r}{hint}"
    return f"{value!r} ({type(value).__name__})"


def is_kind(value: Any, kind: str) -> bool:
    """Whether ``value`` is of ``kind`` (``int``, ``float``, ``bool``, ``str``, ``list``, ``dict``, ``any``).

    ``bool`` is not an ``int``; an ``int`` is a ``float``; a non-finite float is not a number here.
    """
    if kind == "any":
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool) or _is_numpy_int(value)
    if kind == "float":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)) or _is_numpy_int(value) or _is_numpy_float(value)
        return ok and math.isfinite(float(value))
    if kind == "str":
        return isinstance(value, str)
    if kind == "list":
        return isinstance(value, (list, tuple))
    if kind == "dict":
        return isinstance(value, Mapping)
    raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(_KINDS)}")


def _is_numpy_int(value: Any) -> bool:
    import numpy as np

    return isinstance(value, np.integer)


def _is_numpy_float(value: Any) -> bool:
    import numpy as np

    return isinstance(value, np.floating)


@dataclass(frozen=True)
class Check:
    """What a value must be: a kind, an optional interval ``[low, high]`` (ends open when asked), or choices.

    Called as ``check(value, where)``: returns ``value`` or raises :class:`ConfigError` naming ``where``.
    """

    kind: str = "any"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[Any, ...] | None = None
    nullable: bool = False

    def describe(self) -> str:
        """The expectation in words, e.g. ``an integer in [1, inf)``."""
        if self.choices is not None:
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        else:
            text = _KINDS[self.kind]
            if self.low is not None or self.high is not None:
                lo = "(" if self.low_open or self.low is None else "["
                hi = ")" if self.high_open or self.high is None else "]"
                text += f" in {lo}{'-inf' if self.low is None else f'{self.low:g}'}, " \
                        f"{'inf' if self.high is None else f'{self.high:g}'}{hi}"
        return text + (" or null" if self.nullable else "")

    def __call__(self, value: Any, where: str) -> Any:
        if value is None and self.nullable:
            return value
        if self.choices is not None:
            if isinstance(value, bool) or value not in self.choices:
                raise ConfigError(f"{where}: expected {self.describe()}, got {_got(value)}")
            return value
        if not is_kind(value, self.kind):
            raise ConfigError(f"{where}: expected {self.describe()}, got {_got(value)}")
        if self.low is not None or self.high is not None:
            v = float(value)
            bad_low = self.low is not None and (v <= self.low if self.low_open else v < self.low)
            bad_high = self.high is not None and (v >= self.high if self.high_open else v > self.high)
            if bad_low or bad_high:
                raise ConfigError(f"{where}: expected {self.describe()}, got {value!r}")
        return value


def like(default: Any) -> Check:
    """The check a value must pass to replace ``default``: the same kind (an int default also takes no float)."""
    if default is None:
        return Check("any")
    for kind in ("bool", "int", "float", "str", "list", "dict"):
        if is_kind(default, kind):
            return Check(kind)
    return Check("any")


def positive_int(where: str, value: Any) -> int:
    """``value`` if it is an integer ≥ 1, else a :class:`ConfigError`."""
    return int(Check("int", low=1)(value, where))


# --------------------------------------------------------------------------- hyperparameters
#: constraints of the hyperparameters every algorithm has (:data:`dganalysis.hparams.BASE_HPARAMS`)
class FeaturizerCheck(Check):
    """One of the registered featurizer names (:func:`dganalysis.nets.registry.featurizer_names`, read when
    checking, so a featurizer registered later is accepted)."""

    def __call__(self, value: Any, where: str) -> Any:
        from dganalysis.nets.registry import featurizer_names

        return Check(choices=tuple(featurizer_names()))(value, where)

    def describe(self) -> str:
        from dganalysis.nets.registry import featurizer_names

        return Check(choices=tuple(featurizer_names())).describe()


BASE_CHECKS: dict[str, Check] = {
    "lr": Check("float", low=0.0, high=10.0, low_open=True),
    "batch_size": Check("int", low=1, high=1 << 16),
    "weight_decay": Check("float", low=0.0, high=1.0),
    "optimizer": Check(choices=("adam", "adamw", "sgd")),
    "schedule": Check(choices=("constant", "step", "cosine")),
    "featurizer": FeaturizerCheck(),
    "conv1_3x3": Check("bool"),
    "nonlinear_classifier": Check("bool"),
    "resnet_dropout": Check("float", low=0.0, high=1.0, high_open=True),
    "augment": Check("bool"),
    "pretrained": Check("str", nullable=True),
    "pretrained_layout": Check("str"),
    "linear_probe": Check("bool"),
    "freeze_stages": Check("int", low=0),
    "steps": Check("int", low=1),
}


def hparam_check(name: str, spec: Any) -> Check:
    """The check of hyperparameter ``name``: the HParam's own ``check``, else :data:`BASE_CHECKS`, else the
    default's kind (so ``mmd_gamma: "1.0e6"`` or ``irm_penalty_anneal_iters: 40.9`` fail)."""
    own = getattr(spec, "check", None)
    if own is not None:
        return own
    if name in BASE_CHECKS:
        return BASE_CHECKS[name]
    return like(getattr(spec, "default", None))


# --------------------------------------------------------------------------- dataset arguments
def _kwarg_check(name: str) -> Check:
    """A rule for a builder argument from its name: ``*_size`` and ``n_*`` positive integers, ``seed`` ≥ 0,
    ``*fraction`` in [0, 1] (other arguments are the builder's to check)."""
    low = name.lower()
    if low.endswith("_size") or low.startswith(("n_", "num_")):
        return Check("int", low=1)
    if low == "seed":
        return Check("int", low=0)
    if low.endswith("fraction"):
        return Check("float", low=0.0, high=1.0)
    return Check("any")


def _builder_parameters(dataset: str) -> list[str] | None:
    """Argument names the dataset's builder takes (following the built-in ``**kw`` wrappers to the function they
    call); None when it takes any keyword."""
    import inspect

    from dganalysis.data.registry import DATASETS

    fn = DATASETS.get(dataset)
    if dataset in ("RotatedDigits", "RotatedMNIST", "ColoredDigits", "ColoredMNIST", "PaHCC"):
        from dganalysis.data import digits, pahcc

        fn = {"RotatedDigits": digits.rotated_digits, "RotatedMNIST": digits.rotated_digits,
              "ColoredDigits": digits.colored_digits, "ColoredMNIST": digits.colored_digits,
              "PaHCC": pahcc.build_pahcc}[dataset]
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.name != "data_dir"]


def check_dataset_kwargs(dataset: str, kwargs: Mapping[str, Any], where: str) -> None:
    """Check ``kwargs`` of dataset ``dataset`` without building it: a known dataset, a mapping, argument names the
    builder takes, and values by :func:`_kwarg_check` (the builder checks the rest when it is built)."""
    from dganalysis.data.registry import available

    if not isinstance(dataset, str):
        raise ConfigError(f"dataset: expected a dataset name, got {_got(dataset)}")
    if dataset not in available():
        from dganalysis.registry import unknown_name

        raise ConfigError(f"dataset: {unknown_name('dataset', dataset, available())}")
    if not isinstance(kwargs, Mapping):
        raise ConfigError(f"{where}: expected a mapping of builder arguments, got {_got(kwargs)}")
    known = _builder_parameters(dataset)
    unknown = sorted(str(k) for k in kwargs if known is not None and k not in known)
    if unknown:
        raise ConfigError(f"{where}: {dataset} takes no argument(s) {unknown}; it takes {sorted(known or [])}")
    for key, value in kwargs.items():
        _kwarg_check(str(key))(value, f"{where}.{key}")


def load_checked_dataset(dataset: str, kwargs: Mapping[str, Any], data_dir: Any, where: str):
    """Build the dataset once to check its name and arguments; builder errors become a :class:`ConfigError`."""
    from dganalysis.data import load_dataset

    check_dataset_kwargs(dataset, kwargs, where)
    try:
        return load_dataset(dataset, data_dir=data_dir, **dict(kwargs))
    except TypeError as e:
        raise ConfigError(f"{where}: the {dataset} builder does not take these arguments ({e})") from e
    except (ValueError, KeyError) as e:
        raise ConfigError(f"{where} of {dataset}: {e}") from e


# --------------------------------------------------------------------------- notebook parameters
def check_notebook_params(params: Mapping[str, Any], inspected: Mapping[str, Mapping[str, Any]], where: str) -> None:
    """Each value of a params YAML must be of the kind of the notebook's default (papermill's
    ``inspect_notebook`` output); parameters whose default is not a literal, or ``None``, take anything."""
    for name, value in params.items():
        info = inspected.get(name)
        if info is None:
            continue
        try:
            default = ast.literal_eval(str(info.get("default")))
        except (ValueError, SyntaxError):
            continue
        like(default)(value, f"{where}: parameter {name!r} (the notebook's default is {info.get('default')})")
