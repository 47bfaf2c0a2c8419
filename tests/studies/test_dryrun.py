"""`dganalysis run --profile paper --dry-run`: every YAML validated, jobs listed and counted, compute estimated,
missing inputs named — without training or building anything."""

import inspect
import json
import math
import shutil
from pathlib import Path

import papermill as pm
import pytest

from dganalysis.cli import main
from dganalysis.studies.dryrun import dry_run, format_dry_run
from dganalysis.studies.plans import domain_names
from dganalysis.studies.study import STUDIES, params_class, plan_for
from dganalysis.sweep import Job
from dganalysis.sweep.cost import Throughput, job_cost, load_throughput

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def paper():
    return dry_run("paper", root=ROOT, output_root=ROOT / "outputs" / "_dry_run_test")


def test_paper_profile_plans_every_notebook(paper):
    assert [n.name for n in paper.notebooks if "@" not in n.name] == \
        sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert all(not n.error for n in paper.notebooks), [n.error for n in paper.notebooks if n.error]
    counts = paper.jobs.groupby("notebook").size()
    # every notebook but the dataset build and the audit (it reads the store) trains something at paper scale
    assert set(counts.index) == {n.name for n in paper.notebooks} - {"01_dataset_construction", "08_audit"}
    assert (paper.jobs["steps"] >= 1000).all() and paper.jobs["cpu_hours"].notna().all()
    # notebook 02's binary arm and notebook 03 ask for the same jobs: listed twice, trained once
    jobs = paper.jobs
    shared = set(jobs[jobs["notebook"] == "02_binarization_study"]["job_id"]) & \
        set(jobs[jobs["notebook"] == "03_dynamic_dg"]["job_id"])
    base = jobs[~jobs["notebook"].str.contains("@")]  # the variants' shared jobs: test_variants_are_planned_…
    assert shared and base["job_id"].nunique() == len(base) - len(shared)
    text = format_dry_run(paper)
    assert f"{jobs['job_id'].nunique()} distinct" in text and "published, not measured here" in text and "MEASURED on" in text


def test_variants_are_planned_and_their_jobs_counted_once(paper):
    """Each variant of a paper YAML is planned as ``<notebook>@<variant>``; a job it shares with the base run (or
    another variant) is listed under each and counted once."""
    from dganalysis.studies.runner import load_variants

    declared = list(load_variants("paper", "04_leakage_oracle", ROOT))
    assert declared == ["pacs", "vlcs", "terra_incognita", "domainnet"]
    names = [n.name for n in paper.notebooks]
    at = names.index("04_leakage_oracle")
    assert names[at:at + 1 + len(declared)] == ["04_leakage_oracle"] + [f"04_leakage_oracle@{v}" for v in declared]
    jobs = paper.jobs
    by = {n: jobs[jobs["notebook"] == n] for n in jobs["notebook"].unique()}
    base, pacs, dn = by["04_leakage_oracle"], by["04_leakage_oracle@pacs"], by["04_leakage_oracle@domainnet"]
    lp = pacs[pacs["sweep"] == "LP/FT"]  # 4 splits x (2 weights + random init) x (LP, FT) x 3 trials
    assert set(lp["dataset"]) == {"PACS"} and len(lp) == 4 * 3 * 2 * 3 and set(lp["featurizer"]) == {"resnet50"}
    # the Table 1 variants keep the base run's NICO++ oracle sweep: the same jobs, trained once
    for v in ("pacs", "vlcs", "terra_incognita"):
        sub = by[f"04_leakage_oracle@{v}"]
        assert set(sub[sub["sweep"] == "oracle-K"]["job_id"]) == set(base[base["sweep"] == "oracle-K"]["job_id"])
    # Table 4's DomainNet rows: (clipart, infograph, painting) <-> (quickdraw, real, sketch), 10 draws x 3 trials
    ok = dn[dn["sweep"] == "oracle-K"]
    assert set(ok["dataset"]) == {"DomainNet"} and len(ok) == 2 * 10 * 3
    assert set(ok["train"]) == {"clip,info,paint", "quick,real,sketch"} and set(ok["steps"]) == {15000}
    assert set(dn[dn["sweep"] == "LP/FT"]["test"]) == {"clip", "info", "paint", "quick", "real", "sketch"}
    shared = len(jobs) - jobs["job_id"].nunique()
    assert shared >= 3 * len(base[base["sweep"] == "oracle-K"])
    text = format_dry_run(paper)
    assert "== 04_leakage_oracle@domainnet: " in text and f"{len(jobs)} jobs listed, {jobs['job_id'].nunique()} " \
        "distinct" in text


