"""The whole audit of one or more inputs: :func:`run_audit` → :class:`AuditResult` (claims, across-dataset analyses,
reproduction check, raw-sweep analyses) and its JSON contract (:meth:`AuditResult.to_json`).

Every input is read and checked (file, columns, baseline, selections, reference) before any statistic is computed.
Raw-sweep analyses (selection regret, ranking changes, expected best accuracy vs search budget, LODO vs LOGO, the
selected hparams) come from :mod:`dganalysis.audit.sweep_analyses` when it is installed; where it is not, the audit says so
and does everything else.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dganalysis import provenance
from dganalysis.audit import aggregate, claims, reference
from dganalysis.audit.inputs import AuditInput, main_selection, read_inputs
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)
CONTRACT_CLAIM = ["selection", "dataset", "algorithm", "baseline", "delta", "ci_low", "ci_high", "p_adj", "verdict",
                  "trials_needed"]
CONTRACT_AGG = ["selection", "algorithm", "baseline", "prob_improvement", "ci_low", "ci_high"]


@dataclass
class InputAudit:
    """The audit of one input."""

    input: AuditInput
    claims: pd.DataFrame
    aggregate: pd.DataFrame
    wilcoxon: pd.DataFrame
    friedman: dict
    reference: pd.DataFrame | None = None
    sweep: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def summary_lines(self, alpha: float) -> list[str]:
        """One screen for any number of families: a header naming the family and test, one line per selection
        method with the verdict counts under the chosen family beside the strict all-claims family's (summed over
        boards), and one line counting what keeps the undecided claims undecided (:func:`reason_counts`)."""
        name = self.input.name
        if self.claims.empty:
            return [f"audit {name}: no claims (no baseline cells)"]
        fam = str(self.claims["family"].iloc[0])
        base = str(self.claims["baseline"].iloc[0])
        boards = self.claims["board"].nunique()
        paired = int(self.claims["paired"].sum())
        test = (f"{paired} of {len(self.claims)} claims paired over shared trial seeds, the rest " if paired else "")
        lines = [f"audit {name} ({self.input.kind}{f', {boards} boards' if boards > 1 else ''}): family = "
                 f"{claims.FAMILY_WORDS[fam].format(b=base)}; {test}Welch t calibrated over the variance ratio; "
                 f"joint step-down, α={alpha:g}"]
        for sel, part in self.claims.groupby("selection", sort=False):
            c, t = claims.summary_counts(part), claims.summary_counts(part, "verdict_table")
            strict = (f" [all-claims family: {t['better']}/{t['worse']}/{t['equivalent']}/{t['undecided']}]"
                      if fam != "table" else "")
            lines.append(f"  {sel}: {c['better']} better, {c['worse']} worse, {c['equivalent']} equivalent, "
                         f"{c['undecided']} undecided of {c['total']} claims{strict}")
        why = reason_counts(self.claims)
        if why:
            lines.append("  undecided because (a claim may have several reasons): "
                         + ", ".join(f"{k} {v}" for k, v in why.items()))
        return lines

    def family_notes(self) -> list[dict[str, Any]]:
        """Per (board, selection): the counts under the chosen family and the strict one, and the reasons."""
        out = []
        for (board, sel), part in self.claims.groupby(["board", "selection"], sort=False):
            c, t = claims.summary_counts(part), claims.summary_counts(part, "verdict_table")
            why = reason_counts(part)
            text = (f"{c['better']} better, {c['worse']} worse, {c['equivalent']} equivalent, {c['undecided']} "
                    f"undecided of {c['total']} ({part['family'].iloc[0]} family); all-claims family: "
                    f"{t['better']} better, {t['worse']} worse, {t['equivalent']} equivalent, {t['undecided']} "
                    "undecided" + ("; undecided because: " + ", ".join(f"{k} {v}" for k, v in why.items())
                                   if why else ""))
            out.append({"board": board, "selection": sel, "counts": c, "counts_all_claims": t, "why": why,
                        "note": text})
        return out


REASONS = {"the published rounding": "rounding", "the printed precision": "printed precision",
           "the family": "family size", "the variance ratio": "variance ratio", "too few trials": "too few trials",
           "no test": "no SE"}


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


@dataclass
class AuditResult:
    """All inputs' audits and the settings they ran with."""

    audits: list[InputAudit]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)  #: optional inputs left out, and why

    def summary_lines(self) -> list[str]:
        return [line for a in self.audits for line in a.summary_lines(self.settings["alpha"])] + [
            f"audit {n}" for n in self.notes]

    def to_json(self) -> dict[str, Any]:
        """The machine contract: ``claims`` and ``aggregate`` (its required keys, plus ``input`` and more per row),
        ``wilcoxon``, ``friedman``, ``reference``, ``sweep``, ``inputs``, ``settings``, ``summary``. NaN and ±inf
        are null (``trials_needed`` null: no finite number of trials decides the observed effect, or no SE)."""
        out: dict[str, Any] = {"claims": [], "aggregate": [], "wilcoxon": [], "friedman": [], "reference": [],
                               "sweep": {}, "inputs": [], "settings": _clean(self.settings),
                               "summary": self.summary_lines(), "notes": list(self.notes)}
        for a in self.audits:
            name = a.input.name
            out["inputs"].append({"input": name, "kind": a.input.kind, "notes": a.notes + a.input.notes,
                                  "cells": int(len(a.input.cells)), "families": _clean(a.family_notes())})
            out["claims"] += _records(a.claims, name)
            out["aggregate"] += _records(a.aggregate, name)
            out["wilcoxon"] += _records(a.wilcoxon, name)
            for (board, sel), f in a.friedman.items():
                out["friedman"].append(_clean({"input": name, "board": board, "selection": sel, "statistic": f.statistic,
                                        "p": f.p, "n_datasets": f.n_blocks, "n_algorithms": f.n_methods,
                                        "critical_difference": f.critical_difference,
                                        "avg_rank": {k: float(v) for k, v in f.avg_rank.items()},
                                        "summary": f.summary()}))
            if a.reference is not None:
                out["reference"] += _records(a.reference, name)
            if a.sweep:
                out["sweep"][name] = {k: (_records(v, name) if isinstance(v, pd.DataFrame) else _clean(v))
                                      for k, v in a.sweep.items()}
        return out


