"""One LaTeX escape for every table and caption (tables, plots.save_table, leaderboard LaTeX)."""

from __future__ import annotations

import pandas as pd

from dganalysis import plots
from dganalysis.latex import latex_escape


def test_latex_escape_every_special_character():
    assert latex_escape(r"a&b%c_d#e$f{g}h~i^j\k") == (r"a\&b\%c\_d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j"
                                                      r"\textbackslash{}k")
    assert latex_escape("plain ρ text") == "plain ρ text"


def test_save_table_caption_uses_the_one_escape(tmp_path):
    caption = "gain $>$ 5% for {ERM_WC} ~ ^"
    plots.save_table(pd.DataFrame({"a": [1.0]}), "t", tmp_path, caption=caption)
    tex = (tmp_path / "tables" / "t.tex").read_text()
    assert "\\caption{" + latex_escape(caption) + "}" in tex
