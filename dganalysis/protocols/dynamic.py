"""Dynamic DG criteria, described: the swap test (ST) and Domain+ (Zhang, Zhang & Liu, Sec. 4.2–4.3, Figs. 9–12).

Both criteria read a *selected* frame of the team contract (``dganalysis.records.select``): one row per
(dataset, algorithm, train_domains, test_domains, trial_seed, domain) with the selected test accuracy ``acc`` on
test domain ``domain``. DomainBed sweeps loaded through ``dganalysis.records.load`` give the same frame.

This module **describes**: the per-trial accuracies (:func:`trial_accuracies`, the per-unit frame the findings take),
the per-choice means of the swap test (:func:`plot_swap_test`) and the Domain+ changes with per-comparison intervals
(:func:`domain_plus`, :func:`plot_domain_plus`). The paper's findings are **decided** by the audit's engine in
:mod:`dganalysis.findings.dynamic` (claims, ROPE, one step-down per finding); nothing here makes a verdict.

Runs with the same trial seed share their data splits (``dganalysis.training.train``), so a Domain+ change is shown as the
mean of per-trial differences when at least two trial seeds are shared (:func:`dganalysis.stats.ttests.compare`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.stats.ttests import compare
from dganalysis.validation import check_frame, check_scalar, check_str

log = logging.getLogger(__name__)

# ----------------------------------------------------------------------------------------------- frame helpers
def _split(value: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(value)


def trial_accuracies(
    selected: pd.DataFrame,
    test_domain: str,
    train_choices: Sequence[str | Sequence[str]] | None = None,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
) -> pd.DataFrame:
    """Per (method, train choice, trial) accuracy on ``test_domain``: columns ``method, train, trial_seed, acc``.

    ``train_choices`` are matched to the frame's ``train_domains`` as sets (order-free); the frame's spelling is kept.
    Several runs of one trial that test on the same domain (e.g. different test-domain groups) are averaged.
    """
    check_frame(selected, (), "selected", func="trial_accuracies")
    check_str(test_domain, "test_domain", func="trial_accuracies")
    need = {method_col, acc_col, "train_domains", "trial_seed", "domain"}
    missing = need - set(selected.columns)
    if missing:
        raise ValueError(f"selected frame: missing columns {sorted(missing)} (expected the selection contract)")
    df = selected[selected["domain"] == test_domain]
    if dataset is not None:
        df = df[df["dataset"] == dataset]
    elif "dataset" in df and df["dataset"].nunique() > 1:
        raise ValueError(f"selected frame holds datasets {sorted(df['dataset'].unique())}: pass dataset=")
    if "selection" in df and df["selection"].nunique() > 1:
        raise ValueError(f"selected frame mixes selection methods {sorted(df['selection'].unique())}: filter first")
    if df.empty:
        raise ValueError(f"test_domain {test_domain!r}: no selected rows with this test domain")
    key = df["train_domains"].map(lambda s: frozenset(_split(s)))
    if train_choices is not None:
        wanted = {frozenset(_split(c)) for c in train_choices}
        found = set(key)
        absent = [",".join(sorted(w)) for w in wanted - found]
        if absent:
            raise ValueError(f"train_choices: no runs trained on {absent} and tested on {test_domain!r}")
        df = df[key.isin(wanted)]
    if methods is not None:
        unknown = sorted(set(methods) - set(df[method_col]))
        if unknown:
            raise ValueError(f"methods: {unknown} have no rows for test domain {test_domain!r}")
        df = df[df[method_col].isin(methods)]
    out = (
        df.groupby([method_col, "train_domains", "trial_seed"], sort=False)[acc_col]
        .mean()
        .reset_index()
        .rename(columns={method_col: "method", "train_domains": "train", acc_col: "acc"})
    )
    return out


def _order(values: Sequence[str], preferred: Sequence[str] | None) -> list[str]:
    if preferred is None:
        return list(dict.fromkeys(values))
    return [v for v in preferred if v in set(values)]


def _ordered_choices(trials: pd.DataFrame, train_choices) -> list[str]:
    frame_names = list(dict.fromkeys(trials["train"]))
    if train_choices is None:
        return frame_names
    by_set = {frozenset(_split(n)): n for n in frame_names}
    return [by_set[frozenset(_split(c))] for c in train_choices]


def _series(trials: pd.DataFrame, train: str, method: str) -> pd.Series:
    g = trials[(trials["train"] == train) & (trials["method"] == method)]
    return pd.Series(g["acc"].to_numpy(), index=g["trial_seed"].to_numpy(), dtype=float)


# ----------------------------------------------------------------------------------------------- Domain+
def domain_plus(
    selected: pd.DataFrame,
    chain: Sequence[str | Sequence[str]],
    test_domain: str,
    methods: Sequence[str] | None = None,
    confidence: float = 0.95,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
    paired: bool | None = None,
) -> pd.DataFrame:
    """Domain+ of Zhang, Zhang & Liu Sec. 4.3 (Figs. 11–12), described: accuracy change when domains are added.

    ``chain``: training-domain sets, each a strict superset of the one before (Fig. 11: two sets; Fig. 12: a
    chain). One row per (step, method): ``base, extended, added, mean_base, mean_ext, delta, se, ci_low, ci_high``
    (``confidence``, per comparison: a description, not a decision), ``effect`` and ``test`` (paired on shared
    trial seeds, else Welch). The findings about these changes are decided by
    :func:`dganalysis.findings.dynamic.decide_domain_plus`.
    """
    check_frame(selected, (), "selected", func="domain_plus")
    check_str(test_domain, "test_domain", func="domain_plus")
    check_scalar(confidence, "confidence", func="domain_plus", low=0.0, high=1.0, low_open=True, high_open=True)
    if len(chain) < 2:
        raise ValueError(f"chain: need at least 2 training-domain sets, got {list(chain)}")
    sets = [frozenset(_split(c)) for c in chain]
    for s0, s1 in zip(sets, sets[1:]):
        if not s0 < s1:
            raise ValueError(f"chain: each set must strictly contain the previous one, got {sorted(s0)} → {sorted(s1)}")
        if test_domain in s1:
            raise ValueError(f"chain: test_domain {test_domain!r} is among the training domains {sorted(s1)}")
    trials = trial_accuracies(selected, test_domain, chain, methods, method_col, acc_col, dataset)
    labels = _ordered_choices(trials, chain)
    names = _order(trials["method"], methods)
    rows = []
    for step, (c0, c1) in enumerate(zip(labels, labels[1:])):
        added = ",".join(d for d in _split(c1) if d not in set(_split(c0)))
        for m in names:
            x0, x1 = _series(trials, c0, m), _series(trials, c1, m)
            w = compare(x1, x0, confidence=confidence, paired=paired)
            rows.append(dict(step=step, base=c0, extended=c1, added=added, method=m,
                             mean_base=x0.mean() if len(x0) else np.nan, mean_ext=x1.mean() if len(x1) else np.nan,
                             n_base=w.n_b, n_ext=w.n_a, n_pairs=w.n_pairs, test=w.test, delta=w.diff, se=w.se,
                             ci_low=w.ci_low, ci_high=w.ci_high, effect=w.effect))
    out = pd.DataFrame(rows)
    out["test_domain"] = test_domain
    return out


# ----------------------------------------------------------------------------------------------- summary
def swap_means(selected: pd.DataFrame, test_domain: str, train_choices: Sequence[str | Sequence[str]] | None = None,
               methods: Sequence[str] | None = None) -> pd.DataFrame:
    """Method × training choice: mean accuracy on ``test_domain`` over trials (what Fig. 9 plots)."""
    trials = trial_accuracies(selected, test_domain, train_choices, methods)
    out = trials.pivot_table(index="method", columns="train", values="acc", aggfunc="mean", sort=False)
    out.columns.name = None
    return out.reindex(_order(trials["method"], methods))


def dynamic_summary(
    swap: pd.DataFrame | None = None,
    domain_plus_results: pd.DataFrame | None = None,
    lodo_rank: pd.Series | None = None,
) -> pd.DataFrame:
    """One row per method: mean accuracy per swap-test choice (``swap``: :func:`swap_means`), Δ per Domain+ step,
    and the leave-one-domain-out rank — descriptions side by side, no verdicts (those are the findings').

    Puts the static protocol (``lodo_rank``, e.g. from :func:`dganalysis.protocols.leaderboard.ranks`) next to the
    dynamic criteria so disagreements are visible (Zhang, Zhang & Liu, Sec. 4.3)."""
    if swap is not None:
        check_frame(swap, (), "swap", func="dynamic_summary")
    if domain_plus_results is not None:
        check_frame(domain_plus_results, (), "domain_plus_results", func="dynamic_summary")
    parts = []
    if swap is not None and len(swap):
        parts.append(swap.rename(columns=lambda c: f"ST {c}"))
    if domain_plus_results is not None and len(domain_plus_results):
        dp = domain_plus_results.copy()
        dp["col"] = "D+ Δ " + dp["base"] + " +" + dp["added"] + " →" + dp["test_domain"]
        wide = dp.pivot_table(index="method", columns="col", values="delta", aggfunc="first", sort=False)
        wide.columns.name = None
        parts.append(wide)
    if lodo_rank is not None:
        parts.append(lodo_rank.rename("LODO rank").to_frame())
    if not parts:
        raise ValueError("dynamic_summary: pass at least one of swap, domain_plus_results, lodo_rank")
    out = pd.concat(parts, axis=1)
    out.index.name = "method"
    return out


# ----------------------------------------------------------------------------------------------- figures
def _trial_summary(trials: pd.DataFrame) -> pd.DataFrame:
    g = trials.groupby(["train", "method"], sort=False)["acc"]
    s = g.agg(["mean", "count"]).join(g.std(ddof=1).rename("sd"))
    s["se"] = standard_error_from_sd(s["sd"], s["count"])
    return s.reset_index()


def plot_swap_test(
    selected: pd.DataFrame,
    test_domain: str,
    train_choices: Sequence[str | Sequence[str]] | None = None,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
    xticks: str = "name",
    ax=None,
):
    """Fig. 9/10 style: methods on x, mean ± SE accuracy on ``test_domain``, one line per training choice.

    ``xticks="name"`` (default) writes each method's name under its point, so the figure reads without a key;
    ``"index"`` numbers them 1..M as the paper's figures do (Zhang, Zhang & Liu), with the legend title as the key.
    """
    check_frame(selected, (), "selected", func="plot_swap_test")
    check_str(test_domain, "test_domain", func="plot_swap_test")
    import matplotlib.pyplot as plt

    _check_xticks(xticks)
    trials = trial_accuracies(selected, test_domain, train_choices, methods, method_col, acc_col, dataset)
    summ = _trial_summary(trials)
    names = _order(trials["method"], methods)
    x = {m: i + 1 for i, m in enumerate(names)}
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(4.5, 0.45 * len(names) + 2), 3.2))
    for c in _ordered_choices(trials, train_choices):
        s = summ[summ["train"] == c].set_index("method").reindex(names)
        ax.errorbar([x[m] for m in names], s["mean"], yerr=s["se"], marker="o", capsize=3, label=f"{c} → {test_domain}")
    _method_axis(ax, list(x.values()), names, xticks)
    ax.set_ylabel(f"accuracy on {test_domain}")
    title = None if xticks != "index" else "  ".join(f"{i}={m}" for m, i in x.items())
    ax.legend(title=title, fontsize="small", title_fontsize="x-small")
    fig.tight_layout()
    return fig


def plot_domain_plus(dp: pd.DataFrame, methods: Sequence[str] | None = None, xticks: str = "name"):
    """Figs. 11–12 style (left: mean accuracy per training set, methods on x, one line per set) plus the
    per-method change Δ with its per-comparison CI for each step (right; a description: the findings are decided
    by :func:`dganalysis.findings.dynamic.decide_domain_plus`).

    ``dp`` is the output of :func:`domain_plus` (several calls may be concatenated). ``xticks``: ``"name"``
    (default) or the paper's ``"index"`` (1..M, with the key as the figure's title), as in :func:`plot_swap_test`.
    """
    check_frame(dp, (), "dp", func="plot_domain_plus")
    import matplotlib.pyplot as plt

    _check_xticks(xticks)
    names = _order(dp["method"], methods)
    x = np.arange(1, len(names) + 1)
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(max(8, 0.9 * len(names) + 4), 3.3))
    means: dict[str, dict[str, float]] = {}
    for _, r in dp.iterrows():
        means.setdefault(r["base"], {})[r["method"]] = r["mean_base"]
        means.setdefault(r["extended"], {})[r["method"]] = r["mean_ext"]
    for train, vals in means.items():
        a0.plot(x, [vals.get(m, np.nan) for m in names], marker="o", label=train)
    a0.set_ylabel(f"accuracy on {dp['test_domain'].iloc[0]}")
    a0.legend(fontsize="small", title="training domains", title_fontsize="small")
    steps = list(dict.fromkeys(zip(dp["base"], dp["extended"])))
    width = 0.8 / max(len(steps), 1)
    for j, (b, e) in enumerate(steps):
        g = dp[(dp["base"] == b) & (dp["extended"] == e)].set_index("method").reindex(names)
        xs = x - 0.4 + width * (j + 0.5)
        err = np.vstack([g["delta"] - g["ci_low"], g["ci_high"] - g["delta"]])
        color = f"C{j}"
        a1.errorbar(xs, g["delta"], yerr=err, fmt="none", capsize=3, alpha=0.8, ecolor=color,
                    label=f"{b} +{g['added'].iloc[0]}")
        a1.scatter(xs, g["delta"], color=color, zorder=3)
    a1.axhline(0, color="k", lw=0.8)
    a1.set_ylabel("Δ accuracy (95% CI per comparison)")
    a1.legend(fontsize="small", title="step", title_fontsize="small")
    for a in (a0, a1):
        _method_axis(a, list(x), names, xticks)
    if xticks == "index":
        fig.suptitle("  ".join(f"{i}={m}" for i, m in zip(x, names)), fontsize="small")
    fig.tight_layout()
    return fig


def _check_xticks(xticks: str) -> None:
    if xticks not in ("name", "index"):
        raise ValueError(f"xticks: expected 'name' or 'index', got {xticks!r}")


def _method_axis(ax, x: Sequence[float], names: Sequence[str], xticks: str) -> None:
    """Methods on the x axis: their names (slanted when long) or the paper's 1..M indices."""
    ax.set_xticks(list(x))
    if xticks == "index":
        ax.set_xticklabels([str(int(i)) for i in x])
        ax.set_xlabel("method index")
        return
    slant = max((len(n) for n in names), default=0) * len(names) > 40
    ax.set_xticklabels(names, rotation=35 if slant else 0, ha="right" if slant else "center")
    ax.set_xlabel("method")
