"""Grayscale vs binary (Zhang, Zhang & Liu, Sec. 4.1: Table 7, Fig. 8, Table 8).

Tables put several selected frames (contract of ``dganalysis.records.selection.select``) side by side: one row per
(algorithm, task) where a task is ``(train domains) → test domain``; per frame the mean ± SE over trials.
Trials are first averaged over rows that share (task, trial) (several runs testing on the same domain).
Table 7's finding is decided by :func:`dganalysis.findings.binarization.binarization_finding`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.validation import check_frame, check_mapping, check_str


def task_label(train_domains: str, domain: str) -> str:
    """``"(d0,d1) → d2"`` as in Table 7."""
    check_str(train_domains, "train_domains", func="task_label")
    check_str(domain, "domain", func="task_label")
    return f"({train_domains}) → {domain}"


def _summary(selected: pd.DataFrame, method_col: str, acc_col: str, scale: float) -> pd.DataFrame:
    need = {method_col, acc_col, "train_domains", "domain", "trial_seed"}
    missing = need - set(selected.columns)
    if missing:
        raise ValueError(f"selected frame: missing columns {sorted(missing)} (expected the selection contract)")
    t = selected.groupby([method_col, "train_domains", "domain", "trial_seed"], sort=False)[acc_col].mean() * scale
    g = t.groupby(level=[0, 1, 2], sort=False)
    s = pd.DataFrame({"mean": g.mean(), "se": standard_error_from_sd(g.std(ddof=1), g.count()), "n": g.count()})
    s.index.names = ["algorithm", "train_domains", "domain"]
    return s


def side_by_side(
    frames: Mapping[str, pd.DataFrame],
    tasks: Sequence[tuple[str, str]] | None = None,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    scale: float = 100.0,
) -> pd.DataFrame:
    """One row per (algorithm, task); for each frame label L the columns ``L mean``, ``L se``, ``L n``.

    ``tasks``: (train_domains, test domain) pairs to keep, in order (None = all found). Used for Table 7
    (gray vs binary) and Table 8 (mini vs full class set).
    """
    check_mapping(frames, "frames", func="side_by_side", what="a mapping label → selected frame")
    for _k, _v in frames.items():
        check_frame(_v, (), f"frames[{_k!r}]", func="side_by_side")
    parts = [_summary(f, method_col, acc_col, scale).add_prefix(f"{label} ") for label, f in frames.items()]
    out = pd.concat(parts, axis=1).reset_index()
    if tasks is not None:
        order = {(tr, d): i for i, (tr, d) in enumerate(tasks)}
        out = out[[(tr, d) in order for tr, d in zip(out["train_domains"], out["domain"])]]
        out = out.assign(_o=[order[(tr, d)] for tr, d in zip(out["train_domains"], out["domain"])])
        out = out.sort_values(["_o"], kind="stable").drop(columns="_o")
    if methods is not None:
        out = out[out["algorithm"].isin(methods)]
        out = out.assign(_m=out["algorithm"].map({m: i for i, m in enumerate(methods)}))
        out = out.sort_values(["_m"], kind="stable").drop(columns="_m")
    out.insert(1, "task", [task_label(tr, d) for tr, d in zip(out["train_domains"], out["domain"])])
    return out.reset_index(drop=True)


def binarization_table(
    selected_gray: pd.DataFrame,
    selected_binary: pd.DataFrame,
    tasks: Sequence[tuple[str, str]] | None = None,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    scale: float = 100.0,
) -> pd.DataFrame:
    """Table 7: per (algorithm, task) grayscale and binary accuracy (mean ± SE over trials, × ``scale``) and
    ``delta = binary − gray``; ``grayscale``/``binary`` hold the printed ``"mean ± se"`` strings."""
    check_frame(selected_gray, (), "selected_gray", func="binarization_table")
    check_frame(selected_binary, (), "selected_binary", func="binarization_table")
    check_str(method_col, "method_col", func="binarization_table")
    check_str(acc_col, "acc_col", func="binarization_table")
    from dganalysis.plots import format_mean_se

    t = side_by_side({"gray": selected_gray, "binary": selected_binary}, tasks, methods, method_col, acc_col, scale)
    t["delta"] = t["binary mean"] - t["gray mean"]
    t["grayscale"] = [format_mean_se(m, s) for m, s in zip(t["gray mean"], t["gray se"])]
    t["binary"] = [format_mean_se(m, s) for m, s in zip(t["binary mean"], t["binary se"])]
    return t


def plot_binarization_bars(
    table: pd.DataFrame, task: str | None = None, extra: Mapping[str, pd.Series] | None = None, ax=None
):
    """Fig. 8: per method, bars of binary and grayscale accuracy on one task (default: the last task, e.g.
    ``(d0,d1,d2) → hw``) with SE error bars; ``extra`` adds bar series {label: Series indexed by algorithm}
    (e.g. a DomainNet run)."""
    check_frame(table, (), "table", func="plot_binarization_bars")
    import matplotlib.pyplot as plt

    task = task or table["task"].iloc[-1]
    t = table[table["task"] == task].set_index("algorithm")
    series = [("binary", t["binary mean"], t["binary se"]), ("grayscale", t["gray mean"], t["gray se"])]
    for label, s in (extra or {}).items():
        series.append((label, s.reindex(t.index), None))
    x = np.arange(len(t))
    w = 0.8 / len(series)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(4, 0.7 * len(t) + 2), 3.2))
    for i, (label, m, s) in enumerate(series):
        ax.bar(x - 0.4 + w * (i + 0.5), m, w, yerr=s, capsize=2, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels(t.index, rotation=45 if len(t) > 4 else 0, ha="right" if len(t) > 4 else "center")
    ax.set_ylabel(f"accuracy on {task.split('→')[-1].strip()} (%)")
    ax.set_title(task, fontsize="small")
    ax.legend(fontsize="small")
    fig.tight_layout()
    return fig
