"""Dynamic DG criteria: the swap test (ST) and Domain+ (Zhang, Zhang & Liu, Sec. 4.2–4.3, Figs. 9–12).

Both criteria read a *selected* frame of the team contract (``dganalysis.records.select``): one row per
(dataset, algorithm, train_domains, test_domains, trial_seed, domain) with the selected test accuracy ``acc`` on
test domain ``domain``. DomainBed sweeps loaded through ``dganalysis.records.load`` give the same frame.

Statistics (the paper reads reversals and changes off mean curves; we decide them, and show the effect sizes):

* **Pairing.** Runs with the same trial seed share their data splits (``dganalysis.train``), so every contrast is a
  paired t-test on per-trial differences when at least two trial seeds are shared
  (:func:`dganalysis.stats.ttests.compare`), Welch's test otherwise (e.g. DomainBed sweeps with different trial
  sets). Pairing removes the split-to-split variance only: initialisation and minibatch order are seeded by the
  job hash, so they differ between the paired runs.
* **Swap test** (Sec. 4.2.1 / 4.3). The notebook makes one claim per method pair (a, b) and test domain, in one of
  two forms: a **stable** order (a > b under *every* training-domain choice, or b > a under every choice) or a
  **reversal** (a > b under some choice and b > a under another). A stable order is an intersection-union test:
  its p-value is the largest one-sided p over the choices, doubled because the direction is read from the data.
  A reversal needs one choice with a > b *and* one with b > a: each part is a union over the k choices
  (Bonferroni: k · smallest one-sided p), and the claim's p-value is the larger of the two parts. The family
  corrected by ``correction`` (Holm by default) is these 2 claims × (number of method pairs) of one test domain,
  not every (choice, pair) test. A method has a *stable advantage* (the paper's ST criterion) when it holds a
  decided stable order over at least one other method and is involved in no decided reversal.
* **Domain+** (Sec. 4.2.2 / 4.3): add one training domain (Fig. 11) or a chain of additions (Fig. 12); per method
  the change Δ = mean(extended) − mean(base) with a CI, a two-sided test, ``correction`` over the (method, step)
  claims of the call; verdict ``copes`` / ``degrades`` / ``no significant change``.
* **Effect sizes and power.** Every contrast carries its difference, CI (per comparison, not adjusted), and the
  standardised effect (d_z when paired). For every undecided claim, ``trials_needed`` is the number of trials at
  which a new experiment would decide it with 80% power if the observed effect were true, at the level the claim
  needs in its family (Bonferroni bound α/m of Holm, halved or divided by k as the claim's p-value is built).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd

from dganalysis.stats.moments import standard_error_from_sd
from dganalysis.stats.multiplicity import adjust_pvalues
from dganalysis.stats.planning import trials_for_effect_size
from dganalysis.stats.ttests import compare, direction
from dganalysis.validation import ConfigError, check_frame, check_scalar, check_str, describe

log = logging.getLogger(__name__)

class PairVerdict(str, Enum):
    """The swap test's verdict on one method pair (a ``str``: compares and prints as its value)."""

    STABLE_A = "stable a>b"  # method_a ahead under every training-domain choice (decided)
    STABLE_B = "stable b>a"
    REVERSAL = "reversal"  # the order reverses between choices (decided)
    UNDECIDED = "undecided"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def stable(self) -> bool:
        """A decided stable order (either direction)."""
        return self in (PairVerdict.STABLE_A, PairVerdict.STABLE_B)


REVERSAL, UNDECIDED = PairVerdict.REVERSAL, PairVerdict.UNDECIDED
CONSISTENT = "consistent"
#: the two one-sided stable-order claims of a pair (a ahead in every choice, or b ahead)
STABLE_CLAIMS = ("stable a>b", "stable a<b")
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


