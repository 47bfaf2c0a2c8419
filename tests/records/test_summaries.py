"""The numbers of the result tables (``records.summaries``): each cell is the mean and SE over trials of the selected
accuracy in %, the columns follow the domain order, and one value holds every method's tables and the counting line."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.records import domain_orders, load, select, summary_line
from dganalysis.records.summaries import build_tables, summarize_selections
from tests.records.test_selection import random_domainbed_sweep


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    random_domainbed_sweep(root, trials=(0, 1, 2), n_hparams=2)
    return load(root, progress=False)


@pytest.mark.parametrize("ddof", [0, 1])
def test_a_cell_is_mean_and_se_over_trials_in_percent(frame, ddof):
    sel = select(frame, "oracle")
    table = build_tables(sel, ddof=ddof)[0]
    single = sel[sel["test_domains"].str.count(",") == 0]
    cells = table.cells.set_index(["algorithm", "column"])
    for (alg, dom), acc in single.groupby(["algorithm", "domain"])["acc"]:
        a = acc.to_numpy()
        mean, se, n = cells.loc[(alg, dom), ["mean", "se", "n"]]
        assert n == 3 and mean == pytest.approx(100 * a.mean())
        assert se == pytest.approx(100 * a.std(ddof=ddof) / np.sqrt(len(a)))
    avg = cells.xs("Avg", level="column")
    means = cells.drop(index="Avg", level="column")["mean"].groupby(level="algorithm").mean()
    assert np.allclose(avg["mean"].to_numpy(), means.reindex(avg.index).to_numpy()) and avg["se"].isna().all()


def test_columns_follow_the_domain_order(frame):
    sel = select(frame, "training_domain")
    order = domain_orders(frame)
    (dataset, domains), = order.items()
    assert build_tables(sel, domain_order=order)[0].columns == domains
    assert build_tables(sel, domain_order={dataset: domains[::-1]})[0].columns == domains[::-1]


def test_one_value_holds_every_methods_tables_and_the_counting_line(frame):
    methods = ["oracle", "training_domain"]
    selections = {m: select(frame, m) for m in methods}
    for s in selections.values():
        s.attrs = frame.attrs  # as a sweep's selections carry the reading's attrs
    got = summarize_selections(selections, methods, test_domains="all", ddof=0)
    assert list(got.tables) == methods
    for m in methods:
        titles = [t.title for t in build_tables(selections[m], "all", 0)]
        assert [t.title for t in got.tables[m]] == titles and len(titles) == 2
    assert got.summary_line == summary_line(frame) and got.summary_line.startswith("jobs: ")
    nothing = summarize_selections({"oracle": selections["oracle"].iloc[:0]}, ["oracle"])
    assert nothing.tables == {"oracle": []}