def test_job_counts_follow_the_yaml(paper):
    import yaml

    p = yaml.safe_load((ROOT / "params/paper/07_worst_case.yaml").read_text())
    n07 = (paper.jobs["notebook"] == "07_worst_case").sum()
    assert n07 == len(p["sweep"]["algorithms"]) * p["sweep"]["n_hparams"]  # one split, one trial per (algorithm, draw)


@pytest.mark.parametrize("name", STUDIES.names())
def test_plan_takes_the_notebooks_parameters(name):
    """A study's plan takes the notebook's parameter object, whose fields are the notebook's parameters."""
    params = list(pm.inspect_notebook(str(ROOT / "notebooks" / f"{name}.ipynb")))
    (arg,) = inspect.signature(STUDIES.get(name).plan).parameters.values()
    assert arg.annotation in (params_class(name), params_class(name).__name__)
    assert params_class(name).names() == params, f"{name}: the parameter object's fields are not the notebook's"


@pytest.mark.parametrize("name", [n for n in STUDIES.names() if n not in ("01_dataset_construction", "08_audit")])  # no jobs
def test_notebook_builds_its_jobs_with_its_plan(name):
    """One way to build a notebook's jobs: the notebook calls its study's plan, the one the dry run calls."""
    source = (ROOT / "notebooks" / f"{name}.py").read_text()
    assert f'S = study("{name}")' in source and "S.plan(P)" in source, (
        f"{name} builds its jobs itself; call its study's plan (S.plan(P)) instead")


def _project(tmp_path, edits: dict[str, str | tuple[str, str]]) -> Path:
    """The repository's profiles with ``edits`` (notebook -> text appended to its paper YAML, or (old, new) lines
    replaced in it)."""
    (tmp_path / "notebooks").symlink_to(ROOT / "notebooks")
    shutil.copytree(ROOT / "params", tmp_path / "params")
    for name, extra in edits.items():
        path = tmp_path / "params" / "paper" / f"{name}.yaml"
        text = path.read_text()
        if isinstance(extra, tuple):
            assert extra[0] in text, (name, extra[0])
            path.write_text(text.replace(extra[0], extra[1]))
        else:
            path.write_text(text + extra)
    return tmp_path


