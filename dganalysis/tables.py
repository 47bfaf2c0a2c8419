"""DomainBed-style result tables from model-selection summaries (text, CSV, LaTeX, Markdown).

Mirrors ``domainbed/scripts/collect_results.py`` (Gulrajani & Lopez-Paz 2021): per dataset, rows are algorithms
and columns test domains, each cell the selected test accuracy (in %) as "mean ± SE" over trial seeds, plus an
"Avg" column holding the mean of the column means (no error bar, as DomainBed); then an "Averages" table whose
cell (algorithm, dataset) first averages a trial's accuracies over the dataset's columns and then gives mean ± SE
over trials, with "Avg" the mean over datasets. A missing cell prints "—" (DomainBed: "X"), an Avg with a missing
part too. SE uses ``ddof=1`` by default (see :func:`dganalysis.records.selection.summarize`); ``ddof=0`` gives DomainBed's.

Several test domains per run: a column is one (train/test/val split, test domain). ``test_domains="auto"`` keeps,
per dataset, the configs with the fewest test domains (on a DomainBed sweep: the single-test-domain runs, its
``[test, val]`` runs only serve leave-one-out), an int K keeps configs with K test domains, ``"all"`` keeps every
config. When a domain is a column of several configs, its label names the training domains (and if needed the val
and test domains) to tell them apart. CSV output is long: one line per cell with mean, se (in %) and n.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dganalysis.latex import latex_escape
from dganalysis.records.read import DOMAINBED_ENVIRONMENTS, domain_orders, summary_line
from dganalysis.records.selection import select, summarize
from dganalysis.records.selection_methods import METHODS

if TYPE_CHECKING:  # numpy, pandas and tabulate are imported where tables are built: `dganalysis collect`'s options need none
    import pandas as pd

FORMATS = ("text", "csv", "latex", "markdown")
_SPLIT = ["train_domains", "test_domains", "val_domains"]


@dataclass
class Table:
    """One table: ``cells`` is long (algorithm, column, mean, se, n; accuracies in %), ``columns`` the column order."""

    title: str
    dataset: str | None
    algorithms: list[str]
    columns: list[str]
    cells: pd.DataFrame

    def wide(self, digits: int = 1, latex: bool = False) -> pd.DataFrame:
        """Rows algorithms, columns as ``self.columns`` (+ "Avg"), cells formatted "mean ± se"."""
        import pandas as pd

        return pd.DataFrame(self._rows(digits, latex), index=pd.Index(self.algorithms, name="Algorithm"),
                            columns=[*self.columns, "Avg"])

    def _rows(self, digits: int, latex: bool) -> list[list[str]]:
        """The cells of :meth:`wide` as lists, one per algorithm: what the text formats print, without a frame."""
        import numpy as np

        cells = self.cells
        # (algorithm, column) → (mean, se): one summary row per pair, so a dict gives what a lookup in the frame indexed
        # by the pair gives, without one ``.loc`` per cell
        grid = dict(zip(zip(cells["algorithm"], cells["column"]), zip(cells["mean"], cells["se"])))
        columns = [*self.columns, "Avg"]
        rows = []
        for alg in self.algorithms:
            row = {}
            for col in columns:
                mean, se = grid.get((alg, col), (np.nan, np.nan))
                row[col] = format_cell(mean, se, digits, latex, with_se=col != "Avg")
            rows.append([row[col] for col in columns])  # a repeated column name shows its last cell, as in a frame
        return rows


def format_cell(mean: float, se: float, digits: int = 1, latex: bool = False, with_se: bool = True) -> str:
    """``"mean ± se"``; missing mean → "—"; undefined SE (one trial with ddof=1) → "mean ± —"."""
    dash = "--" if latex else "—"
    pm = " $\\pm$ " if latex else " ± "
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return dash
    text = f"{mean:.{digits}f}"
    if not with_se:
        return text
    return text + pm + (dash if se is None or (isinstance(se, float) and math.isnan(se)) else f"{se:.{digits}f}")


def build_tables(
    selected: pd.DataFrame,
    test_domains: str | int = "auto",
    ddof: int = 1,
    domain_order: dict[str, list[str]] | None = None,
) -> list[Table]:
    """Per-dataset tables plus the "Averages" table from the output of :func:`dganalysis.records.selection.select`."""
    import numpy as np
    import pandas as pd

    # the tables never read ``attrs`` (a sweep's selection carries job counts and problem lists there): on a copy
    # without them, pandas does not deep-copy them into every intermediate frame
    selected = selected.copy(deep=False)
    selected.attrs = {}
    sel = _filter_k(selected, test_domains)
    if sel.empty:
        return []
    method = str(sel["selection"].iloc[0]) if "selection" in sel else ""
    name = METHODS.get(method, method)
    algorithms = _algorithm_order(sel["algorithm"].unique())
    datasets = _dataset_order(sel["dataset"].unique())
    sel = sel.assign(column=_column_labels(sel))
    parts = [sel[sel["dataset"] == ds] for ds in datasets]
    per_trial = [part.groupby(["algorithm", "trial_seed"], as_index=False)["acc"].mean().assign(column=ds)
                 for ds, part in zip(datasets, parts)]
    # each dataset's cells and its trial averages summarized alone, never one summary over all datasets: pandas'
    # group mean sums with compensation or plainly depending on the whole frame it is given (groups in order, any
    # NaN), so a dataset's numbers come from its rows
    summaries = [_percent(summarize(frame, by=["algorithm", "column"], ddof=ddof)) for frame in [*parts, *per_trial]]
    tables = []
    for ds, part, cells in zip(datasets, parts, summaries):
        order = _column_order(part, ds, domain_order or {})
        means = cells.pivot(index="algorithm", columns="column", values="mean").reindex(columns=order)
        avg = means.mean(axis=1, skipna=False)
        cells = pd.concat([cells, pd.DataFrame({"algorithm": avg.index, "column": "Avg", "mean": avg.values,
                                                "se": np.nan, "n": 0})], ignore_index=True)
        tables.append(Table(f"Dataset: {ds}, model selection method: {name}", ds, algorithms, order, cells))
    cells = pd.concat(summaries[len(parts):], ignore_index=True)
    means = cells.pivot(index="algorithm", columns="column", values="mean").reindex(columns=datasets,
                                                                                    index=algorithms)
    avg = means.mean(axis=1, skipna=False)
    cells = pd.concat([cells, pd.DataFrame({"algorithm": avg.index, "column": "Avg", "mean": avg.values,
                                            "se": np.nan, "n": 0})], ignore_index=True)
    tables.append(Table(f"Averages, model selection method: {name}", None, algorithms, datasets, cells))
    return tables


def format_tables(tables: list[Table], fmt: str = "text", digits: int = 1) -> str:
    """Render tables as ``fmt`` in {"text", "csv", "latex", "markdown"}."""
    import pandas as pd
    from tabulate import tabulate

    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    if fmt == "csv":
        frames = [t.cells.assign(table=t.title, dataset=t.dataset or "Averages") for t in tables]
        if not frames:
            return "table,dataset,algorithm,column,mean,se,n,cell\n"
        long = pd.concat(frames, ignore_index=True)
        long["cell"] = [format_cell(m, s, digits, with_se=c != "Avg") for m, s, c in
                        zip(long["mean"], long["se"], long["column"])]
        buf = io.StringIO()
        long[["table", "dataset", "algorithm", "column", "mean", "se", "n", "cell"]].to_csv(buf, index=False)
        return buf.getvalue()
    parts = []
    for t in tables:
        # what tabulate prints for ``t.wide()``: the index (named "Algorithm") as the first column
        columns = [*t.columns, "Avg"]
        rows = [[alg, *cells] for alg, cells in zip(t.algorithms, t._rows(digits, latex=fmt == "latex"))]
        headers = ["Algorithm", *map(str, columns)]
        if fmt == "text":
            parts.append(f"-------- {t.title}\n" + tabulate(rows, headers=headers, tablefmt="simple",
                                                                stralign="left", disable_numparse=True))
        elif fmt == "markdown":
            parts.append(f"**{t.title}**\n\n" + tabulate(rows, headers=headers, tablefmt="github",
                                                          disable_numparse=True))
        else:
            parts.append(_latex(t.title, columns, rows))
    return "\n\n".join(parts) + "\n"


def selection_table(
    df: pd.DataFrame,
    method: str,
    fmt: str = "text",
    test_domains: str | int = "auto",
    ddof: int = 1,
    digits: int = 1,
) -> str:
    """DomainBed-style tables for the tidy results ``df`` (:func:`dganalysis.records.load`) under ``method``.

    ``fmt`` is "text", "csv", "latex" or "markdown"; see the module docstring for ``test_domains`` and ``ddof``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    return selected_table(select(df, method), method, fmt, test_domains, ddof, digits, domain_orders(df))


