"""Figures and tables: both figure formats, a table as CSV, Markdown and LaTeX with its caption, mean ± SE."""

import numpy as np
import pandas as pd
import pytest

from dganalysis import plots


def test_save_figure_and_table(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    paths = plots.save_figure(fig, "line", tmp_path)
    assert [p.name for p in paths] == ["line.pdf", "line.png"] and all(p.stat().st_size > 100 for p in paths)
    df = pd.DataFrame({"method": ["ERM", "CORAL"], "acc": [91.234, np.nan]})
    plots.save_table(df, "t", tmp_path, caption="Accuracy (%)")
    assert (tmp_path / "tables" / "t.csv").read_text().startswith("method,acc")
    assert "91.2" in (tmp_path / "tables" / "t.md").read_text()
    assert "\\caption{Accuracy (\\%)}" in (tmp_path / "tables" / "t.tex").read_text()
    assert plots.format_mean_se(91.23, 0.456) == "91.2 ± 0.5" and plots.format_mean_se(1.0, float("nan")) == "1.0 ± —"
    with pytest.raises(ValueError, match="figure/table name"):
        plots.save_figure(fig, "a b", tmp_path)
