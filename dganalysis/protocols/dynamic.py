"""Dynamic DG criteria: the swap test (ST) and Domain+ (seed 000, Zhang et al., Sec. 4.2–4.3, Figs. 9–12).

Both criteria read a *selected* frame of the team contract (``dganalysis.selection.select``): one row per
(dataset, algorithm, train_domains, test_domains, trial_seed, domain) with the selected test accuracy ``acc`` on
test domain ``domain``. DomainBed sweeps loaded through ``dganalysis.results.load`` give the same frame.

* **Swap test** (Sec. 4.2.1 / 4.3): same number of training domains, different choices, same test domain. The paper
  reads reversals off the curves of Fig. 9; we decide them statistically. For every training-domain choice and every
  pair of methods (a, b) a Welch t-test over trials compares mean accuracies; all these p-values form one family
  corrected with Holm's step-down method (statsmodels ``multipletests``, ``correction``). The outcome per choice is
  a direction d ∈ {+1 (a significantly better), −1 (b significantly better), 0 (no significant difference)}. For every
  pair of choices (c1, c2) the pair (a, b) is
  ``reversal`` (d1 = −d2 ≠ 0), ``consistent`` (d1 = d2 ≠ 0) or ``undecided`` (a tie or too few trials in either
  choice). A method has a *stable advantage* (the paper's ST criterion) when it is involved in no reversal and is
  significantly better than at least one other method under every choice.
* **Domain+** (Sec. 4.2.2 / 4.3): add one training domain (Fig. 11) or a chain of additions (Fig. 12); per method the
  change Δ = mean(extended) − mean(base) over trials with a Welch confidence interval, a Welch t-test, Holm over all
  (method, step) tests; verdict ``copes`` (Δ > 0 significant), ``degrades`` (Δ < 0 significant) or
  ``no significant change``. The CI is per comparison (not adjusted), so a CI excluding 0 can go with
  ``no significant change`` when the test does not survive the correction.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dganalysis.protocols.stats import adjust_pvalues, direction, welch

log = logging.getLogger(__name__)

REVERSAL, CONSISTENT, UNDECIDED = "reversal", "consistent", "undecided"
COPES, DEGRADES, NO_CHANGE, NOT_TESTABLE = "copes", "degrades", "no significant change", "undecided (n<2)"


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


# ----------------------------------------------------------------------------------------------- swap test
@dataclass
class SwapTestResult:
    """Outcome of :func:`swap_test`.

    ``tests``: one row per (train, method_a, method_b): means, Welch diff/se/p, Holm ``p_adj`` and ``direction``.
    ``pairs``: one row per (method_a, method_b, train_1, train_2) with ``dir_1, dir_2``, ``verdict`` and
    ``raw_reversal`` (the signs of the raw mean differences disagree — what one reads off the paper's curves).
    ``methods``: one row per method: reversal/consistent/undecided counts, ``stable_over`` (methods it beats
    significantly under every choice), ``st_verdict``.
    """

    tests: pd.DataFrame
    pairs: pd.DataFrame
    methods: pd.DataFrame
    test_domain: str
    alpha: float
    correction: str

    def reversal_matrix(self, value: str = "reversal") -> pd.DataFrame:
        """Method × method count of training-choice pairs with the given verdict (symmetric)."""
        names = list(self.methods.index)
        mat = pd.DataFrame(0, index=names, columns=names, dtype=int)
        sub = self.pairs[self.pairs["verdict"] == value]
        for (a, b), n in sub.groupby(["method_a", "method_b"]).size().items():
            mat.loc[a, b] += n
            mat.loc[b, a] += n
        return mat


def swap_test(
    selected: pd.DataFrame,
    test_domain: str,
    train_choices: Sequence[str | Sequence[str]] | None = None,
    methods: Sequence[str] | None = None,
    alpha: float = 0.05,
    correction: str = "holm",
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
) -> SwapTestResult:
    """Swap test of seed 000 Sec. 4.3 (Fig. 9/10) decided with Welch t-tests over trials (module docstring).

    ``train_choices``: the training-domain sets to compare (all must have the same size); None = every set in the
    frame that was tested on ``test_domain`` (they must then have the same size). ``correction``: any
    ``statsmodels.stats.multitest.multipletests`` method or ``"none"``; the family is all (choice, method pair) tests.
    """
    trials = trial_accuracies(selected, test_domain, train_choices, methods, method_col, acc_col, dataset)
    choices = _ordered_choices(trials, train_choices)
    sizes = {len(_split(c)) for c in choices}
    if len(sizes) > 1:
        raise ValueError(f"train_choices: the swap test compares choices of equal size, got sizes {sorted(sizes)} "
                         f"for {choices}")
    if len(choices) < 2:
        raise ValueError(f"train_choices: need at least 2 training-domain choices, got {choices}")
    names = _order(trials["method"], methods)
    if len(names) < 2:
        raise ValueError(f"methods: need at least 2 methods, got {names}")
    groups = {k: g["acc"].to_numpy() for k, g in trials.groupby(["train", "method"])}
    rows = []
    for c in choices:
        for a, b in itertools.combinations(names, 2):
            xa, xb = groups.get((c, a), np.array([])), groups.get((c, b), np.array([]))
            w = welch(xa, xb, confidence=1 - alpha)
            rows.append(dict(train=c, method_a=a, method_b=b, mean_a=np.mean(xa) if len(xa) else np.nan,
                             mean_b=np.mean(xb) if len(xb) else np.nan, n_a=w.n_a, n_b=w.n_b, diff=w.diff,
                             se=w.se, t=w.t, df=w.df, p=w.p))
    tests = pd.DataFrame(rows)
    tests["p_adj"] = adjust_pvalues(tests["p"].to_numpy(), alpha, correction)
    tests["direction"] = [direction(d, p, alpha) for d, p in zip(tests["diff"], tests["p_adj"])]
    lookup = tests.set_index(["train", "method_a", "method_b"])
    prow = []
    for a, b in itertools.combinations(names, 2):
        for c1, c2 in itertools.combinations(choices, 2):
            r1, r2 = lookup.loc[(c1, a, b)], lookup.loc[(c2, a, b)]
            d1, d2 = int(r1["direction"]), int(r2["direction"])
            verdict = REVERSAL if d1 * d2 < 0 else CONSISTENT if d1 == d2 != 0 else UNDECIDED
            raw = bool(np.sign(r1["diff"]) * np.sign(r2["diff"]) < 0)
            prow.append(dict(method_a=a, method_b=b, train_1=c1, train_2=c2, diff_1=r1["diff"], diff_2=r2["diff"],
                             dir_1=d1, dir_2=d2, verdict=verdict, raw_reversal=raw))
    pairs = pd.DataFrame(prow)
    return SwapTestResult(tests, pairs, _method_summary(names, tests, pairs, choices), test_domain, alpha, correction)


def _method_summary(names, tests, pairs, choices) -> pd.DataFrame:
    rows = []
    for m in names:
        involved = pairs[(pairs["method_a"] == m) | (pairs["method_b"] == m)]
        counts = involved["verdict"].value_counts()
        # signed direction from m's point of view, per (choice, other method)
        t = tests[(tests["method_a"] == m) | (tests["method_b"] == m)].copy()
        t["other"] = np.where(t["method_a"] == m, t["method_b"], t["method_a"])
        t["d_m"] = np.where(t["method_a"] == m, t["direction"], -t["direction"])
        per_other = t.groupby("other")["d_m"].agg(list)
        over = [o for o, ds in per_other.items() if len(ds) == len(choices) and all(d == 1 for d in ds)]
        under = [o for o, ds in per_other.items() if len(ds) == len(choices) and all(d == -1 for d in ds)]
        n_rev = int(counts.get(REVERSAL, 0))
        if n_rev:
            verdict = "unstable"
        elif over:
            verdict = "stable advantage"
        else:
            verdict = "no decided advantage"
        rows.append(dict(method=m, reversals=n_rev, consistent=int(counts.get(CONSISTENT, 0)),
                         undecided=int(counts.get(UNDECIDED, 0)), raw_reversals=int(involved["raw_reversal"].sum()),
                         stable_over=", ".join(over), stable_under=", ".join(under), st_verdict=verdict))
    return pd.DataFrame(rows).set_index("method")


# ----------------------------------------------------------------------------------------------- Domain+
def domain_plus(
    selected: pd.DataFrame,
    chain: Sequence[str | Sequence[str]],
    test_domain: str,
    methods: Sequence[str] | None = None,
    alpha: float = 0.05,
    confidence: float = 0.95,
    correction: str = "holm",
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
) -> pd.DataFrame:
    """Domain+ criterion of seed 000 Sec. 4.3 (Figs. 11–12): accuracy change when training domains are added.

    ``chain``: training-domain sets, each a strict superset of the one before (Fig. 11: two sets; Fig. 12: a
    chain). One row per (step, method): ``base, extended, added, mean_base, mean_ext, delta, se, ci_low, ci_high``
    (Welch, ``confidence``, unadjusted), ``p``, ``p_adj`` (``correction`` over all rows), ``verdict``.
    """
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
    groups = {k: g["acc"].to_numpy() for k, g in trials.groupby(["train", "method"])}
    rows = []
    for step, (c0, c1) in enumerate(zip(labels, labels[1:])):
        added = ",".join(d for d in _split(c1) if d not in set(_split(c0)))
        for m in names:
            x0, x1 = groups.get((c0, m), np.array([])), groups.get((c1, m), np.array([]))
            w = welch(x1, x0, confidence=confidence)
            rows.append(dict(step=step, base=c0, extended=c1, added=added, method=m,
                             mean_base=np.mean(x0) if len(x0) else np.nan, mean_ext=np.mean(x1) if len(x1) else np.nan,
                             n_base=w.n_b, n_ext=w.n_a, delta=w.diff, se=w.se, ci_low=w.ci_low, ci_high=w.ci_high,
                             p=w.p))
    out = pd.DataFrame(rows)
    out["p_adj"] = adjust_pvalues(out["p"].to_numpy(), alpha, correction)
    out["verdict"] = [_dp_verdict(d, p, alpha) for d, p in zip(out["delta"], out["p_adj"])]
    out["test_domain"] = test_domain
    return out


def _dp_verdict(delta: float, p_adj: float, alpha: float) -> str:
    if np.isnan(p_adj):
        return NOT_TESTABLE
    d = direction(delta, p_adj, alpha)
    return COPES if d > 0 else DEGRADES if d < 0 else NO_CHANGE


# ----------------------------------------------------------------------------------------------- summary
def dynamic_summary(
    swap: SwapTestResult | Sequence[SwapTestResult] | None = None,
    domain_plus_results: pd.DataFrame | None = None,
    lodo_rank: pd.Series | None = None,
) -> pd.DataFrame:
    """One row per method: ST verdict(s), Domain+ verdict per step, and the leave-one-domain-out rank.

    Puts the static protocol (``lodo_rank``, e.g. from :func:`dganalysis.protocols.leaderboard.ranks`) next to the
    dynamic criteria so disagreements are visible (seed 000 Sec. 4.3). Domain+ cells read ``verdict (Δ=…)``.
    """
    parts = []
    swaps = [swap] if isinstance(swap, SwapTestResult) else list(swap or [])
    for s in swaps:
        tag = f"ST→{s.test_domain}" if len(swaps) > 1 else "ST"
        m = s.methods
        parts.append(pd.DataFrame({f"{tag} verdict": m["st_verdict"], f"{tag} reversals": m["reversals"],
                                   f"{tag} stable over": m["stable_over"]}))
    if domain_plus_results is not None and len(domain_plus_results):
        dp = domain_plus_results.copy()
        dp["col"] = "D+ " + dp["base"] + " +" + dp["added"] + " →" + dp["test_domain"]
        dp["cell"] = [f"{v} (Δ={d:+.3g})" if not np.isnan(d) else v for v, d in zip(dp["verdict"], dp["delta"])]
        wide = dp.pivot_table(index="method", columns="col", values="cell", aggfunc="first", sort=False)
        wide.columns.name = None
        counts = dp.groupby("method")["verdict"].agg(
            lambda v: f"{(v == COPES).sum()} copes / {(v == DEGRADES).sum()} degrades / {len(v)}")
        parts.append(wide)
        parts.append(counts.rename("D+ summary").to_frame())
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
    s["se"] = s["sd"] / np.sqrt(s["count"])
    return s.reset_index()


def plot_swap_test(
    selected: pd.DataFrame,
    test_domain: str,
    train_choices: Sequence[str | Sequence[str]] | None = None,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    dataset: str | None = None,
    xticks: str = "index",
    ax=None,
):
    """Fig. 9/10 style: method index on x, mean ± SE accuracy on ``test_domain``, one line per training choice.

    ``xticks="index"`` labels methods 1..M as in the paper (the legend title lists the mapping); ``"name"`` uses names.
    """
    import matplotlib.pyplot as plt

    trials = trial_accuracies(selected, test_domain, train_choices, methods, method_col, acc_col, dataset)
    summ = _trial_summary(trials)
    names = _order(trials["method"], methods)
    x = {m: i + 1 for i, m in enumerate(names)}
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(max(4.5, 0.45 * len(names) + 2), 3.2))
    for c in _ordered_choices(trials, train_choices):
        s = summ[summ["train"] == c].set_index("method").reindex(names)
        ax.errorbar([x[m] for m in names], s["mean"], yerr=s["se"], marker="o", capsize=3, label=f"{c} → {test_domain}")
    ax.set_xticks(list(x.values()))
    ax.set_xticklabels(list(x.values()) if xticks == "index" else names, rotation=0 if xticks == "index" else 45,
                       ha="center" if xticks == "index" else "right")
    ax.set_xlabel("method index" if xticks == "index" else "method")
    ax.set_ylabel(f"accuracy on {test_domain}")
    title = None if xticks != "index" else "  ".join(f"{i}={m}" for m, i in x.items())
    ax.legend(title=title, fontsize="small", title_fontsize="x-small")
    fig.tight_layout()
    return fig


def plot_reversal_matrix(result: SwapTestResult, ax=None, cmap: str = "Reds"):
    """Heatmap of the number of training-choice pairs on which each method pair reverses significantly."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    mat = result.reversal_matrix()
    n_pairs = len(result.pairs[["train_1", "train_2"]].drop_duplicates())
    n = len(mat)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(0.5 * n + 2.5, 0.45 * n + 1.8))
    sns.heatmap(mat, annot=True, fmt="d", cmap=cmap, vmin=0, vmax=max(n_pairs, 1), cbar_kws={"label": "reversals"},
                square=True, ax=ax, linewidths=0.5)
    ax.set_title(f"ST reversals → {result.test_domain} ({n_pairs} choice pairs, {result.correction}, "
                 f"α={result.alpha})", fontsize="small")
    ax.set_xlabel("")
    ax.set_ylabel("")
    fig.tight_layout()
    return fig


