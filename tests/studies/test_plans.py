"""The leaderboard study's boards (Yu et al. 2024, Table 5 / App. C.2-C.4): several leaderboards, each with its own datasets,
networks, weights, search space and steps; without ``leaderboards`` the plan is exactly what it was."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dganalysis.algorithms import default_hparams
from dganalysis.protocols import leaderboard as lb
from dganalysis.studies.params import LeaderboardsParams
from dganalysis.studies.plans import leaderboard_boards, leaderboards_plan
from dganalysis.studies.runner import load_params
from dganalysis.studies.study import plan_for
from dganalysis.sweep import Sweep
from dganalysis.training.hparams import draw_seed, name_state
from dganalysis.validation import ConfigError

ROOT = Path(__file__).resolve().parents[2]

#: sha256 of the sorted job ids of the quick profile's notebook 05, computed with the plan before boards existed
#: (commit 8464116): the quick run's stored results stay valid

DATASETS = [{"name": "RotatedDigits", "kwargs": {"image_size": 8, "angles": [0, 30, 60]}},
            {"name": "ColoredDigits", "kwargs": {"image_size": 8}}]
SMALL = dict(logo_groups={"RotatedDigits": [["0", "30"]]},
             sweep={"datasets": DATASETS, "algorithms": ["ERM", "MMD"], "n_hparams": 2, "n_trials": 1, "steps": 3,
                    "checkpoint_freq": 3, "hparams_overrides": {"featurizer": "smallcnn"}})


def _plan(**params):
    """The leaderboard study's plan for ``SMALL`` with ``params`` on top."""
    return leaderboards_plan(LeaderboardsParams(**{**SMALL, **params}))


def _ids(jobs) -> list[str]:
    return [j.job_id for j in jobs]


def test_quick_profile_trains_for_c2_only_when_the_design_can_decide_it():
    """C2 (the pre-specified pair CORAL, ERM reverses between LODO and LOGO) cannot be decided with the quick
    profile's 3 trials (simulated power 0.00 at Table 5's gap and our setting's per-trial SD): with
    skip_undecidable its plan trains nothing and says why; without skip_undecidable it trains the YAML's LODO and
    LOGO jobs (9 splits x 3 algorithms x 3 trials). Without the pair (no CORAL) there is no effect to plan from."""
    params = load_params("quick", "05_leaderboards", ROOT)
    plan = plan_for("05_leaderboards", params)
    assert plan.jobs == [] and any("C2" in o and "simulated power" in o for o in plan.other), plan.other
    kept = plan_for("05_leaderboards", {**params, "skip_undecidable": False})
    assert len(kept.sweeps["LODO"]) == 3 * 6 * 3 and len(kept.sweeps["LOGO"]) == 3 * 3 * 3 and not kept.other
    no_pair = {**params, "sweep": {**params["sweep"], "algorithms": ["ERM", "Mixup", "VREx"]}}
    skipped = plan_for("05_leaderboards", no_pair)
    assert skipped.jobs == [] and any("C2" in o and "no expected effect" in o for o in skipped.other), skipped.other


def test_no_boards_is_one_unnamed_board():
    base = _plan()
    assert list(base.sweeps) == ["LODO", "LOGO"]
    for empty in (None, {}):
        assert {k: _ids(v) for k, v in _plan(leaderboards=empty).sweeps.items()} == \
            {k: _ids(v) for k, v in base.sweeps.items()}
    named = _plan(leaderboards={"A": {}, "B": None})
    assert list(named.sweeps) == ["A / LODO", "A / LOGO", "B / LODO", "B / LOGO"]
    for board in ("A", "B"):  # a board that sets nothing has the notebook-wide jobs
        assert _ids(named.sweeps[f"{board} / LODO"]) == _ids(base.sweeps["LODO"])
        assert _ids(named.sweeps[f"{board} / LOGO"]) == _ids(base.sweeps["LOGO"])


def test_lodo_domains_choose_the_held_out_domains():
    base = _plan()
    assert {tuple(j.test_domains) for j in base.sweeps["LODO"] if j.dataset == "RotatedDigits"} == \
        {("0",), ("30",), ("60",)}  # every domain by default
    some = _plan(lodo_domains={"RotatedDigits": ["60", "0"]})
    assert [j.job_id for j in some.sweeps["LODO"]] == [j.job_id for j in base.sweeps["LODO"]
                                                       if j.dataset != "RotatedDigits" or j.test_domains != ("30",)]
    assert _ids(some.sweeps["LOGO"]) == _ids(base.sweeps["LOGO"])
    with pytest.raises(ConfigError, match=r"lodo_domains\['RotatedDigits'\]': unknown domains \['90'\]"):
        _plan(lodo_domains={"RotatedDigits": ["90"]})
    with pytest.raises(ConfigError, match=r"lodo_domains\['RotatedDigits'\]"):
        LeaderboardsParams(**{**SMALL, "lodo_domains": {"RotatedDigits": []}})


