"""Published result tables → one *cells* frame: what a table says about each (selection, dataset, algorithm).

Two formats are read, by our own parsers:

* the LaTeX that DomainBed's ``python -m domainbed.scripts.collect_results --latex`` writes (Gulrajani & Lopez-Paz
  2021; its ``domainbed/results/2020_10_06_7df6f06/results.tex`` ships with this package, :func:`shipped`): one
  ``\\subsection{Model selection: …}`` per selection method, one ``\\subsubsection{<dataset>}`` table per dataset
  (rows algorithms, columns test environments, cells ``mean $\\pm$ SE``) and an ``Averages`` table whose cells are
  each dataset's average over test environments, computed per trial seed, then mean ± SE over the trials. DomainBed's
  SE is the *population* standard deviation over the n trials divided by √n (``np.std``, ddof = 0), so
  ``se_ddof = 0``; n = 3 (its sweep's trials) unless ``trials`` says otherwise. An ``X`` cell (a missing result) is
  left out.
* a CSV with columns ``selection, dataset, algorithm, mean, se, n`` and optional ``env`` (a test environment; empty =
  the dataset average), ``se_ddof`` (0 or 1; default 0, the conservative reading, see below), ``board`` (a name for one
  of several leaderboards in one file, e.g. Yu et al. 2024 Table 5's three; default ``""``). Lines starting with
  ``#`` are comments. An empty ``se`` means the table gives no SE for that cell: the audit then ranks it but makes no
  per-claim verdict on it.

Output (:data:`CELL_COLUMNS`): ``board, selection, dataset, env, algorithm, mean, se, n, se_ddof, mean_res, se_res,
source``; ``env == ""`` marks the dataset-average cells that claims are made on. ``mean_res`` / ``se_res`` are the
printed *rounding resolution* (0.1 for one decimal; 0 for unrounded numbers): the true mean lies in
``mean ± mean_res/2`` and the true SE in ``[max(se − se_res/2, 0), se + se_res/2]`` — a printed "± 0.0" means an SE
below 0.05, never zero (:mod:`dganalysis.audit.claims` decides only what holds over that whole box). When a table does
not state its SE's ddof, 0 is assumed: it implies the larger sample standard deviation (× √(n/(n−1))), the cautious
choice. Errors name the file and line.
"""

from __future__ import annotations

import csv
import io as _io
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from dganalysis.records.selection_methods import METHODS
from dganalysis.validation import ConfigError, MissingInputError

CELL_COLUMNS = ["board", "selection", "dataset", "env", "algorithm", "mean", "se", "n", "se_ddof", "mean_res",
                "se_res", "source"]
DATA_DIR = Path(__file__).parent / "data"
#: the tables shipped with the package (name → file); see the ``*.SOURCE.txt`` / comment header of each
SHIPPED_TABLES = {
    "domainbed": DATA_DIR / "domainbed_2020_10_06_7df6f06_results.tex",
    "yu2024_table5": DATA_DIR / "yu2024_table5.csv",
}
TABLE_SUFFIXES = (".tex", ".csv")
SHIPPED_PREFIX = "shipped:"  #: an input ``shipped:<name>`` is the shipped table ``name``
#: DomainBed's section titles (``SelectionMethod.name``) → our selection keys
_DOMAINBED_NAMES = {name: key for key, name in METHODS.items()}
_SUBSECTION = re.compile(r"\\subsection\{Model selection:\s*(.+?)\}\s*$")
_SUBSUBSECTION = re.compile(r"\\subsubsection\{(.+?)\}\s*$")
_CELL = re.compile(r"^\s*(-?\d+(?:\.(\d+))?)\s*(?:\$\\pm\$|±|\+/-)\s*(\d+(?:\.(\d+))?)\s*$")
_NUMBER = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")
_TEXTBF = re.compile(r"\\textbf\{(.*)\}")


def shipped(name: str) -> Path:
    """Path of a table shipped with the package: ``"domainbed"`` (DomainBed's published results.tex) or
    ``"yu2024_table5"`` (Yu et al. 2024, Table 5)."""
    if name not in SHIPPED_TABLES:
        raise ConfigError(f"shipped table {name!r}: expected one of {sorted(SHIPPED_TABLES)}")
    return SHIPPED_TABLES[name]


