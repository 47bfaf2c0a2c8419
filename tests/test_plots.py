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



@pytest.fixture
def styled():
    """The package's style for one test; matplotlib's settings are restored afterwards."""
    import matplotlib

    matplotlib.use("Agg")
    with matplotlib.rc_context():
        plots.setup_style()
        yield matplotlib.rcParams


def _png_size(fig, **kw):
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", **kw)
    return Image.open(io.BytesIO(buf.getvalue())).size


def test_save_figure_keeps_the_tight_box(tmp_path, styled):
    """The saved PNG has the pixel size a plain ``savefig(bbox_inches="tight")`` gives (a label that sticks out of
    the figure widens the crop), so no shortcut in save_figure changes a figure's geometry."""
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [1, 0])
    ax.set_yticks([0, 1], ["a rather long tick label that sticks out", "b"])
    try:
        png = plots.save_figure(fig, "tight", tmp_path)[1]
        tight = _png_size(fig, bbox_inches="tight")
        assert tight[0] > 3 * 200  # the box matters for this figure: wider than the 3-inch figure at 200 dpi
        size = Image.open(png).size
        assert abs(size[0] - tight[0]) <= 1 and abs(size[1] - tight[1]) <= 1, (size, tight)
    finally:
        plt.close(fig)


def test_setup_style_renders_chinese_with_one_fallback_font(styled):
    """PaHCC's class names (GB2312 level 1) render through the one CJK fallback font setup_style puts after
    sans-serif: no glyph is missing, where the same text with sans-serif alone misses every glyph."""
    import warnings

    import matplotlib.pyplot as plt

    family = styled["font.family"]
    if len(family) < 2:
        pytest.skip("no CJK font installed (run dganalysis/data/pahcc/install_fonts.sh)")
    assert family[0] == "sans-serif" and len(family) == 2

    def missing(text: str, fontfamily=None) -> list[str]:
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.set_title(text, fontfamily=fontfamily)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _png_size(fig, bbox_inches="tight")
        finally:
            plt.close(fig)
        return [str(w.message) for w in caught if "missing from font" in str(w.message)]

    assert missing("的一是了我不人在他有") == []
    assert missing("的一是", fontfamily="sans-serif")  # without the fallback the glyphs are missing