def test_bad_yaml_and_missing_inputs_are_reported(tmp_path, capsys, monkeypatch):
    root = _project(tmp_path, {
        "01_dataset_construction": "\nbogus_parameter: 1\n",
        "07_worst_case": ('  algorithms: ["ERM", "CORAL"', '  algorithms: ["NoSuchAlg", "CORAL"'),
        "00_quickstart": ("  hparams_overrides: {}", "  hparams_overrides: {featurizer: cnn, pretrained: /nonexistent/cnn.pt}"),
        "06_shift_estimation": "\nfolder_root: /nonexistent/images\n",
        "04_leakage_oracle": "\ninception_weights: /nonexistent/inception.pt\n"})
    names = ["00_quickstart", "01_dataset_construction", "04_leakage_oracle", "06_shift_estimation", "07_worst_case"]
    result = dry_run("paper", names, root=root)
    by = {n.name: n for n in result.notebooks}
    assert not result.ok
    assert "01_dataset_construction.yaml: unknown parameter(s) ['bogus_parameter']" in by["01_dataset_construction"].error
    assert "NoSuchAlg" in by["07_worst_case"].error
    assert "weights /nonexistent/cnn.pt" in by["00_quickstart"].missing
    assert any("folder_root" in m and "/nonexistent/images" in m for m in by["06_shift_estimation"].missing)
    assert "inception_weights: /nonexistent/inception.pt" in by["04_leakage_oracle"].missing  # no published name
    # the others are still planned and listed
    assert {n.split("@")[0] for n in result.jobs["notebook"]} == {"00_quickstart", "04_leakage_oracle",
                                                                  "06_shift_estimation"}
    monkeypatch.chdir(root)  # the command finds the project from the current folder
    assert main(["run", "--profile", "paper", "--dry-run", *names]) == 1
    out = capsys.readouterr().out
    assert "== 07_worst_case: ERROR" in out and "MISSING folder_root: /nonexistent/images" in out
    assert out.rstrip().endswith("PROBLEMS above (ERROR / MISSING)")


def test_done_jobs_are_not_budgeted(tmp_path):
    out_root = tmp_path / "outputs"
    first = dry_run("paper", ["07_worst_case"], root=ROOT, output_root=out_root)
    job_id = first.jobs["job_id"].iloc[0]
    spec = first.jobs.iloc[0]
    done = out_root / "paper" / "store" / job_id
    done.mkdir(parents=True)
    (done / "done").write_text("")
    (done / "model.pt").write_bytes(b"")
    again = dry_run("paper", ["07_worst_case"], root=ROOT, output_root=out_root)
    assert (again.jobs["state"] == "done").sum() == 1
    assert f"{len(again.jobs) - 1} still to train" in format_dry_run(again)
    assert spec["featurizer"] == "cnn"


def test_job_cost_from_the_throughput_table():
    table = Throughput(cpu={("cnn", 28): 100.0}, gpu={("cnn", 28): 5000.0}, cpu_source="measured",
                       gpu_source="published", gpu_notes={("cnn", 28): "published: x"})
    job = Job("RotatedDigits", "ERM", ["0", "15", "30"], ["75"], steps=10, checkpoint_freq=5,
              dataset_kwargs={"image_size": 28}, hparams_overrides={"featurizer": "cnn", "batch_size": 32})
    cost = job_cost(job, table)
    assert cost["train_images"] == 10 * 32 * 3
    assert math.isclose(cost["cpu_hours"], 960 / 100 / 3600) and math.isclose(cost["gpu_hours"], 960 / 5000 / 3600)
    big = Job("RotatedDigits", "ERM", ["0"], ["75"], steps=10, checkpoint_freq=5, dataset_kwargs={"image_size": 56},
              hparams_overrides={"featurizer": "cnn", "batch_size": 32})
    assert math.isclose(job_cost(big, table)["cpu_hours"], 4 * 320 / 100 / 3600)  # 4× the pixels
    assert job_cost(job, table)["gpu_basis"] == "published: x"
    assert job_cost(big, table)["gpu_basis"] == "published: x; scaled by pixel count from 28 to 56 px"
    assert math.isclose(job_cost(big, table)["gpu_hours"], 4 * 320 / 5000 / 3600)
    other = Job("RotatedDigits", "ERM", ["0"], ["75"], steps=10, checkpoint_freq=5,
                hparams_overrides={"featurizer": "resnet50"})
    assert math.isnan(job_cost(other, table)["cpu_hours"]) and math.isnan(job_cost(other, table)["gpu_hours"])
    assert job_cost(other, table)["gpu_basis"] == "no published GPU figure"