def selected_table(
    selected: pd.DataFrame,
    method: str,
    fmt: str = "text",
    test_domains: str | int = "auto",
    ddof: int = 1,
    digits: int = 1,
    domain_order: dict[str, list[str]] | None = None,
) -> str:
    """:func:`selection_table` from the selection already made (``select(df, method)``, e.g. cached by
    :func:`dganalysis.records.indexed.select_for_tables`) and the datasets' domain orders (:func:`dganalysis.records.domain_orders`)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    tables = build_tables(selected, test_domains, ddof, domain_order) if not selected.empty else []
    if not tables and fmt != "csv":
        return f"(no result for {METHODS[method]}: no config has a complete set of candidate runs)\n"
    return format_tables(tables, fmt, digits)


def selections_text(
    selections: dict[str, pd.DataFrame],
    methods: Sequence[str],
    fmt: str = "text",
    test_domains: str | int = "auto",
    ddof: int = 1,
    digits: int = 1,
    domain_order: dict[str, list[str]] | None = None,
) -> tuple[str, list[str]]:
    """DomainBed's ``collect_results`` printout of several selections of one sweep: under a header naming each
    method, its tables (:func:`selected_table`) and the line counting the job folders read
    (:func:`dganalysis.records.summary_line` of the selection's ``attrs``); a CSV holds one header line and the tables
    alone. ``selections``: ``{method: select(...)}`` of the same records, each with the reading's ``attrs``.
    Returns (the text, the lines for stderr: the counting line of a CSV)."""
    summary = summary_line(selections[methods[0]])
    parts = []
    for i, method in enumerate(methods):
        text = selected_table(selections[method], method, fmt=fmt, test_domains=test_domains, ddof=ddof,
                              digits=digits, domain_order=domain_order)
        if fmt == "csv":
            lines = text.splitlines(keepends=True)
            text = "".join(lines if i == 0 else lines[1:])  # one header for the whole CSV
        elif fmt == "latex":
            text = f"% ===== model selection: {METHODS[method]}\n" + text + f"% {summary}\n"
        elif fmt == "markdown":
            text = f"## Model selection: {METHODS[method]}\n\n" + text + f"\n*{summary}*\n"
        else:
            text = f"===== Model selection: {METHODS[method]}\n" + text + f"{summary}\n"
        parts.append(text)
    if fmt == "csv":
        return "".join(parts), [summary]  # a CSV holds the table only
    return "\n".join(parts), []


# ---------------------------------------------------------------- helpers


def _filter_k(selected: pd.DataFrame, test_domains: str | int) -> pd.DataFrame:
    k = selected["test_domains"].str.count(",") + 1
    if test_domains == "all":
        return selected
    if test_domains == "auto":
        return selected[k == k.groupby(selected["dataset"]).transform("min")]
    try:
        want = int(test_domains)
    except (TypeError, ValueError):
        raise ValueError(f"test_domains={test_domains!r}: expected 'auto', 'all' or a number of test domains") from None
    return selected[k == want]


def _percent(cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` with mean and se in % (each column replaced by itself times 100: ``cells[["mean", "se"]] *= 100``
    without the frame arithmetic)."""
    for c in ("mean", "se"):
        cells[c] = cells[c].to_numpy() * 100
    return cells


def _algorithm_order(names) -> list[str]:
    names = sorted(map(str, names))
    return (["ERM"] if "ERM" in names else []) + [n for n in names if n != "ERM"]


def _dataset_order(names) -> list[str]:
    names = set(map(str, names))
    return [d for d in DOMAINBED_ENVIRONMENTS if d in names] + sorted(names - set(DOMAINBED_ENVIRONMENTS))


def _column_labels(sel: pd.DataFrame) -> pd.Series:
    """The domain name, extended with the split where one dataset has the domain under several splits, and with the
    setting (``steps=…``, overrides, …) where one algorithm has the same column under several settings: runs of
    different settings are never one cell. Settings that differ only between algorithms (per-algorithm overrides)
    share the column.

    The split part is worked out once per distinct (dataset, domain, splits) — a sweep has a few dozen — and looked up
    per row; a row with a missing key value keeps the bare domain name.
    """
    import pandas as pd

    labels = sel["domain"].astype(str)
    tags = _setting_tags(sel) if "setting" in sel else pd.Series("", index=sel.index)
    keys = ["dataset", "domain", *_SPLIT]
    splits = list(sel[keys].drop_duplicates().itertuples(index=False, name=None))
    by_domain: dict[tuple, list[tuple]] = {}
    for combo in splits:
        if not (pd.isna(combo[0]) or pd.isna(combo[1])):
            by_domain.setdefault(combo[:2], []).append(combo)
    split_tag = {}  # (dataset, domain, *splits) → (the domain as first seen, the split part of its label)
    for combos in by_domain.values():
        differ = [p for i, p in enumerate(_SPLIT, 2) if len({c[i] for c in combos if not pd.isna(c[i])}) > 1]
        parts = differ or (["train_domains"] if len(combos) > 1 else [])
        for combo in combos:
            if not any(pd.isna(v) for v in combo[2:]):
                split_tag[combo] = (combo[1], "; ".join(f"{p.split('_')[0]}: {combo[i] or '-'}"
                                                        for i, p in enumerate(_SPLIT, 2) if p in parts))
    row_tags = tags.tolist()
    if not any(t for _, t in split_tag.values()) and not any(row_tags):
        return labels  # every column is a bare domain (one split per domain, one setting)
    out = labels.to_numpy(dtype=object, copy=True)
    for i, (combo, tag) in enumerate(zip(zip(*(sel[k].tolist() for k in keys)), row_tags)):
        found = split_tag.get(combo)
        if found is not None:
            full = "; ".join(t for t in (found[1], tag) if t)
            if full:
                out[i] = f"{found[0]} ({full})"
    return pd.Series(out, index=labels.index, name=labels.name, dtype=labels.dtype)


def _setting_tags(sel: pd.DataFrame) -> pd.Series:
    """Per row, ``key=value`` of the setting keys in which one algorithm's runs of the same column differ."""
    import pandas as pd

    tags = pd.Series("", index=sel.index)
    col = ["dataset", "domain", *_SPLIT]
    if sel["setting"].nunique() < 2:  # one setting: no column has several (the usual sweep)
        return tags
    several = sel.groupby(col, sort=False)["setting"].transform("nunique") >= 2
    for _, grp in sel[several.to_numpy()].groupby(col, sort=False):
        parsed = {st: (json.loads(st) if st else {}) for st in grp["setting"].unique()}
        keys = set()
        for _, per_alg in grp.groupby("algorithm"):
            sts = per_alg["setting"].unique()
            for k in set().union(*(parsed[st] for st in sts)):
                if len({json.dumps(parsed[st].get(k), sort_keys=True) for st in sts}) > 1:
                    keys.add(k)
        if keys:
            text = {st: "; ".join(f"{k}={json.dumps(p.get(k), sort_keys=True)}" for k in sorted(keys))
                    for st, p in parsed.items()}
            tags.loc[grp.index] = grp["setting"].map(text)
    return tags


def _column_order(part: pd.DataFrame, dataset: str, domain_order: dict[str, list[str]]) -> list[str]:
    known = domain_order.get(dataset) or DOMAINBED_ENVIRONMENTS.get(dataset) or []
    rank = {d: i for i, d in enumerate(known)}
    first = {}  # column → (domain, *splits) of its first row
    for col, *where in zip(*(part[c].tolist() for c in ("column", "domain", *_SPLIT))):
        first.setdefault(col, where)
    key = [(rank.get(d, len(rank)), d, len(tr), tr, te, va) for d, tr, te, va in first.values()]
    return [c for _, c in sorted(zip(key, first))]


#: the comment line every LaTeX table we write starts with: the rules (\toprule …) come from booktabs
BOOKTABS_NOTE = "% needs \\usepackage{booktabs} in the preamble (\\toprule, \\midrule, \\bottomrule)"


def _latex(title: str, columns: list[str], rows: list[list[str]]) -> str:
    """A booktabs tabular: ``columns`` after "Algorithm", each row an algorithm followed by its formatted cells."""
    head = ["\\textbf{Algorithm}", *(f"\\textbf{{{latex_escape(str(c))}}}" for c in columns)]
    lines = [f"% {title}", BOOKTABS_NOTE, "\\begin{tabular}{l" + "c" * len(columns) + "}", "\\toprule",
             " & ".join(head) + " \\\\", "\\midrule"]
    for alg, *cells in rows:
        lines.append(" & ".join([latex_escape(str(alg)), *cells]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


__all__ = ["BOOKTABS_NOTE", "FORMATS", "Table", "build_tables", "format_cell",
           "format_tables", "selection_table", "selections_text"]
