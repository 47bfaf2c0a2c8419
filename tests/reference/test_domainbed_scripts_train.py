"""``python -m dganalysis.scripts.train`` against DomainBed's unmodified ``scripts/train.py``, same flags.

Both run on the small MNIST files ``test_domainbed_train_e2e.py`` writes (its ``data_root`` fixture), 12 steps,
batch 8, on a CPU with one thread; DomainBed's ``N_WORKERS`` patched to 0 in its process and ``--n_workers 0`` in
ours (the default 8 is compared, slowly, by ``test_domainbed_train_e2e.py``). Checked: the same files in
``--output_dir``, records with DomainBed's keys, ``args`` equal to DomainBed's (its output folder aside), the same
hparams, steps and epochs exactly, losses and accuracies to 1e-6; and that ``out.txt`` says what we add.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from dganalysis import provenance
from dganalysis.scripts import train as drop_in
from dganalysis.training.hparams import seed_hash
from tests.reference.test_domainbed_train_e2e import FREQ, HPARAMS, STEPS, _domainbed_records, data_root  # noqa: F401

NUMBERS = ["loss"] + [f"env{i}_{s}_acc" for i in range(6) for s in ("in", "out")]


def _ours(tmp: Path, data: Path, seed: int, *extra: str) -> tuple[int, list[dict]]:
    argv = ["--data_dir", str(data), "--dataset", "RotatedMNIST", "--algorithm", "ERM", "--test_envs", "0",
            "--steps", str(STEPS), "--checkpoint_freq", str(FREQ), "--seed", str(seed), "--output_dir", str(tmp),
            "--hparams", json.dumps(HPARAMS), "--n_workers", "0", "--threads", "1", *extra]
    status = drop_in.main(argv)
    path = tmp / "results.jsonl"
    return status, [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.usefixtures("one_thread")
def test_train_records_equal_domainbeds(domainbed, data_root, tmp_path):  # noqa: F811
    seed = seed_hash("RotatedMNIST", "ERM", [0], 0, 0)
    theirs = _domainbed_records(domainbed, data_root, tmp_path / "db", seed, 0)
    status, ours = _ours(tmp_path / "ours", data_root, seed, "--skip_model_save")
    assert status == 0
    db_files = {p.name for p in (tmp_path / "db").iterdir()}
    our_files = {p.name for p in (tmp_path / "ours").iterdir()}
    assert db_files == {"out.txt", "err.txt", "results.jsonl", "done"} and db_files <= our_files
    assert [r["step"] for r in ours] == [r["step"] for r in theirs] == [0, 5, 10, 11]
    for t, o in zip(theirs, ours):
        assert set(t) <= set(o), sorted(set(t) - set(o))
        t_args = {k: v for k, v in t["args"].items() if k != "output_dir"}
        assert {k: o["args"][k] for k in t_args} == t_args  # steps, hparams string, data_dir, seed, ... as given
        assert o["epoch"] == t["epoch"] and o["hparams"] == {**o["hparams"], **t["hparams"]}
        for k in NUMBERS:
            assert o[k] == pytest.approx(t[k], abs=1e-6), (t["step"], k, o[k], t[k])
    out = (tmp_path / "ours" / "out.txt").read_text()
    assert "dganalysis: mode domainbed_exact (--mode auto" in out and "precision fp32" in out and "threads 1" in out
    assert all(r["mode"] == "domainbed_exact" and r["mode_requested"] == "auto" and r["precision"] == "fp32"
               and r["cuda_backends"] == provenance.NOT_CUDA for r in ours)  # DomainBed's flags only: exact mode
    assert "\tseed: " + str(seed) in out and "HParams:" in out and "env0_in_acc" in out
    assert (tmp_path / "ours" / "done").read_text() == (tmp_path / "db" / "done").read_text()


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("mode", ["domainbed_exact", "default"])
def test_train_saves_domainbeds_model_file(data_root, tmp_path, mode):  # noqa: F811
    """Without ``--skip_model_save``: ``model.pkl`` with the keys of DomainBed's ``save_checkpoint`` (in either
    mode; ``--mode default`` is our engine, recorded as such)."""
    status, ours = _ours(tmp_path / "ours", data_root, 0, "--steps", "2", "--mode", mode)
    assert f"dganalysis: mode {mode}" in (tmp_path / "ours" / "out.txt").read_text()
    assert status == 0 and [r["step"] for r in ours] == [0, 1]
    saved = torch.load(tmp_path / "ours" / "model.pkl", map_location="cpu", weights_only=False)
    assert set(saved) == {"args", "model_input_shape", "model_num_classes", "model_num_domains", "model_hparams",
                          "model_dict"}
    assert saved["args"]["steps"] == 2 and saved["model_num_domains"] == 5 and saved["model_num_classes"] == 10
    assert saved["model_hparams"]["batch_size"] == HPARAMS["batch_size"]


@pytest.mark.parametrize("argv,named", [
    (["--task", "domain_adaptation"], "--task domain_adaptation"),  # without --uda_holdout_fraction: no uda split
    (["--uda_holdout_fraction", "1"], "--uda_holdout_fraction 1.0"),
    (["--dataset", "NotADataset"], "--dataset NotADataset"),
    (["--test_envs", "9"], "--test_envs 9"),
    (["--hparams", "{bad"], "--hparams"),
    (["--dataset", "VLCS", "--mode", "domainbed_exact"], "--mode domainbed_exact"),
    (["--dataset", "ColoredMNIST", "--mode", "domainbed_exact", "--hparams", '{"class_balanced": true}'],
     "--mode domainbed_exact"),
])
def test_unhonoured_flags_are_refused_by_name(tmp_path, capsys, argv, named):
    assert drop_in.main(["--output_dir", str(tmp_path / "o"), *argv]) == 2
    assert named in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_every_domainbed_flag_is_accepted_with_its_default(domainbed):
    """The parser has each of DomainBed's train.py flags, with DomainBed's default (read from its source)."""
    import ast

    src = (domainbed.root / "domainbed" / "scripts" / "train.py").read_text()
    flags = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            name = node.args[0].value.lstrip("-")
            kw = {k.arg: k.value for k in node.keywords}
            flags[name] = ast.literal_eval(kw["default"]) if "default" in kw else (
                False if "action" in kw else None)
    ours = vars(drop_in.build_parser().parse_args([]))
    assert set(flags) == set(drop_in.DOMAINBED_FLAGS)
    assert {k: ours[k] for k in flags} == flags
