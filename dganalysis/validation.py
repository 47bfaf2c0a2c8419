"""Checks of user input before any work starts: one exception type, messages that say where and what.

Every message reads ``<where>: expected <what>, got <value>``, where ``where`` names the file and key (or the
parameter), so a user can fix it without a traceback. :class:`ConfigError` is a ``ValueError``, so callers that
catch ``ValueError`` keep working.

This module is a leaf of generic checks (kinds, intervals, choices, arrays, frames, paths): it imports nothing from
``dganalysis``. Checks that know a domain live with their owner and use these: dataset names and builder arguments
in :mod:`dganalysis.data.checks`, the featurizer names in :mod:`dganalysis.nets.registry`, the hyperparameters'
constraints in :mod:`dganalysis.training.hparams`, a notebook's parameters in :mod:`dganalysis.studies.param_checks`.

Types are strict, as in scikit-learn's parameter constraints: ``True`` is not an integer, ``40.9`` is not a
number of steps, ``"no"`` is not a boolean, and a string is never a number (YAML 1.1 reads ``1.0e6`` — no sign
after the ``e`` — as the *string* "1.0e6"; write ``1.0e+6``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """Bad user input (a config file, a parameter, a command-line flag), found before any work starts."""


class UnknownKeyError(ConfigError, KeyError):
    """An unknown name in the user's input (a :class:`ConfigError`, and a ``KeyError`` for callers that catch that);
    its message reads as given, unquoted."""

    __str__ = ValueError.__str__


class MissingInputError(ConfigError, FileNotFoundError):
    """A file or folder the user named is not there (a :class:`ConfigError`, and a ``FileNotFoundError`` for callers
    that catch that)."""


_KINDS = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
          "list": "a list", "dict": "a mapping", "any": "a value"}


def got(value: Any) -> str:
    """What arrived, for a config value: ``the string '1.0e6'`` (with YAML's number hint) or ``40.9 (float)``."""
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
                raise ConfigError(f"{where}: expected {self.describe()}, got {got(value)}")
            return value
        if not is_kind(value, self.kind):
            raise ConfigError(f"{where}: expected {self.describe()}, got {got(value)}")
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


class LazyCheck(Check):
    """A check built by ``factory()`` when first asked (to check or describe) — for rules whose choices live in a
    module that is expensive to import or registers names later (e.g. a registry of networks)."""

    def __init__(self, factory: Callable[[], Check]):
        super().__init__()
        object.__setattr__(self, "factory", factory)

    def __call__(self, value: Any, where: str) -> Any:
        return self.factory()(value, where)

    def describe(self) -> str:
        """The built check's expectation in words."""
        return self.factory().describe()


# --------------------------------------------------------------------------- arrays, tensors, frames, paths
# The scikit-learn habit (``check_array``, ``column_or_1d``, ``check_scalar``, ``check_random_state``): every public
# function of ``dganalysis.shift``, ``dro``, ``records``, ``protocols`` and the planners checks its
# arguments with these helpers before any work, and a bad argument gives a :class:`ConfigError` (a ``ValueError``)
# that names the function and the argument, what arrived (type, shape, dtype) and what was expected.
# Rules (docs/validation.md):
#
# - features: a numpy array, a torch tensor, or anything ``np.asarray`` turns into numbers (a list of lists); a
#   float, integer or boolean dtype; ``ndim`` dimensions exactly (or at least ``min_ndim``); finite values; at least
#   ``min_samples`` rows. Converted to float64 numpy (``to="numpy"``) or to a float32/64 torch tensor on its device
#   (``to="torch"``; a float64 tensor stays float64, a numpy array becomes float32 as torch models expect).
# - labels: integer class ids, one per sample: shape ``[n]`` or ``[n, 1]`` (squeezed, as scikit-learn's
#   ``column_or_1d`` does); integer dtype, or floats that are whole numbers (``1.0`` → 1, ``0.5`` is refused);
#   booleans and strings are refused; ``≥ 0``. Converted to int64.
# - scalars: Python or numpy numbers (``True`` is not a number), finite, in the stated interval.
# - radii (``rhos``): one number or a 1-D sequence of finite numbers ≥ 0.
# - frames: a pandas DataFrame with the required columns ("did you mean ...?" for a near miss).
# - choices: a string among the known names ("did you mean ...?").

_SHOWN = 6


def param_where(func: str | None, name: str) -> str:
    """The start of a parameter's message: ``"<func>: parameter '<name>'"`` (or ``"parameter '<name>'"``)."""
    return f"{func}: parameter {name!r}" if func else f"parameter {name!r}"


def describe(value: Any) -> str:
    """What arrived, in words: the type, and for arrays/tensors the shape and dtype, e.g.
    ``numpy.ndarray of shape (5, 1) and dtype float64``."""
    mod = type(value).__module__.split(".")[0]
    tname = f"{mod}.{type(value).__qualname__}" if mod not in ("builtins",) else type(value).__name__
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not callable(shape):
        return f"{tname} of shape {tuple(shape)} and dtype {dtype}"
    if isinstance(value, (str, int, float, bool)) or value is None:
        return f"{value!r} ({tname})"
    if isinstance(value, (list, tuple)):
        head = ", ".join(repr(v) for v in list(value)[:_SHOWN])
        return f"{tname} of length {len(value)} [{head}{', ...' if len(value) > _SHOWN else ''}]"
    text = repr(value)
    return f"{tname} {text[:60] + '...' if len(text) > 60 else text}"


def _to_numpy(value: Any) -> Any:
    """A numpy view of ``value`` (a torch tensor is detached and moved to the CPU); None when it is not array-like."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value
    if _is_tensor(value):
        return value.detach().cpu().numpy()
    if isinstance(value, (str, bytes, Mapping)) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    return None if arr.dtype == object else arr


def _is_tensor(value: Any) -> bool:
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _tensor_kind(t: Any) -> str:
    """numpy's dtype kind letter of a torch tensor's dtype (f, i, u, b or c)."""
    if t.dtype.is_floating_point:
        return "f"
    if t.dtype.is_complex:
        return "c"
    return "b" if str(t.dtype) == "torch.bool" else "i"


def check_features(value: Any, name: str, *, func: str | None = None, ndim: int | None = 2, min_ndim: int | None = None,
                   min_samples: int = 1, n: int | None = None, d: int | None = None, to: str | None = "numpy",
                   finite: bool = True) -> Any:
    """Features (or images) ``[n, ...]`` as float numbers: a numpy array, a torch tensor, or nested lists.

    ``ndim``: the exact number of dimensions (``None``: any ≥ ``min_ndim``); ``n``: the required number of rows;
    ``d``: the required size of the last dimension; ``finite``: refuse NaN and inf. ``to=None`` only checks and
    returns ``value`` unchanged (large image arrays: no copy); ``to="numpy"`` returns a
    float64 array; ``to="torch"`` a float tensor: a float tensor is returned as it arrived (same object, device
    and autograd graph), an integer/bool tensor as float32, anything else as a float32 CPU tensor.
    Raises :class:`ConfigError`.
    """
    import numpy as np

    where = param_where(func, name)
    shape_txt = {1: "[n]", 2: "[n, d]", 4: "[n, channels, height, width]"}.get(ndim or 0, "[n, ...]")
    if ndim is None:
        shape_txt = f"[n, ...] with at least {min_ndim or 1} dimensions"
    expect = f"a float array or tensor of shape {shape_txt}"
    tensor = _is_tensor(value)
    if tensor:
        kind = _tensor_kind(value)
        shape = tuple(value.shape)
    else:
        arr = _to_numpy(value)
        if arr is None:
            raise ConfigError(f"{where}: expected {expect}, got {describe(value)}")
        kind, shape = arr.dtype.kind, arr.shape
    if kind not in "fiub":
        raise ConfigError(f"{where}: expected {expect} of numbers, got {describe(value)}")
    nd = len(shape)
    if (ndim is not None and nd != ndim) or (min_ndim is not None and nd < min_ndim) or nd == 0:
        hint = " (one sample with d features: reshape to [1, d]; d = 1: reshape to [n, 1])" if nd == 1 else ""
        raise ConfigError(f"{where}: expected {expect}, got {describe(value)}{hint}")
    if shape[0] < min_samples:
        raise ConfigError(f"{where}: expected at least {min_samples} samples (rows), got {describe(value)}")
    if n is not None and shape[0] != n:
        raise ConfigError(f"{where}: expected {n} rows (one per sample, as the other arguments), got {describe(value)}")
    if d is not None and shape[-1] != d:
        raise ConfigError(f"{where}: expected {d} features (last dimension), got {describe(value)}")
    if finite and kind == "f":
        ok = bool(value.isfinite().all()) if tensor else bool(np.isfinite(arr).all())
        if not ok:
            raise ConfigError(f"{where}: expected finite values, got NaN or inf in {describe(value)}")
    if to is None:
        return value
    if to == "numpy":
        return np.asarray(value.detach().cpu().numpy() if tensor else arr, dtype=np.float64)
    import torch

    if tensor:
        return value if kind == "f" else value.float()
    return torch.as_tensor(np.asarray(arr, dtype=np.float32))


def check_labels(value: Any, n: int | None, name: str, *, func: str | None = None, to: str = "numpy",
                 n_classes: int | None = None, device: Any = None, rows_of: str = "the features",
                 values: bool = True) -> Any:
    """Integer class labels, one per sample: shape ``[n]`` (``[n, 1]`` is squeezed, as scikit-learn's
    ``column_or_1d`` does), values ``0 ≤ y`` (``< n_classes`` when given). Integer dtype, or floats holding whole
    numbers (``1.0`` → 1); booleans, strings and fractions (``0.5``) are refused with a message.
    Returns int64 numpy (``to="numpy"``) or an int64 torch tensor (``to="torch"``, on ``device`` when given);
    ``rows_of`` names the features the labels go with (in the message); ``values=False`` checks only type and
    shape (no pass over the data: for tensors in a training loop, where the range check would sync the device)."""
    import numpy as np

    where = param_where(func, name)
    n_txt = "n" if n is None else str(n)
    expect = f"integer class labels of shape [{n_txt}]"
    tensor = _is_tensor(value)
    if tensor:
        src = value.detach()
        arr = None
        kind = _tensor_kind(src)
    else:
        arr = _to_numpy(value)
        kind = None if arr is None else arr.dtype.kind
    if kind is None or kind not in "iuf":
        extra = " (booleans are not class ids: convert with .astype(int))" if kind == "b" else ""
        raise ConfigError(f"{where}: expected {expect}, got {describe(value)}{extra}")
    shape = tuple(src.shape) if tensor else arr.shape
    if len(shape) == 2 and shape[1] == 1:
        shape = shape[:1]
        if tensor:
            src = src[:, 0]
        else:
            arr = arr[:, 0]
    if len(shape) != 1 or (n is not None and shape[0] != n):
        raise ConfigError(f"{where}: expected {expect} (one per row of {rows_of}), got {describe(value)}")
    if tensor and not values:
        out = src.long() if kind == "f" else src
        return out.cpu().numpy() if to == "numpy" else (out.to(device) if device is not None else out)
    if tensor:
        if kind == "f" and not bool((src == src.round()).all()):
            bad = src[src != src.round()][:3].tolist()
            raise ConfigError(f"{where}: expected {expect}; float labels must be whole numbers, got {describe(value)} "
                              f"with values such as {bad}")
        src = src.long()
        lo, hi = (int(src.min()), int(src.max())) if len(src) else (0, 0)
    else:
        if kind == "f" and (not np.isfinite(arr).all() or not np.array_equal(arr, np.round(arr))):
            bad = arr[~np.isfinite(arr) | (arr != np.round(arr))][:3].tolist()
            raise ConfigError(f"{where}: expected {expect}; float labels must be whole numbers, got {describe(value)} "
                              f"with values such as {bad}")
        arr = arr.astype(np.int64)
        lo, hi = (int(arr.min()), int(arr.max())) if len(arr) else (0, 0)
    if lo < 0:
        raise ConfigError(f"{where}: expected class ids ≥ 0, got {describe(value)} with minimum {lo}")
    if n_classes is not None and hi >= n_classes:
        raise ConfigError(f"{where}: expected class ids in [0, {n_classes - 1}] (the model has {n_classes} outputs), "
                          f"got a maximum of {hi}")
    if to == "numpy":
        return src.cpu().numpy() if tensor else arr
    import torch

    out = src if tensor else torch.as_tensor(arr)
    return out.to(device) if device is not None else out


def check_scalar(value: Any, name: str, *, func: str | None = None, kind: str = "float", low: float | None = None,
                 high: float | None = None, low_open: bool = False, high_open: bool = False,
                 nullable: bool = False) -> Any:
    """A number of ``kind`` (``"int"`` or ``"float"``) in ``[low, high]`` (ends open when asked), as scikit-learn's
    ``check_scalar``; a 0-d array or one-element tensor counts as a number. Returns it as a Python number."""
    if value is None and nullable:
        return None
    if _is_tensor(value) and value.numel() == 1:
        value = value.item()
    elif hasattr(value, "ndim") and getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        value = value.item()
    Check(kind, low=low, high=high, low_open=low_open, high_open=high_open, nullable=nullable)(value, param_where(func, name))
    return int(value) if kind == "int" else float(value)


def check_interval(value: Any, name: str, *, func: str | None = None, low: float | None = None,
                   high: float | None = None) -> tuple[float, float]:
    """A pair ``(a, b)`` of finite numbers with ``low ≤ a ≤ b ≤ high``."""
    where = param_where(func, name)
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(is_kind(v, "float") for v in value):
        raise ConfigError(f"{where}: expected a pair (low, high) of numbers, got {describe(value)}")
    a, b = float(value[0]), float(value[1])
    if a > b or (low is not None and a < low) or (high is not None and b > high):
        raise ConfigError(f"{where}: expected low ≤ high within [{low if low is not None else '-inf'}, "
                          f"{high if high is not None else 'inf'}], got {value!r}")
    return a, b


def check_rhos(value: Any, name: str = "rhos", *, func: str | None = None) -> Any:
    """Radii: one number or a 1-D sequence (list, array, tensor) of finite numbers ≥ 0; returned as a float64 array."""
    import numpy as np

    where = param_where(func, name)
    expect = "radii ρ ≥ 0: a number or a 1-D sequence of finite numbers"
    if is_kind(value, "float") or (_is_tensor(value) and value.dim() == 0):
        arr = np.asarray([float(value)])
    else:
        arr = _to_numpy(value)
        if arr is None or arr.dtype.kind not in "fiu" or arr.ndim != 1:
            raise ConfigError(f"{where}: expected {expect}, got {describe(value)}")
        arr = arr.astype(np.float64)
    if len(arr) == 0:
        raise ConfigError(f"{where}: expected {expect}, got an empty sequence")
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise ConfigError(f"{where}: expected {expect}, got {arr.tolist()[:_SHOWN]}")
    return arr


def did_you_mean(value: Any, choices: Any) -> str:
    """`` (did you mean 'X'?)`` when ``value`` is close to one of ``choices`` (difflib, case-insensitive), else ''."""
    import difflib

    names = [str(c) for c in choices]
    lower = {n.lower(): n for n in names}
    v = str(value).lower()
    if v in lower:  # a case slip: 'coral' for 'CORAL'
        return f" (did you mean {lower[v]!r}?)"
    close = difflib.get_close_matches(v, list(lower), n=1, cutoff=0.6)
    if not close and len(v) >= 2:  # an abbreviation or an extension: 'acc' for 'accuracy', 'rhos' for 'rho'
        close = [n for n in lower if n.startswith(v) or (v.startswith(n) and len(n) >= 2)][:1]
    return f" (did you mean {lower[close[0]]!r}?)" if close else ""


def check_choice(value: Any, choices: Any, name: str, *, func: str | None = None) -> Any:
    """``value`` if it is one of ``choices``, else a :class:`ConfigError` listing them, with "did you mean"."""
    choices = list(choices)
    try:
        ok = value in choices and not isinstance(value, bool)
    except TypeError:
        ok = False
    if not ok:
        expected = ", ".join(repr(c) for c in choices)
        if isinstance(value, str):
            label = name.split("[")[0].split(" ")[0]
            raise ConfigError(f"{param_where(func, name)}: unknown {label} {value!r}{did_you_mean(value, choices)}; "
                              f"expected one of {expected}")
        raise ConfigError(f"{param_where(func, name)}: expected one of {expected}, got {describe(value)}")
    return value


def check_frame(value: Any, required: Any, name: str, *, func: str | None = None, what: str = "") -> Any:
    """A pandas DataFrame holding the ``required`` columns; "did you mean" for a near miss.
    ``what`` says where such a frame comes from (e.g. "the tidy frame of dganalysis.records.load")."""
    import pandas as pd

    where = param_where(func, name)
    src = f" ({what})" if what else ""
    if not isinstance(value, pd.DataFrame):
        raise ConfigError(f"{where}: expected a pandas DataFrame{src}, got {describe(value)}")
    missing = [c for c in required if c not in value.columns]
    if missing:
        have = [str(k) for k in value.columns]
        hints = "".join(f"; for {c!r}{did_you_mean(c, have)}" for c in missing if did_you_mean(c, have))
        raise ConfigError(f"{where}: lacks columns {missing}{src}; it has {have[:20]}{hints}")
    return value


def check_series(value: Any, name: str, *, func: str | None = None) -> Any:
    """A pandas Series (or something ``pd.Series`` takes: a 1-D list, array)."""
    import pandas as pd

    if isinstance(value, pd.Series):
        return value
    arr = _to_numpy(value)
    if arr is None or arr.ndim != 1:
        raise ConfigError(f"{param_where(func, name)}: expected a pandas Series or 1-D sequence, got {describe(value)}")
    return pd.Series(arr)


def check_path(value: Any, name: str, *, func: str | None = None, kind: str = "dir", must_exist: bool = True) -> Any:
    """A path (str or ``os.PathLike``) that exists and is a directory (``kind="dir"``) or a file (``"file"``);
    returned as a ``Path``."""
    import os
    from pathlib import Path

    where = param_where(func, name)
    if not isinstance(value, (str, os.PathLike)) or (isinstance(value, str) and not value):
        raise ConfigError(f"{where}: expected a path (str or pathlib.Path), got {describe(value)}")
    path = Path(value)
    if must_exist and not path.exists():
        raise ConfigError(f"{where}: {str(path)!r} does not exist (expected a {'folder' if kind == 'dir' else 'file'})")
    if must_exist and kind == "dir" and not path.is_dir():
        raise ConfigError(f"{where}: {str(path)!r} is a file; expected a folder")
    if must_exist and kind == "file" and not path.is_file():
        raise ConfigError(f"{where}: {str(path)!r} is a folder; expected a file")
    return path


def check_callable(value: Any, name: str, *, func: str | None = None, what: str = "a callable") -> Any:
    """``value`` if it is callable (a function, an ``nn.Module``), else a :class:`ConfigError`."""
    if not callable(value):
        raise ConfigError(f"{param_where(func, name)}: expected {what}, got {describe(value)}")
    return value


def check_mapping(value: Any, name: str, *, func: str | None = None, what: str = "a mapping") -> Any:
    """``value`` if it is a mapping (dict), else a :class:`ConfigError`."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{param_where(func, name)}: expected {what}, got {describe(value)}")
    return value


