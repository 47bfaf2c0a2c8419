"""DomainBed-style result tables from model-selection summaries (text, CSV, LaTeX, Markdown).

Mirrors ``domainbed/scripts/collect_results.py`` (Gulrajani & Lopez-Paz 2021): per dataset, rows are algorithms
and columns test domains, each cell the selected test accuracy (in %) as "mean ± SE" over trial seeds, plus an
"Avg" column holding the mean of the column means (no error bar, as DomainBed); then an "Averages" table whose
cell (algorithm, dataset) first averages a trial's accuracies over the dataset's columns and then gives mean ± SE
over trials, with "Avg" the mean over datasets. A missing cell prints "—" (DomainBed: "X"), an Avg with a missing
part too. SE uses ``ddof=1`` by default (see :func:`dganalysis.selection.summarize`); ``ddof=0`` gives DomainBed's.

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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dganalysis.latex import latex_escape
from dganalysis.results import DOMAINBED_ENVIRONMENTS
from dganalysis.selection import CONFIG, METHODS, select, summarize

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
        import numpy as np
        import pandas as pd

        cells = self.cells
        # (algorithm, column) → (mean, se): one summary row per pair, so a dict gives what a lookup in the frame indexed
        # by the pair gives, without one ``.loc`` per cell
        grid = dict(zip(zip(cells["algorithm"], cells["column"]), zip(cells["mean"], cells["se"])))
        rows = []
        for alg in self.algorithms:
            row = {}
            for col in [*self.columns, "Avg"]:
                mean, se = grid.get((alg, col), (np.nan, np.nan))
                row[col] = format_cell(mean, se, digits, latex, with_se=col != "Avg")
            rows.append(row)
        return pd.DataFrame(rows, index=pd.Index(self.algorithms, name="Algorithm"), columns=[*self.columns, "Avg"])


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
    """Per-dataset tables plus the "Averages" table from the output of :func:`dganalysis.selection.select`."""
    import numpy as np
    import pandas as pd

    sel = _filter_k(selected, test_domains)
    if sel.empty:
        return []
    method = str(sel["selection"].iloc[0]) if "selection" in sel else ""
    name = METHODS.get(method, method)
    algorithms = _algorithm_order(sel["algorithm"].unique())
    datasets = _dataset_order(sel["dataset"].unique())
    sel = sel.assign(column=_column_labels(sel))
    tables = []
    avg_cells = []
    for ds in datasets:
        part = sel[sel["dataset"] == ds]
        order = _column_order(part, ds, domain_order or {})
        cells = summarize(part, by=["algorithm", "column"], ddof=ddof)
        cells[["mean", "se"]] *= 100
        means = cells.pivot(index="algorithm", columns="column", values="mean").reindex(columns=order)
        avg = means.mean(axis=1, skipna=False)
        cells = pd.concat([cells, pd.DataFrame({"algorithm": avg.index, "column": "Avg", "mean": avg.values,
                                                "se": np.nan, "n": 0})], ignore_index=True)
        tables.append(Table(f"Dataset: {ds}, model selection method: {name}", ds, algorithms, order, cells))
        per_trial = part.groupby(["algorithm", "trial_seed"], as_index=False)["acc"].mean().assign(column=ds)
        avg_cells.append(summarize(per_trial, by=["algorithm", "column"], ddof=ddof))
    cells = pd.concat(avg_cells, ignore_index=True)
    cells[["mean", "se"]] *= 100
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
        wide = t.wide(digits, latex=fmt == "latex")
        if fmt == "text":
            parts.append(f"-------- {t.title}\n" + tabulate(wide, headers="keys", tablefmt="simple", stralign="left",
                                                                disable_numparse=True))
        elif fmt == "markdown":
            parts.append(f"**{t.title}**\n\n" + tabulate(wide, headers="keys", tablefmt="github", disable_numparse=True))
        else:
            parts.append(_latex(t.title, wide))
    return "\n\n".join(parts) + "\n"


def selection_table(
    df: pd.DataFrame,
    method: str,
    fmt: str = "text",
    test_domains: str | int = "auto",
    ddof: int = 1,
    digits: int = 1,
) -> str:
    """DomainBed-style tables for the tidy results ``df`` (:func:`dganalysis.results.load`) under ``method``.

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
    :func:`dganalysis.audit.sweep_selections.select_for_tables`) and the datasets' domain orders (:func:`domain_orders`)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: expected one of {FORMATS}")
    tables = build_tables(selected, test_domains, ddof, domain_order) if not selected.empty else []
    if not tables and fmt != "csv":
        return f"(no result for {METHODS[method]}: no config has a complete set of candidate runs)\n"
    return format_tables(tables, fmt, digits)