def test_board_settings_merge_or_replace():
    sweep = Sweep(algorithms=["ERM", "MMD"], steps=3, hparams_overrides={"featurizer": "smallcnn"},
                  search_overrides={"MMD": {"mmd_gamma": {"log10_uniform": [-2, 0]}}},
                  datasets=[{**DATASETS[0], "hparams": {"augment": True}}, {**DATASETS[1], "steps": 5}])
    specs = leaderboard_boards(
        {"scratch": {"datasets": ["RotatedDigits"], "hparams_overrides": {"lr": 0.1},
                     "search_overrides": {"lr": {"log10_uniform": [-4.5, -3]}}, "steps": 7, "dataset_steps": {},
                     "dataset_overrides": {"RotatedDigits": {"batch_size": 4}}},
         "long": {"datasets": ["ColoredDigits", "RotatedDigits"], "dataset_steps": {"RotatedDigits": 9}},
         "default": {}}, sweep=sweep)
    s = specs["scratch"]
    assert s["datasets"] == ["RotatedDigits"] and s["sweep"].steps == 7
    assert s["sweep"].hparams_overrides == {"featurizer": "smallcnn", "lr": 0.1}
    assert s["sweep"].search_overrides == {"MMD": {"mmd_gamma": {"log10_uniform": [-2, 0]}},
                                           "lr": {"log10_uniform": [-4.5, -3]}}
    assert s["sweep"].datasets == [{**DATASETS[0], "hparams": {"augment": True, "batch_size": 4}}]
    (one,) = s["sweep"].per_dataset()
    assert one.steps == 7 and one.hparams_overrides == {"featurizer": "smallcnn", "lr": 0.1, "augment": True,
                                                         "batch_size": 4}
    long = specs["long"]["sweep"]  # the board's order; its dataset_steps replace the entries' own
    assert [(e["name"], e.get("steps")) for e in long.datasets] == [("ColoredDigits", None), ("RotatedDigits", 9)]
    d = specs["default"]
    assert d["datasets"] == ["RotatedDigits", "ColoredDigits"] and d["sweep"] == sweep
    assert [o.steps for o in d["sweep"].per_dataset()] == [3, 5]


@pytest.mark.parametrize("boards, match", [
    ({"scratch": {"datasets": ["DomainNet"]}}, r"leaderboards\['scratch'\]: dataset 'DomainNet' is not in"),
    ({"scratch": {"datasets": []}}, r"leaderboards\['scratch'\]\.datasets: expected a non-empty list"),
    ({"scratch": {"datasets": "RotatedDigits"}}, r"leaderboards\['scratch'\]\.datasets: expected a non-empty list"),
    ({"scratch": {"lr": 0.1}}, r"leaderboards\['scratch'\]: unknown key\(s\) \['lr'\]"),
    ({"scratch": {"datasets": ["RotatedDigits"], "dataset_steps": {"ColoredDigits": 9}}},
     r"leaderboards\['scratch'\]\.dataset_steps: dataset\(s\) \['ColoredDigits'\] are not among"),
    ({"a / b": {}}, r"leaderboards\['a / b'\]: a board name is a non-empty string without ' / '"),
    ({"scratch": [1]}, r"leaderboards\['scratch'\]: expected a mapping"),
    ({"scratch": {"hparams_overrides": [1]}}, r"leaderboards\['scratch'\]\.hparams_overrides: expected a mapping"),
    ({"scratch": {"steps": 0}}, r"leaderboards\['scratch'\]: parameter 'sweep\.steps': expected an integer"),
    (["scratch"], r"leaderboards: expected a mapping"),
])
def test_bad_boards_are_refused_before_any_work(boards, match):
    with pytest.raises(ValueError, match=match):
        _plan(leaderboards=boards)


def test_board_jobs_carry_their_settings():
    plan = _plan(sweep={**SMALL["sweep"], "search_overrides": {"MMD": {"mmd_gamma": {"log10_uniform": [-2, 0]}}}},
                             leaderboards={"main": {}, "scratch": {
                                 "datasets": ["RotatedDigits"], "steps": 11, "hparams_overrides": {"augment": True},
                                 "search_overrides": {"lr": {"log10_uniform": [-4.5, -3]}}}})
    assert list(plan.sweeps) == ["main / LODO", "main / LOGO", "scratch / LODO", "scratch / LOGO"]
    scratch = plan.sweeps["scratch / LODO"] + plan.sweeps["scratch / LOGO"]
    assert {j.dataset for j in scratch} == {"RotatedDigits"} and {j.steps for j in scratch} == {11}
    assert len(plan.sweeps["scratch / LODO"]) == 3 * 2 * 2 and len(plan.sweeps["scratch / LOGO"]) == 1 * 2 * 2
    assert all(j.hparams_overrides["augment"] is True for j in scratch)
    mmd = next(j for j in scratch if j.algorithm == "MMD")
    assert dict(mmd.search_overrides) == {"lr": {"log10_uniform": [-4.5, -3]},
                                          "mmd_gamma": {"log10_uniform": [-2, 0]}}
    erm = next(j for j in plan.sweeps["main / LODO"] if j.algorithm == "ERM")
    assert dict(erm.search_overrides) == {} and erm.steps == 3
    assert not set(_ids(scratch)) & set(_ids(plan.sweeps["main / LODO"] + plan.sweeps["main / LOGO"]))


