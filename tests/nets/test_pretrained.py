"""Pretrained-checkpoint loading (key remapping per layout, strict errors) and stage freezing / LP."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dganalysis  # noqa: F401  (torchvision shim)
from dganalysis.algorithms import create, default_hparams
from dganalysis.nets.featurizers import ResNet
from dganalysis.nets.freeze import freeze_featurizer, freeze_stages, n_stages, stages
from dganalysis.nets.pretrained import PretrainedKeyError, detect_layout, load_pretrained
from dganalysis.nets.vit import ViT

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tv_resnet18() -> dict[str, torch.Tensor]:
    from dganalysis.compat import torchvision

    torch.manual_seed(1)
    net = torchvision().models.resnet18(weights=None)
    for m in net.modules():  # non-trivial running stats so that copying them is checked too
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-1, 1)
            m.running_var.uniform_(0.5, 2)
    return {k: v.clone() for k, v in net.state_dict().items()}


def _other(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: (v + 1 if v.is_floating_point() else v) for k, v in sd.items()}


def _no_fc(sd):
    return {k: v for k, v in sd.items() if not k.startswith("fc.")}


def _assert_loaded(feat: ResNet, sd: dict[str, torch.Tensor]) -> None:
    got = feat.network.state_dict()
    for k, v in sd.items():
        if k.startswith("fc."):
            continue
        assert torch.equal(got[k], v), k


def _save(tmp_path, name, obj):
    path = tmp_path / name
    torch.save(obj, path)
    return path


def _layouts(sd):
    mlp = {"fc.0.weight": torch.randn(512, 512), "fc.0.bias": torch.randn(512), "fc.2.weight": torch.randn(128, 512),
           "fc.2.bias": torch.randn(128)}
    body = _no_fc(sd)
    k_enc = _other(sd)
    return {
        "torchvision": ("torchvision", sd),
        "dataparallel": ("torchvision", {"module." + k: v for k, v in sd.items()}),
        "timm_resnet": ("torchvision", {"model": sd}),
        "moco_v2": ("moco_v2", {"epoch": 200, "arch": "resnet18", "state_dict": {
            **{"module.encoder_q." + k: v for k, v in {**body, **mlp}.items()},
            **{"module.encoder_k." + k: v for k, v in {**_no_fc(k_enc), **mlp}.items()},
            "module.queue": torch.randn(128, 64), "module.queue_ptr": torch.zeros(1, dtype=torch.long)}}),
        "moco_v1": ("moco_v2", {"state_dict": {
            **{"module.encoder_q." + k: v for k, v in sd.items()},
            **{"module.encoder_k." + k: v for k, v in k_enc.items()},
            "module.queue": torch.randn(128, 64), "module.queue_ptr": torch.zeros(1, dtype=torch.long)}}),
        "moco_v3": ("moco_v3", {"epoch": 100, "state_dict": {
            **{"module.base_encoder." + k: v for k, v in {**body, **mlp}.items()},
            **{"module.momentum_encoder." + k: v for k, v in {**_no_fc(k_enc), **mlp}.items()},
            "module.predictor.0.weight": torch.randn(512, 128), "module.predictor.1.weight": torch.randn(512)}}),
        "simclr_backbone": ("simclr", {"state_dict": {**{"backbone." + k: v for k, v in {**body, **mlp}.items()}}}),
        "simclr_encoder": ("simclr", {**{"encoder." + k: v for k, v in body.items()},
                                      "projector.0.weight": torch.randn(512, 512), "projector.2.weight": torch.randn(64, 512)}),
    }


@pytest.mark.parametrize("name", ["torchvision", "dataparallel", "timm_resnet", "moco_v2", "moco_v1", "moco_v3",
                                  "simclr_backbone", "simclr_encoder"])
def test_layouts_remap_to_encoder_weights(tmp_path, tv_resnet18, name):
    layout, obj = _layouts(tv_resnet18)[name]
    path = _save(tmp_path, f"{name}.pth", obj)
    from dganalysis.nets.pretrained import read_checkpoint

    assert detect_layout(read_checkpoint(path)) == layout
    for lay in ("auto", layout):
        feat = ResNet(18, 3, conv1_3x3=False, dropout=0.0)
        rep = load_pretrained(feat, path, lay)
        _assert_loaded(feat, tv_resnet18)  # the query/base/backbone encoder, never the momentum encoder
        assert rep.layout == layout
        assert all(k.startswith("fc.") for k in rep.head)
        assert rep.head or all(k.startswith("projector.") for k in rep.ignored)  # the head is dropped either way
    if name.startswith("moco"):
        assert any("encoder_k" in k or "momentum" in k for k in rep.ignored)


def test_missing_unexpected_and_shape_errors_list_keys(tmp_path, tv_resnet18):
    sd = dict(tv_resnet18)
    del sd["layer1.0.conv1.weight"]
    sd["layer5.0.conv1.weight"] = torch.zeros(1)
    path = _save(tmp_path, "bad.pth", {"state_dict": sd})
    with pytest.raises(PretrainedKeyError) as e:
        load_pretrained(ResNet(18, 3, False, 0.0), path)
    msg = str(e.value)
    assert "missing keys (1): layer1.0.conv1.weight" in msg and "layer5.0.conv1.weight" in msg and "bad.pth" in msg
    # keys outside the layout's prefix (e.g. a MoCo file read as SimCLR) are unexpected
    moco = _save(tmp_path, "moco.pth", _layouts(tv_resnet18)["moco_v2"][1])
    with pytest.raises(PretrainedKeyError, match="unexpected keys"):
        load_pretrained(ResNet(18, 3, False, 0.0), moco, "simclr")
    # a 7×7 stem into the 3×3 stem variant: shape mismatch naming the key and both shapes
    good = _save(tmp_path, "good.pth", tv_resnet18)
    with pytest.raises(PretrainedKeyError, match=r"conv1.weight: checkpoint \[64, 3, 7, 7\] vs model \[64, 3, 3, 3\]"):
        load_pretrained(ResNet(18, 3, True, 0.0), good)
    with pytest.raises(ValueError, match="layout 'mocov9' unknown"):
        load_pretrained(ResNet(18, 3, False, 0.0), good, "mocov9")
    with pytest.raises(FileNotFoundError, match="nope.pth"):
        load_pretrained(ResNet(18, 3, False, 0.0), tmp_path / "nope.pth")


def test_grayscale_adaptation_and_missing_bn_counters(tmp_path, tv_resnet18):
    sd = {k: v for k, v in tv_resnet18.items() if not k.endswith("num_batches_tracked")}  # old torchvision files
    path = _save(tmp_path, "old.pth", sd)
    feat = ResNet(18, 1, False, 0.0)
    rep = load_pretrained(feat, path)
    assert rep.adapted == ["conv1.weight"] and rep.filled
    torch.testing.assert_close(feat.network.conv1.weight, tv_resnet18["conv1.weight"].sum(1, keepdim=True))


def _to_timm(tv_vit: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """torchvision ViT names → timm names, written independently of the loader's regex table."""
    out = {}
    for k, v in tv_vit.items():
        if k == "class_token":
            out["cls_token"] = v
        elif k == "encoder.pos_embedding":
            out["pos_embed"] = v
        elif k.startswith("conv_proj."):
            out["patch_embed.proj." + k.split(".")[-1]] = v
        elif k.startswith("encoder.ln."):
            out["norm." + k.split(".")[-1]] = v
        elif k.startswith("encoder.layers."):
            i = int(k.split(".")[2].rsplit("_", 1)[1])
            rest = ".".join(k.split(".")[3:])
            rest = {"ln_1": "norm1", "ln_2": "norm2"}.get(rest.split(".")[0], None) and rest.replace(
                "ln_1", "norm1").replace("ln_2", "norm2") or rest
            rest = (rest.replace("self_attention.in_proj_weight", "attn.qkv.weight")
                    .replace("self_attention.in_proj_bias", "attn.qkv.bias")
                    .replace("self_attention.out_proj", "attn.proj").replace("mlp.0", "mlp.fc1").replace("mlp.3", "mlp.fc2"))
            out[f"blocks.{i}.{rest}"] = v
        else:
            raise AssertionError(k)
    return out