def domain_orders(df: pd.DataFrame) -> dict[str, list[str]]:
    """Env order of each dataset's domains as they first appear in a tidy frame (records list envs in order)."""
    return {str(ds): [str(d) for d in doms] for ds, doms in df.groupby("dataset", sort=False)["domain"].unique().items()}


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
    share the column."""
    import pandas as pd

    labels = sel["domain"].astype(str)
    tags = _setting_tags(sel) if "setting" in sel else pd.Series("", index=sel.index)
    splits = sel[["dataset", "domain", *_SPLIT]].drop_duplicates()
    for (_ds, _dom), grp in splits.groupby(["dataset", "domain"]):
        parts = [p for p in _SPLIT if grp[p].nunique() > 1] or (["train_domains"] if len(grp) > 1 else [])
        for _, row in grp.iterrows():
            mask = (sel["dataset"] == row["dataset"]) & (sel["domain"] == row["domain"])
            for p in _SPLIT:
                mask &= sel[p] == row[p]
            split_tag = "; ".join(f"{p.split('_')[0]}: {row[p] or '-'}" for p in parts)
            for tag in tags[mask].unique():
                full = "; ".join(t for t in (split_tag, tag) if t)
                if full:
                    labels = labels.mask(mask & (tags == tag), f"{row['domain']} ({full})")
    return labels


def _setting_tags(sel: pd.DataFrame) -> pd.Series:
    """Per row, ``key=value`` of the setting keys in which one algorithm's runs of the same column differ."""
    import pandas as pd

    tags = pd.Series("", index=sel.index)
    col = ["dataset", "domain", *_SPLIT]
    for _, grp in sel.groupby(col, sort=False):
        if grp["setting"].nunique() < 2:
            continue
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
    cols = part[["domain", *_SPLIT, "column"]].drop_duplicates("column")
    key = [(rank.get(d, len(rank)), d, len(tr), tr, te, va) for d, tr, te, va in
           zip(cols["domain"], cols["train_domains"], cols["test_domains"], cols["val_domains"])]
    return [c for _, c in sorted(zip(key, cols["column"]))]


#: the comment line every LaTeX table we write starts with: the rules (\toprule …) come from booktabs
BOOKTABS_NOTE = "% needs \\usepackage{booktabs} in the preamble (\\toprule, \\midrule, \\bottomrule)"


def _latex(title: str, wide: pd.DataFrame) -> str:
    head = ["\\textbf{Algorithm}", *(f"\\textbf{{{latex_escape(str(c))}}}" for c in wide.columns)]
    lines = [f"% {title}", BOOKTABS_NOTE, "\\begin{tabular}{l" + "c" * len(wide.columns) + "}", "\\toprule",
             " & ".join(head) + " \\\\", "\\midrule"]
    for alg, row in wide.iterrows():
        lines.append(" & ".join([latex_escape(str(alg)), *row.tolist()]) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines)


__all__ = ["BOOKTABS_NOTE", "CONFIG", "FORMATS", "Table", "build_tables", "domain_orders", "format_cell",
           "format_tables", "selection_table"]