def test_from_scratch_lr_space_of_app_c4():
    """Yu et al. 2024 App. C.4: lr ~ 10^U(-4.5, -3) when training from scratch, drawn from the job's own seeded
    state for 'lr' (dganalysis.training.hparams: seed_hash(seed_hash(hparams_seed, trial_seed), 'lr')); DomainBed's space
    10^U(-5, -3.5) is untouched for the other boards, and seed 0 keeps the default."""
    space = {"lr": {"log10_uniform": [-4.5, -3]}}
    for hp_seed, trial in [(1, 0), (2, 0), (5, 1), (9, 2)]:
        got = default_hparams("ERM", hp_seed, search_overrides=space, dataset="DomainNet", trial_seed=trial)["lr"]
        want = 10 ** name_state(draw_seed(hp_seed, trial), "lr").uniform(-4.5, -3)
        assert got == pytest.approx(want, rel=1e-12) and 10 ** -4.5 <= got <= 1e-3
        dbed = default_hparams("ERM", hp_seed, dataset="DomainNet", trial_seed=trial)["lr"]
        assert dbed == pytest.approx(10 ** name_state(draw_seed(hp_seed, trial), "lr").uniform(-5, -3.5), rel=1e-12)
    assert default_hparams("ERM", 0, search_overrides=space, dataset="DomainNet")["lr"] == 5e-5


def test_paper_profile_expresses_the_three_boards_of_table5():
    p = load_params("paper", "05_leaderboards", ROOT)
    plan = plan_for("05_leaderboards", p)
    boards = ["MoCo-v2 ResNet-50", "no pretraining ResNet-50", "MoCo-v3 ViT-B/16"]
    assert list(plan.sweeps) == [lb.board_label(b, proto) for b in boards for proto in ("LODO", "LOGO")]
    n = len(p["sweep"]["algorithms"]) * p["sweep"]["n_hparams"] * p["sweep"]["n_trials"]  # 300 jobs per split
    splits = {"LODO": 4 + 4 + 4 + 6 + 6, "LOGO": 3 + 3}
    for b in boards:
        for proto, k in splits.items():
            k = {"LODO": 12, "LOGO": 6}[proto] if b.startswith("no pretraining") else k
            assert len(plan.sweeps[lb.board_label(b, proto)]) == k * n, (b, proto)
    assert len(plan.jobs) == 23400
    by = {b: plan.sweeps[f"{b} / LODO"] + plan.sweeps[f"{b} / LOGO"] for b in boards}
    scratch = by["no pretraining ResNet-50"]
    assert {j.dataset for j in scratch} == {"NICO++", "DomainNet"} and {j.steps for j in scratch} == {60000}
    assert {j.hparams_overrides["pretrained"] for j in scratch} == {None}
    assert all(j.search_overrides["lr"] == {"log10_uniform": [-4.5, -3]} for j in scratch)
    for b, weights, feat in [("MoCo-v2 ResNet-50", "moco_v2_800ep_pretrain.pth.tar", "resnet50"),
                             ("MoCo-v3 ViT-B/16", "vit-b-300ep.pth.tar", "vit_b_16")]:
        assert {Path(j.hparams_overrides["pretrained"]).name for j in by[b]} == {weights}
        assert {j.hparams_overrides["featurizer"] for j in by[b]} == {feat}
        assert {(j.dataset, j.steps) for j in by[b]} == {("PACS", 5000), ("VLCS", 5000), ("OfficeHome", 5000),
                                                          ("NICO++", 10000), ("DomainNet", 15000)}
        assert all("lr" not in j.search_overrides for j in by[b])
    every = [j for js in by.values() for j in js]
    assert {j.hparams_overrides["schedule"] for j in every} == {"cosine"}  # Sec. 3.1: Adam with cosine annealing
    assert all(j.search_overrides["mmd_gamma"] == {"log10_uniform": [-2, 0]} for j in every if j.algorithm == "MMD")
    assert all("mmd_gamma" not in j.search_overrides for j in every if j.algorithm != "MMD")