def resolve_table(path: str | Path) -> Path:
    """``path`` itself, or the shipped table it names (``shipped:domainbed``, ``shipped:yu2024_table5``)."""
    text = str(path)
    if text.startswith(SHIPPED_PREFIX):
        return shipped(text.split(":", 1)[1])
    return Path(path)


def read_table(path: str | Path, trials: int | None = None) -> pd.DataFrame:
    """Cells of a published table (``.tex`` from DomainBed's ``collect_results --latex``, or ``.csv``); ``trials``
    overrides n for every cell. See the module docstring for the conventions."""
    p = resolve_table(path)
    if trials is not None and (not isinstance(trials, (int, np.integer)) or isinstance(trials, bool) or trials < 2):
        raise ConfigError(f"trials={trials!r}: expected an integer ≥ 2 (the number of runs behind each cell)")
    if not p.is_file():
        raise MissingInputError(f"{p}: no such table file (expected a .tex from DomainBed's collect_results --latex "
                                "or a .csv with selection, dataset, algorithm, mean, se, n)")
    suffix = p.suffix.lower()
    try:
        text = p.read_text(encoding="utf-8-sig")  # a byte-order mark (spreadsheet exports) is not part of the table
    except UnicodeDecodeError as err:
        raise ConfigError(f"{p}: not UTF-8 text (byte {err.start}); expected a .tex or .csv table") from None
    if suffix == ".tex":
        cells = read_latex(text, str(p), trials=trials or 3)
    elif suffix == ".csv":
        cells = read_csv(text, str(p), trials=trials)
    else:
        raise ConfigError(f"{p}: unknown table format {suffix!r}; expected .tex or .csv")
    if cells.empty:
        raise ConfigError(f"{p}: no result cells found (expected DomainBed's 'Averages' tables or CSV rows)")
    return cells


def _decimals_res(digits: str | None) -> float:
    return 10.0 ** -len(digits) if digits else 1.0


def read_latex(text: str, source: str = "<latex>", trials: int = 3) -> pd.DataFrame:
    """Cells of DomainBed's ``collect_results --latex`` output (every per-dataset table and the Averages table)."""
    rows = []
    selection = dataset = None
    header: list[str] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        where = f"{source}:{lineno}"
        m = _SUBSECTION.search(line)
        if m:
            name = m.group(1).strip()
            if name not in _DOMAINBED_NAMES:
                raise ConfigError(f"{where}: unknown model selection method {name!r}; expected one of "
                                 f"{sorted(_DOMAINBED_NAMES)}")
            selection, dataset, header = _DOMAINBED_NAMES[name], None, None
            continue
        m = _SUBSUBSECTION.search(line)
        if m:
            dataset, header = m.group(1).strip(), None
            continue
        if "&" not in line or selection is None or dataset is None:
            continue
        parts = [c.strip() for c in line.rstrip().removesuffix("\\\\").split("&")]
        if header is None:
            header = [_TEXTBF.sub(r"\1", c).replace("\\%", "%").strip() for c in parts]
            if header[0] != "Algorithm":
                raise ConfigError(f"{where}: expected a header row starting with 'Algorithm', got {parts[0]!r}")
            continue
        if len(parts) != len(header):
            raise ConfigError(f"{where}: {len(parts)} cells, the header has {len(header)}")
        algorithm = parts[0]
        for col, cell in zip(header[1:], parts[1:]):
            if col == "Avg" or cell == "X":  # Avg: the mean of the row's means, no SE (derived, not a result)
                continue
            m = _CELL.match(cell)
            if not m:
                raise ConfigError(f"{where}: cell {cell!r} in column {col!r}: expected 'mean $\\pm$ SE' or X")
            is_avg = dataset == "Averages"
            rows.append(dict(board="", selection=selection, dataset=col if is_avg else dataset,
                             env="" if is_avg else col, algorithm=algorithm, mean=float(m.group(1)),
                             se=float(m.group(3)), n=trials, se_ddof=0, mean_res=_decimals_res(m.group(2)),
                             se_res=_decimals_res(m.group(4)), source=where))
    return _finish(pd.DataFrame(rows, columns=CELL_COLUMNS), source)


