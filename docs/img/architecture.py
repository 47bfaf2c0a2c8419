"""Draws docs/img/architecture.svg, the data flow of docs/architecture.md: python docs/img/architecture.py"""

from pathlib import Path

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

STEPS = [
    ("YAML profile", "params/<profile>/*.yaml"),
    ("notebook parameters", "studies/params.py"),
    ("plan", "studies/plans.py"),
    ("jobs", "training/job.py, sweep/grid.py"),
    ("store", "sweep/launcher.py, sweep/store.py → training/"),
    ("index and records", "records/ (load)"),
    ("model selection", "records/selection.py, records/rules.py"),
    ("statistics", "stats/"),
    ("verdicts", "audit/, findings/engine.py → verdicts.py"),
    ("report", "studies/report.py → index.md, report.html"),
]

plt.rcParams["svg.fonttype"] = "none"  # text stays text: searchable, no embedded glyphs
fig, ax = plt.subplots(figsize=(6.4, 0.62 * len(STEPS)))
ax.set_xlim(0, 1)
ax.set_ylim(len(STEPS) - 0.5, -0.5)
ax.axis("off")
for i, (what, where) in enumerate(STEPS):
    ax.text(0.30, i, what, ha="right", va="center", fontsize=11, weight="bold",
            bbox={"boxstyle": "round,pad=0.35", "fc": "#e8f0fb", "ec": "#4a78b5"})
    ax.text(0.34, i, where, ha="left", va="center", fontsize=10, family="monospace", color="#333333")
    if i:
        ax.annotate("", (0.22, i - 0.28), (0.22, i - 0.72), arrowprops={"arrowstyle": "->", "color": "#4a78b5"})
fig.savefig(Path(__file__).with_suffix(".svg"), bbox_inches="tight", metadata={"Date": None})
