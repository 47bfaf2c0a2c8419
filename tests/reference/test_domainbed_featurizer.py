"""``featurizer: domainbed`` against DomainBed's ``networks.Featurizer``/``Classifier`` (Gulrajani & Lopez-Paz, 2021).

Both sides read the SAME fake weight files, written by the test where our locator looks for DomainBed's downloads
(``$HF_HUB_CACHE`` for timm's ``resnet50.ram_in1k``, ``$TORCH_HOME/hub/checkpoints`` for torchvision's ResNets and
DINOv2): ours through :mod:`dganalysis.nets.domainbed_weights`, DomainBed's through its own constructors, patched to
build without weights and load the fake file instead of downloading. So equal outputs prove the same network, the
same weight layout and that our locator found the file. Inputs are 224 px with batch 2 (ResNet-50 on CPU).
DINOv2's architecture comes from the facebookresearch/dinov2 hub repo: that test runs when ``$DINOV2_SRC`` points
at a checkout of it (skipped otherwise).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from dganalysis.algorithms import create
from dganalysis.nets import build_classifier, build_featurizer
from dganalysis.nets import domainbed_weights as W
from dganalysis.nets.archs import MNISTCNN
from dganalysis.nets.domainbed import DomainBedResNet
from dganalysis.nets.torchhub import torchvision_weights_file
from dganalysis.training.job import Job
from dganalysis.training.job_draw import job_hparams
from tests.reference._harness import copy_weights, default_key_map, seed_all

pytestmark = pytest.mark.usefixtures("one_thread")
X224 = 2, 224, 224


@pytest.fixture
def weight_home(tmp_path, monkeypatch):
    """Empty, private weight caches: ``$TORCH_HOME`` and ``$HF_HUB_CACHE`` under ``tmp_path``."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv(W.AUGMIX_ENV, raising=False)
    return tmp_path


def _perturb_bn(state: dict) -> dict:
    """Random BatchNorm statistics, so a network that uses (or updates) them differs visibly."""
    g = torch.Generator().manual_seed(7)
    for k, v in state.items():
        if k.endswith("running_mean"):
            state[k] = torch.randn(v.shape, generator=g) * 0.1
        elif k.endswith("running_var"):
            state[k] = torch.rand(v.shape, generator=g) + 0.5
    return state


def write_timm_augmix(seed: int = 0) -> Path:
    from safetensors.torch import save_file

    from dganalysis.nets.domainbed import _timm

    torch.manual_seed(seed)
    state = _perturb_bn(_timm().create_model(W.AUGMIX_TIMM_NAME, pretrained=False).state_dict())
    path = W.hf_hub_cache() / "models--timm--resnet50.ram_in1k" / "snapshots" / "0123abc" / "model.safetensors"
    path.parent.mkdir(parents=True)
    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    return path


def write_torchvision(depth: int, seed: int = 0) -> Path:
    from dganalysis.compat import torchvision

    torch.manual_seed(seed)
    state = _perturb_bn(getattr(torchvision().models, f"resnet{depth}")(weights=None).state_dict())
    path = torchvision_weights_file(f"resnet{depth}", "IMAGENET1K_V1")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    return path


@pytest.fixture
def domainbed_reads_fake_files(domainbed, monkeypatch):
    """DomainBed's ``pretrained=True`` constructors load the fake files instead of downloading."""
    models = domainbed.networks.torchvision.models
    for depth in (18, 50):
        orig = getattr(models, f"resnet{depth}")

        def offline(pretrained=False, weights=None, _orig=orig, _depth=depth, **kw):
            net = _orig(weights=None, **kw)
            path = torchvision_weights_file(f"resnet{_depth}", "IMAGENET1K_V1")
            if pretrained and path.is_file():  # DomainBed builds (and drops) a torchvision ResNet-50 before timm's
                net.load_state_dict(torch.load(path))
            return net
        monkeypatch.setattr(models, f"resnet{depth}", offline)
    timm = domainbed.networks.timm
    orig_create = timm.create_model

    def create_offline(name, pretrained=False, **kw):
        net = orig_create(name, pretrained=False, **kw)
        if pretrained:
            from safetensors.torch import load_file

            path, = (W.hf_hub_cache() / "models--timm--resnet50.ram_in1k" / "snapshots").glob("*/model.safetensors")
            net.load_state_dict(load_file(str(path)))
        return net
    monkeypatch.setattr(timm, "create_model", create_offline)


