"""Spawrious (all six) and Debug28/Debug224 against DomainBed's own dataset classes (``domainbed/datasets.py``).

Spawrious: fake trees in the archive's layout (``<i>/<background>/<breed>/<file>``), with folders large enough that
DomainBed's limits bind (a filler folder of 100 files, limit 96; an O2O group folder of 2,760, limit 2,756), files
DomainBed ignores (upper-case ``.PNG``, ``.txt``), and every file's bytes unique. Compared: environment order and
names, class order, every environment's file list in order with its label (DomainBed's ``CustomImageFolder`` paths,
walked through its ``ConcatDataset`` nesting), and the in/out split of our built dataset (the files behind each
index) with ``misc.split_dataset`` as DomainBed's ``train.py`` calls it. Debug: environments, shapes, classes, sizes
and the labels DomainBed draws after ``torch.manual_seed``.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from dganalysis.data import spawrious
from dganalysis.data.debug import DEBUG, to_uint8
from dganalysis.data.registry import load_dataset
from dganalysis.records.read import DOMAINBED_ENVIRONMENTS
from dganalysis.training.hparams import is_small_images, seed_hash
from dganalysis.training.train import split_indices

BACKGROUNDS = ("beach", "desert", "dirt", "jungle", "mountain", "snow")
BIG = {("0", "beach"): 100, ("1", "desert", "bulldog"): 2760}  # folders where DomainBed's limits bind


@pytest.fixture(scope="module")
def datasets_mod(domainbed):
    from tests.reference.conftest import import_with_stubs

    return import_with_stubs("domainbed.datasets")


def _png(k: int) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((6, 6, 3), k % 256, np.uint8)).save(buf, format="PNG", pnginfo=None)
    return buf.getvalue() + int(k).to_bytes(4, "little")  # unique bytes per file (trailing data after IEND)


def make_tree(root: Path, valid_images: bool, big: bool = True) -> Path:
    """A Spawrious tree; ``valid_images=False`` writes tiny unique non-image bytes (DomainBed's listing never opens
    files) so that the big folders stay cheap; ``big=False`` leaves the :data:`BIG` folders out."""
    k = 0
    for s in ("0", "1"):
        for bg in BACKGROUNDS:
            for b, breed in enumerate(spawrious.CLASSES):
                folder = root / s / bg / breed
                folder.mkdir(parents=True)
                n = BIG.get((s, bg), BIG.get((s, bg, breed), 2 + (b + len(bg)) % 3))
                if valid_images or not big:
                    n = min(n, 3)
                for i in range(n):
                    k += 1
                    ext = (".png", ".jpg", ".jpeg")[i % 3]
                    (folder / f"{bg}_{breed}_{i}{ext}").write_bytes(_png(k) if valid_images else k.to_bytes(4, "little"))
                (folder / "notes.txt").write_text("not an image")
                (folder / f"{bg}_{breed}_upper.PNG").write_bytes(_png(0))  # DomainBed's endswith is case-sensitive
    return root


@pytest.fixture(scope="module")
def big_tree(tmp_path_factory) -> Path:
    return make_tree(tmp_path_factory.mktemp("spawrious_big") / "spawrious224", valid_images=False)


def flatten(ds) -> list[tuple[str, int]]:
    """(file, label) of a DomainBed Spawrious environment, in its index order."""
    if hasattr(ds, "datasets"):
        return [x for child in ds.datasets for x in flatten(child)]
    return [(p, int(ds.class_index)) for p in ds.image_paths]


def domainbed_spawrious(datasets_mod, name: str, root: Path):
    return getattr(datasets_mod, name)(str(root), [0], {"data_augmentation": True})


@pytest.mark.parametrize("name", sorted(spawrious.SPAWRIOUS))
def test_spawrious_listing_is_domainbeds(datasets_mod, big_tree, name):
    theirs = domainbed_spawrious(datasets_mod, name, big_tree)
    ours = spawrious.SPAWRIOUS[name]
    assert list(spawrious.ENVIRONMENTS) == getattr(datasets_mod, name).ENVIRONMENTS == DOMAINBED_ENVIRONMENTS[name]
    assert list(spawrious.CLASSES) == theirs.class_list and theirs.num_classes == 4
    assert ours.checkpoint_freq == theirs.CHECKPOINT_FREQ and tuple(theirs.input_shape) == (3, 224, 224)
    for root in (big_tree, big_tree.parent):  # DomainBed's --data_dir, or the folder the download fills
        base, classes, listing = ours.listing(root)
        assert base == big_tree and classes == theirs.class_list
        assert list(listing) == list(spawrious.ENVIRONMENTS) and len(theirs.datasets) == 3
        for env, dataset in zip(listing, theirs.datasets):
            assert [(str(f), k) for f, k in listing[env]] == flatten(dataset), (name, env)
    if name.startswith("SpawriousO2O_easy"):  # the limits bind here: 96 of 100 filler images, 2756 of 2760
        got = [f for f, _ in ours.listing(big_tree)[2]["SC_group_2"]]
        assert sum(f.parent.name == "bulldog" and f.parent.parent.name == "desert" for f in got) == 2756
        got = [f for f, _ in ours.listing(big_tree)[2]["SC_group_1"]]
        assert sum(f.parent.parent.name == "beach" for f in got) == 4 * 96


@pytest.mark.parametrize("name", ["SpawriousO2O_medium", "SpawriousM2M_hard"])
def test_spawrious_build_and_split_are_domainbeds(datasets_mod, domainbed, tmp_path, name):
    root = make_tree(tmp_path / "spawrious224", valid_images=True)
    theirs = domainbed_spawrious(datasets_mod, name, root)
    ours = load_dataset(name, root=tmp_path, data_dir=tmp_path / "cache")
    assert ours.domain_names == list(spawrious.ENVIRONMENTS) and ours.classes == list(spawrious.CLASSES)
    assert ours.info["pipeline"] == "spawrious" and ours.input_shape == (3, 224, 224)
    for i, (dom, env) in enumerate(zip(ours.domains, theirs.datasets)):
        files = flatten(env)
        assert [k for _, k in files] == list(dom.labels)
        assert [Path(f).read_bytes() for f, _ in files] == [bytes(dom.raw(j)) for j in range(len(dom))]
        for trial in (0, 3):
            seed = domainbed.misc.seed_hash(trial, i)
            out, in_ = domainbed.misc.split_dataset(env, int(len(env) * 0.2), seed)
            ours_in, ours_out = split_indices(len(dom), 0.2, seed_hash(trial, i))
            assert list(ours_out) == out.keys and list(ours_in) == in_.keys
            assert [int(theirs.datasets[i][k][1]) for k in out.keys] == list(dom.labels[ours_out])


def test_spawrious_download_function_is_domainbeds(domainbed):
    """DomainBed's download script fetches spawrious224 (what our download drop-in fetches for it)."""
    text = (Path(domainbed.root) / "domainbed" / "scripts" / "download.py").read_text()
    body = text.split("def download_spawrious(data_dir", 1)[1].split("\ndef ", 1)[0]
    assert f"{spawrious.ARCHIVE_FOLDER}.tar.gz" in body


