"""DomainBed-style result tables laid out as text, CSV, LaTeX or Markdown, from their numbers
(:mod:`dganalysis.records.summaries`: cells of mean, SE and n over trial seeds, in %, in row and column order).

Mirrors ``domainbed/scripts/collect_results.py`` (Gulrajani & Lopez-Paz 2021): per dataset, rows are algorithms
and columns test domains, each cell "mean ± SE", plus an "Avg" column without an error bar (as DomainBed); then the
"Averages" table. A missing cell prints "—" (DomainBed: "X"), an Avg with a missing part too. CSV output is long: one
line per cell with mean, se (in %) and n.
"""

from __future__ import annotations

import io
import math
from typing import TYPE_CHECKING

from dganalysis.latex import latex_escape
from dganalysis.records.read import domain_orders
from dganalysis.records.selection import select
from dganalysis.records.selection_methods import METHODS
from dganalysis.records.summaries import build_tables

if TYPE_CHECKING:  # numpy, pandas and tabulate are imported where tables are laid out: `dganalysis collect`'s options need none
    import pandas as pd

    from dganalysis.records.summaries import SelectionSummaries, Table

FORMATS = ("text", "csv", "latex", "markdown")


def wide(table: Table, digits: int = 1, latex: bool = False) -> pd.DataFrame:
    """A table as a frame: rows its algorithms, columns its columns (+ "Avg"), cells formatted "mean ± se"."""
    import pandas as pd

    return pd.DataFrame(_rows(table, digits, latex), index=pd.Index(table.algorithms, name="Algorithm"),
                        columns=[*table.columns, "Avg"])


def _rows(table: Table, digits: int, latex: bool) -> list[list[str]]:
    """The cells of :func:`wide` as lists, one per algorithm: what the text formats print, without a frame."""
    cells = table.cells
    # (algorithm, column) → (mean, se): one summary row per pair, so a dict gives what a lookup in the frame indexed
    # by the pair gives, without one ``.loc`` per cell
    grid = dict(zip(zip(cells["algorithm"], cells["column"]), zip(cells["mean"], cells["se"])))
    columns = [*table.columns, "Avg"]
    rows = []
    for alg in table.algorithms:
        row = {}
        for col in columns:
            mean, se = grid.get((alg, col), (math.nan, math.nan))
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
        # what tabulate prints for ``wide(t)``: the index (named "Algorithm") as the first column
        columns = [*t.columns, "Avg"]
        rows = [[alg, *cells] for alg, cells in zip(t.algorithms, _rows(t, digits, latex=fmt == "latex"))]
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

    ``fmt`` is "text", "csv", "latex" or "markdown"; ``test_domains`` and ``ddof`` as
    :func:`dganalysis.records.summaries.build_tables`'.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    return _method_text(build_tables(select(df, method), test_domains, ddof, domain_orders(df)), method, fmt, digits)


def selections_text(summaries: SelectionSummaries, fmt: str = "text", digits: int = 1) -> tuple[str, list[str]]:
    """DomainBed's ``collect_results`` printout of several selections of one sweep
    (:func:`dganalysis.records.summaries.summarize_selections`): under a header naming each method, its tables and
    the line counting the job folders read; a CSV holds one header line and the tables alone.
    Returns (the text, the lines for stderr: the counting line of a CSV)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    summary = summaries.summary_line
    parts = []
    for i, (method, tables) in enumerate(summaries.tables.items()):
        text = _method_text(tables, method, fmt, digits)
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


def _method_text(tables: list[Table], method: str, fmt: str, digits: int) -> str:
    """One method's tables as ``fmt``; a line saying there is none where the method selected nothing (a CSV: its
    header alone)."""
    if not tables and fmt != "csv":
        return f"(no result for {METHODS[method]}: no config has a complete set of candidate runs)\n"
    return format_tables(tables, fmt, digits)


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


__all__ = ["BOOKTABS_NOTE", "FORMATS", "format_cell", "format_tables", "selection_table", "selections_text", "wide"]