def test_smoke_keeps_every_board_minimally():
    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.smoke.run import SWEEP_STEPS, smoke_params

    p = load_params("paper", "05_leaderboards", ROOT)
    s = smoke_params("05_leaderboards", p, notebook_defaults(ROOT / "notebooks" / "05_leaderboards.ipynb"))
    assert list(s["leaderboards"]) == list(p["leaderboards"])
    assert s["leaderboards"]["no pretraining ResNet-50"]["datasets"] == ["NICO++"]
    assert s["leaderboards"]["no pretraining ResNet-50"]["steps"] == SWEEP_STEPS
    assert s["leaderboards"]["MoCo-v3 ViT-B/16"]["hparams_overrides"] == p["leaderboards"]["MoCo-v3 ViT-B/16"][
        "hparams_overrides"]  # the published weights are still loaded
    plan = plan_for("05_leaderboards", s)
    assert len(plan.sweeps) == 6 and all(plan.sweeps.values())
    assert {j.steps for j in plan.jobs} == {SWEEP_STEPS} and {j.dataset for j in plan.jobs} == {"NICO++"}
    assert {j.hparams_overrides["batch_size"] for j in plan.jobs} == {8}
    # LODO holds out one domain, the first of the first kept LOGO group: 1 split per board (LOGO: 2)
    assert s["lodo_domains"]["NICO++"] == [s["logo_groups"]["NICO++"][0][0]] == ["autumn"]
    lodo = [j for label, jobs in plan.sweeps.items() if label.endswith("LODO") for j in jobs]
    assert {tuple(j.test_domains) for j in lodo} == {(d,) for d in s["lodo_domains"]["NICO++"]}


# ------------------------------------------------------------------ leaderboards of several boards
def _long(names: list[str], orders: list[list[float]]) -> pd.DataFrame:
    return pd.DataFrame([dict(leaderboard=n, algorithm=a, dataset="D", acc=acc, se=0.1, n=2)
                         for n, accs in zip(names, orders) for a, acc in zip("abc", accs)])


def test_board_names_and_file_labels():
    assert lb.board_label("", "LODO") == "LODO"
    assert lb.board_label("MoCo-v3 ViT-B/16", "LOGO") == "MoCo-v3 ViT-B/16 / LOGO"
    with pytest.raises(ValueError, match="contains ' / '"):
        lb.board_label("a / b", "LODO")
    assert lb.boards(["LODO", "LOGO"]) == {"": ["LODO", "LOGO"]}
    assert lb.boards(["X / LODO", "MoCo-v3 ViT-B/16 / LODO", "X / LOGO"]) == \
        {"X": ["X / LODO", "X / LOGO"], "MoCo-v3 ViT-B/16": ["MoCo-v3 ViT-B/16 / LODO"]}
    assert lb.file_label("LODO") == "LODO" and lb.file_label("MoCo-v3 ViT-B/16 / LODO") == "MoCo-v3_ViT-B_16_LODO"
    with pytest.raises(ValueError):
        lb.file_label(" / ")


def test_rank_changes_per_board():
    one = lb.rank_changes(_long(["LODO", "LOGO"], [[3, 2, 1], [1, 2, 3]]))
    assert list(one.columns) == ["LODO", "LOGO", "ΔR"] and one.loc["a", "ΔR"] == -2
    two = lb.rank_changes(_long(["X / LODO", "X / LOGO", "Y / LODO", "Y / LOGO"],
                                [[3, 2, 1], [1, 2, 3], [3, 2, 1], [3, 2, 1]]))
    assert list(two.columns)[-2:] == ["ΔR X", "ΔR Y"]
    assert two["ΔR X"].tolist() == [-2, 0, 2] and two["ΔR Y"].tolist() == [0, 0, 0]


def test_studies_that_read_held_out_accuracies_only_evaluate_nothing_else():
    """The binarization and dynamic-DG studies and Table 4's oracle sweep read test accuracies chosen by training-domain
    validation or an oracle, never a training accuracy: their jobs evaluate held-out splits only
    (``Job.evaluate_splits``), the oracle jobs at their last step only; DomainBed's protocol (notebook 00) and the LP/FT
    jobs keep DomainBed's evaluation."""
    def fields(name: str) -> dict[str, set]:
        plan = plan_for(name, load_params("quick", name, ROOT))
        return {s: {(j.evaluate_splits, j.evaluate_at) for j in jobs} for s, jobs in plan.sweeps.items() if jobs}

    assert fields("02_binarization_study") == {"gray": {("held_out", "checkpoints")},
                                               "binary": {("held_out", "checkpoints")}}
    assert fields("03_dynamic_dg") == {"dynamic": {("held_out", "checkpoints")}}
    assert fields("04_leakage_oracle") == {"LP/FT": {("all", "checkpoints")}, "oracle-K": {("held_out", "last")}}
    assert list(fields("00_quickstart").values()) == [{("all", "checkpoints")}]