def test_shipped_throughput_table_states_its_sources(tmp_path):
    t = load_throughput()
    assert t.cpu and "MEASURED" in t.cpu_source and "bench/dryrun_throughput.py" in t.cpu_source
    # GPU figures: published ones name model, GPU, precision, batch and the file they were read from
    assert t.gpu[("resnet50", 224)] == 826.06 and t.gpu[("resnet18", 224)] == 2764.22
    assert t.gpu[("vit_b_16", 224)] == 390.86
    assert "RTX 3090" in t.gpu_notes[("resnet50", 224)] and "batch 512" in t.gpu_notes[("resnet50", 224)]
    assert "benchmark-train-amp-nchw-pt112-cu113-rtx3090.csv" in t.gpu_source and "PUBLISHED" in t.gpu_source
    assert t.gpu_notes[("cnn", 28)].startswith("derived:") and t.cross_checks
    for key in t.gpu:  # every GPU figure says where it comes from
        assert t.gpu_notes[key].startswith(("published:", "derived:")), key
    assumed = tmp_path / "assumed.yaml"
    assumed.write_text(json.dumps({"cpu": {"entries": []}, "gpu": {"speedup_over_cpu": 50}}))
    with pytest.raises(ValueError, match="assumed CPU-to-GPU factor is no longer accepted"):
        load_throughput(assumed)
    unsourced = tmp_path / "unsourced.yaml"
    unsourced.write_text(json.dumps({"cpu": {"entries": []}, "gpu": {"references": {"r": "x"}, "entries": [
        {"featurizer": "cnn", "image_size": 28, "images_per_s": 1.0, "basis": "published", "ref": "r"}]}}))
    with pytest.raises(ValueError, match=r"needs \['model', 'gpu', 'precision', 'batch'\]"):
        load_throughput(unsourced)
    bad = tmp_path / "t.yaml"
    bad.write_text(json.dumps({"cpu": {"entries": [{"featurizer": "cnn"}]}}))
    with pytest.raises(ValueError, match=r"t.yaml: cpu.entries\[0\]: expected featurizer, image_size, images_per_s"):
        load_throughput(bad)


def test_domain_names_match_the_built_datasets():
    from dganalysis.data import load_dataset
    from dganalysis.data.pahcc import DOMAINS

    for name, kw in (("RotatedDigits", {"image_size": 8, "angles": [0, 30]}), ("ColoredDigits", {"image_size": 8})):
        assert domain_names(name, kw) == load_dataset(name, **kw).domain_names
    assert domain_names("RotatedDigits", {}) == ["0", "15", "30", "45", "60", "75"]
    assert domain_names("PaHCC", {"size": 10}) == list(DOMAINS)


def test_leakage_plan_oracle_sweep_has_its_own_dataset_and_trials(tmp_path):
    """Notebook 04's Table 4 sweep (Yu et al. 2024) may use another dataset and trial count than its LP/FT part."""
    from dganalysis.studies.dryrun import notebook_defaults

    p = {**notebook_defaults(ROOT / "notebooks" / "04_leakage_oracle.ipynb"), "output_dir": str(tmp_path),
         "oracle": {"dataset": "ColoredDigits", "dataset_kwargs": {"image_size": 8}, "n_trials": 3, "n_hparams": 2,
                    "splits": [{"train": ["+90%"], "test": ["+80%", "-90%"]}]}}
    plan = plan_for("04_leakage_oracle", p)
    oracle, lpft = plan.sweeps["oracle-K"], plan.sweeps["LP/FT"]
    assert {j.dataset for j in oracle} == {"ColoredDigits"} and {j.dataset for j in lpft} == {"RotatedDigits"}
    assert len(oracle) == 2 * 3 and {j.trial_seed for j in oracle} == {0, 1, 2}
    assert {j.trial_seed for j in lpft} == set(range(p["sweep"]["n_trials"]))
    assert ("ColoredDigits", {"image_size": 8}) in plan.datasets
    assert ("RotatedDigits", p["sweep"]["dataset_kwargs"]) in plan.datasets