def check_strings(value: Any, name: str, *, func: str | None = None, min_len: int = 0, nullable: bool = False) -> Any:
    """A list/tuple of strings (a single string is refused: it is a sequence of characters); returned as a list."""
    if value is None and nullable:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{param_where(func, name)}: expected a list of strings, got {describe(value)}")
    if len(value) < min_len:
        raise ConfigError(f"{param_where(func, name)}: expected at least {min_len} name(s), got {describe(value)}")
    return list(value)


def check_random_state(seed: Any, name: str = "seed", *, func: str | None = None) -> Any:
    """A ``numpy.random.RandomState`` from None (a fresh one), an integer ≥ 0, or a RandomState (returned as is),
    as scikit-learn's ``check_random_state``; a ``numpy.random.Generator`` is refused here (scipy's KDE draws
    follow the RandomState stream, see :func:`dganalysis.shift.kde.kde_resample`)."""
    import numpy as np

    if seed is None:
        return np.random.RandomState()
    if isinstance(seed, np.random.RandomState):
        return seed
    if is_kind(seed, "int") and int(seed) >= 0:
        return np.random.RandomState(int(seed))
    raise ConfigError(f"{param_where(func, name)}: expected None, an integer ≥ 0 or a numpy RandomState, got {describe(seed)}")


