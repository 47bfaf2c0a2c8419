"""SMOKE (slow, minutes on 2 cores), first half: notebooks 00-03 of the paper profile end to end on FAKE inputs —
DomainBed's table on MNIST IDX files and a DomainBed folder benchmark with the published ResNet-50 weight layout, the
PaHCC construction, the binarization study and dynamic DG — with steps, trials and draws at the minimum
(:mod:`dganalysis.studies.smoke.run`). The second half is ``test_paper_04_08.py``; the two run on the suite's two workers.
Deselect with `-m "not paper_smoke"`."""

from __future__ import annotations

import pytest
from studies.smoke._paper import run_paper_smoke

NAMES = ["00_quickstart", "01_dataset_construction", "02_binarization_study", "03_dynamic_dg"]


@pytest.mark.paper_smoke
def test_paper_profile_smoke_run_00_03(tmp_path):
    out, runs, datasets = run_paper_smoke(tmp_path, NAMES)
    assert sorted(runs) == NAMES and all(r["ok"] for r in runs.values()), runs
    assert datasets >= {"RotatedMNIST", "VLCS", "PaHCC"}
