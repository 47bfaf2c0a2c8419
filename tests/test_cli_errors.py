"""Bad user input given to the ``dganalysis`` command reads as one line (exit status 2), never as a traceback
reported as a bug of dganalysis: each case drives :func:`dganalysis.cli.main` in process and stops before any
training."""

from __future__ import annotations

import pytest

from dganalysis.cli import main

#: name -> (files to write under tmp_path, argv with {tmp} for tmp_path, what the error line must name)
CASES = {
    "collect_missing_store": ({}, ["collect", "{tmp}/no_store"], "{tmp}/no_store"),
    "collect_file_as_store": ({"a_file": "x"}, ["collect", "{tmp}/a_file"], "{tmp}/a_file"),
    "collect_bad_selection": ({}, ["collect", "{tmp}", "--selection", "bogus"], "--selection"),
    "audit_missing_input": ({}, ["audit", "{tmp}/no_sweep"], "{tmp}/no_sweep"),
    "sweep_unknown_key": ({"s.yaml": "dataset: Debug28\nalgorithms: [ERM]\nbogus_key: 1\n"},
                          ["sweep", "--config", "{tmp}/s.yaml", "--store", "{tmp}/store"], "bogus_key"),
    "sweep_missing_config": ({}, ["sweep", "--config", "{tmp}/none.yaml", "--store", "{tmp}/store"], "{tmp}/none.yaml"),
    "sweep_missing_data_root": (
        {"s.yaml": "dataset: ImageFolder\ndataset_kwargs: {root: NOROOT}\nalgorithms: [ERM]\nsplits: leave_one_out\n"
                   "steps: 2\ncheckpoint_freq: 1\nn_hparams: 1\nn_trials: 1\n"},
        ["sweep", "--config", "{tmp}/s.yaml", "--store", "{tmp}/store"], "{tmp}/no_images"),
    "dry_run_missing_throughput": ({}, ["run", "--dry-run", "--throughput", "{tmp}/t.yaml"], "{tmp}/t.yaml"),
    "dry_run_bad_throughput": ({"t.yaml": "cpu: {entries: [{featurizer: x}]}\n"},
                               ["run", "--dry-run", "--throughput", "{tmp}/t.yaml"], "cpu.entries[0]"),
    "train_unknown_dataset": ({}, ["train", "--dataset", "NoSuchSet", "--output_dir", "{tmp}/run"], "NoSuchSet"),
    "train_missing_mnist_root": ({}, ["train", "--dataset", "RotatedMNIST", "--data_dir", "{tmp}/no_data",
                                      "--output_dir", "{tmp}/run", "--steps", "1"], "{tmp}/no_data"),
    "report_missing_outputs": ({}, ["report", "--outputs", "{tmp}/no_outputs"], "{tmp}/no_outputs"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_exit_2(tmp_path, capsys, name):
    files, argv, needle = CASES[name]
    for rel, text in files.items():
        (tmp_path / rel).write_text(text.replace("NOROOT", str(tmp_path / "no_images")))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own check of a flag's choices: also status 2, usage then one line
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    last = err.strip().splitlines()[-1]
    assert "error" in last or "dganalysis.scripts.train:" in last, err
    assert needle.replace("{tmp}", str(tmp_path)) in last, err
