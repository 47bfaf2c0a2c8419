"""The audit's outcome in words and counts, built once per audit where its result is built (:func:`input_words`):
the summary lines, per family (board, selection) the verdict counts under the chosen and the strict all-claims
family, what keeps the undecided claims undecided, the decided claims in sentences (each stating n, the test and the
correction) and the Wilcoxon family's outcome. The command line, the JSON contract and the HTML page render these.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dganalysis.audit.claims import CLAIM_VERDICTS, FAMILY_WORDS, pairing_words
from dganalysis.validation import ConfigError

REASONS = {"the published rounding": "rounding", "the printed precision": "printed precision",
           "the family": "family size", "the variance ratio": "variance ratio", "too few trials": "too few trials",
           "no test": "no SE"}


@dataclass(frozen=True)
class FamilyWords:
    """One family's (board, selection) words: ``notes`` (the JSON's family entry: counts, reasons, one note),
    ``decided`` and ``changed`` (the decided claims and those whose verdict rests on rounding, in sentences) and
    ``wilcoxon`` (:func:`wilcoxon_summary` of the family's pairs)."""

    notes: dict[str, Any]
    decided: list[str]
    changed: list[str]
    wilcoxon: str


@dataclass(frozen=True)
class InputWords:
    """One input's words: its summary lines and each family's :class:`FamilyWords`, keyed (board, selection)."""

    summary: list[str]
    families: dict[tuple[str, str], FamilyWords] = field(default_factory=dict)


def summary_counts(claims_df: pd.DataFrame, column: str = "verdict") -> dict[str, int]:
    """Number of claims per verdict (all four keys) and ``total``; ``column``: ``verdict`` (the chosen family) or
    ``verdict_table`` (the strict all-claims family)."""
    counts = claims_df[column].value_counts()
    return {**{v: int(counts.get(v, 0)) for v in CLAIM_VERDICTS}, "total": len(claims_df)}


def reason_counts(cl: pd.DataFrame) -> dict[str, int]:
    """How many undecided claims name each reason in their ``why`` (see :func:`dganalysis.audit.claims.
    why_undecided`)."""
    counts: dict[str, int] = {}
    for text in cl.loc[cl["verdict"] == "undecided", "why"]:
        for part in str(text).split("; "):
            for prefix, label in REASONS.items():
                if part.startswith(prefix):
                    counts[label] = counts.get(label, 0) + 1
    return counts


def verdict_sentence(row: pd.Series, alpha: float, rope: float) -> str:
    """One sentence stating a claim's verdict with n, the test, the family and, if undecided, why."""
    what = {"better": "better than", "worse": "worse than", "equivalent": f"equivalent (within ±{rope:g} points) to",
            "undecided": "undecided (not shown better, worse or equivalent) against"}[row["verdict"]]
    ci = (f"95% CI [{row['ci_low']:+.2f}, {row['ci_high']:+.2f}] (simultaneous over the family "
          f"[{row['sim_low']:+.2f}, {row['sim_high']:+.2f}])" if np.isfinite(row["ci_low"]) else "no CI (no SE)")
    p = (f"p = {row['p']:.3g}, adjusted {row['p_adj']:.3g}" + (f", TOST p adjusted {row['p_equiv_adj']:.3g}"
                                                               if rope > 0 else "")
         if np.isfinite(row["p_adj"]) else "no test")
    extra = (f" (the printed numbers taken at face value would say {row['verdict_nominal']}: the difference rests on "
             "rounding)") if row.get("rounding_changed") else ""
    why = f" Why undecided: {row['why']}." if row.get("why") else ""
    if row.get("paired") and not row.get("why") and row.get("dropped", 0) + row.get("baseline_dropped", 0) > 0:
        extra += f" ({pairing_words(row)})"
    sel = f"{row['selection']}{', ' + row['board'] if row['board'] else ''}"
    return (f"{row['algorithm']} is {what} {row['baseline']} on {row['dataset']} ({sel}): Δ = {row['delta']:+.2f} "
            f"points, {ci}, n = {int(row['n'])} vs {int(row['baseline_n'])} trials, {row['test']}, {p} "
            f"({row['correction']}, α = {alpha:g}){extra}.{why}")


def wilcoxon_summary(wil: pd.DataFrame, alpha: float) -> str:
    """One family's Wilcoxon outcome in a sentence (:func:`dganalysis.audit.ranks.wilcoxon_pairs`' rows of one
    board and selection): how many pairs Holm decides at ``alpha``, and, when none can be, why — with n datasets no
    sign pattern gives a two-sided p below 2/2^n (the exact test's smallest; the normal approximation's is larger), so
    when that exceeds Holm's first threshold α/m over m pairs the test cannot decide any pair, whatever the data."""
    if not 0 < alpha < 1:
        raise ConfigError(f"wilcoxon_summary: parameter 'alpha': expected a level in (0, 1), got {alpha!r}")
    if wil.empty:
        return "Wilcoxon signed-rank: no pair tested"
    m, n = len(wil), int(wil["n_datasets"].iloc[0])
    decided = int((wil["direction"] != 0).sum())
    text = f"Wilcoxon signed-rank over {n} datasets, Holm over {m} pairs at α = {alpha:g}: {decided} pair(s) decided"
    floor = 2.0 ** (1 - n)
    if floor > alpha / m:
        text += (f"; none can be with {n} datasets: the smallest two-sided p is 2/2^{n} = {floor:.3g}, above Holm's "
                 f"first threshold α/{m} = {alpha / m:.2g}")
    return text


def _summary_lines(name: str, kind: str, cl: pd.DataFrame, alpha: float) -> list[str]:
    """One screen for any number of families: a header naming the family and test, one line per selection method
    with the verdict counts under the chosen family beside the strict all-claims family's (summed over boards), and
    one line counting what keeps the undecided claims undecided (:func:`reason_counts`)."""
    if cl.empty:
        return [f"audit {name}: no claims (no baseline cells)"]
    fam = str(cl["family"].iloc[0])
    base = str(cl["baseline"].iloc[0])
    boards = cl["board"].nunique()
    paired = int(cl["paired"].sum())
    test = (f"{paired} of {len(cl)} claims paired over shared trial seeds, the rest " if paired else "")
    lines = [f"audit {name} ({kind}{f', {boards} boards' if boards > 1 else ''}): family = "
             f"{FAMILY_WORDS[fam].format(b=base)}; {test}Welch t calibrated over the variance ratio; "
             f"joint step-down, α={alpha:g}"]
    for sel, part in cl.groupby("selection", sort=False):
        c, t = summary_counts(part), summary_counts(part, "verdict_table")
        strict = (f" [all-claims family: {t['better']}/{t['worse']}/{t['equivalent']}/{t['undecided']}]"
                  if fam != "table" else "")
        lines.append(f"  {sel}: {c['better']} better, {c['worse']} worse, {c['equivalent']} equivalent, "
                     f"{c['undecided']} undecided of {c['total']} claims{strict}")
    why = reason_counts(cl)
    if why:
        lines.append("  undecided because (a claim may have several reasons): "
                     + ", ".join(f"{k} {v}" for k, v in why.items()))
    return lines


def _family_notes(board: str, sel: str, part: pd.DataFrame) -> dict[str, Any]:
    """The counts of one family's claims under the chosen family and the strict one, the reasons, and one note."""
    c, t = summary_counts(part), summary_counts(part, "verdict_table")
    why = reason_counts(part)
    text = (f"{c['better']} better, {c['worse']} worse, {c['equivalent']} equivalent, {c['undecided']} "
            f"undecided of {c['total']} ({part['family'].iloc[0]} family); all-claims family: "
            f"{t['better']} better, {t['worse']} worse, {t['equivalent']} equivalent, {t['undecided']} "
            "undecided" + ("; undecided because: " + ", ".join(f"{k} {v}" for k, v in why.items())
                           if why else ""))
    return {"board": board, "selection": sel, "counts": c, "counts_all_claims": t, "why": why, "note": text}


def input_words(name: str, kind: str, cl: pd.DataFrame, wilcoxon: pd.DataFrame, alpha: float,
                rope: float) -> InputWords:
    """The words of one input's audit: its claims ``cl`` (:func:`dganalysis.audit.claims.claims`) and Wilcoxon
    pairs (:func:`dganalysis.audit.ranks.wilcoxon_pairs`) at level ``alpha`` and ROPE ``rope``."""
    families = {}
    for (board, sel), part in cl.groupby(["board", "selection"], sort=False):
        wil = wilcoxon[(wilcoxon["board"] == board) & (wilcoxon["selection"] == sel)]
        families[(board, sel)] = FamilyWords(
            _family_notes(board, sel, part),
            [verdict_sentence(r, alpha, rope) for _, r in part[part["verdict"] != "undecided"].iterrows()],
            [verdict_sentence(r, alpha, rope) for _, r in part[part["rounding_changed"]].iterrows()],
            wilcoxon_summary(wil, alpha))
    return InputWords(_summary_lines(name, kind, cl, alpha), families)
