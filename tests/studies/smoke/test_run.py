"""The paper profile's smoke run (`dganalysis run --profile paper --smoke`): its parameters keep the paper path while
shrinking it. The run itself, end to end, is in ``test_paper_00_03.py`` and ``test_paper_04_08.py`` (two halves, so
the suite's two workers share it)."""

from __future__ import annotations

from pathlib import Path

from dganalysis.studies.runner import list_notebooks
from dganalysis.studies.smoke.run import FID_SAMPLES, MAX_IMAGE, PAHCC_IMAGE, SWEEP_STEPS

ROOT = Path(__file__).resolve().parents[3]


def test_smoke_params_keep_the_paper_path():
    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.runner import load_params
    from dganalysis.studies.smoke.run import smoke_params

    p04 = load_params("paper", "04_leakage_oracle", ROOT)
    s04 = smoke_params("04_leakage_oracle", p04, notebook_defaults(ROOT / "notebooks" / "04_leakage_oracle.ipynb"))
    # the two weights the findings compare, then one per other featurizer (tests/nets/test_published.py loads every layout)
    assert list(s04["published_weights"]) == ["supervised ResNet-50", "MoCo-v2 ResNet-50", "supervised ResNet-18",
                                              "supervised ViT-B/16"]
    assert all(s04["published_weights"][k] == p04["published_weights"][k] for k in s04["published_weights"])
    assert len(p04["published_weights"]) == 8
    assert s04["sweep"]["steps"] == SWEEP_STEPS == 1 and s04["oracle"]["n_trials"] == 2
    assert s04["sweep"]["dataset_kwargs"]["image_size"] == MAX_IMAGE
    assert s04["inception_weights"] == p04["inception_weights"] and s04["frozen_stages"] == []
    assert p04["fid_n_samples"] == 2000 and s04["fid_n_samples"] == FID_SAMPLES == 2  # the FID's images: the least it accepts
    p05 = load_params("paper", "05_leaderboards", ROOT)
    s05 = smoke_params("05_leaderboards", p05, notebook_defaults(ROOT / "notebooks" / "05_leaderboards.ipynb"))
    assert [e["name"] for e in s05["sweep"]["datasets"]] == ["NICO++"] and s05["sweep"]["algorithms"] == ["ERM", "SWAD"]
    assert [b["hparams_overrides"] for b in s05["leaderboards"].values()] == \
        [b["hparams_overrides"] for b in p05["leaderboards"].values()]  # every board's weights (Table 5 / App. C.4)
    assert [e["steps"] for e in s05["sweep"]["datasets"]] == [SWEEP_STEPS] and s05["sweep"]["steps"] == SWEEP_STEPS
    assert s05["leaderboards"]["no pretraining ResNet-50"]["datasets"] == ["NICO++"]
    groups = s05["logo_groups"]["NICO++"]
    assert len(groups) == 2 and s05["lodo_domains"]["NICO++"] == [groups[0][0]]  # two LOGO groups, one LODO split
    p08 = load_params("paper", "08_audit", ROOT)
    s08 = smoke_params("08_audit", p08, notebook_defaults(ROOT / "notebooks" / "08_audit.ipynb"))
    assert p08["selections"] == "all" and s08["selections"] == "training_domain"  # the notebook's default: one method
    assert s08["inputs"] == p08["inputs"]  # every input kind: a shipped table, a second one, the smoke's own store
    p06 = load_params("paper", "06_shift_estimation", ROOT)
    s06 = smoke_params("06_shift_estimation", p06, notebook_defaults(ROOT / "notebooks" / "06_shift_estimation.ipynb"))
    # the shift map keeps the entries whose fake inputs are large enough: MNIST, Camelyon17-WILDS, OoD-Bench's CelebA
    assert [m["name"] for m in s06["map_datasets"]] == ["ColoredMNIST", "WILDSCamelyon", "CelebA_Blond"]
    assert all(m["kwargs"]["image_size"] <= MAX_IMAGE for m in s06["map_datasets"])
    rank, paper_rank = s06["ranking"], p06["ranking"]  # the nested ranking sweep, shrunk by Sweep.shrunk
    assert rank["steps"] == rank["checkpoint_freq"] == SWEEP_STEPS and rank["n_hparams"] == rank["n_trials"] == 1
    assert rank["algorithms"] == paper_rank["algorithms"][:2] and rank["hparams_overrides"] == {"batch_size": 8}
    assert [d["name"] for d in rank["datasets"]] == ["ColoredMNIST", "PACS", "NICO++", "WILDSCamelyon", "CelebA_Blond"]
    assert all(d["kwargs"]["image_size"] <= MAX_IMAGE for d in rank["datasets"])
    p02 = load_params("paper", "02_binarization_study", ROOT)
    s02 = smoke_params("02_binarization_study", p02, notebook_defaults(ROOT / "notebooks" / "02_binarization_study.ipynb"))
    assert s02["sweep"]["dataset_kwargs"] == {**p02["sweep"]["dataset_kwargs"], "size": 10, "writers": 4,
                                              "image_size": PAHCC_IMAGE}
    assert PAHCC_IMAGE == 8 < MAX_IMAGE  # PaHCC's ResNet-18 keeps the full resolution (3x3 stem): its own, smaller size
    assert s02["sweep"]["hparams_overrides"]["conv1_3x3"] and s02["full_dataset_kwargs"]["image_size"] == PAHCC_IMAGE


def test_smoke_shrinks_every_variant_and_runs_one():
    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.runner import load_variants
    from dganalysis.studies.smoke.run import SMOKE_VARIANT, smoke_params, smoke_variants

    defaults = notebook_defaults(ROOT / "notebooks" / "04_leakage_oracle.ipynb")
    variants = load_variants("paper", "04_leakage_oracle", ROOT)
    for v, p in variants.items():
        s = smoke_params("04_leakage_oracle", p, defaults)
        assert s["sweep"]["steps"] == s["oracle"]["steps"] == SWEEP_STEPS and len(s["sweep"]["splits"]) == 1, v
        assert s["oracle"]["n_hparams"] == s["oracle"]["n_trials"] == 2 and len(s["oracle"]["splits"]) == 1, v
        assert s["oracle"]["dataset"] == p["oracle"]["dataset"], v  # the variant's own oracle dataset (DomainNet)
        assert s["sweep"]["dataset"] == p["sweep"]["dataset"], v
        assert s["sweep"]["dataset_kwargs"]["image_size"] == MAX_IMAGE, v
    labels = list_notebooks(ROOT) + [f"04_leakage_oracle@{v}" for v in variants]
    assert SMOKE_VARIANT == ("04_leakage_oracle", "pacs")
    assert smoke_variants(list_notebooks(ROOT), labels) == {"04_leakage_oracle": ["pacs"]}
    assert smoke_variants(["03_dynamic_dg"], labels) == {}
    assert smoke_variants(["04_leakage_oracle"], ["04_leakage_oracle", "04_leakage_oracle@vlcs"]) == \
        {"04_leakage_oracle": ["vlcs"]}