# ----------------------------------------------------------------------------------------------- swap test
@dataclass
class SwapTestResult:
    """Outcome of :func:`swap_test`.

    ``tests``: one row per (train, method_a, method_b): means, the contrast a − b (``diff, se, ci_low, ci_high``,
    ``effect``, one- and two-sided p, ``test`` = paired/Welch) — the simple effects, not corrected.
    ``claims``: one row per (method_a, method_b) and claim form (``stable`` / ``reversal``): the claim's p-value,
    ``p_adj`` over the family, ``decided``, the effect that carries it and ``trials_needed`` when undecided.
    ``pairs``: one row per (method_a, method_b): ``verdict`` ∈ {stable a>b, stable b>a, reversal, undecided},
    the per-choice differences, ``raw_reversal`` (the signs of the mean differences disagree — what one reads
    off the paper's curves) and the trials that would decide the leading claim.
    ``methods``: one row per method: decided reversals/stable orders, ``stable_over``, ``st_verdict``.
    """

    tests: pd.DataFrame
    claims: pd.DataFrame
    pairs: pd.DataFrame
    methods: pd.DataFrame
    test_domain: str
    alpha: float
    correction: str

    def reversal_matrix(self, value: str = "reversal") -> pd.DataFrame:
        """Method × method: 1 where the pair's verdict is ``value`` (symmetric; ``"stable"`` matches both orders)."""
        names = list(self.methods.index)
        mat = pd.DataFrame(0, index=names, columns=names, dtype=int)
        for _, r in self.pairs.iterrows():
            if r["verdict"] == value or (value == "stable" and PairVerdict(r["verdict"]).stable):
                mat.loc[r["method_a"], r["method_b"]] = mat.loc[r["method_b"], r["method_a"]] = 1
        return mat