def read_csv(text: str, source: str = "<csv>", trials: int | None = None) -> pd.DataFrame:
    """Cells of a CSV table (see the module docstring for its columns)."""
    lines = [(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip() and
             not line.lstrip().startswith("#")]
    if not lines:
        raise ConfigError(f"{source}: empty CSV; expected a header selection, dataset, algorithm, mean, se, n")
    reader = csv.reader(_io.StringIO("\n".join(line for _, line in lines)))
    header = [h.strip() for h in next(reader)]
    need = ["selection", "dataset", "algorithm", "mean", "se"] + ([] if trials else ["n"])
    missing = [c for c in need if c not in header]
    if missing:
        raise ConfigError(f"{source}:{lines[0][0]}: missing column(s) {missing}; got {header}, expected "
                         "selection, dataset, algorithm, mean, se, n (optional env, se_ddof, board)")
    unknown = sorted(set(header) - {*need, "n", "env", "se_ddof", "board"})
    if unknown:
        raise ConfigError(f"{source}:{lines[0][0]}: unknown column(s) {unknown}; expected selection, dataset, "
                         "algorithm, mean, se, n, env, se_ddof, board")
    rows = []
    for (lineno, _), values in zip(lines[1:], reader):
        where = f"{source}:{lineno}"
        if len(values) != len(header):
            raise ConfigError(f"{where}: {len(values)} fields, the header has {len(header)}")
        r = dict(zip(header, (v.strip() for v in values)))
        if r["selection"] not in METHODS:
            raise ConfigError(f"{where}: selection {r['selection']!r}: expected one of {list(METHODS)}")
        for key in ("dataset", "algorithm"):
            if not r[key]:
                raise ConfigError(f"{where}: empty {key}")
        mean, mean_res = _number(r["mean"], "mean", where)
        if math.isnan(mean):
            raise ConfigError(f"{where}: empty mean")
        se, se_res = _number(r["se"], "se", where)
        if se < 0:
            raise ConfigError(f"{where}: se={se}: expected ≥ 0")
        n = trials if trials else _integer(r.get("n", ""), "n", where)
        if n < 2:
            raise ConfigError(f"{where}: n={n}: a standard error needs ≥ 2 runs")
        ddof = _integer(r["se_ddof"], "se_ddof", where) if r.get("se_ddof") else 0
        if ddof not in (0, 1):
            raise ConfigError(f"{where}: se_ddof={ddof}: expected 0 (population std) or 1 (sample std)")
        rows.append(dict(board=r.get("board", ""), selection=r["selection"], dataset=r["dataset"],
                         env=r.get("env", ""), algorithm=r["algorithm"], mean=mean, se=se, n=n, se_ddof=ddof,
                         mean_res=mean_res, se_res=se_res, source=where))
    return _finish(pd.DataFrame(rows, columns=CELL_COLUMNS), source)


def _number(text: str, name: str, where: str) -> tuple[float, float]:
    """(value, rounding resolution from the printed decimals); an empty field is NaN."""
    if text == "":
        return float("nan"), 0.0
    if not _NUMBER.match(text):
        raise ConfigError(f"{where}: {name}={text!r}: expected a number")
    digits = text.split(".")[1] if "." in text else ""
    return float(text), _decimals_res(digits)


def _integer(text: str, name: str, where: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{where}: {name}={text!r}: expected an integer") from None


def _finish(cells: pd.DataFrame, source: str) -> pd.DataFrame:
    key = ["board", "selection", "dataset", "env", "algorithm"]
    dup = cells.duplicated(key, keep=False)
    if dup.any():
        first = cells[dup].iloc[0]
        raise ConfigError(f"{first['source']}: cell ({', '.join(str(first[k]) for k in key)}) appears twice in "
                         f"{source}")
    means = cells["mean"].astype(float)
    if means.notna().any() and means.abs().max() <= 1:  # no accuracy table is below 1% throughout
        raise ConfigError(f"{source}: every mean is within [-1, 1]: accuracies as fractions? Expected accuracy in "
                         "points (0–100), as DomainBed prints them — the ROPE, the rounding and Δ are in points; "
                         "multiply mean and se by 100")
    return cells.astype({"mean": float, "se": float, "n": int, "se_ddof": int, "mean_res": float,
                         "se_res": float}).reset_index(drop=True)