def test_vit_torchvision_timm_and_moco_v3(tmp_path):
    torch.manual_seed(0)
    src = ViT("vit_tiny_16", 3, 32)
    tv = src.network.state_dict()
    head = {"heads.head.weight": torch.randn(10, 192), "heads.head.bias": torch.randn(10)}
    timm = {**_to_timm(tv), "head.weight": torch.randn(10, 192), "head.bias": torch.randn(10)}
    assert "blocks.3.attn.qkv.weight" in timm and "blocks.0.mlp.fc2.bias" in timm
    mocov3 = {"state_dict": {**{"module.base_encoder." + k: v for k, v in _to_timm(tv).items()},
                             "module.base_encoder.head.0.weight": torch.randn(64, 192),
                             **{"module.momentum_encoder." + k: v + 1 for k, v in _to_timm(tv).items()},
                             "module.predictor.0.weight": torch.randn(64, 64)}}
    for name, obj in {"tv": {**tv, **head}, "timm": timm, "mocov3": mocov3}.items():
        path = _save(tmp_path, f"vit_{name}.pth", obj)
        dst = ViT("vit_tiny_16", 3, 32)
        load_pretrained(dst, path)
        for k, v in tv.items():
            assert torch.equal(dst.network.state_dict()[k], v), (name, k)
    # a 64-px target: position embeddings are interpolated to the 4×4 grid, the rest copied
    big = ViT("vit_tiny_16", 1, 64)
    rep = load_pretrained(big, _save(tmp_path, "vit_tv.pth", tv))
    assert set(rep.adapted) == {"conv_proj.weight", "encoder.pos_embedding"}
    assert big.network.encoder.pos_embedding.shape == (1, 17, 192)


