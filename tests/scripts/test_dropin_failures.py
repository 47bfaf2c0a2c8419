"""The drop-in scripts where DomainBed's users live: image benchmarks by default, and failures said.

``python -m dganalysis.scripts.train`` with DomainBed's flags only runs PACS (``--mode auto``: our engine where
``domainbed_exact`` cannot replay DomainBed's draws) and says which mode, precision and cuDNN/TF32 settings in
``out.txt`` and in every record; a failing run leaves its traceback (or refusal) in ``err.txt``. ``sweep launch``
checks every run with the train script's own checks before launching any; every launcher returns each run's exit
status, and a sweep with failed runs exits non-zero listing them. No DomainBed checkout needed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from dganalysis import provenance
from dganalysis.scripts import sweep as drop_in_sweep
from dganalysis.scripts import train as drop_in_train
from dganalysis.studies.smoke.trees import write_benchmark_tree
from dganalysis.studies.smoke.weights import write_fake_weights


@pytest.mark.usefixtures("one_thread")
def test_pacs_with_domainbeds_flags_runs_our_engine_and_says_so(tmp_path, monkeypatch):
    """PACS with DomainBed's flags only (no --mode): our engine, said in out.txt and in every record. The
    smallest network DomainBed's flags allow (``resnet18`` with ``resnet50_augmix`` off, which wins otherwise:
    ResNet-18 at 224 px, FAKE ImageNet weights in ``$TORCH_HOME``), batch 4, one step, 14 tiny images per domain."""
    write_benchmark_tree(tmp_path / "data", "PACS", per_class=2, size=8)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    write_fake_weights(tmp_path / "torch" / "hub" / "checkpoints", ["supervised_resnet18"])
    monkeypatch.setenv("DGANALYSIS_THREADS", "1")
    out = tmp_path / "run"
    argv = ["--data_dir", str(tmp_path / "data"), "--dataset", "PACS", "--algorithm", "ERM", "--test_envs", "0",
            "--steps", "1", "--hparams", json.dumps({"resnet18": True, "resnet50_augmix": False, "batch_size": 4}), "--skip_model_save",
            "--output_dir", str(out)]
    assert drop_in_train.main(argv) == 0, (out / "err.txt").read_text()
    text = (out / "out.txt").read_text()
    assert "dganalysis: mode default (--mode auto: --dataset PACS goes through DomainBed's torchvision" in text
    assert f"cuDNN/TF32: {provenance.NOT_CUDA}" in text
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0]
    for r in records:
        assert r["mode"] == "default" and r["mode_requested"] == "auto"
        assert r["cuda_backends"] == provenance.NOT_CUDA and r["precision"] in ("fp32", "bf16")
        assert f"precision {r['precision']}" in text
        assert r["args"]["dataset"] == "PACS" and r["args"]["test_envs"] == [0]
    assert (out / "done").is_file()


def test_explicit_exact_mode_it_cannot_honour_is_refused(tmp_path, capsys):
    argv = ["--dataset", "PACS", "--mode", "domainbed_exact", "--output_dir", str(tmp_path / "o")]
    assert drop_in_train.main(argv) == 2
    err = capsys.readouterr().err
    assert "--mode domainbed_exact" in err and "--dataset PACS" in err
    assert not (tmp_path / "o").exists()


def test_auto_mode_resolves_per_run():
    parse = drop_in_train.build_parser().parse_args
    assert drop_in_train.resolved_mode(parse(["--dataset", "ColoredMNIST"])) == "domainbed_exact"
    assert drop_in_train.resolved_mode(parse(["--dataset", "Debug28"])) == "domainbed_exact"
    assert drop_in_train.resolved_mode(parse(["--dataset", "VLCS"])) == "default"
    assert drop_in_train.resolved_mode(parse(["--dataset", "RotatedMNIST", "--hparams", '{"augment": true}'])) == \
        "default"
    assert drop_in_train.resolved_mode(parse(["--dataset", "VLCS", "--mode", "default"])) == "default"


def test_a_failing_run_leaves_its_traceback_in_err_txt(tmp_path, monkeypatch, capsys):
    def boom(args, heartbeat=None):
        raise RuntimeError("boom in the middle of training")

    monkeypatch.setattr(drop_in_train, "run", boom)
    out = tmp_path / "run"
    assert drop_in_train.main(["--dataset", "Debug28", "--output_dir", str(out)]) == 1
    err = (out / "err.txt").read_text()
    assert "Traceback (most recent call last):" in err and "RuntimeError: boom in the middle of training" in err
    assert not (out / "done").exists()
    assert drop_in_sweep.failure_reason(str(out), 1) == "RuntimeError: boom in the middle of training"


def test_a_run_without_its_data_says_so_in_err_txt(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["--dataset", "PACS", "--data_dir", str(tmp_path / "nodata"), "--output_dir", str(out)]
    assert drop_in_train.main(argv) == 2
    err = (out / "err.txt").read_text()
    assert err.startswith("dganalysis.scripts.train: nothing trained: dataset PACS") and str(tmp_path / "nodata") in err
    assert drop_in_sweep.failure_reason(str(out), 2).startswith("dganalysis.scripts.train: nothing trained:")


def test_sweep_checks_every_runs_flags_with_the_train_scripts_check(tmp_path, monkeypatch, capsys):
    """The launch calls ``train.check_flags`` on each run's command line: one refused run refuses the whole sweep,
    before any folder is made."""
    real = drop_in_train.check_flags

    def refuse_env_2(args):
        real(args)
        if args.test_envs == [2]:
            raise drop_in_train.Refused("--test_envs 2: refused for this test")

    monkeypatch.setattr(drop_in_train, "check_flags", refuse_env_2)
    argv = ["launch", "--datasets", "Debug28", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
            "--single_test_envs", "--data_dir", str(tmp_path), "--output_dir", str(tmp_path / "sweep"),
            "--command_launcher", "local", "--skip_confirmation"]
    assert drop_in_sweep.main(argv) == 2
    err = capsys.readouterr().err
    assert "nothing launched" in err and "train refuses: --test_envs 2: refused for this test" in err
    assert not (tmp_path / "sweep").exists()


def test_launchers_return_each_commands_exit_status(monkeypatch):
    assert drop_in_sweep.local_launcher(["true", "exit 4"]) == [0, 4]
    assert drop_in_sweep.dummy_launcher(["true"]) == [None]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert drop_in_sweep.multi_gpu_launcher(["exit 3", "true", "exit 5"]) == [3, 0, 5]


#: a stand-in for ``dganalysis.scripts.train`` (a run costs a torch import, seconds on a busy machine): test env 1
#: succeeds, the others fail with a traceback in err.txt
FAKE_TRAIN = """
import os, sys
out = sys.argv[sys.argv.index("--output_dir") + 1]
if sys.argv[sys.argv.index("--test_envs") + 1] == "1":
    open(os.path.join(out, "done"), "w").write("done")
    sys.exit(0)
