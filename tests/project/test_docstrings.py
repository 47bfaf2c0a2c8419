"""Docstrings a user can rely on: every cross-reference resolves, and help() of the main entry points says shapes,
units and what the result fields mean."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest

import dganalysis

REF = re.compile(r":(?:func|class|mod|data|meth|attr):`~?(dganalysis(?:\.\w+)+)`")
#: the analysis API (the audit package names optional stand-in modules on purpose, "where it exists")
CHECKED = ("shift", "dro", "protocols", "stats", "selection.py", "results.py", "plans.py", "findings.py", "validation.py")


def _resolve(ref: str) -> bool:
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for name in parts[i:]:
                obj = getattr(obj, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_cross_reference_resolves():
    root = pathlib.Path(dganalysis.__file__).parent
    files = [p for p in root.rglob("*.py") if p.relative_to(root).parts[0] in CHECKED]
    refs = {(str(p.relative_to(root)), m.group(1)) for p in files for m in REF.finditer(p.read_text())}
    assert len(refs) > 50
    broken = sorted((f, r) for f, r in refs if not _resolve(r))
    assert not broken, f"docstrings point to names that do not exist: {broken}"


@pytest.mark.parametrize("path,needles", [
    ("dganalysis.shift.estimate_shift", ["[n_p, d]", "[n_p]", "d ≤ 9", "diversity_se", "share_div",
                                         "per_class_correlation", "dimensionless", "ShiftRegimeWarning"]),
    ("dganalysis.dro.worst_case_curve", ["[n, d]", "[n]", "logits [n, C]", "units of ``scale``", "worst_case_loss",
                                         "transport_distance", "primal_loss", "nominal", "gamma", '"std"']),
    ("dganalysis.records.selection.select", ["dganalysis.records.load", "fraction", "val_acc", "hparams_seed",
                                     "training_domain", "oracle", "tie_tol", "summarize"]),
])
def test_help_is_enough(path, needles):
    mod, name = path.rsplit(".", 1)
    doc = getattr(importlib.import_module(mod), name).__doc__
    missing = [n for n in needles if n not in doc]
    assert not missing, f"help({name}) does not say {missing}"