def _series(trials: pd.DataFrame, train: str, method: str) -> pd.Series:
    g = trials[(trials["train"] == train) & (trials["method"] == method)]
    return pd.Series(g["acc"].to_numpy(), index=g["trial_seed"].to_numpy(), dtype=float)


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
    paired: bool | None = None,
    power: float = 0.8,
) -> SwapTestResult:
    """Swap test of Zhang, Zhang & Liu Sec. 4.3 (Fig. 9/10), decided as the module docstring says.

    ``train_choices``: the training-domain sets to compare (all of one size); None = every set in the frame tested
    on ``test_domain``. ``correction``: any ``statsmodels`` ``multipletests`` method or ``"none"``, applied over the
    2 × (method pairs) claims. ``paired``: None = pair on shared trial seeds when ≥ 2 are shared (see
    :func:`dganalysis.stats.ttests.compare`). ``power``: target power of ``trials_needed``.
    """
    check_frame(selected, (), "selected", func="swap_test")
    check_str(test_domain, "test_domain", func="swap_test")
    check_scalar(alpha, "alpha", func="swap_test", low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(power, "power", func="swap_test", low=0.0, high=1.0, low_open=True, high_open=True)
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
    rows = []
    for c in choices:
        for a, b in itertools.combinations(names, 2):
            xa, xb = _series(trials, c, a), _series(trials, c, b)
            w = compare(xa, xb, confidence=1 - alpha, paired=paired)
            rows.append(dict(train=c, method_a=a, method_b=b, mean_a=xa.mean() if len(xa) else np.nan,
                             mean_b=xb.mean() if len(xb) else np.nan, n_a=w.n_a, n_b=w.n_b, n_pairs=w.n_pairs,
                             test=w.test, diff=w.diff, se=w.se, ci_low=w.ci_low, ci_high=w.ci_high, effect=w.effect,
                             t=w.t, df=w.df, p=w.p, p_greater=w.p_greater, p_less=w.p_less))
    tests = pd.DataFrame(rows)
    claims = _st_claims(tests, names, len(choices), alpha, correction, power)
    pairs = _st_pairs(tests, claims, names)
    return SwapTestResult(tests, claims, pairs, _method_summary(names, pairs), test_domain, alpha, correction)


def _st_claims(tests: pd.DataFrame, names, k: int, alpha: float, correction: str, power: float) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(names, 2):
        t = tests[(tests["method_a"] == a) & (tests["method_b"] == b)]
        pg, pl = t["p_greater"].to_numpy(float), t["p_less"].to_numpy(float)
        ok = not (np.isnan(pg).any() or np.isnan(pl).any())
        # stable order: every choice in one direction (IUT), direction read from the data (×2)
        up, down = (np.max(pg), np.max(pl)) if ok else (np.nan, np.nan)
        stable_dir = ">" if ok and up <= down else "<"
        p_stable = min(1.0, 2 * min(up, down)) if ok else np.nan
        weakest = t.iloc[int(np.argmax(pg if stable_dir == ">" else pl))] if ok else None
        rows.append(dict(method_a=a, method_b=b, claim=f"stable a{stable_dir}b", p=p_stable,
                         effect=weakest["effect"] if ok else np.nan, effect_diff=weakest["diff"] if ok else np.nan,
                         effect_train=weakest["train"] if ok else "", paired=bool(ok and weakest["n_pairs"] > 0),
                         level_divisor=2))
        # reversal: some choice with a > b (union over k choices) and some with a < b
        if ok:
            i_up, i_dn = int(np.argmin(pg)), int(np.argmin(pl))
            p_rev = max(min(1.0, k * pg[i_up]), min(1.0, k * pl[i_dn]))
            # the part that is harder to show carries the claim
            hard = t.iloc[i_up] if pg[i_up] >= pl[i_dn] else t.iloc[i_dn]
            signs_ok = t.iloc[i_up]["diff"] > 0 and t.iloc[i_dn]["diff"] < 0
            rows.append(dict(method_a=a, method_b=b, claim="reversal", p=p_rev,
                             effect=hard["effect"] if signs_ok else 0.0, effect_diff=hard["diff"],
                             effect_train=hard["train"], paired=bool(hard["n_pairs"] > 0), level_divisor=k))
        else:
            rows.append(dict(method_a=a, method_b=b, claim="reversal", p=np.nan, effect=np.nan, effect_diff=np.nan,
                             effect_train="", paired=False, level_divisor=k))
    claims = pd.DataFrame(rows)
    claims["p_adj"] = adjust_pvalues(claims["p"].to_numpy(), alpha, correction)
    claims["decided"] = claims["p_adj"] < alpha
    m = int(claims["p"].notna().sum())
    level = alpha / max(m, 1) if correction not in (None, "none") else alpha
    claims["trials_needed"] = [
        np.nan if d else trials_for_effect_size(e, level / div, power, paired=pr, alternative="larger")
        for d, e, div, pr in zip(claims["decided"], claims["effect"], claims["level_divisor"], claims["paired"])]
    return claims.drop(columns="level_divisor")


def _st_pairs(tests: pd.DataFrame, claims: pd.DataFrame, names) -> pd.DataFrame:
    rows = []
    for a, b in itertools.combinations(names, 2):
        t = tests[(tests["method_a"] == a) & (tests["method_b"] == b)]
        c = claims[(claims["method_a"] == a) & (claims["method_b"] == b)].set_index("claim")
        stable = c[c.index.isin(STABLE_CLAIMS)].iloc[0]
        rev = c.loc["reversal"]
        if rev["decided"]:
            verdict = REVERSAL
        elif stable["decided"]:
            verdict = PairVerdict.STABLE_A if stable.name == "stable a>b" else PairVerdict.STABLE_B
        else:
            verdict = UNDECIDED
        raw = bool((t["diff"] > 0).any() and (t["diff"] < 0).any())
        lead = rev if raw else stable  # the claim the observed signs point to
        row = dict(method_a=a, method_b=b, verdict=verdict, raw_reversal=raw,
                   p_adj_stable=stable["p_adj"], p_adj_reversal=rev["p_adj"],
                   trials_needed=np.nan if verdict != UNDECIDED else lead["trials_needed"])
        for _, r in t.iterrows():
            row[f"diff[{r['train']}]"] = r["diff"]
        rows.append(row)
    return pd.DataFrame(rows)


def _method_summary(names, pairs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for m in names:
        inv = pairs[(pairs["method_a"] == m) | (pairs["method_b"] == m)]
        over, under = [], []
        for _, r in inv.iterrows():
            other = r["method_b"] if r["method_a"] == m else r["method_a"]
            if PairVerdict(r["verdict"]).stable:
                a_wins = r["verdict"] == PairVerdict.STABLE_A
                (over if a_wins == (r["method_a"] == m) else under).append(other)
        n_rev = int((inv["verdict"] == REVERSAL).sum())
        verdict = "unstable" if n_rev else "stable advantage" if over else "no decided advantage"
        rows.append(dict(method=m, reversals=n_rev, stable_orders=len(over) + len(under),
                         undecided=int((inv["verdict"] == UNDECIDED).sum()),
                         raw_reversals=int(inv["raw_reversal"].sum()), stable_over=", ".join(over),
                         stable_under=", ".join(under), st_verdict=verdict))
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
    paired: bool | None = None,
    power: float = 0.8,
) -> pd.DataFrame:
    """Domain+ criterion of Zhang, Zhang & Liu Sec. 4.3 (Figs. 11–12): accuracy change when domains are added.

    ``chain``: training-domain sets, each a strict superset of the one before (Fig. 11: two sets; Fig. 12: a
    chain). One row per (step, method): ``base, extended, added, mean_base, mean_ext, delta, se, ci_low, ci_high``
    (``confidence``, unadjusted), ``effect``, ``test`` (paired on shared trial seeds, else Welch), ``p``,
    ``p_adj`` (``correction`` over the rows of this call), ``verdict`` and, when undecided, ``trials_needed``.
    To correct over several chains at once, concatenate the rows and call :func:`adjust_domain_plus`.
    """
    check_frame(selected, (), "selected", func="domain_plus")
    check_str(test_domain, "test_domain", func="domain_plus")
    check_scalar(alpha, "alpha", func="domain_plus", low=0.0, high=1.0, low_open=True, high_open=True)
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
                             ci_low=w.ci_low, ci_high=w.ci_high, effect=w.effect, p=w.p))
    out = pd.DataFrame(rows)
    out["test_domain"] = test_domain
    return adjust_domain_plus(out, alpha, correction, power)