def _db_hparams(domainbed, **kw):
    hp = dict(domainbed.hparams_registry.default_hparams("ERM", "PACS"))
    hp.update(kw)
    return hp


def _our_hparams(db_hp, **kw):
    names = ("resnet18", "resnet50_augmix", "vit", "dinov2", "vit_attn_tune", "vit_dropout", "freeze_bn",
             "resnet_dropout")
    return {"featurizer": "domainbed", "pretrained": "domainbed", **{k: db_hp[k] for k in names}, **kw}


def _x(channels: int = 3, n: int = 2) -> torch.Tensor:
    return torch.rand(n, channels, 224, 224, generator=torch.Generator().manual_seed(3))


def _same_structure(ours: torch.nn.Module, theirs: torch.nn.Module) -> None:
    so, st = ours.network.state_dict(), theirs.network.state_dict()
    assert list(so) == list(st)
    assert all(so[k].shape == st[k].shape for k in so)
    assert type(ours.network) is type(theirs.network)


def test_default_is_timm_resnet50_augmix_from_the_hf_cache(domainbed, weight_home, domainbed_reads_fake_files):
    """DomainBed's default 224-px network: timm's resnet50.ram_in1k; ``resnet18 = True`` does not change it while
    ``resnet50_augmix`` is True (DomainBed's quirk, kept)."""
    path = write_timm_augmix()
    for resnet18 in (False, True):
        db_hp = _db_hparams(domainbed, resnet18=resnet18)
        theirs = domainbed.networks.Featurizer((3, 224, 224), db_hp)
        ours = build_featurizer((3, 224, 224), _our_hparams(db_hp))
        theirs.eval()  # DomainBed's ResNet.train() returns None: no chaining
        ours.eval()
        assert isinstance(ours, DomainBedResNet) and ours.weights_file == str(path)
        assert ours.n_outputs == theirs.n_outputs == 2048
        _same_structure(ours, theirs)
        x = _x()
        with torch.no_grad():
            diff = float((ours(x) - theirs(x)).abs().max())
        assert diff == 0.0, f"timm resnet50.ram_in1k (resnet18={resnet18}): max |diff| {diff:.3g}"


def test_torchvision_resnet50_when_augmix_is_off(domainbed, weight_home, domainbed_reads_fake_files):
    write_torchvision(50)
    db_hp = _db_hparams(domainbed, resnet50_augmix=False)
    theirs = domainbed.networks.Featurizer((3, 224, 224), db_hp)
    ours = build_featurizer((3, 224, 224), _our_hparams(db_hp))
    theirs.eval()
    ours.eval()
    assert ours.arch == "resnet50" and ours.n_outputs == theirs.n_outputs == 2048
    _same_structure(ours, theirs)
    with torch.no_grad():
        assert float((ours(_x()) - theirs(_x())).abs().max()) == 0.0


@pytest.mark.parametrize("channels,freeze_bn,dropout", [(3, False, 0.0), (1, True, 0.5), (2, False, 0.5)])
def test_torchvision_resnet18_channels_freeze_bn_dropout(domainbed, weight_home, domainbed_reads_fake_files,
                                                         channels, freeze_bn, dropout):
    write_torchvision(18)
    db_hp = _db_hparams(domainbed, resnet50_augmix=False, resnet18=True, freeze_bn=freeze_bn, resnet_dropout=dropout)
    theirs = domainbed.networks.Featurizer((channels, 224, 224), db_hp)
    ours = build_featurizer((channels, 224, 224), _our_hparams(db_hp))
    assert ours.arch == "resnet18" and ours.n_outputs == theirs.n_outputs == 512
    _same_structure(ours, theirs)
    theirs.train()
    ours.train()
    x = _x(channels)
    seed_all(1)
    out_t = theirs(x)
    seed_all(1)
    out_o = ours(x)
    assert float((out_o - out_t).abs().max()) == 0.0  # same dropout mask, same BatchNorm mode
    assert ours.network.bn1.training == theirs.network.bn1.training == (not freeze_bn)
    torch.testing.assert_close(ours.network.bn1.running_mean, theirs.network.bn1.running_mean, rtol=0, atol=0)
    if dropout:
        assert (out_o == 0).float().mean() > 0.2
    ours.eval()
    theirs.eval()
    with torch.no_grad():
        assert float((ours(x) - theirs(x)).abs().max()) == 0.0


