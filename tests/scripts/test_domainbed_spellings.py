"""DomainBed's spellings on our CLI and the drop-in scripts' own rules (no DomainBed checkout needed).

``dganalysis collect --input_dir D`` / ``--latex`` equal ``dganalysis collect D`` / ``--format latex``;
``dganalysis sweep`` with DomainBed's underscore flags lists the jobs of our hyphen flags, and refuses by name what it
has no counterpart for; ``dganalysis train`` takes ``scripts.train``'s flags. The drop-in ``collect_results`` writes
what it prints into ``--input_dir`` and points to the audit; it refuses a sweep whose runs DomainBed would merge.
The comparisons with DomainBed's own scripts are in ``tests/reference/test_domainbed_scripts_*.py``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from dganalysis import cli
from dganalysis.scripts import collect_results, list_top_hparams
from dganalysis.scripts import sweep as drop_in_sweep
from dganalysis.scripts import train as drop_in_train
from tests.reference.test_domainbed_selection import write_sweep


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("spellings") / "sweep"
    write_sweep(root, 4, n_envs=4, n_hparams=2, trials=(0, 1), steps=(0, 50), algorithms=("ERM", "CORAL"))
    return root


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli.main(argv)
    got = capsys.readouterr()
    return status, got.out, got.err


def test_collect_input_dir_and_latex_are_aliases(sweep_dir, capsys):
    for ours, domainbeds in ((["collect", str(sweep_dir)], ["collect", "--input_dir", str(sweep_dir)]),
                             (["collect", str(sweep_dir), "--format", "latex"],
                              ["collect", "--input_dir", str(sweep_dir), "--latex"])):
        a, b = _run(capsys, [*ours, "--fresh"]), _run(capsys, [*domainbeds, "--fresh"])
        assert a[0] == b[0] == 0 and a[1] == b[1] and "ERM" in a[1]
    assert "\\begin{tabular}" in b[1]


def test_collect_refuses_auto_lr_and_no_folder(sweep_dir, capsys):
    status, _, err = _run(capsys, ["collect", "--input_dir", str(sweep_dir), "--auto_lr"])
    assert status == 2 and "--auto_lr is not supported" in err
    status, _, err = _run(capsys, ["collect"])
    assert status == 2 and "--input_dir" in err


SWEEP = ["--algorithms", "ERM", "CORAL", "--steps", "10", "--dry-run", "--no-progress"]


def test_sweep_underscore_flags_list_the_same_jobs(tmp_path, capsys):
    hyphen = _run(capsys, ["sweep", "--dataset", "RotatedDigits", "--n-hparams", "2", "--n-trials", "2",
                           "--checkpoint-freq", "5", "--store", str(tmp_path / "s"), "--launcher", "local",
                           "--hparams-overrides", '{"lr": 0.01}', *SWEEP])
    underscore = _run(capsys, ["sweep", "--datasets", "RotatedDigits", "--n_hparams", "2", "--n_trials", "2",
                               "--checkpoint_freq", "5", "--output_dir", str(tmp_path / "s"), "--command_launcher",
                               "local", "--hparams", '{"lr": 0.01}', "--single_test_envs", "--skip_confirmation",
                               "--seed", "3", *SWEEP])
    assert hyphen[0] == underscore[0] == 0 and hyphen[1] == underscore[1]
    assert "jobs: 48 pending" in hyphen[1]  # 2 algorithms x 2 draws x 2 trials x 6 test domains
    other = _run(capsys, ["sweep", "--datasets", "RotatedDigits", "--n_hparams", "2", "--n_trials", "2",
                          "--checkpoint_freq", "5", "--output_dir", str(tmp_path / "s"), "--hparams", '{"lr": 0.01}',
                          "--holdout_fraction", "0.3", *SWEEP])
    assert other[0] == 0 and other[1].splitlines()[1].split()[0] != hyphen[1].splitlines()[1].split()[0]


@pytest.mark.parametrize("flags,named", [
    (["--datasets", "RotatedDigits", "ColoredDigits"], "--datasets RotatedDigits ColoredDigits"),
    (["--datasets", "RotatedDigits", "--n_hparams_from", "2"], "--n_hparams_from 2"),
    (["--datasets", "RotatedDigits", "--task", "domain_adaptation"], "--task domain_adaptation"),
])
def test_sweep_refuses_what_it_cannot_do_by_name(tmp_path, capsys, flags, named):
    status, _, err = _run(capsys, ["sweep", *flags, "--output_dir", str(tmp_path / "s"), *SWEEP])
    assert status == 2 and named in err
    assert not (tmp_path / "s").exists()


def test_train_verb_takes_the_drop_ins_flags(tmp_path, capsys):
    parsed = cli.build_parser().parse_args(["train", "--dataset", "VLCS", "--test_envs", "1", "2", "--steps", "7"])
    ref = drop_in_train.build_parser().parse_args(["--dataset", "VLCS", "--test_envs", "1", "2", "--steps", "7"])
    assert {k: getattr(parsed, k) for k in vars(ref)} == vars(ref)
    status, _, err = _run(capsys, ["train", "--output_dir", str(tmp_path / "o"), "--uda_holdout_fraction", "1.5"])
    assert status == 2 and "--uda_holdout_fraction 1.5" in err


def test_collect_results_writes_what_it_prints_then_points_to_the_audit(sweep_dir, tmp_path, capsys):
    d = tmp_path / "copy"
    shutil.copytree(sweep_dir, d)
    for latex in (False, True):
        capsys.readouterr()
        assert collect_results.main(["--input_dir", str(d)] + ["--latex"] * latex) == 0
        out = capsys.readouterr().out
        body, pointer = out.rsplit("\n", 2)[:2]
        assert pointer.endswith(f"dganalysis audit {d}") and pointer.startswith("% " if latex else "How far")
        assert (d / ("results.tex" if latex else "results.txt")).read_text() == body + "\n"
        assert body.count("+/-" if not latex else "$\\pm$") >= 3 * 2 * 5


def test_collect_results_refuses_runs_domainbed_would_merge(sweep_dir, tmp_path, capsys):
    """Two runs of one (trial, algorithm, test env, hparams seed) that differ in --steps: DomainBed lets them compete
    in one selection, we keep them apart, so the drop-in refuses and names `dganalysis collect`."""
    d = tmp_path / "mixed"
    shutil.copytree(sweep_dir, d)
    run = next(p for p in sorted(d.iterdir()) if "_0_h0_t0" in p.name)
    twin = d / (run.name + "_longer")
    shutil.copytree(run, twin)
    lines = [json.loads(x) for x in (twin / "results.jsonl").read_text().splitlines()]
    for rec in lines:
        rec["args"]["steps"] = 999
    (twin / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert collect_results.main(["--input_dir", str(d)]) == 2
    assert "dganalysis collect" in capsys.readouterr().err
    assert list_top_hparams.main(["--input_dir", str(d), "--dataset", "VLCS", "--algorithm", run.name.split("_")[0],
                                  "--test_env", "0"]) == 2


def test_collect_results_missing_folder(tmp_path, capsys):
    assert collect_results.main(["--input_dir", str(tmp_path / "nope")]) == 2
    assert "--input_dir" in capsys.readouterr().err


def test_list_top_hparams_ranks_the_selected_draw_first(sweep_dir, capsys):
    """The first draw listed under a method is the one collect_results' table selects (same sweep_acc)."""
    from dganalysis.records import load, selection

    assert list_top_hparams.main(["--input_dir", str(sweep_dir), "--dataset", "VLCS", "--algorithm", "ERM",
                                  "--test_env", "1"]) == 0
    out = capsys.readouterr().out
    first = out.split("Model selection: training-domain validation set\ntrial_seed: ")[1].splitlines()
    trial, acc = int(first[0]), first[1]
    sel = selection.select(load(sweep_dir, progress=False), "training_domain")
    row = sel[(sel["algorithm"] == "ERM") & (sel["test_domains"] == "L") & (sel["trial_seed"] == trial)]
    assert len(row) == 1 and f"'test_acc': {float(row['acc'].iloc[0])!r}" in acc


