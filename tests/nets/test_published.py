"""Every published weight layout (FAKE files with the real names and shapes) maps COMPLETELY onto our networks:
no missing key, nothing unexpected beyond the documented heads / projectors / momentum encoders."""

from __future__ import annotations

import pytest
import torch

import dganalysis  # noqa: F401  (torchvision shim)
from dganalysis.nets.archs import ResNet
from dganalysis.nets.pretrained import load_pretrained
from dganalysis.nets.published import PUBLISHED, by_file
from dganalysis.nets.vit import ViT
from dganalysis.studies.smoke.weights import FAKE, write_fake_weights

torch.set_num_threads(1)
#: what each layout may leave unused, besides num_batches_tracked: heads, projectors, momentum encoders, queues
ALLOWED_UNUSED = {"torchvision": ("fc.", "heads."), "moco_v2": ("fc.", "module.encoder_k.", "module.queue"),
                  "simclr_v2": ("fc.",), "moco_v3": ("head.", "module.momentum_encoder.", "module.predictor.")}


def _target(arch: str):
    return ResNet(int(arch[6:]), 3, False, 0.0) if arch.startswith("resnet") else ViT(arch, 3, 32)  # 32 px: the position embeddings are interpolated (documented)


@pytest.mark.parametrize("name", [n for n in PUBLISHED.names() if PUBLISHED.get(n).arch != "inception"])
def test_published_layout_loads_completely(tmp_path, name):
    entry = PUBLISHED.get(name)
    path = write_fake_weights(tmp_path, [name])[name]
    assert path.name == entry.file and by_file(path) is entry
    raw = torch.load(path, map_location="cpu", weights_only=True)
    feat = _target(entry.arch)
    rep = load_pretrained(feat, path)  # layout detected from the keys
    assert rep.layout == entry.layout
    target = feat.network.state_dict()
    assert set(rep.loaded) | set(rep.filled) == set(target) and all(k.endswith("num_batches_tracked") for k in rep.filled)
    unused = rep.head + rep.ignored
    assert all(any(k.startswith(p) for p in ALLOWED_UNUSED[entry.layout]) for k in unused), unused[:5]
    # a tensor of the checkpoint arrives unchanged at the right place (conv stem / patch embedding)
    src = raw.get("resnet") or raw.get("state_dict", raw)
    stem = next(v for k, v in src.items() if k.endswith(("conv1.weight", "net.0.0.weight", "patch_embed.proj.weight",
                                                          "conv_proj.weight")) and "encoder_k" not in k
                and "momentum" not in k)
    got = target["conv1.weight"] if "conv1.weight" in target else target["conv_proj.weight"]
    assert torch.equal(got, stem)


def test_simclr_v2_every_bottleneck_tensor_lands_in_place(tmp_path):
    from dganalysis.studies.smoke.weights import simclr_v2_checkpoint, torchvision_state

    sd = torchvision_state("resnet50", seed=7)
    path = tmp_path / "r50_1x_sk0.pth"
    torch.save(simclr_v2_checkpoint(sd), path)
    feat = _target("resnet50")
    load_pretrained(feat, path, "simclr_v2")
    got = feat.network.state_dict()
    for k, v in sd.items():
        if not k.startswith("fc."):
            assert torch.equal(got[k], v), k


def test_missing_published_file_names_it_and_says_how_to_get_it(tmp_path):
    feat = _target("resnet50")
    with pytest.raises(FileNotFoundError, match=r"moco_v2_800ep_pretrain\.pth\.tar.*dl\.fbaipublicfiles\.com/moco"):
        load_pretrained(feat, tmp_path / "moco_v2_800ep_pretrain.pth.tar")


def test_fid_inception_from_local_file_only(tmp_path):
    from dganalysis.protocols.fid import FID_FILE
    from dganalysis.protocols.leakage import default_extractor

    # the input check names the missing file before any work (a ConfigError, i.e. a ValueError)
    with pytest.raises((FileNotFoundError, ValueError), match=FID_FILE.replace(".", r"\.")):
        default_extractor((3, 32, 32), tmp_path / FID_FILE)
    path = write_fake_weights(tmp_path, ["fid_inception"])["fid_inception"]
    ext = default_extractor((1, 16, 16), path)
    assert "pytorch-fid" in ext.name
    feats = ext(torch.randint(0, 255, (3, 1, 16, 16), dtype=torch.uint8).numpy())
    assert feats.shape == (3, 2048) and float(abs(feats).sum()) > 0


def test_every_published_entry_has_a_fake_builder():
    assert set(FAKE) == set(PUBLISHED.names())