def _clean(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, pd.DataFrame):
        return _records(v, None)
    return v


def _records(df: pd.DataFrame, name: str | None) -> list[dict]:
    rows = df.to_dict(orient="records")
    return [_clean({**({"input": name} if name is not None else {}), **r}) for r in rows]


@contextlib.contextmanager
def _stage(name: str, what: str) -> Iterator[None]:
    """Log (INFO, which the command line shows) how long one stage of an input's audit took: a large sweep's audit
    takes tens of seconds, and this says where it is."""
    start = time.perf_counter()
    yield
    log.info("audit %s: %s in %.1f s", name, what, time.perf_counter() - start)


def _sweep_analyses(inp: AuditInput, selections: list[str], confidence: float) -> tuple[dict, list[str]]:
    """The raw-sweep analyses of :mod:`dganalysis.audit.sweep_analyses` on the input's selections; an analysis the sweep
    cannot give (e.g. one hparams draw, no pair runs) is left out with a note saying why."""
    from dganalysis.audit import sweep_analyses as sw
    out: dict[str, Any] = {}
    notes: list[str] = []
    main_sel = main_selection(selections)
    have = inp.selected  # the audited methods, the oracle and training-domain validation (load_input)
    picks = {m: have[m] for m in selections}
    # ranking_changes compares a single method with the oracle (the oracle alone with training-domain validation)
    other = "training_domain" if "oracle" in picks else "oracle"
    ranked = picks if len(picks) > 1 else {**picks, other: have[other]}
    steps = [
        ("selection_regret", lambda: sw.selection_regret(None, {**picks, "oracle": have["oracle"]},
                                                         confidence=confidence)),
        ("ranking_changes", lambda: sw.ranking_changes(None, ranked)),
        ("expected_max", lambda: sw.expected_max_curve(None, main_sel, draws=inp.draws[main_sel])),
        ("lodo_vs_logo", lambda: sw.lodo_vs_logo(None, "training_domain", have["training_domain"])),
        ("selected_hparams", lambda: sw.selected_hparams(None, main_sel, have[main_sel])),
    ]
    for key, call in steps:
        try:
            value = call()
        except ValueError as e:  # this sweep cannot give the analysis (e.g. no oracle, one hparam draw)
            notes.append(f"{key}: {e}")
            continue
        if value is not None:
            out[key] = value
    if "expected_max" in out:
        try:
            out["saturation"] = sw.saturation(out["expected_max"])
        except ValueError as e:
            notes.append(f"saturation: {e}")
    return out, notes


STORE = "store"  #: in a notebook's ``inputs``: the profile's job store (``store_dir``)


def resolve_inputs(inputs: Sequence[str], store_dir: str | Path) -> tuple[list[str], list[str]]:
    """Notebook inputs → (paths to audit, notes): :data:`STORE` becomes ``store_dir``, left out with a note when the
    store holds no finished run yet (the audit ran before any sweep finished)."""
    from dganalysis.records.store import find_jobs, job_status

    paths, notes = [], []
    for p in inputs:
        if str(p) != STORE:
            paths.append(str(p))
            continue
        store = Path(store_dir)
        done = [j for j in find_jobs(store) if job_status(j) == "done"] if store.is_dir() else []
        if done:
            paths.append(str(store))
        else:
            notes.append(f"the profile's job store {store} holds no finished run yet: not audited (run the other "
                         "notebooks first)")
    return paths, notes