def test_spawrious_missing_folders_are_named(tmp_path):
    ds = spawrious.SPAWRIOUS["SpawriousM2M_easy"]
    with pytest.raises(FileNotFoundError, match=r"spawrious224 not found.*scripts.download --data_dir <root> --datasets Spawrious"):
        ds.listing(tmp_path)
    with pytest.raises(ValueError, match="needs root="):
        ds.listing(None)
    root = make_tree(tmp_path / "spawrious224", valid_images=False, big=False)
    import shutil

    shutil.rmtree(root / "0" / "jungle" / "corgi")
    with pytest.raises(FileNotFoundError, match=r"1 folder\(s\) not found.*0/jungle/corgi.*--datasets Spawrious"):
        ds.listing(tmp_path)
    with pytest.raises(ValueError, match="storage='png'"):
        ds(tmp_path, storage="png")


def test_spawrious_regime_and_pipeline():
    from dganalysis.data.pipeline import make_pipeline

    for name in spawrious.SPAWRIOUS:
        assert not is_small_images(name)
    p = make_pipeline({"pipeline": "spawrious"}, {}, (3, 224, 224))
    assert p.augment and p.scale == (1.0, 1.0) and p.ratio == (1.0, 1.0)  # no random crop, as DomainBed's
    x = torch.randint(0, 256, (2, 3, 224, 224), dtype=torch.uint8)
    boxes = p.draw(torch.tensor([[224, 224]] * 2))["boxes"]
    assert boxes.tolist() == [[0.0, 0.0, 224.0, 224.0]] * 2
    assert not make_pipeline({"pipeline": "spawrious"}, {"data_augmentation": False}, (3, 224, 224)).augment
    assert p.eval(x).shape == (2, 3, 224, 224)


