"""The audit's JSON contract (:func:`to_json`): the machine-readable form of an
:class:`~dganalysis.audit.run.AuditResult`, its words included (:mod:`dganalysis.audit.words`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dganalysis.audit.run import AuditResult

CONTRACT_CLAIM = ["selection", "dataset", "algorithm", "baseline", "delta", "ci_low", "ci_high", "p_adj", "verdict",
                  "trials_needed"]
CONTRACT_AGG = ["selection", "algorithm", "baseline", "prob_improvement", "ci_low", "ci_high"]


def to_json(result: AuditResult) -> dict[str, Any]:
    """The machine contract: ``claims`` and ``aggregate`` (the keys :data:`CONTRACT_CLAIM` and :data:`CONTRACT_AGG`,
    plus ``input`` and more per row), ``wilcoxon``, ``friedman``, ``reference``, ``sweep``, ``inputs``, ``settings``,
    ``summary``. NaN and ±inf are null (``trials_needed`` null: no finite number of trials decides the observed
    effect, or no SE)."""
    out: dict[str, Any] = {"claims": [], "aggregate": [], "wilcoxon": [], "friedman": [], "reference": [],
                           "sweep": {}, "inputs": [], "settings": _clean(result.settings),
                           "summary": list(result.summary), "notes": list(result.notes)}
    for a in result.audits:
        name = a.input.name
        families = [f.notes for f in a.words.families.values()] if a.words is not None else []
        out["inputs"].append({"input": name, "kind": a.input.kind, "notes": a.notes + a.input.notes,
                              "cells": int(len(a.input.cells)), "families": _clean(families)})
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
