"""The standard error of a mean and the t interval, written once in ``dganalysis.stats``: the functions give the
numbers of the inline expressions they replaced, bit for bit, and no such expression is written again outside
``dganalysis/stats/``."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dganalysis.stats.intervals import mean_t_interval, t_half_width, t_interval
from dganalysis.stats.moments import population_standard_error, standard_error, standard_error_from_sd
from dganalysis.validation import ConfigError

PACKAGE = Path(__file__).resolve().parents[2] / "dganalysis"


def _samples():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 5, 10):
        for dtype in (np.float64, np.float32):
            yield rng.normal(70, 3, n).astype(dtype)
    yield np.array([0.5, np.nan, 0.7])
    yield np.array([72.0, 72.0, 72.0])
    yield np.array([1, 2, 4])  # integers
    yield [0.1, 0.2, 0.35]  # a list (shift/study.py's values)


def _bits(x) -> bytes:
    return np.asarray(x, dtype=np.float64).tobytes()


@pytest.mark.parametrize("v", list(_samples()), ids=lambda v: f"n{len(v)}")
def test_standard_error_is_the_inline_expression(v):
    a = np.asarray(v)
    n = len(a)
    for ddof in (0, 1):
        with np.errstate(all="ignore"):
            inline = float(np.std(a, ddof=ddof) / np.sqrt(n)) if n > ddof else float("nan")
        assert _bits(standard_error(v, ddof)) == _bits(inline) and type(standard_error(v, ddof)) is float


@pytest.mark.parametrize("v", [v for v in _samples() if len(v)], ids=lambda v: f"n{len(v)}")
def test_population_standard_error_is_domainbeds_expression(v):
    """DomainBed's ``collect_results.format_mean``: ``np.std(np.asarray(list(data)) / np.sqrt(len(data)))``."""
    with np.errstate(all="ignore"):
        inline = np.std(np.asarray(list(v)) / np.sqrt(len(v)))
        assert _bits(population_standard_error(v)) == _bits(inline)
    assert type(population_standard_error(v)) is float


def test_standard_error_from_sd_is_the_inline_expressions():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"g": rng.integers(0, 6, 40), "acc": rng.uniform(0.3, 0.9, 40)})
    frame.loc[frame.index[::7], "acc"] = np.nan
    frame = pd.concat([frame, pd.DataFrame({"g": [9, 10, 10], "acc": [0.5, np.nan, np.nan]})])  # n = 1; n = 0
    g = frame.groupby("g")["acc"]
    for ddof in (0, 1):
        sd, n = g.std(ddof=ddof), g.count()
        listed = [s / math.sqrt(k) if k > ddof else np.nan for s, k in zip(sd, n)]  # records.selection, general path
        masked = np.full(len(sd), np.nan)  # records.selection, array path
        ok = n.to_numpy() > ddof
        masked[ok] = sd.to_numpy()[ok] / np.sqrt(n.to_numpy()[ok])
        got = standard_error_from_sd(sd, n, ddof)
        assert _bits(got) == _bits(listed) == _bits(masked)
    sd, n = g.std(ddof=1), g.count()
    assert _bits(standard_error_from_sd(sd, n)) == _bits(np.where(n >= 2, sd / np.sqrt(n), np.nan))  # audit.inputs
    assert _bits(standard_error_from_sd(sd, n)) == _bits(sd / np.sqrt(n))  # protocols.dynamic, binarization
    grid = np.geomspace(1e-4, 1e3, 281)[:, None]  # audit.claims: a grid of SDs, n ≥ 2 as a float
    assert _bits(standard_error_from_sd(grid, 3.0)) == _bits(grid / np.sqrt(3.0))


@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_t_interval_is_the_inline_expression(confidence):
    rng = np.random.default_rng(5)
    for n in (0, 1, 2, 3, 8):
        x = rng.normal(2, 1, n)
        mean = float(x.mean()) if n else np.nan
        sd = float(x.std(ddof=1)) if n > 1 else np.nan
        half = float(t_half_width(sd, n, confidence)) if n > 1 else np.nan
        low, high = t_interval(mean, sd, n, confidence)
        assert type(low) is float and _bits([low, high]) == _bits([mean - half, mean + half])
        for values in (x, pd.Series(x)):  # protocols.dynamic_report (an array), oracle_k_trials (a Series)
            assert _bits(mean_t_interval(values, confidence)) == _bits([mean, sd, low, high])
    with_nan = pd.Series([0.4, np.nan, 0.6, 0.9])  # a Series' own mean and SD skip NaN
    m, sd, low, _ = mean_t_interval(with_nan, confidence)
    assert _bits([m, sd]) == _bits([with_nan.mean(), with_nan.std(ddof=1)])
    assert _bits(low) == _bits(t_interval(m, sd, 4, confidence)[0])
    means, sds, ns = rng.normal(size=4), rng.uniform(0.5, 2, 4), np.array([1, 2, 3, 7])
    lo, hi = t_interval(means, sds, ns, confidence)
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    assert _bits(hi[1:]) == _bits(means[1:] + t_half_width(sds[1:], ns[1:], confidence))


