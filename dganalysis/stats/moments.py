"""The standard error of a mean, written once: SE = SD / √n over n independent replicates (e.g. trials).

numpy only (no scipy), so :mod:`dganalysis.records` can use it without the import cost of the tests' modules.

* :func:`standard_error` — from the values: ``std(values, ddof) / √n``, NaN when at most ``ddof`` values remain
  (n < 2 with the default sample SD, ``ddof=1``); ``ddof=0`` is DomainBed's population SD
  (``collect_results.format_mean``).
* :func:`population_standard_error` — DomainBed's ``collect_results`` error bar, its arithmetic verbatim
  (the population SD of the values scaled by 1/√n).
* :func:`group_std` — the SD of each group of values, pandas' ``groupby(...).std(ddof)`` arithmetic on arrays
  (the SD behind :func:`standard_error_from_sd` in :func:`dganalysis.records.summarize`).
* :func:`standard_error_from_sd` — from an SD already computed (a group's ``std``) and its count, elementwise:
  ``sd / √n`` where ``n > ddof``, NaN elsewhere.

The Student-t interval of a mean built on it is :func:`dganalysis.stats.intervals.t_interval`.
"""

from __future__ import annotations

import numpy as np

from dganalysis.validation import ConfigError, describe


def _check_ddof(ddof: int, func: str) -> int:
    if isinstance(ddof, bool) or not isinstance(ddof, (int, np.integer)) or int(ddof) not in (0, 1):
        raise ConfigError(f"{func}: parameter 'ddof': expected 0 (population SD) or 1 (sample SD), got "
                          f"{describe(ddof)}")
    return int(ddof)


def standard_error(values, ddof: int = 1) -> float:
    """``std(values, ddof) / √n`` of the ``n`` values (a 1-D sequence or array, taken as it is: NaN propagates), as a
    float; NaN when ``n <= ddof`` (fewer than 2 values with the sample SD)."""
    ddof = _check_ddof(ddof, "standard_error")
    v = np.asarray(values)
    if v.ndim != 1:
        raise ConfigError(f"standard_error: parameter 'values': expected a 1-D sequence of numbers, got "
                          f"{describe(values)}")
    n = len(v)
    return float(v.std(ddof=ddof) / np.sqrt(n)) if n > ddof else float("nan")


def population_standard_error(values) -> float:
    """DomainBed's error bar, its arithmetic verbatim (``collect_results.format_mean``): ``np.std`` (ddof 0) of the
    values each divided by √n, as a float — :func:`standard_error` with ``ddof=0`` up to the rounding of the
    division's order, kept for DomainBed's printed numbers bit for bit. Needs at least one value."""
    v = np.asarray(list(values))
    return float(np.std(v / np.sqrt(len(v))))


def standard_error_from_sd(sd, n, ddof: int = 1) -> np.ndarray:
    """``sd / √n`` elementwise (arrays or Series broadcast; the result is a float array), NaN where ``n <= ddof``:
    the standard error of a mean from the SD of its ``n`` values computed with ``ddof``."""
    ddof = _check_ddof(ddof, "standard_error_from_sd")
    sd, n = np.asarray(sd, dtype=float), np.asarray(n)
    ok = n > ddof
    out = np.full(np.broadcast_shapes(sd.shape, n.shape), np.nan)
    np.divide(sd, np.sqrt(np.where(ok, n, 1)), out=out, where=ok)
    return out


def group_std(acc: np.ndarray, gid: np.ndarray, n_groups: int, ddof: int = 1) -> np.ndarray:
    """Per group, the SD of its ``acc`` values as pandas' ``Series.std(ddof=ddof)`` gives it, bit for bit: pandas'
    two-pass ``nanvar`` (NaN skipped but left as 0 in place in both sums, NaN where at most ``ddof`` values remain),
    square-rooted.

    ``gid`` numbers each row's group (0 … ``n_groups`` - 1). Groups with the same number of rows are laid out, in
    frame order, as the rows of one matrix and summed along them: numpy sums each row as it sums the 1-D group
    (pairwise), so the floats are pandas' own.
    """
    ddof = _check_ddof(ddof, "group_std")
    size = np.bincount(gid, minlength=n_groups)
    order = np.argsort(gid, kind="stable")  # rows grouped, frame order kept within a group
    pos = np.empty(len(gid), dtype=np.int64)
    pos[order] = np.arange(len(gid)) - np.repeat(np.cumsum(size) - size, size)
    std = np.empty(n_groups)
    for k in np.unique(size):
        groups = np.flatnonzero(size == k)
        rows = size[gid] == k
        values = np.zeros((len(groups), k))
        values[np.searchsorted(groups, gid[rows]), pos[rows]] = acc[rows]
        mask = np.isnan(values)
        count = k - mask.sum(axis=1).astype(np.float64)
        count[count <= ddof] = np.nan
        values[mask] = 0
        avg = values.sum(axis=1, dtype=np.float64) / count
        sqr = (avg[:, None] - values) ** 2
        sqr[mask] = 0
        std[groups] = np.sqrt(sqr.sum(axis=1, dtype=np.float64) / (count - ddof))
    return std