def test_mnist_cnn_at_28px(domainbed):
    db_hp = _db_hparams(domainbed)
    seed_all(0)
    theirs = domainbed.networks.Featurizer((2, 28, 28), db_hp).double()
    ours = build_featurizer((2, 28, 28), _our_hparams(db_hp)).double()
    assert isinstance(ours, MNISTCNN)
    copy_weights(theirs, ours, lambda k: default_key_map("featurizer." + k)[len("featurizer."):])
    x = torch.rand(3, 2, 28, 28, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


def test_mlp_for_1d_inputs(domainbed):
    db_hp = dict(domainbed.hparams_registry.default_hparams("DANN", "PACS"), mlp_dropout=0.5, mlp_depth=4)
    seed_all(0)
    theirs = domainbed.networks.Featurizer((10,), db_hp).double()
    ours = build_featurizer((10,), {"featurizer": "domainbed", **{k: db_hp[k] for k in ("mlp_width", "mlp_depth",
                                                                                          "mlp_dropout")}}).double()
    assert ours.n_outputs == theirs.n_outputs == db_hp["mlp_width"]
    copy_weights(theirs, ours, lambda k: k)
    x = torch.rand(5, 10, dtype=torch.float64)
    seed_all(1)
    out_t = theirs.train()(x)
    seed_all(1)
    torch.testing.assert_close(ours.train()(x), out_t, rtol=0, atol=1e-12)  # same dropout masks
    with pytest.raises(ValueError, match=r"needs hparams \['mlp_width', 'mlp_depth', 'mlp_dropout'\]"):
        build_featurizer((10,), {"featurizer": "domainbed"})


def test_wide_resnet_at_32px(domainbed):
    db_hp = _db_hparams(domainbed)
    seed_all(0)
    theirs = domainbed.networks.Featurizer((3, 32, 32), db_hp).double()
    ours = build_featurizer((3, 32, 32), _our_hparams(db_hp)).double()
    assert type(theirs).__name__ == "Wide_ResNet" and ours.n_outputs == theirs.n_outputs == 128
    assert list(ours.state_dict()) == list(theirs.state_dict())
    copy_weights(theirs, ours, lambda k: k)
    x = torch.rand(4, 3, 32, 32, dtype=torch.float64)
    theirs.train()
    ours.train()
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)  # batch statistics, running stats updated
    torch.testing.assert_close(ours.bn1.running_mean, theirs.bn1.running_mean, rtol=0, atol=1e-12)
    theirs.eval()
    ours.eval()
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("nonlinear", [False, True])
def test_classifier_is_domainbeds(domainbed, nonlinear):
    seed_all(0)
    theirs = domainbed.networks.Classifier(64, 5, nonlinear).double()
    ours = build_classifier(64, 5, nonlinear).double()
    copy_weights(theirs, ours, lambda k: k)
    x = torch.randn(4, 64, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


def test_shapes_domainbed_does_not_build_are_clear_errors():
    with pytest.raises(ValueError, match=r"featurizer 'domainbed': DomainBed has no network for input shape \(3, 64, 64\)"):
        build_featurizer((3, 64, 64), {"featurizer": "domainbed"})
    with pytest.raises(ValueError, match="vit=True needs dinov2=True"):
        build_featurizer((3, 224, 224), {"featurizer": "domainbed", "vit": True, "dinov2": False})


def test_missing_weights_name_the_expected_paths(weight_home):
    with pytest.raises(FileNotFoundError, match=r"models--timm--resnet50\.ram_in1k.*resnet50_ram-a26f946b\.pth"):
        build_featurizer((3, 224, 224), {"featurizer": "domainbed", "pretrained": "domainbed"})
    with pytest.raises(FileNotFoundError, match=r"resnet18-f37072fd\.pth.*TORCH_HOME"):
        build_featurizer((3, 224, 224), {"featurizer": "domainbed", "pretrained": "domainbed",
                                         "resnet50_augmix": False, "resnet18": True})


def test_pacs_job_with_default_hparams_builds_domainbeds_network(domainbed, weight_home, domainbed_reads_fake_files):
    """A PACS job by name with default hparams: our ERM's featurizer is DomainBed's default (timm resnet50.ram_in1k
    with DomainBed's weights) and computes what DomainBed's ERM computes from the same file."""
    path = write_timm_augmix(seed=4)
    hp = job_hparams(Job("PACS", "ERM", ["A", "C", "P"], ["S"], steps=10))
    assert (hp["featurizer"], hp["pretrained"], hp["resnet50_augmix"]) == ("domainbed", "domainbed", True)
    ours = create("ERM", (3, 224, 224), 7, 3, hp)
    theirs = domainbed.algorithms.ERM((3, 224, 224), 7, 3, domainbed.hparams_registry.default_hparams("ERM", "PACS"))
    assert isinstance(ours.featurizer, DomainBedResNet) and ours.featurizer.weights_file == str(path)
    _same_structure(ours.featurizer, theirs.featurizer)
    ours.featurizer.eval()
    theirs.featurizer.eval()
    with torch.no_grad():
        assert float((ours.featurizer(_x()) - theirs.featurizer(_x())).abs().max()) == 0.0
    small = job_hparams(Job("RotatedMNIST", "ERM", ["0", "15"], ["30"], steps=10))
    assert isinstance(create("ERM", (1, 28, 28), 10, 2, small).featurizer, MNISTCNN)


def test_our_datasets_keep_auto():
    """The named departure: our own datasets default to ``featurizer: auto`` without weights."""
    from tests._tiny import TINY

    hp = job_hparams(Job(TINY, "ERM", ["d0"], ["d1"], steps=2))
    assert (hp["featurizer"], hp["pretrained"]) == ("auto", None)


def test_dinov2_matches_domainbed(domainbed, weight_home, monkeypatch):
    src = os.environ.get("DINOV2_SRC")
    if not src or not (Path(src) / "hubconf.py").is_file():
        pytest.skip("DINOV2_SRC is not set: point it at a checkout of https://github.com/facebookresearch/dinov2 "
                    "(DINOv2's architecture code) to compare DomainBed's DinoV2 featurizer")
    repo = Path(torch.hub.get_dir()) / W.DINOV2_REPO_DIR
    repo.parent.mkdir(parents=True, exist_ok=True)
    repo.symlink_to(Path(src).resolve())
    torch.manual_seed(0)
    state = torch.hub.load(str(repo), "dinov2_vitb14", source="local", pretrained=False).state_dict()
    state = {k: v + 0.01 * torch.randn_like(v) for k, v in state.items()}  # not the init: the file must be read
    path = Path(torch.hub.get_dir()) / "checkpoints" / W.DINOV2_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(state, path)
    orig_load = torch.hub.load

    def hub_offline(repo_or_dir, model, *args, **kw):
        assert (repo_or_dir, model) == ("facebookresearch/dinov2", "dinov2_vitb14")
        net = orig_load(str(repo), model, source="local", pretrained=False)
        net.load_state_dict(torch.load(path))
        return net
    monkeypatch.setattr(domainbed.networks.torch.hub, "load", hub_offline)
    db_hp = _db_hparams(domainbed, vit=True, dinov2=True, vit_dropout=0.1, vit_attn_tune=True)
    theirs = domainbed.networks.Featurizer((3, 224, 224), db_hp)
    monkeypatch.setattr(torch.hub, "load", orig_load)
    ours = build_featurizer((3, 224, 224), _our_hparams(db_hp))
    assert ours.n_outputs == 5 * 768 and ours.weights_file == str(path)
    assert [n for n, p in ours.network.named_parameters() if p.requires_grad] == \
        [n for n, p in theirs.network.named_parameters() if p.requires_grad]
    ours.eval()
    theirs.eval()
    x = _x(n=1)
    with torch.no_grad():
        diff = float((ours(x) - theirs(x)).abs().max())
    assert diff == 0.0, f"DINOv2 ViT-B/14: max |diff| {diff:.3g}"
