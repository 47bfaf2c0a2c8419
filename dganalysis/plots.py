"""One figure style and one way to export figures and tables.

``save_figure(fig, name, output_dir)`` writes ``<output_dir>/figures/<name>.pdf`` and ``.png``;
``save_table(df, name, output_dir)`` writes ``<output_dir>/tables/<name>.csv``, ``.tex`` and ``.md``.
All writes are atomic, so an interrupted notebook never leaves a half-written file.
"""

from __future__ import annotations

import io as _io
import math
import re
from pathlib import Path

import pandas as pd

from dganalysis import io
from dganalysis.latex import latex_escape

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
#: Chinese fonts :func:`setup_style` looks for, in order of preference; the first installed one is the fallback
CJK_FONTS = ("Noto Sans CJK SC", "WenQuanYi Zen Hei", "WenQuanYi Micro Hei", "Droid Sans Fallback", "AR PL UMing CN")


def setup_style() -> None:
    """The package's figure style (seaborn paper context, colour-blind palette, tight PDF fonts)."""
    import matplotlib as mpl
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1)
    mpl.rcParams.update({"figure.dpi": 110, "savefig.dpi": 200, "savefig.bbox": "tight", "pdf.fonttype": 42})
    # CJK fallback so Chinese class names (PaHCC: GB2312 level 1, which each of these fonts covers) render.
    # Matplotlib resolves every entry of the family list for every text it measures or draws, so the list holds
    # one fallback font, not all installed ones (five cost ~7% of the time to save the audit's figures).
    from matplotlib import font_manager

    installed = {f.name for f in font_manager.fontManager.ttflist}
    cjk = [n for n in CJK_FONTS if n in installed][:1]
    if not cjk:
        cjk = _register_cjk_font(font_manager)
    if cjk:
        mpl.rcParams["font.family"] = ["sans-serif", *cjk]


def _register_cjk_font(font_manager) -> list[str]:
    """Ask fontconfig for a Chinese font matplotlib's (possibly stale) cache does not know; add it."""
    import subprocess

    try:
        path = subprocess.run(["fc-match", "-f", "%{file}", "sans:lang=zh-cn"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []
    if not path or not Path(path).is_file():
        return []
    try:
        font_manager.fontManager.addfont(path)
        return [font_manager.FontProperties(fname=path).get_name()]
    except (OSError, RuntimeError, ValueError):
        return []


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(f"figure/table name {name!r}: use letters, digits, '_', '-', '.' only")
    return name


def save_figure(fig, name: str, output_dir: str | Path) -> list[Path]:
    """Save a matplotlib figure as PDF and PNG under ``<output_dir>/figures/``."""
    out = Path(output_dir) / "figures"
    paths = []
    for ext in ("pdf", "png"):
        buf = _io.BytesIO()
        fig.savefig(buf, format=ext)
        paths.append(io.write_bytes(out / f"{_check_name(name)}.{ext}", buf.getvalue()))
    return paths


def save_table(
    df: pd.DataFrame, name: str, output_dir: str | Path, caption: str = "", float_format: str = "%.1f", index: bool = False
) -> list[Path]:
    """Save a table as CSV (full precision), LaTeX (booktabs) and Markdown under ``<output_dir>/tables/``."""
    out = Path(output_dir) / "tables"
    _check_name(name)
    csv = df.to_csv(index=index)
    fmt = (lambda v: float_format % v) if float_format else None
    from dganalysis.tables import BOOKTABS_NOTE

    body = BOOKTABS_NOTE + "\n" + df.to_latex(index=index, float_format=fmt, escape=True)
    tex = body if not caption else (
        "\\begin{table}[t]\n\\centering\n\\caption{" + latex_escape(caption) + "}\n" + body + "\\end{table}\n"
    )
    md_df = df.copy()
    if float_format:
        for col in md_df.columns:
            if pd.api.types.is_float_dtype(md_df[col]):
                md_df[col] = md_df[col].map(lambda v: "" if pd.isna(v) else float_format % v)
    md = (f"**{caption}**\n\n" if caption else "") + md_df.to_markdown(index=index, disable_numparse=True) + "\n"
    return [
        io.write_text(out / f"{name}.csv", csv),
        io.write_text(out / f"{name}.tex", tex),
        io.write_text(out / f"{name}.md", md),
    ]


def format_mean_se(mean: float, se: float, digits: int = 1) -> str:
    """``"mean ± se"``; an undefined SE (one trial) prints as ``"mean ± —"``."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    if se is None or (isinstance(se, float) and math.isnan(se)):
        return f"{mean:.{digits}f} ± —"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def domain_grid(ds, per_domain: int = 8, seed: int = 0, title: str | None = None):
    """A Fig. 7-style grid: one row per domain, ``per_domain`` random samples each (2-channel images
    are shown as red/green, 1-channel as gray). Returns the matplotlib Figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    rng = np.random.RandomState(seed)
    fig, axes = plt.subplots(len(ds.domains), per_domain, figsize=(per_domain * 0.9, len(ds.domains) * 0.95),
                             squeeze=False)
    for r, d in enumerate(ds.domains):
        idx = np.sort(rng.choice(len(d), size=min(per_domain, len(d)), replace=False))
        for c in range(per_domain):
            ax = axes[r, c]
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
            if c >= len(idx):
                ax.axis("off")
                continue
            img = np.asarray(d.images[idx[c]])
            if img.shape[0] == 1:
                ax.imshow(img[0], cmap="gray", vmin=0, vmax=255)
            else:
                rgb = np.zeros(img.shape[1:] + (3,), np.uint8)
                rgb[..., : img.shape[0]] = img[:3].transpose(1, 2, 0)
                ax.imshow(rgb)
            if c == 0:
                ax.set_ylabel(d.name, rotation=0, ha="right", va="center")
            ax.set_title(ds.classes[int(d.labels[idx[c]])], fontsize=7)
    if title:
        fig.suptitle(title)
    return fig


def accuracy_by_domain(summary, hue: str = "selection", title: str = "", ylabel: str = "test accuracy (%)"):
    """Grouped bars of mean accuracy per test domain with ±SE error bars.

    ``summary``: a frame with columns ``domain``, ``mean``, ``se`` (fractions) and ``hue``
    (e.g. the output of :func:`dganalysis.records.selection.summarize` for several selection methods).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    domains = list(dict.fromkeys(summary["domain"]))
    groups = list(dict.fromkeys(summary[hue]))
    width = 0.8 / max(1, len(groups))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(domains) * max(1, len(groups)) / 2 + 2), 3.2))
    x = np.arange(len(domains))
    for i, g in enumerate(groups):
        part = summary[summary[hue] == g].set_index("domain").reindex(domains)
        ax.bar(x + (i - (len(groups) - 1) / 2) * width, 100 * part["mean"], width,
               yerr=100 * part["se"].fillna(0), capsize=2, label=str(g))
    ax.set_xticks(x, domains)
    ax.set_xlabel("held-out domain")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8, frameon=False)
    if title:
        ax.set_title(title)
    return fig