def test_bad_ddof_and_values_are_refused():
    with pytest.raises(ConfigError, match="ddof"):
        standard_error([1.0, 2.0], ddof=2)
    with pytest.raises(ConfigError, match="ddof"):
        standard_error_from_sd([1.0], [2], ddof=True)
    with pytest.raises(ConfigError, match="values"):
        standard_error(np.ones((2, 2)))


#: divisions by a square root outside dganalysis/stats/ that are not the standard error of a mean, with why
NOT_A_STANDARD_ERROR = {
    ("audit/coverage.py", "s * s / math.sqrt(var_v)"): "a ratio of the coverage simulation's scales",
    ("protocols/leakage.py", "(f - f.mean(0)) / np.sqrt(n - 1)"): "the centred features of a covariance's root",
    ("findings/binarization.py", "sd / np.sqrt(2)"): "a simulator's per-arm SD, so that a difference has SD sd",
    ("findings/leaderboard.py", "sd / np.sqrt(2)"): "a simulator's per-arm SD, so that a difference has SD sd",
    ("findings/dynamic.py", "sd / np.sqrt(2.0)"): "a simulator's per-run noise beside the split's",
    ("findings/dynamic.py", "sd / np.sqrt(3.0)"): "a simulator's noise, so that a Domain+ difference has SD sd",
}
#: a function of numpy's or math's square root
SQRT = {"np.sqrt", "numpy.sqrt", "math.sqrt", "sqrt"}


def _is_t_call(func: str) -> bool:
    """``t_half_width(...)`` or a Student t quantile (``stats.t.ppf``, ``t.isf``, ``t.interval``)."""
    parts = func.split(".")
    return parts[-1] == "t_half_width" or (parts[-1] in ("ppf", "isf", "interval") and parts[-2:-1] == ["t"])


def _sqrt_divisions_and_t_calls(root: Path = PACKAGE):
    """(kind, file, source) of every division by a square root (``"sqrt"``) and every t quantile or half-width
    (``"t"``) in the package's source outside ``stats/``."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("stats/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and isinstance(node.right, ast.Call) \
                    and ast.unparse(node.right.func) in SQRT:
                yield "sqrt", rel, ast.unparse(node)
            elif isinstance(node, ast.Call) and _is_t_call(ast.unparse(node.func)):
                yield "t", rel, ast.unparse(node)


def test_no_standard_error_or_t_interval_is_written_outside_stats():
    found = list(_sqrt_divisions_and_t_calls())
    sqrt = {(rel, src) for kind, rel, src in found if kind == "sqrt"}
    assert sqrt == set(NOT_A_STANDARD_ERROR), (
        "a division by a square root outside dganalysis/stats/: the standard error of a mean is "
        "dganalysis.stats.moments.standard_error[_from_sd]; anything else goes in NOT_A_STANDARD_ERROR with why: "
        f"{sorted(sqrt ^ set(NOT_A_STANDARD_ERROR))}")
    t = [(rel, src) for kind, rel, src in found if kind == "t"]
    assert not t, f"a t quantile or half-width outside dganalysis/stats/ (use dganalysis.stats.intervals.t_interval): {t}"


def test_the_source_check_sees_an_inline_standard_error_and_t_interval(tmp_path):
    (tmp_path / "protocols").mkdir()
    (tmp_path / "protocols" / "x.py").write_text(
        "import math\nimport numpy as np\nfrom scipy import stats\nfrom dganalysis.stats.intervals import t_half_width\n"
        "def f(v, sd, n):\n    half = stats.t.ppf(0.975, len(v) - 1) * t_half_width(sd, n)\n"
        "    return v.std(ddof=1) / np.sqrt(len(v)), sd / math.sqrt(n), v / v.sqrt()\n")
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "ok.py").write_text("import numpy as np\nse = 1.0 / np.sqrt(4)\n")
    assert sorted(_sqrt_divisions_and_t_calls(tmp_path)) == [
        ("sqrt", "protocols/x.py", "sd / math.sqrt(n)"),
        ("sqrt", "protocols/x.py", "v.std(ddof=1) / np.sqrt(len(v))"),
        ("t", "protocols/x.py", "stats.t.ppf(0.975, len(v) - 1)"),
        ("t", "protocols/x.py", "t_half_width(sd, n)")]