with open(os.path.join(out, "err.txt"), "w") as f:
    f.write('Traceback (most recent call last):\\n  File "train.py", line 1, in <module>\\n'
            'FileNotFoundError: no data here\\nsecond line of the message\\n')
sys.exit(3)
"""


def test_sweep_with_failed_runs_exits_nonzero_and_lists_them(tmp_path, monkeypatch, capsys):
    """Three runs by the local launcher, two failing: the launch writes each exit status into the run's folder,
    lists the failed runs (folder, status, the exception line of err.txt) and exits 1."""
    (tmp_path / "fake_train_for_sweep_test.py").write_text(FAKE_TRAIN)
    monkeypatch.setattr(drop_in_sweep, "TRAIN_MODULE", "fake_train_for_sweep_test")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    argv = ["launch", "--datasets", "Debug28", "--algorithms", "ERM", "--n_hparams", "1", "--n_trials", "1",
            "--single_test_envs", "--data_dir", str(tmp_path), "--output_dir", str(tmp_path / "sweep"),
            "--command_launcher", "local", "--skip_confirmation"]
    assert drop_in_sweep.main(argv) == 1
    out, err = capsys.readouterr()
    assert "Launched 3 jobs!" in out and "sweep: 2 of 3 runs failed" in err
    jobs = drop_in_sweep.domainbed_jobs(drop_in_sweep.build_parser().parse_args(argv))
    for job in jobs:
        ok = job.train_args["test_envs"] == [1]
        assert job.state == (drop_in_sweep.Job.DONE if ok else drop_in_sweep.Job.INCOMPLETE)
        assert Path(job.output_dir, drop_in_sweep.EXIT_STATUS_FILE).read_text() == ("0\n" if ok else "3\n")
        assert (f"  {job.output_dir}: exit status 3: FileNotFoundError: no data here\n" in err) != ok
    assert "second line" not in err
