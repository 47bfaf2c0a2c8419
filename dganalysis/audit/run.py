"""The whole audit of one or more inputs: :func:`run_audit` → :class:`AuditResult` (claims, across-dataset analyses,
reproduction check, raw-sweep analyses) with its outcome in words (:mod:`dganalysis.audit.words`), built once here
for the command line, the JSON contract (:mod:`dganalysis.audit.contract`) and the page to render.

One pipeline, one pass per stage: every input is read and checked (file, columns, baseline, selections, reference)
before any statistic is computed (:func:`dganalysis.audit.inputs.read_inputs`); then each input is analysed — its
claims and the reproduction check (:mod:`dganalysis.audit.claims`), the across-dataset analyses
(:mod:`dganalysis.audit.aggregate`, :mod:`dganalysis.audit.ranks`), the raw-sweep analyses — and the outcome is put in
words (:mod:`dganalysis.audit.words`); the outputs are written by :func:`dganalysis.audit.outputs.write_outputs`.
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

import pandas as pd

from dganalysis import provenance
from dganalysis.audit import aggregate, claims, ranks, words
from dganalysis.audit.inputs import AuditInput, read_inputs
from dganalysis.audit.words import InputWords
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)


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
    words: InputWords | None = None  #: its outcome in words (:func:`dganalysis.audit.words.input_words`)


@dataclass
class AuditResult:
    """All inputs' audits and the settings they ran with."""

    audits: list[InputAudit]
    settings: dict[str, Any]
    notes: list[str] = field(default_factory=list)  #: optional inputs left out, and why
    summary: list[str] = field(default_factory=list)  #: one screen: each input's summary lines, then the notes


@contextlib.contextmanager
def _stage(name: str, what: str) -> Iterator[None]:
    """Log (INFO, which the command line shows) how long one stage of an input's audit took: a large sweep's audit
    takes tens of seconds, and this says where it is."""
    start = time.perf_counter()
    yield
    log.info("audit %s: %s in %.1f s", name, what, time.perf_counter() - start)


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
        with _stage(inp.name, "claims"):
            cl = claims.claims(inp.cells, baseline, alpha=alpha, rope=rope, confidence=confidence, family=family,
                               pairs=inp.pairs if paired else None)
            ref, notes = None, []
            if ref_cells is not None:
                try:
                    ref = claims.compare_with_reference(inp.cells, ref_cells, alpha=alpha, rope=rope,
                                                        confidence=confidence)
                except ValueError as e:
                    notes.append(f"reference {reference_table}: {e}")
        with _stage(inp.name, "across-dataset tests"):
            agg = aggregate.per_algorithm(inp.cells, inp.trials, baseline, rope=rope, confidence=confidence,
                                          reps=reps, seed=seed)
            audit = InputAudit(inp, cl, agg, ranks.wilcoxon_pairs(inp.cells, alpha=alpha),
                               ranks.friedman_tests(inp.cells, alpha=alpha), ref, notes=notes)
        if inp.kind == "sweep" and sweep_analyses:
            from dganalysis.audit import sweep_analyses as sw

            with _stage(inp.name, "sweep analyses"):
                audit.sweep, notes = sw.analyse_input(inp, selections, confidence)
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
    for audit in audits:
        audit.words = words.input_words(audit.input.name, audit.input.kind, audit.claims, audit.wilcoxon, alpha, rope)
    summary = [line for a in audits for line in a.words.summary] + [f"audit {n}" for n in skipped]
    return AuditResult(audits, settings, skipped, summary)