@pytest.mark.parametrize("name", ["Debug28", "Debug224"])
def test_debug_datasets_are_domainbeds(datasets_mod, name):
    cls = getattr(datasets_mod, name)
    for seed in (0, 7):
        torch.manual_seed(seed)
        theirs = cls(None, [0], {})
        ours = load_dataset(name, seed=seed)
        assert ours.domain_names == cls.ENVIRONMENTS == DOMAINBED_ENVIRONMENTS[name]
        assert ours.input_shape == tuple(cls.INPUT_SHAPE) == tuple(theirs.input_shape)
        assert len(ours.classes) == theirs.num_classes == 2
        assert len(ours) == len(theirs.datasets) == 3
        assert ours.info["simulated"] is True
        for dom, env in zip(ours.domains, theirs.datasets):
            x, y = env.tensors
            assert list(dom.labels) == y.tolist() and len(dom) == 16
            assert np.array_equal(dom.images, to_uint8(x))  # DomainBed's values, mapped to uint8
    assert is_small_images(name) == (name == "Debug28") == (name in domainbed_small(datasets_mod))
    assert DEBUG[name].checkpoint_freq == datasets_mod.Debug.CHECKPOINT_FREQ


def domainbed_small(datasets_mod) -> list[str]:
    import ast
    import inspect

    from domainbed import hparams_registry

    tree = ast.parse(inspect.getsource(hparams_registry))
    return next(ast.literal_eval(n.value) for n in ast.walk(tree)
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "SMALL_IMAGES")


def test_debug_bad_seed():
    with pytest.raises(ValueError, match="seed='x'"):
        load_dataset("Debug28", seed="x")


def test_dry_run_checks_spawrious_folders(tmp_path):
    from dganalysis.studies.dryrun import check_dataset

    ok, msg = check_dataset("SpawriousO2O_hard", {"root": str(tmp_path)})
    assert not ok and "--datasets Spawrious" in msg
    make_tree(tmp_path / "spawrious224", valid_images=False, big=False)
    assert check_dataset("SpawriousO2O_hard", {"root": str(tmp_path)})[0]
    assert check_dataset("Debug224", {})[0]


def test_domainbed_spawrious_transforms_pin_our_pipeline(datasets_mod, big_tree):
    """What ``pipeline='spawrious'`` and the departure in dganalysis/data/spawrious.py rest on: DomainBed's Spawrious
    training transforms have no random crop (flip, jitter 0.3, grayscale after a fixed resize), and they are tied to
    environments 1 and 2 (``Test`` is never augmented), which are a run's training domains only for ``test_envs=[0]``."""
    from torchvision import transforms as T

    theirs = domainbed_spawrious(datasets_mod, "SpawriousM2M_medium", big_tree)

    def kinds(env) -> set[type]:
        leaf = env
        while hasattr(leaf, "datasets"):
            leaf = leaf.datasets[0]
        return {type(t) for t in leaf.transform.transforms}

    train = kinds(theirs.datasets[1])
    assert kinds(theirs.datasets[2]) == train
    assert {T.Resize, T.RandomHorizontalFlip, T.ColorJitter, T.RandomGrayscale} <= train
    assert T.RandomResizedCrop not in train and T.RandomCrop not in train
    assert T.RandomHorizontalFlip not in kinds(theirs.datasets[0]) and T.ColorJitter not in kinds(theirs.datasets[0])
    jitter = next(t for t in theirs.datasets[1].datasets[0].datasets[0].transform.transforms
                  if isinstance(t, T.ColorJitter))
    assert jitter.brightness == (0.7, 1.3) and jitter.hue == (-0.3, 0.3)  # ColorJitter(0.3, 0.3, 0.3, 0.3), as ours
