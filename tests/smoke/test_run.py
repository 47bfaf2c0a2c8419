"""SMOKE (slow, ~minutes on 2 cores): the paper profile end to end on FAKE inputs (`dganalysis run --profile paper
--smoke`): every notebook executes its paper path — benchmark folders, NICO++, MNIST IDX files, every published
weight layout, pytorch-fid — with steps, trials and draws at the minimum. Deselect with `-m "not paper_smoke"`."""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path

import pytest

from dganalysis.runner import list_notebooks

ROOT = Path(__file__).resolve().parents[2]


def test_smoke_params_keep_the_paper_path():
    from dganalysis.dryrun import notebook_defaults
    from dganalysis.runner import load_params
    from dganalysis.smoke.run import smoke_params

    p04 = load_params("paper", "04_leakage_oracle", ROOT)
    s04 = smoke_params("04_leakage_oracle", p04, notebook_defaults(ROOT / "notebooks" / "04_leakage_oracle.ipynb"))
    assert s04["published_weights"] == p04["published_weights"]  # every published layout is loaded
    assert s04["steps"] == 2 and s04["oracle_n_trials"] == 2 and s04["dataset_kwargs"]["image_size"] == 32
    assert s04["inception_weights"] == p04["inception_weights"] and s04["frozen_stages"] == []
    p05 = load_params("paper", "05_leaderboards", ROOT)
    s05 = smoke_params("05_leaderboards", p05, notebook_defaults(ROOT / "notebooks" / "05_leaderboards.ipynb"))
    assert list(s05["datasets"]) == ["NICO++"] and s05["algorithms"] == ["ERM", "SWAD"]
    assert [b["hparams_overrides"] for b in s05["leaderboards"].values()] == \
        [b["hparams_overrides"] for b in p05["leaderboards"].values()]  # every board's weights (Table 5 / App. C.4)
    assert set(s05["dataset_steps"].values()) == {2} and s05["steps"] == 2
    p06 = load_params("paper", "06_shift_estimation", ROOT)
    s06 = smoke_params("06_shift_estimation", p06, notebook_defaults(ROOT / "notebooks" / "06_shift_estimation.ipynb"))
    # the shift map keeps the entries whose fake inputs are large enough: MNIST, Camelyon17-WILDS, OoD-Bench's CelebA
    assert [m["name"] for m in s06["map_datasets"]] == ["ColoredMNIST", "WILDSCamelyon", "CelebA_Blond"]
    assert all(m["kwargs"]["image_size"] <= 32 for m in s06["map_datasets"])


def test_smoke_shrinks_every_variant_and_runs_one():
    from dganalysis.dryrun import notebook_defaults
    from dganalysis.runner import load_variants
    from dganalysis.smoke.run import SMOKE_VARIANT, smoke_params, smoke_variants

    defaults = notebook_defaults(ROOT / "notebooks" / "04_leakage_oracle.ipynb")
    variants = load_variants("paper", "04_leakage_oracle", ROOT)
    for v, p in variants.items():
        s = smoke_params("04_leakage_oracle", p, defaults)
        assert s["steps"] == 2 and s["oracle_steps"] == 2 and len(s["lp_ft_splits"]) == 1, v
        assert s["dataset"] == p["dataset"] and s["dataset_kwargs"]["image_size"] == 32, v
    labels = list_notebooks(ROOT) + [f"04_leakage_oracle@{v}" for v in variants]
    assert SMOKE_VARIANT == ("04_leakage_oracle", "pacs")
    assert smoke_variants(list_notebooks(ROOT), labels) == {"04_leakage_oracle": ["pacs"]}
    assert smoke_variants(["03_dynamic_dg"], labels) == {}
    assert smoke_variants(["04_leakage_oracle"], ["04_leakage_oracle", "04_leakage_oracle@vlcs"]) == \
        {"04_leakage_oracle": ["vlcs"]}


@pytest.mark.paper_smoke
def test_paper_profile_smoke_run(tmp_path):
    from dganalysis.cli import main

    start, before = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    assert main(["run", "--profile", "paper", "--smoke", "--smoke-dir", str(tmp_path), "--no-progress"]) == 0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    print(f"paper smoke: {time.time() - start:.0f} s wall, {cpu:.0f} CPU-s in kernels, load {os.getloadavg()}")
    out = tmp_path / "outputs" / "paper"
    runs = json.loads((out / "runs.json").read_text())
    assert sorted(runs) == sorted(list_notebooks(ROOT) + ["04_leakage_oracle@pacs"]) and all(r["ok"] for r in runs.values())
    assert (out / "variants" / "pacs" / "tables").is_dir() and "[variant pacs]" in (out / "index.md").read_text()
    assert (out / "index.md").read_text().startswith("> **FAKE DATA")
    assert (out / "FAKE.md").is_file() and (tmp_path / "fake_weights" / "vit-b-300ep.pth.tar").is_file()
    jobs = [json.loads(p.read_text()) for p in (out / "store").glob("*/spec.json")]
    assert {j["dataset"] for j in jobs} >= {"RotatedMNIST", "ColoredMNIST", "VLCS", "OfficeHome", "NICO++", "PACS", "PaHCC"}
    shift_map = (out / "tables" / "06_shift_map.csv").read_text()
    assert "WILDSCamelyon" in shift_map and "CelebA_Blond" in shift_map
