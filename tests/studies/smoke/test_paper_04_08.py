"""SMOKE (slow, minutes on 2 cores), second half: notebooks 04-08 of the paper profile end to end on FAKE inputs —
the leakage study (every published weight layout, FID through pytorch-fid, NICO++) with its one smoke variant
(``04_leakage_oracle@pacs``), the leaderboards, the shift map, the worst case and the audit of this half's store —
with steps, trials and draws at the minimum (:mod:`dganalysis.studies.smoke.run`). The first half is ``test_paper_00_03.py``.
Deselect with `-m "not paper_smoke"`."""

from __future__ import annotations

from pathlib import Path

import pytest
from studies.smoke._paper import run_paper_smoke

from dganalysis.studies.runner import list_notebooks

ROOT = Path(__file__).resolve().parents[3]
NAMES = [n for n in list_notebooks(ROOT) if n[:2] >= "04"]


@pytest.mark.paper_smoke
def test_paper_profile_smoke_run_04_08(tmp_path):
    out, runs, datasets = run_paper_smoke(tmp_path, NAMES)
    assert NAMES[0] == "04_leakage_oracle" and NAMES[-1] == "08_audit"
    assert sorted(runs) == sorted([*NAMES, "04_leakage_oracle@pacs"]) and all(r["ok"] for r in runs.values()), runs
    assert (out / "variants" / "pacs" / "tables").is_dir() and "[variant pacs]" in (out / "index.md").read_text()
    assert (tmp_path / "fake_weights" / "vit-b-300ep.pth.tar").is_file()
    assert datasets >= {"ColoredMNIST", "OfficeHome", "NICO++", "PACS"}
    shift_map = (out / "tables" / "06_shift_map.csv").read_text()
    assert "WILDSCamelyon" in shift_map and "CelebA_Blond" in shift_map
