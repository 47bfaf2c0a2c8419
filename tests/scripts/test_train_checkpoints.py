"""``--save_model_every_checkpoint`` in the drop-in ``train``: DomainBed's ``model_step{step}.pkl`` at every
checkpoint (its ``save_checkpoint`` dict), none with ``--skip_model_save`` (DomainBed's ``save_checkpoint`` returns
at once then), in both modes."""

from __future__ import annotations

import pytest
import torch

from dganalysis.scripts import train as drop_in

KEYS = {"args", "model_input_shape", "model_num_classes", "model_num_domains", "model_hparams", "model_dict"}
ARGV = ["--dataset", "Debug28", "--algorithm", "ERM", "--steps", "4", "--checkpoint_freq", "2", "--hparams",
        '{"batch_size": 8}', "--threads", "1", "--device", "cpu", "--save_model_every_checkpoint"]


@pytest.mark.parametrize("mode", ["domainbed_exact", "default"])
def test_a_model_file_per_checkpoint(tmp_path, mode):
    out = tmp_path / "o"
    (out).mkdir()
    (out / "model_step99.pkl").write_bytes(b"an earlier run's")
    assert drop_in.main([*ARGV, "--mode", mode, "--output_dir", str(out)]) == 0
    assert sorted(p.name for p in out.glob("model_step*.pkl")) == ["model_step0.pkl", "model_step2.pkl",
                                                                  "model_step3.pkl"]  # the records' steps
    final = torch.load(out / "model.pkl", map_location="cpu", weights_only=False)
    for step in (0, 2, 3):
        saved = torch.load(out / f"model_step{step}.pkl", map_location="cpu", weights_only=False)
        assert set(saved) == KEYS and saved["args"]["save_model_every_checkpoint"] is True
        assert saved["model_num_domains"] == 2 and saved["model_num_classes"] == final["model_num_classes"]
        assert tuple(saved["model_input_shape"]) == tuple(final["model_input_shape"])
        assert saved["model_hparams"] == final["model_hparams"]
        assert list(saved["model_dict"]) == list(final["model_dict"])
    last = torch.load(out / "model_step3.pkl", map_location="cpu", weights_only=False)["model_dict"]
    assert all(torch.equal(last[k], final["model_dict"][k]) for k in last)  # the last checkpoint is the final model


def test_skip_model_save_wins(tmp_path):
    out = tmp_path / "o"
    assert drop_in.main([*ARGV, "--skip_model_save", "--output_dir", str(out)]) == 0
    assert not list(out.glob("*.pkl")) and (out / "done").exists()