def test_sweep_folders_are_md5_of_the_arguments(tmp_path):
    """A run's folder is the MD5 of its sorted-key JSON arguments (DomainBed's rule), and holds no output_dir."""
    args = drop_in_sweep.build_parser().parse_args(
        ["launch", "--datasets", "PACS", "--algorithms", "ERM", "--n_hparams", "2", "--n_trials", "1",
         "--data_dir", "/d", "--output_dir", str(tmp_path), "--command_launcher", "dummy"])
    jobs = drop_in_sweep.domainbed_jobs(args)
    assert len(jobs) == 2 * 10  # 4 single test envs + 6 pairs, 2 draws
    for job in jobs:
        plain = {k: v for k, v in job.train_args.items() if k != "output_dir"}
        digest = hashlib.md5(json.dumps(plain, sort_keys=True).encode()).hexdigest()
        assert job.output_dir == str(tmp_path / digest) and job.state == drop_in_sweep.Job.NOT_LAUNCHED
        assert job.command_str.startswith("python -m dganalysis.scripts.train --algorithm ERM --data_dir /d ")


def test_sweep_launch_checks_the_data_first(tmp_path, capsys):
    """A launch whose runs lack their data launches nothing and writes no folder (DomainBed's would start every run
    to fail); each problem is named. The dummy launcher, which runs nothing, is not checked."""
    flags = ["--datasets", "ColoredMNIST", "PACS", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
             "--data_dir", str(tmp_path / "nodata"), "--output_dir", str(tmp_path / "runs"), "--skip_confirmation"]
    assert drop_in_sweep.main(["launch", *flags, "--command_launcher", "local"]) == 2
    err = capsys.readouterr().err
    assert "nothing launched" in err and "no MNIST raw files" in err and "PACS" in err
    assert not (tmp_path / "runs").exists()
    assert drop_in_sweep.main(["launch", *flags, "--command_launcher", "dummy"]) == 0