def adjust_domain_plus(dp: pd.DataFrame, alpha: float = 0.05, correction: str = "holm",
                       power: float = 0.8) -> pd.DataFrame:
    """(Re)compute ``p_adj``, ``verdict`` and ``trials_needed`` of Domain+ rows over the family ``dp`` (all its rows)."""
    check_frame(dp, (), "dp", func="adjust_domain_plus")
    check_scalar(alpha, "alpha", func="adjust_domain_plus", low=0.0, high=1.0, low_open=True, high_open=True)
    check_scalar(power, "power", func="adjust_domain_plus", low=0.0, high=1.0, low_open=True, high_open=True)
    out = dp.copy()
    out["p_adj"] = adjust_pvalues(out["p"].to_numpy(), alpha, correction)
    out["verdict"] = [_dp_verdict(d, p, alpha) for d, p in zip(out["delta"], out["p_adj"])]
    m = int(out["p"].notna().sum())
    level = alpha / max(m, 1) if correction not in (None, "none") else alpha
    out["trials_needed"] = [
        trials_for_effect_size(e, level, power, paired=n > 0, alternative="two-sided") if v == NO_CHANGE else np.nan
        for v, e, n in zip(out["verdict"], out["effect"], out["n_pairs"])]
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
    dynamic criteria so disagreements are visible (Zhang, Zhang & Liu, Sec. 4.3). Domain+ cells read ``verdict (Δ=…)``.
    """
    if swap is not None and not isinstance(swap, (SwapTestResult, list, tuple)):
        raise ConfigError(f"dynamic_summary: parameter 'swap': expected a SwapTestResult (or a list of them) or None, got {describe(swap)}")
    if domain_plus_results is not None:
        check_frame(domain_plus_results, (), "domain_plus_results", func="dynamic_summary")
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


def plot_reversal_matrix(result: SwapTestResult, ax=None):
    """Method × method verdicts of the swap test: ``>`` row has a stable advantage over column, ``<`` the
    reverse, ``R`` decided reversal, ``?`` undecided (with the trials that would decide it at the observed effect)."""
    if not isinstance(result, SwapTestResult):
        raise ConfigError(f"plot_reversal_matrix: parameter 'result': expected a SwapTestResult (swap_test), got {describe(result)}")
    import matplotlib.pyplot as plt
    import seaborn as sns

    names = list(result.methods.index)
    n = len(names)
    val = pd.DataFrame(0.0, index=names, columns=names)
    lab = pd.DataFrame("", index=names, columns=names)
    for _, r in result.pairs.iterrows():
        a, b, v = r["method_a"], r["method_b"], r["verdict"]
        if v == REVERSAL:
            val.loc[a, b] = val.loc[b, a] = np.nan
            lab.loc[a, b] = lab.loc[b, a] = "R"
        elif PairVerdict(v).stable:
            s = 1.0 if v == PairVerdict.STABLE_A else -1.0
            val.loc[a, b], val.loc[b, a] = s, -s
            lab.loc[a, b], lab.loc[b, a] = (">", "<") if s > 0 else ("<", ">")
        else:
            need = r["trials_needed"]
            txt = "?" if not np.isfinite(need) else f"?{int(need)}"
            lab.loc[a, b] = lab.loc[b, a] = txt
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(0.6 * n + 2.5, 0.5 * n + 1.8))
    sns.heatmap(val, annot=lab.to_numpy(), fmt="", cmap="RdYlGn", vmin=-1.5, vmax=1.5, cbar=False, square=True,
                ax=ax, linewidths=0.5, linecolor="lightgray")
    ax.set_title(f"ST → {result.test_domain}: > / < stable order, R reversal, ?n undecided (n trials would decide)\n"
                 f"{result.correction} over {len(result.claims)} claims, α={result.alpha}", fontsize="small")
    ax.set_xlabel("")
    ax.set_ylabel("")
    fig.tight_layout()
    return fig


def plot_domain_plus(dp: pd.DataFrame, methods: Sequence[str] | None = None, xticks: str = "name"):
    """Figs. 11–12 style (left: mean accuracy per training set, methods on x, one line per set) plus the
    per-method change Δ with its CI for each step (right; filled marker = significant after correction).

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