def test_every_sweep_breakdown_states_its_exact_count(paper):
    """Each 'sweep …: N jobs = a × b × …' line multiplies out to N (or says it is no full grid: notebooks 00 and 06
    set the network per dataset); notebook 04's LP/FT sweep counts its 42 pretraining × mode settings (8 published
    files × LP/FT/3 frozen stages + random init × LP/FT), each listed with its jobs."""
    import re

    text = format_dry_run(paper)
    heads = re.findall(r"sweep [^:]+: (\d+) jobs = ([^;]+?) on ", text)
    partial = re.findall(r"== (\S+): .*?\n   sweep [^:]+: \d+ jobs, not a full grid", text)
    assert len(heads) + len(partial) == paper.jobs.groupby(["notebook", "sweep"]).ngroups
    assert set(partial) <= {"00_quickstart", "06_shift_estimation"}
    for n, terms in heads:
        assert math.prod(int(t.split()[0]) for t in terms.split(" × ")) == int(n), (n, terms)
    assert ("sweep LP/FT: 504 jobs = 1 algorithm(s) × 4 data split(s) × 42 override setting(s) × 1 hparam draw(s) × "
            "3 trial(s)") in text
    settings = re.findall(r"setting (featurizer=\w+, freeze_stages=\d, linear_probe=\w+, pretrained=[^:]+): (\d+) jobs",
                          text)
    assert len(settings) == 42 and {int(n) for _, n in settings} == {12}
    assert "setting wc_rho=0.1 (ERM_WC, CORAL_WC, WM_WC): 30 jobs" in text  # tied to algorithms: no extra factor
    gpu_line = next(line for line in text.splitlines() if "estimated GPU-hours" in line)
    assert "published, not measured here" in gpu_line and "ASSUMED" not in text
    assert re.search(r"resnet50 +224 px .* GPU-h \(published: timm resnet50, NVIDIA GeForce RTX 3090, AMP, batch 512", text)


def test_breakdown_says_when_jobs_are_no_full_grid():
    import pandas as pd

    from dganalysis.studies.dryrun import sweep_breakdown

    rows = [{"algorithm": a, "split": s, "overrides": "{}", "hparams_seed": h, "trial_seed": 0, "dataset": "D",
             "featurizer": "cnn", "image_size": 28, "steps": 10, "state": "new"}
            for a, s, h in [("ERM", "x", 0), ("ERM", "y", 0), ("IRM", "x", 0), ("IRM", "x", 1)]]
    head = sweep_breakdown(pd.DataFrame(rows))[0]
    assert head.startswith("4 jobs, not a full grid of 2 algorithm(s) × 2 data split(s) × 2 hparam draw(s) × "
                           "1 trial(s) (= 8) on D")


def test_missing_benchmarks_are_named_with_how_to_get_them(tmp_path):
    from dganalysis.studies.dryrun import check_dataset

    ok, what = check_dataset("PACS", {"root": str(tmp_path / "data")})
    assert not ok and "PACS" in what and "dganalysis.scripts.download --data_dir <root> --datasets PACS" in what
    ok, what = check_dataset("OfficeHome", {})
    assert not ok and "needs root=" in what and "--datasets OfficeHome" in what
    for env in ("Art", "Clipart", "Product"):  # 'Real World' missing
        (tmp_path / "data" / "office_home" / env).mkdir(parents=True)
    ok, what = check_dataset("OfficeHome", {"root": str(tmp_path / "data")})
    assert not ok and "['Real World']" in what and "--datasets OfficeHome" in what
    (tmp_path / "data" / "office_home" / "Real World").mkdir()
    assert check_dataset("OfficeHome", {"root": str(tmp_path / "data")})[0]
    ok, what = check_dataset("WILDSFMoW", {"root": str(tmp_path / "data")})
    assert not ok and "fmow_v1.1 not found" in what and "wilds.get_dataset('fmow'" in what
    ok, what = check_dataset("RotatedMNIST", {"mnist_dir": str(tmp_path / "mnist")})
    assert not ok and "torchvision.datasets.MNIST(<dir>, download=True)" in what
