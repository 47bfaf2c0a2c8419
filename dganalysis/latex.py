"""LaTeX text escaping: the one rule every LaTeX table and caption of dganalysis uses."""

from __future__ import annotations

_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's ten special characters escaped, so it prints as written (in a cell or a caption)."""
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text))