def check_generator(seed: Any, name: str = "seed", *, func: str | None = None) -> Any:
    """A ``numpy.random.Generator`` from None, an integer ≥ 0, or a Generator (returned as is)."""
    import numpy as np

    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng()
    if is_kind(seed, "int") and int(seed) >= 0:
        return np.random.default_rng(int(seed))
    raise ConfigError(f"{param_where(func, name)}: expected None, an integer ≥ 0 or a numpy Generator, got {describe(seed)}")


def check_domains(value: Any, known: Any, name: str, *, func: str | None = None) -> list[str]:
    """One domain name or a list of them, each among ``known`` ("did you mean"); returned as a list."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not names or not all(isinstance(v, str) for v in names):
        raise ConfigError(f"{param_where(func, name)}: expected a domain name or a non-empty list of them, got "
                          f"{describe(value)}")
    for v in names:
        check_choice(v, list(known), name, func=func)
    return list(names)


# --------------------------------------------------------------------------- planner arguments
def check_params(value: Any, cls: type, func: str, name: str = "p") -> Any:
    """A notebook's parameter object of class ``cls`` (:mod:`dganalysis.studies.params`, which checks the values
    themselves), else a :class:`ConfigError` saying how to build one."""
    if not isinstance(value, cls):
        raise ConfigError(f"{param_where(func, name)}: expected a {cls.__name__} (build one with "
                          f"{cls.__name__}.from_mapping(params)), got {describe(value)}")
    return value


def check_list(value: Any, name: str, *, func: str | None = None, min_len: int = 0) -> list:
    """A list or tuple (a single string is refused), with at least ``min_len`` items; returned as a list."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or len(value) < min_len:
        raise ConfigError(f"{param_where(func, name)}: expected a list{f' of at least {min_len} item(s)' if min_len else ''}"
                          f", got {describe(value)}")
    return list(value)