def plot_domain_plus(dp: pd.DataFrame, methods: Sequence[str] | None = None, xticks: str = "index"):
    """Figs. 11–12 style (left: mean accuracy per training set, method index on x, one line per set) plus the
    per-method change Δ with its CI for each step (right; filled marker = significant after correction).

    ``dp`` is the output of :func:`domain_plus` (several calls may be concatenated).
    """
    import matplotlib.pyplot as plt

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
        sig = g["verdict"].isin([COPES, DEGRADES]).to_numpy()
        color = f"C{j}"
        a1.errorbar(xs, g["delta"], yerr=err, fmt="none", capsize=3, alpha=0.8, ecolor=color,
                    label=f"{b} +{g['added'].iloc[0]}")
        a1.scatter(xs[sig], g["delta"][sig], color=color, zorder=3)
        a1.scatter(xs[~sig], g["delta"][~sig], facecolors="white", edgecolors=color, zorder=3)
    a1.axhline(0, color="k", lw=0.8)
    a1.set_ylabel("Δ accuracy (CI; filled = significant)")
    a1.legend(fontsize="small", title="step", title_fontsize="small")
    for a in (a0, a1):
        a.set_xticks(x)
        a.set_xticklabels(x if xticks == "index" else names, rotation=0 if xticks == "index" else 45,
                          ha="center" if xticks == "index" else "right")
        a.set_xlabel("method index" if xticks == "index" else "method")
    if xticks == "index":
        fig.suptitle("  ".join(f"{i}={m}" for i, m in zip(x, names)), fontsize="small")
    fig.tight_layout()
    return fig