def test_a_run_still_training_is_neither_trained_twice_nor_deleted(tmp_path, capsys):
    """The drop-in ``train`` holds a claim on its ``--output_dir`` (our store's): a second ``train`` on the folder
    is refused before writing, and ``sweep delete_incomplete`` leaves the folder alone (DomainBed deletes it)."""
    from dganalysis.sweep.store import JobClaim, try_claim

    argv = ["--datasets", "ColoredMNIST", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
            "--single_test_envs", "--data_dir", str(tmp_path / "d"), "--output_dir", str(tmp_path / "runs"),
            "--command_launcher", "dummy", "--skip_confirmation"]
    jobs = drop_in_sweep.domainbed_jobs(drop_in_sweep.build_parser().parse_args(["launch", *argv]))
    for job in jobs:
        Path(job.output_dir).mkdir(parents=True)
    Path(jobs[0].output_dir, "out.txt").write_text("the live run's\n")
    claim = try_claim(jobs[0].output_dir)  # this process plays the run still training
    assert isinstance(claim, JobClaim)
    try:
        assert drop_in_train.main(["--dataset", "ColoredMNIST", "--output_dir", jobs[0].output_dir]) == 2
        assert "another live process" in capsys.readouterr().err
        assert Path(jobs[0].output_dir, "out.txt").read_text() == "the live run's\n"
        assert drop_in_sweep.main(["delete_incomplete", *argv]) == 0
        out = capsys.readouterr().out
        assert "Left alone, still running" in out and "Deleted 2 jobs!" in out
        assert [Path(j.output_dir).exists() for j in jobs] == [True, False, False]
    finally:
        claim.release()
