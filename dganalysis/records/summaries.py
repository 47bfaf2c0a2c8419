"""The numbers of DomainBed-style result tables, computed from model selections: what :mod:`dganalysis.tables` lays out.

Mirrors ``domainbed/scripts/collect_results.py`` (Gulrajani & Lopez-Paz 2021): per dataset, rows are algorithms
and columns test domains, each cell the selected test accuracy (in %) as mean and SE over trial seeds, plus an
"Avg" column holding the mean of the column means (no error bar, as DomainBed); then an "Averages" table whose
cell (algorithm, dataset) first averages a trial's accuracies over the dataset's columns and then gives mean and SE
over trials, with "Avg" the mean over datasets. SE uses ``ddof=1`` by default (see
:func:`dganalysis.records.selection.summarize`); ``ddof=0`` gives DomainBed's.

Several test domains per run: a column is one (train/test/val split, test domain). ``test_domains="auto"`` keeps,
per dataset, the configs with the fewest test domains (on a DomainBed sweep: the single-test-domain runs, its
``[test, val]`` runs only serve leave-one-out), an int K keeps configs with K test domains, ``"all"`` keeps every
config. When a domain is a column of several configs, its label names the training domains (and if needed the val
and test domains) to tell them apart.

:func:`build_tables` gives one selection's tables; :func:`summarize_selections` every method's tables of one sweep
and the line counting its job folders, in one pass: the finished value that `dganalysis collect` prints.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dganalysis.records.read import DOMAINBED_ENVIRONMENTS, summary_line
from dganalysis.records.selection import summarize
from dganalysis.records.selection_methods import METHODS

if TYPE_CHECKING:  # numpy and pandas are imported where tables are built: `dganalysis collect`'s options need none
    import pandas as pd

_SPLIT = ["train_domains", "test_domains", "val_domains"]


@dataclass
class Table:
    """One table's numbers: ``cells`` is long (algorithm, column, mean, se, n; accuracies in %, the "Avg" column's
    rows with se NaN and n 0), ``columns`` the column order (without "Avg"), ``algorithms`` the row order."""

    title: str
    dataset: str | None
    algorithms: list[str]
    columns: list[str]
    cells: pd.DataFrame


@dataclass
class SelectionSummaries:
    """Every method's tables of one sweep (:func:`summarize_selections`): ``tables`` maps each method, in the order
    asked for, to its :func:`build_tables` (empty when the method selected nothing), and ``summary_line`` counts the
    job folders read and left out (:func:`dganalysis.records.read.summary_line`)."""

    tables: dict[str, list[Table]]
    summary_line: str


def summarize_selections(
    selections: dict[str, pd.DataFrame],
    methods: Sequence[str],
    test_domains: str | int = "auto",
    ddof: int = 1,
    domain_order: dict[str, list[str]] | None = None,
) -> SelectionSummaries:
    """The tables of each of ``methods`` (:func:`build_tables` of ``selections[method]``) and the line counting the
    job folders read (of the first method's selection: every selection of one reading carries its ``attrs``).
    ``selections``: ``{method: select(...)}`` of the same records, e.g.
    :func:`dganalysis.records.indexed.select_for_tables`'s; ``domain_order`` as :func:`build_tables`'."""
    tables = {m: build_tables(selections[m], test_domains, ddof, domain_order) for m in methods}
    return SelectionSummaries(tables, summary_line(selections[methods[0]]))


def build_tables(
    selected: pd.DataFrame,
    test_domains: str | int = "auto",
    ddof: int = 1,
    domain_order: dict[str, list[str]] | None = None,
) -> list[Table]:
    """Per-dataset tables plus the "Averages" table from the output of :func:`dganalysis.records.selection.select`
    (none for an empty selection). ``domain_order``: each dataset's domains in environment order
    (:func:`dganalysis.records.read.domain_orders`), the order of its columns; DomainBed's order for its datasets
    where it is not given."""
    import numpy as np
    import pandas as pd

    if selected.empty:
        return []
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
    orders = [_column_order(part, ds, domain_order or {}) for ds, part in zip(datasets, parts)]
    per_trial = [part.groupby(["algorithm", "trial_seed"], as_index=False)["acc"].mean().assign(column=ds)
                 for ds, part in zip(datasets, parts)]
    # each dataset's cells and its trial averages summarized alone, never one summary over all datasets: pandas'
    # group mean sums with compensation or plainly depending on the whole frame it is given (groups in order, any
    # NaN), so a dataset's numbers come from its rows
    summaries = [_percent(summarize(frame, by=["algorithm", "column"], ddof=ddof)) for frame in [*parts, *per_trial]]
    tables = []
    for ds, order, cells in zip(datasets, orders, summaries):
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


__all__ = ["SelectionSummaries", "Table", "build_tables", "summarize_selections"]