def test_pretrained_hparam_reaches_every_algorithm(tmp_path, tv_resnet18):
    path = _save(tmp_path, "w.pth", tv_resnet18)
    hp = default_hparams("ERM", overrides={"featurizer": "resnet18", "pretrained": str(path)})
    alg = create("ERM", (3, 16, 16), 4, 2, {**hp, "steps": 2})
    _assert_loaded(alg.featurizer, tv_resnet18)


def _batch(c=3, s=16, n=8, k=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, c, s, s, generator=g), torch.randint(0, k, (n,), generator=g)) for _ in range(2)]


def _snapshot(m: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


def _changed(before, module) -> set[str]:
    return {k for k, v in module.state_dict().items() if not torch.equal(v, before[k])}


def test_linear_probe_freezes_params_and_bn_stats(tmp_path, tv_resnet18):
    path = _save(tmp_path, "w.pth", tv_resnet18)
    hp = default_hparams("ERM", overrides={"featurizer": "resnet18", "pretrained": str(path), "linear_probe": True})
    alg = create("ERM", (3, 16, 16), 4, 2, {**hp, "steps": 3})
    f0, c0 = _snapshot(alg.featurizer), _snapshot(alg.classifier)
    alg.train()
    for s in range(3):
        alg.update(_batch(seed=s), s)
    assert _changed(f0, alg.featurizer) == set()  # weights and BatchNorm running stats untouched
    assert _changed(c0, alg.classifier) == {"weight", "bias"}
    assert all(not p.requires_grad for p in alg.featurizer.parameters())


def test_freeze_first_k_stages(tv_resnet18):
    torch.manual_seed(0)
    hp = default_hparams("ERM", overrides={"featurizer": "resnet18", "freeze_stages": 2})
    alg = create("ERM", (3, 16, 16), 4, 2, {**hp, "steps": 3})
    f0 = _snapshot(alg.featurizer)
    alg.train()
    for s in range(3):
        alg.update(_batch(seed=s), s)
    changed = {k.split(".")[1] for k in _changed(f0, alg.featurizer)}
    assert changed == {"layer3", "layer4"}  # stem, layer1, layer2 frozen (weights and BN stats)
    assert n_stages(alg.featurizer) == 4


def test_stage_splits_and_bounds():
    from dganalysis.nets.featurizers import MLP, MNISTCNN, SmallCNN

    assert [len(s) for s in stages(MNISTCNN(1))] == [3, 3, 3, 3]
    assert n_stages(SmallCNN(1)) == 4 and n_stages(MLP(16)) == 3
    vit = ViT("vit_tiny_16", 1, 32)
    st = stages(vit)
    assert len(st) == 4 and st[0][1] is vit.network.class_token
    with pytest.raises(ValueError, match="freeze_stages"):
        freeze_stages(MNISTCNN(1), 5)
    cnn = MNISTCNN(1)
    freeze_stages(cnn, 1)
    assert [p.requires_grad for p in cnn.body[0].parameters()] == [False, False]
    assert all(p.requires_grad for p in cnn.body[3].parameters())
    freeze_featurizer(cnn)
    assert not any(p.requires_grad for p in cnn.parameters())
    with pytest.raises(TypeError, match="cannot split"):
        stages(nn.Linear(2, 2))


# -- torchvision's own weight files from the torch hub cache ($TORCH_HOME) -------------------------------------------
def test_imagenet_weights_from_torch_home(tmp_path, monkeypatch, tv_resnet18):
    from dganalysis.nets.torchhub import resolve_pretrained, torchvision_weights_file

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    ckpts = tmp_path / "th" / "hub" / "checkpoints"
    assert torchvision_weights_file("resnet18") == ckpts / "resnet18-f37072fd.pth"
    assert torchvision_weights_file("resnet50") == ckpts / "resnet50-0676ba61.pth"  # DomainBed's pretrained=True
    assert torchvision_weights_file("resnet50", "IMAGENET1K_V2") == ckpts / "resnet50-11ad3fa6.pth"
    assert torchvision_weights_file("vit_b_16") == ckpts / "vit_b_16-c867db91.pth"
    with pytest.raises(FileNotFoundError, match=r"resnet18-f37072fd\.pth.*TORCH_HOME"):
        create("ERM", (3, 16, 16), 4, 2, {**default_hparams("ERM", overrides={"featurizer": "resnet18",
                                                                              "pretrained": "imagenet"}), "steps": 1})
    with pytest.raises(ValueError, match="no torchvision ImageNet weights for featurizer 'cnn'"):
        resolve_pretrained("imagenet", "cnn")
    with pytest.raises(ValueError, match="no weights 'IMAGENET9K'"):
        resolve_pretrained("imagenet:IMAGENET9K", "resnet18")
    ckpts.mkdir(parents=True)
    torch.save(tv_resnet18, ckpts / "resnet18-f37072fd.pth")  # torchvision's key layout, random values
    hp = default_hparams("ERM", overrides={"featurizer": "resnet18", "pretrained": "imagenet"})
    alg = create("ERM", (3, 16, 16), 4, 2, {**hp, "steps": 1})
    _assert_loaded(alg.featurizer, tv_resnet18)


def test_freeze_bn_keeps_running_stats_but_trains_affine(tv_resnet18):
    """DomainBed's freeze_bn: BatchNorm in eval mode even after train(); γ, β still learn."""
    hp = default_hparams("ERM", overrides={"featurizer": "resnet18", "freeze_bn": True, "resnet_dropout": 0.5})
    alg = create("ERM", (3, 16, 16), 4, 2, {**hp, "steps": 2})
    alg.featurizer.network.load_state_dict(_no_fc(tv_resnet18))
    alg.train()
    bns = [m for m in alg.featurizer.modules() if isinstance(m, nn.BatchNorm2d)]
    assert bns and not any(m.training for m in bns) and alg.featurizer.dropout.training
    before = _snapshot(alg.featurizer)
    for s in range(2):
        alg.update(_batch(seed=s), s)
    changed = _changed(before, alg.featurizer)
    assert not any(k.endswith(("running_mean", "running_var", "num_batches_tracked")) for k in changed)
    assert any(k.endswith("bn1.weight") for k in changed)
    plain = create("ERM", (3, 16, 16), 4, 2, {**default_hparams("ERM", overrides={"featurizer": "resnet18"}), "steps": 1})
    plain.train()
    assert all(m.training for m in plain.featurizer.modules() if isinstance(m, nn.BatchNorm2d))


_FORK_IMPORTS = r"""
import os, sys, traceback
import numpy, torch  # heavy third-party modules once; no dganalysis module is loaded before the fork
bad = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(name)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1] != 0:
        bad.append(name)
print("FAILED", bad) if bad else print("OK")
sys.exit(1 if bad else 0)
"""


def test_each_nets_module_imports_alone():
    """No import cycle: every module of dganalysis.nets imports first, alone, in a fresh interpreter (one
    interpreter loads torch, then forks one child per module, so no dganalysis module is loaded before it)."""
    import subprocess
    import sys

    names = ["dganalysis.nets"] + [f"dganalysis.nets.{m}" for m in
                                   ("archs", "vit", "freeze", "pretrained", "torchhub", "featurizers")]
    res = subprocess.run([sys.executable, "-c", _FORK_IMPORTS, *names], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "OK" in res.stdout, res.stdout + res.stderr[-3000:]


def test_nets_import_graph_is_acyclic():
    """Counting imports inside functions too (lazy imports hide cycles): the dganalysis.nets modules form a DAG."""
    import ast
    from pathlib import Path

    import dganalysis.nets as pkg

    graph = {}
    for path in Path(pkg.__file__).parent.glob("*.py"):
        mod = path.stem
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dganalysis.nets."):
                deps.add(node.module.rsplit(".", 1)[1])
            elif isinstance(node, ast.Import):
                deps |= {a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("dganalysis.nets.")}
        graph[mod] = deps - {mod}
    done, stack = set(), []

    def visit(m):
        assert m not in stack, f"import cycle: {' -> '.join(stack[stack.index(m):] + [m])}"
        if m in done:
            return
        stack.append(m)
        for d in graph.get(m, ()):
            visit(d)
        stack.pop()
        done.add(m)

    for m in graph:
        visit(m)
    assert "featurizers" in graph["__init__"] and "featurizers" not in graph["pretrained"] | graph["freeze"]
