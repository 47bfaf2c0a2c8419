"""The design table shipped with the package (``dganalysis/findings/data/design_power.json``) is what the code
computes: a few of the quick profile's entries recomputed without the cache give the same power, bit for bit (same
decision, same simulator, same seed). A change to a decision or a simulator that leaves the table stale fails here;
``python bench/findings_design.py`` rewrites it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dganalysis.findings import power as P
from dganalysis.studies.runner import load_params
from dganalysis.studies.study import build_params, design_for

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("notebook,key", [("02_binarization_study", "a"), ("04_leakage_oracle", "C1"),
                                          ("07_worst_case", "a")])
def test_shipped_power_is_recomputed(notebook, key):
    claim = next(c for c in design_for(notebook, build_params(notebook, load_params("quick", notebook, ROOT)))
                 if c.key == key)
    shipped = P._shipped()  # noqa: SLF001 (the table itself)
    entry = shipped.get(f"{claim.cache_key}|n={claim.n}|reps={P.REPS}|seed=0|n_max={max(P.N_MAX, claim.n)}")
    assert entry is not None, f"{notebook} {key}: no shipped entry; run python bench/findings_design.py"
    fresh = P.simulated_power(claim.decide, claim.simulate, claim.n, P.REPS, seed=0)
    assert fresh.power == entry["power"], (notebook, key, fresh.power, entry["power"])