def check_str(value: Any, name: str, *, func: str | None = None, nullable: bool = False) -> Any:
    """``value`` if it is a string (or None when ``nullable``), else a :class:`ConfigError`."""
    return Check("str", nullable=nullable)(value, param_where(func, name))


def check_number(value: Any, name: str, *, func: str | None = None, nullable: bool = False) -> Any:
    """A real number where NaN and inf are meaningful (an undefined effect, a missing p-value): Python or numpy,
    not a bool, not a string."""
    import numpy as np

    if value is None and nullable:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{param_where(func, name)}: expected a number{' or None' if nullable else ''}, got "
                          f"{describe(value)}")
    return value


def check_pvalues(value: Any, name: str = "p", *, func: str | None = None) -> Any:
    """p-values: a number or a 1-D sequence of numbers in [0, 1] (NaN allowed: a test that could not be run)."""
    import numpy as np

    arr = _to_numpy(value) if not is_kind(value, "float") else np.asarray([float(value)])
    if arr is None or arr.dtype.kind not in "fiu" or arr.ndim > 1:
        raise ConfigError(f"{param_where(func, name)}: expected p-values (numbers in [0, 1]), got {describe(value)}")
    a = arr.astype(float)
    bad = a[~np.isnan(a) & ((a < 0) | (a > 1))]
    if len(bad):
        raise ConfigError(f"{param_where(func, name)}: expected p-values in [0, 1], got {bad[:3].tolist()}")
    return value


