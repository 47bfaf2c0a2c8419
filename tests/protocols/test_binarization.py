"""Gray vs binary table (Zhang, Zhang & Liu Table 7) on a hand-made selected frame."""

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

from dganalysis.protocols.binarization import binarization_table, plot_binarization_bars


def sel(values):
    return pd.DataFrame([dict(dataset="P", algorithm=a, train_domains=tr, test_domains=d, trial_seed=t, domain=d, acc=v)
                         for (a, tr, d), vs in values.items() for t, v in enumerate(vs)])


def test_binarization_table_by_hand():
    gray = sel({("ERM", "d0,d1", "d2"): [0.90, 0.92], ("ERM", "d0,d1,d2", "hw"): [0.10, 0.20]})
    binary = sel({("ERM", "d0,d1", "d2"): [0.88, 0.86], ("ERM", "d0,d1,d2", "hw"): [0.60, 0.62]})
    t = binarization_table(gray, binary, tasks=[("d0,d1", "d2"), ("d0,d1,d2", "hw")])
    assert list(t["task"]) == ["(d0,d1) → d2", "(d0,d1,d2) → hw"]
    hw = t.iloc[1]
    assert hw["gray mean"] == pytest.approx(15.0) and hw["gray se"] == pytest.approx(5.0)
    assert hw["binary mean"] == pytest.approx(61.0) and hw["delta"] == pytest.approx(46.0)
    assert hw["grayscale"] == "15.0 ± 5.0"
    fig = plot_binarization_bars(t)
    assert len(fig.axes[0].patches) == 2
