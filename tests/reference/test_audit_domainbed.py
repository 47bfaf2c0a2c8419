"""load_indexed on DomainBed's own sweeps: the frame of records.load, and DomainBed's selections exactly.

``misc/test_sweep_data`` (real VLCS runs) is indexed into a temporary cache folder (``cache_dir``), never beside the
reference checkout; the tie-heavy sweeps of :mod:`tests.reference.test_domainbed_selection` check that selection on
the categorical frame gives DomainBed's ``sweep_acc`` bit for bit.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dganalysis.records import load, selection
from dganalysis.records.index import load_indexed
from dganalysis.records.index_file import INDEX_NAME
from tests.reference.test_domainbed_selection import METHODS, domainbed_selected, write_sweep


def _as_str(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype({c: "str" for c in df.columns if isinstance(df[c].dtype, pd.CategoricalDtype)})


def _selected(df: pd.DataFrame, method: str) -> dict[tuple, float]:
    sel = selection.select(df, method)
    sel = sel[~sel["test_domains"].astype(str).str.contains(",")]
    envs = {ds: list(doms) for ds, doms in df.groupby("dataset", sort=False)["domain"].unique().items()}
    return {(r.trial_seed, r.dataset, r.algorithm, list(envs[r.dataset]).index(r.domain)): r.acc
            for r in sel.itertuples()}


@pytest.mark.parametrize("categorical", [False, True])
def test_test_sweep_data_frame_and_selections(domainbed, tmp_path, categorical):
    path = domainbed.root / "domainbed" / "misc" / "test_sweep_data"
    # a copy of DomainBed may already hold an index an older reader left there: it must be left as it is
    before = (path / INDEX_NAME).read_bytes() if (path / INDEX_NAME).exists() else None
    want = load(path, progress=False)
    for _ in range(2):  # first read, then through the index
        got = load_indexed(path, categorical=categorical, cache_dir=tmp_path)
        pd.testing.assert_frame_equal(want, _as_str(got))
        assert got.attrs == want.attrs and got.attrs["jobs"]["read"] == 40
    after = (path / INDEX_NAME).read_bytes() if (path / INDEX_NAME).exists() else None
    assert after == before and len(list(tmp_path.glob("*.bin"))) == 1
    for method in METHODS:
        theirs = domainbed_selected(domainbed, path, method)
        assert len(theirs) == 8 and _selected(got, method) == theirs
        pd.testing.assert_frame_equal(selection.select(want, method), _as_str(selection.select(got, method)),
                                      check_dtype=False)


@pytest.mark.parametrize("seed", [0, 1])
def test_tie_heavy_sweeps_select_exactly(domainbed, tmp_path, seed):
    write_sweep(tmp_path / "sweep", seed, n_hparams=3, trials=(0, 1))
    got = load_indexed(tmp_path / "sweep")
    pd.testing.assert_frame_equal(load(tmp_path / "sweep", progress=False), _as_str(got))
    for method in METHODS:
        theirs = domainbed_selected(domainbed, tmp_path / "sweep", method)
        assert theirs and _selected(got, method) == theirs