def check_shape(value: Any, name: str, *, func: str | None = None) -> tuple[int, ...]:
    """An input shape: a sequence of positive integers, e.g. ``(3, 28, 28)``."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value or not all(
            is_kind(v, "int") and int(v) >= 1 for v in value):
        raise ConfigError(f"{param_where(func, name)}: expected a shape (a list of positive integers such as [3, 28, 28]), "
                          f"got {describe(value)}")
    return tuple(int(v) for v in value)


def check_choices_list(value: Any, name: str, *, func: str | None = None) -> list:
    """Training-domain choices: a list whose items are a domain name or a list of names."""
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(
            isinstance(v, str) or (isinstance(v, (list, tuple)) and all(isinstance(w, str) for w in v)) for v in value):
        raise ConfigError(f"{param_where(func, name)}: expected a list of domain names or of lists of names, got "
                          f"{describe(value)}")
    return list(value)


def check_numeric(value: Any, name: str, *, func: str | None = None) -> Any:
    """An array (any shape, a tensor or nested lists) of real numbers; returned as it arrived."""
    arr = value if _is_tensor(value) else _to_numpy(value)
    kind = None if arr is None else (_tensor_kind(arr) if _is_tensor(arr) else arr.dtype.kind)
    if kind is None or kind not in "fiu":
        raise ConfigError(f"{param_where(func, name)}: expected an array of numbers, got {describe(value)}")
    return value