@dataclass(frozen=True)
class StatOptions:
    """The audit's statistical settings besides α and the ROPE, given to :func:`run_audit` as keywords.

    ``family``: the family of each verdict (:data:`dganalysis.audit.claims.FAMILIES`; default one algorithm against
    the baseline over the datasets); ``paired``: test a sweep's claims paired where both arms ran the same trial
    seeds; ``confidence``: level of the intervals; ``reps``: bootstrap resamples; ``seed``: of the bootstraps and
    posterior samples."""

    family: str = claims.DEFAULT_FAMILY
    paired: bool = True
    confidence: float = 0.95
    reps: int = 2000
    seed: int = 0


def run_audit(inputs: Sequence[str | Path], baseline: str = "ERM", selection: str | Sequence[str] = "all",
              alpha: float = 0.05, rope: float = 1.0, reference_table: str | Path | None = None,
              trials: int | None = None, sweep_analyses: bool = True, optional: Sequence[str | Path] = (),
              indexes: Sequence[tuple[Path, Any]] = (), **options: Any) -> AuditResult:
    """Audit every input against ``baseline`` (see :mod:`dganalysis.audit`). ``selection``: ``"all"`` (DomainBed's
    three; for a table, those it has) or method name(s); ``rope`` in accuracy points; ``reference_table`` a published
    table to compare each input with; ``trials`` overrides n of the tables' cells. An input listed in ``optional``
    (a profile's job store, which the training notebooks fill) that gives no usable cells or lacks the baseline is left
    out with a note (:attr:`AuditResult.notes`) instead of stopping the audit. ``indexes``: (path, index) of sweep
    inputs whose index the caller has brought up to date already (:attr:`dganalysis.records.memo.SweepMemo.indexes`),
    read as they are. ``options``: the fields of
    :class:`StatOptions` (``family``, ``paired``, ``confidence``, ``reps``, ``seed``); any other keyword is refused."""
    unknown = sorted(set(options) - set(StatOptions.__dataclass_fields__))
    if unknown:
        raise TypeError(f"run_audit: unknown option(s) {unknown}; expected {sorted(StatOptions.__dataclass_fields__)}")
    opts = StatOptions(**options)
    family, paired, confidence, reps, seed = opts.family, opts.paired, opts.confidence, opts.reps, opts.seed
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha={alpha}: expected a level in (0, 1)")
    if family not in claims.FAMILIES:
        raise ConfigError(f"family={family!r}: expected one of {sorted(claims.FAMILIES)}")
    if not (isinstance(rope, (int, float)) and math.isfinite(rope) and rope >= 0):
        raise ConfigError(f"rope={rope!r}: expected a width ≥ 0 in accuracy points")
    selections, loaded, skipped, ref_cells = read_inputs(inputs, selection, baseline, reference_table, trials,
                                                         optional, indexes)
    audits = []
    for inp in loaded:
        with _stage(inp.name, "claims and across-dataset tests"):
            cl = claims.claims(inp.cells, baseline, alpha=alpha, rope=rope, confidence=confidence, family=family,
                               trials=inp.trials if paired else None)
            agg = aggregate.per_algorithm(inp.cells, inp.trials, baseline, rope=rope, confidence=confidence,
                                          reps=reps, seed=seed)
            audit = InputAudit(inp, cl, agg, aggregate.wilcoxon_pairs(inp.cells, alpha=alpha),
                               aggregate.friedman_tests(inp.cells, alpha=alpha))
        if ref_cells is not None:
            try:
                audit.reference = reference.compare(inp.cells, ref_cells, alpha=alpha, rope=rope,
                                                    confidence=confidence)
            except ValueError as e:
                audit.notes.append(f"reference {reference_table}: {e}")
        if inp.kind == "sweep" and sweep_analyses:
            with _stage(inp.name, "sweep analyses"):
                audit.sweep, notes = _sweep_analyses(inp, selections, confidence)
            audit.notes += notes
        audits.append(audit)
    settings = {"baseline": baseline, "selections": selections, "alpha": alpha, "rope": rope, "family": family,
                "paired": paired,
                "confidence": confidence, "reference": str(reference_table) if reference_table else None,
                "trials": trials, "bootstrap_reps": reps, "seed": seed, "provenance": provenance.stamp(),
                "tests": {"claims": "Welch t with its p-value calibrated to the worst case over the variance ratio "
                                    "(valid for every ratio), or a paired t over shared trial seeds; TOST within "
                                    "±rope from the same statistic; one step-down over both kinds per family "
                                    f"({claims.FAMILY_WORDS[family].format(b=baseline)}); published rounding "
                                    "honoured (worst case over the rounding box)",
                          "aggregate": "probability of improvement (stratified bootstrap over trials on sweeps, "
                                       "exact binomial over datasets on tables) and IQM of the difference to the "
                                       "baseline; each interval with its coverage measured on simulated data; "
                                       "Bayesian signed-rank with the ROPE",
                          "pairs": "Wilcoxon signed-rank over datasets, Holm over all pairs; Friedman/Nemenyi"}}
    return AuditResult(audits, settings, skipped)
