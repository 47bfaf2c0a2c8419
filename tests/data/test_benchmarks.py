"""DomainBed's benchmarks by name on fake trees with the real folder names; the device and streaming paths.

The fake trees hold tiny JPEGs (a few pixels, non-square) in the layout DomainBed's download script produces,
with the class folder names of :mod:`dganalysis.data.benchmark_classes` (each list says where it was verified).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

import dganalysis  # noqa: F401  (torchvision shim)
from dganalysis.data import load_dataset
from dganalysis.data.benchmarks import BENCHMARKS
from dganalysis.data.dataset import DomainDataset
from dganalysis.data.encoded import EncodedDataset
from dganalysis.data.feed import choose_mode, make_feed
from dganalysis.data.pipeline import DomainBedPipeline
from dganalysis.records.read import DOMAINBED_ENVIRONMENTS

torch.set_num_threads(1)


def _classes(b):
    return list(b.classes)


def _fake_tree(root, name: str, per_class: int = 1, classes=None, w: int = 10, h: int = 7):
    """``root/<folder>/<env folder>/<class>/<i>.jpg`` with one colour per (env, class, i)."""
    b = BENCHMARKS[name]
    rng = np.random.RandomState(len(name))
    for e, env in enumerate(b.env_folders):
        for k, c in enumerate(classes or _classes(b)):
            d = root / b.folder / env / c
            d.mkdir(parents=True, exist_ok=True)
            for i in range(per_class):
                arr = np.clip(rng.normal(40 * e + 3 * k, 20, (h + i, w, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(arr).save(d / f"img_{i}.jpg", quality=95)
    return root


@pytest.mark.parametrize("name", sorted(n for n in BENCHMARKS if n in DOMAINBED_ENVIRONMENTS))  # NICO++: test_nico.py
def test_benchmark_reads_domainbed_layout(tmp_path, name):
    b = BENCHMARKS[name]
    per = 1 if b.n_classes > 100 else 2
    root = _fake_tree(tmp_path / "data", name, per_class=per)
    ds = load_dataset(name, root=root, image_size=8, data_dir=tmp_path / "cache")
    assert isinstance(ds, EncodedDataset)
    assert ds.domain_names == list(b.environments) == DOMAINBED_ENVIRONMENTS[name]
    assert ds.info["folders"] == list(b.env_folders) == sorted(b.env_folders)
    assert ds.classes == sorted(_classes(b)) and ds.n_classes == b.n_classes
    assert ds.input_shape == (3, 8, 8) and ds.info["pipeline"] == "domainbed"
    assert all(len(d) == per * b.n_classes for d in ds.domains)
    assert ds.domains[0].all_jpeg and ds.domains[0].sizes[0].tolist() == [10, 7]
    assert load_dataset.__module__  # registry path
    from dganalysis.data.registry import DATASETS

    assert DATASETS.get(name).small_images is False  # DomainBed's large-image hparam regime


#: sha256 (first 16 hex) of "\n".join(list): pins each class list as verified (see benchmark_classes.py for the
#: sources; OfficeHome's and DomainNet's digests were computed from thuml/Transfer-Learning-Library's CLASSES, sorted)
PINNED_CLASS_LISTS = {"PACS": (7, "89c745edd036ab67"), "VLCS": (5, "20cf84d9175e474f"),
                      "OfficeHome": (65, "00976e599f5dd6d4"), "TerraIncognita": (10, "e1eb8ff82be615b4"),
                      "DomainNet": (345, "f54521e7f5d873bd"), "SVIRO": (7, "fd97ce4cb9fb0aed")}


def test_class_lists_are_the_verified_ones():
    import hashlib

    assert set(PINNED_CLASS_LISTS) == {n for n, b in BENCHMARKS.items() if b.classes is not None}
    assert BENCHMARKS["NICO++"].classes is None  # class names not pinned: only the count (60) is checked
    for name, (n, digest) in PINNED_CLASS_LISTS.items():
        cls = BENCHMARKS[name].classes
        assert len(cls) == len(set(cls)) == n == BENCHMARKS[name].n_classes, name
        assert list(cls) == sorted(cls), name  # DomainBed's label order: sorted folder names, upper case first
        assert hashlib.sha256("\n".join(cls).encode()).hexdigest()[:16] == digest, name
    dn, oh = BENCHMARKS["DomainNet"].classes, BENCHMARKS["OfficeHome"].classes
    assert dn[:3] == ("The_Eiffel_Tower", "The_Great_Wall_of_China", "The_Mona_Lisa")
    assert {"t-shirt", "teddy-bear", "aircraft_carrier", "zigzag"} <= set(dn)
    assert {"Alarm_Clock", "Bucket", "Exit_Sign", "Push_Pin", "Postit_Notes", "ToothBrush", "TV"} <= set(oh)
    assert oh.index("TV") < oh.index("Table")  # "TV" < "Table" as sorted() orders folder names
    checks = {name: b.class_check for name, b in BENCHMARKS.items() if name != "NICO++"}
    assert checks == {"PACS": "strict", "VLCS": "strict", "OfficeHome": "strict", "TerraIncognita": "strict",
                      "DomainNet": "strict", "SVIRO": "lenient"}


def test_strict_list_refuses_a_misspelt_class_folder(tmp_path):
    """OfficeHome's list is verified, so a tree whose folder is spelt differently is refused, naming both spellings."""
    b = BENCHMARKS["OfficeHome"]
    classes = [("Toothbrush" if c == "ToothBrush" else c) for c in b.classes]
    root = _fake_tree(tmp_path / "data", "OfficeHome", classes=classes, w=2, h=2)
    with pytest.raises(ValueError, match=r"class folders differ from DomainBed's \(extra \['Toothbrush'\], "
                                         r"missing \['ToothBrush'\]"):
        load_dataset("OfficeHome", root=root, data_dir=tmp_path / "c")


def test_lenient_list_warns_and_uses_the_folders_found(tmp_path, caplog):
    """SVIRO's folder names inside DomainBed's archive are not verified: other names are used (sorted) with a warning
    listing the differences; a wrong class count is still refused."""
    names = ["adult", "child_seat", "empty", "empty_child_seat", "empty_infant_seat", "infant_seat", "object"]
    root = _fake_tree(tmp_path / "data", "SVIRO", classes=names, w=3, h=2)
    with caplog.at_level("WARNING", logger="dganalysis.data.benchmarks"):
        ds = load_dataset("SVIRO", root=root, image_size=4, data_dir=tmp_path / "c")
    assert ds.classes == names and len(ds.domains) == 10
    msg = " ".join(r.getMessage() for r in caplog.records)
    assert "SVIRO" in msg and "'adult'" in msg and "missing ['0', '1', '2', '3', '4', '5', '6']" in msg
    root = _fake_tree(tmp_path / "six", "SVIRO", classes=names[:6], w=3, h=2)
    with pytest.raises(ValueError, match="has 6 class folders, DomainBed's has 7"):
        load_dataset("SVIRO", root=root, data_dir=tmp_path / "c")


def test_order_labels_and_splits_match_torchvision_imagefolder(tmp_path):
    """Samples are listed as DomainBed's ImageFolder lists them, so in/out splits are DomainBed's."""
    from dganalysis.compat import torchvision

    root = _fake_tree(tmp_path / "data", "TerraIncognita", per_class=3)
    ds = load_dataset("TerraIncognita", root=root, image_size=6, storage="arrays", data_dir=tmp_path / "c")
    assert isinstance(ds, DomainDataset) and ds.domain_names == ["L100", "L38", "L43", "L46"]
    for env, dom in zip(BENCHMARKS["TerraIncognita"].env_folders, ds.domains):
        ref = torchvision().datasets.ImageFolder(str(root / "terra_incognita" / env), loader=lambda p: p)
        assert dom.labels.tolist() == [t for _, t in ref.samples]
        first = np.asarray(Image.open(ref.samples[0][0]).convert("RGB").resize((6, 6), Image.BILINEAR))
        assert np.array_equal(dom.images[0], first.transpose(2, 0, 1))
        assert dom.meta["orig_size"][0].tolist() == [10, 7]


def test_layout_errors_name_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"PACS.*not found.*dganalysis.scripts.download --data_dir <root> --datasets PACS"):
        load_dataset("PACS", root=tmp_path / "nothing")
    with pytest.raises(ValueError, match="needs root="):
        load_dataset("VLCS")
    root = _fake_tree(tmp_path / "a", "PACS")
    import shutil

    shutil.rmtree(root / "PACS" / "sketch")
    with pytest.raises(FileNotFoundError, match=r"sketch.*not found"):
        load_dataset("PACS", root=root, data_dir=tmp_path / "c")
    root = _fake_tree(tmp_path / "b", "PACS")
    (root / "PACS" / "extra").mkdir()
    with pytest.raises(ValueError, match="unexpected folder.*extra"):
        load_dataset("PACS", root=root, data_dir=tmp_path / "c")
    root = _fake_tree(tmp_path / "c", "VLCS")
    (root / "VLCS" / "SUN09" / "dog").rename(root / "VLCS" / "SUN09" / "wolf")
    with pytest.raises(ValueError, match=r"SUN09 has classes extra \['wolf'\], missing \['dog'\]"):
        load_dataset("VLCS", root=root, data_dir=tmp_path / "c")
    root = _fake_tree(tmp_path / "d", "VLCS", classes=["bird", "car"])
    with pytest.raises(ValueError, match=r"class folders differ from DomainBed's \(extra \[\], missing \['chair', 'dog'"):
        load_dataset("VLCS", root=root, data_dir=tmp_path / "c")
    # the dataset folder itself is accepted as root
    root = _fake_tree(tmp_path / "e", "PACS")
    assert load_dataset("PACS", root=root / "PACS", image_size=4, data_dir=tmp_path / "c").domain_names == list("ACPS")


def test_stream_and_device_paths_give_the_same_batches(tmp_path):
    root = _fake_tree(tmp_path / "data", "PACS", per_class=2)
    enc = load_dataset("PACS", root=root, image_size=8, data_dir=tmp_path / "c")
    index = [(np.arange(len(d))[::2], np.arange(len(d))[1::2]) for d in enc.domains]
    pipe = DomainBedPipeline(size=8)
    dev = make_feed(enc, index, torch.device("cpu"), False, pipe, mode="device", workers=2)
    stm = make_feed(enc, index, torch.device("cpu"), False, pipe, seed=3, mode="stream", workers=2, prefetch=2)
    assert (dev.mode, stm.mode) == ("device", "stream")
    for (di, do), (si, so) in zip(dev, stm):
        for a, b in ((di, si), (do, so)):
            ea, eb = list(a.eval_batches(5)), list(b.eval_batches(5))
            assert len(ea) == len(eb)
            for (xa, ya), (xb, yb) in zip(ea, eb):
                assert torch.equal(xa, xb) and torch.equal(ya, yb)
    g = torch.Generator().manual_seed(0)
    x, y = stm[0][0].sample(6, g)
    assert x.shape == (6, 3, 8, 8) and y.shape == (6,) and torch.isfinite(x).all()
    again = make_feed(enc, index, torch.device("cpu"), False, pipe, seed=3, mode="stream", workers=2)
    _, y2 = again[0][0].sample(6, torch.Generator().manual_seed(0))
    assert torch.equal(y, y2)  # the producer's index draws are seeded
    stm.close()
    again.close()


def test_auto_mode_streams_when_data_exceed_device_memory(tmp_path, monkeypatch):
    root = _fake_tree(tmp_path / "data", "PACS")
    enc = load_dataset("PACS", root=root, image_size=8, data_dir=tmp_path / "c")
    import dganalysis.data.feed as feed

    monkeypatch.delenv("DGANALYSIS_FEED", raising=False)
    monkeypatch.setattr(feed, "free_memory", lambda device: 10 * enc.decoded_nbytes())
    assert choose_mode(enc, torch.device("cpu")) == "device"
    monkeypatch.setattr(feed, "free_memory", lambda device: enc.decoded_nbytes())
    assert choose_mode(enc, torch.device("cpu")) == "stream"
    assert choose_mode(enc, torch.device("cpu"), pipeline=DomainBedPipeline(size=8)) == "stream"  # Pillow on the host
    monkeypatch.setattr(feed, "free_memory", lambda device: 10 * enc.decoded_nbytes())
    assert choose_mode(enc, torch.device("cpu"), pipeline=DomainBedPipeline(size=8, augment=False)) == "device"
    monkeypatch.setenv("DGANALYSIS_FEED", "device")
    assert choose_mode(enc, torch.device("cpu"), pipeline=DomainBedPipeline(size=8)) == "device"
    monkeypatch.setenv("DGANALYSIS_FEED", "gpu")
    with pytest.raises(ValueError, match="DGANALYSIS_FEED"):
        choose_mode(enc, torch.device("cpu"))


def test_memory_mapped_arrays_stream_too(tmp_path):
    root = _fake_tree(tmp_path / "data", "VLCS", per_class=2)
    arr = load_dataset("VLCS", root=root, image_size=8, storage="arrays", data_dir=tmp_path / "c")
    assert isinstance(arr.domains[0].images, np.memmap)
    index = [(np.arange(len(d)), np.arange(0)) for d in arr.domains]
    pipe = DomainBedPipeline(size=8, augment=False)
    dev = make_feed(arr, index, torch.device("cpu"), False, pipe, mode="device")
    stm = make_feed(arr, index, torch.device("cpu"), False, pipe, mode="stream")
    xa = torch.cat([x for x, _ in dev[1][0].eval_batches(4)])
    xb = torch.cat([x for x, _ in stm[1][0].eval_batches(4)])
    assert torch.equal(xa, xb)
    stm.close()


@pytest.mark.parametrize("mode", ["device", "stream"])
def test_erm_end_to_end_on_a_real_layout_with_imagenet_weights(tmp_path, monkeypatch, mode):
    """ERM, pretrained ResNet-18 from a (fake) torchvision file in $TORCH_HOME, DomainBed's pipeline, 3 steps."""
    from dganalysis.compat import torchvision
    from dganalysis.sweep import Job
    from dganalysis.training.train import run_job

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("DGANALYSIS_FEED", mode)
    ckpt = tmp_path / "torch" / "hub" / "checkpoints" / "resnet18-f37072fd.pth"
    ckpt.parent.mkdir(parents=True)
    torch.manual_seed(0)
    torch.save(torchvision().models.resnet18(weights=None).state_dict(), ckpt)
    root = _fake_tree(tmp_path / "data", "PACS", per_class=2, w=20, h=16)
    job = Job(dataset="PACS", dataset_kwargs={"root": str(root), "image_size": 32}, algorithm="ERM",
              train_domains=["A", "C", "P"], test_domains=["S"], steps=3, checkpoint_freq=2,
              hparams_overrides={"featurizer": "resnet18", "pretrained": "imagenet", "batch_size": 4,
                                 "freeze_bn": True, "resnet_dropout": 0.1})
    out = run_job(job, tmp_path / f"job_{mode}", data_dir=tmp_path / "cache", device="cpu", precision="fp32")
    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 2] and recs[-1]["data_path"] == mode
    assert all(0 <= recs[-1][f"env{i}_out_acc"] <= 1 for i in range(4)) and np.isfinite(recs[-1]["loss"])
    assert (out / "done").is_file()


def _fake_camelyon(root, per_center: int = 2):
    """camelyon17_v1.0/{RELEASE_v1.0.txt, metadata.csv, patches/patient_*_node_*/patch_*.png} with tiny patches."""
    base = root / "camelyon17_v1.0"
    rows = ["," + ",".join(["patient", "node", "x_coord", "y_coord", "tumor", "slide", "center", "split"])]
    k = 0
    for center in range(5):
        patient, node = f"{center:03d}", 1
        d = base / "patches" / f"patient_{patient}_node_{node}"
        d.mkdir(parents=True, exist_ok=True)
        for i in range(per_center):
            x, y, tumor = 100 + i, 200 + i, (center + i) % 2
            Image.fromarray(np.full((6, 6, 3), 40 * center + i, np.uint8)).save(
                d / f"patch_patient_{patient}_node_{node}_x_{x}_y_{y}.png")
            rows.append(f"{k},{patient},{node},{x},{y},{tumor},{center * 10 + node},{center},0")
            k += 1
    (base / "metadata.csv").write_text("\n".join(rows) + "\n")
    (base / "RELEASE_v1.0.txt").write_text("fake\n")
    return root


def test_wilds_camelyon_through_the_wilds_package(tmp_path):
    pytest.importorskip("wilds", reason="WILDSCamelyon reads its data through `wilds`: pip install wilds==2.0.0")
    root = _fake_camelyon(tmp_path / "wilds")
    ds = load_dataset("WILDSCamelyon", root=root, image_size=8, data_dir=tmp_path / "c")
    assert ds.domain_names == DOMAINBED_ENVIRONMENTS["WILDSCamelyon"] and ds.classes == ["0", "1"]
    assert [len(d) for d in ds.domains] == [2] * 5
    assert ds["hospital_3"].labels.tolist() == [1, 0]
    assert ds["hospital_0"].sizes.tolist() == [[8, 8], [8, 8]]  # DomainBed resizes before cropping
    arr = ds.to_arrays(workers=1)
    assert arr["hospital_2"].images[1].mean() == pytest.approx(81, abs=1)
    with pytest.raises(FileNotFoundError, match="camelyon17_v1.0 not found"):
        load_dataset("WILDSCamelyon", root=tmp_path / "none")


def test_wilds_camelyon_max_per_env_caps_before_packing(tmp_path):
    """Notebook 06 maps Camelyon17-WILDS (Ye et al. 2022, Table 1) from a seeded draw per hospital: only the drawn
    patches are packed (an undrawn one may be missing), the draw is seeded and cached apart from the whole set."""
    pytest.importorskip("wilds", reason="WILDSCamelyon reads its data through `wilds`: pip install wilds==2.0.0")
    from dganalysis.data.wilds_data import cap_index
    from dganalysis.studies.smoke.trees import write_wilds_camelyon

    root = write_wilds_camelyon(tmp_path / "wilds", per_center=6)
    whole = load_dataset("WILDSCamelyon", root=root, image_size=8, data_dir=tmp_path / "c")
    assert [len(d) for d in whole.domains] == [6] * 5 and "max_per_env" not in whole.info
    kept = cap_index(np.arange(6), 4, [0, 2])  # hospital_2 is environment 2
    patches = sorted((root / "camelyon17_v1.0" / "patches" / "patient_002_node_1").iterdir(),
                     key=lambda f: int(f.name.split("_x_")[1].split("_")[0]))
    next(f for i, f in enumerate(patches) if i not in kept.tolist()).unlink()
    cap = load_dataset("WILDSCamelyon", root=root, image_size=8, storage="arrays", max_per_env=4, data_dir=tmp_path / "c")
    assert [len(d) for d in cap.domains] == [4] * 5 and cap.info["max_per_env"] == 4
    assert np.array_equal(cap["hospital_2"].labels, whole["hospital_2"].labels[kept])
    assert np.array_equal(cap["hospital_2"].images, whole.to_arrays(1)["hospital_2"].images[kept])
    with pytest.raises(ValueError, match="max_per_env=0"):
        load_dataset("WILDSCamelyon", root=root, max_per_env=0)


def test_cap_index_is_a_seeded_ordered_subset():
    from dganalysis.data.wilds_data import cap_index

    idx = np.arange(100, 200)
    a, b = cap_index(idx, 10, [0, 1]), cap_index(idx, 10, [0, 1])
    assert len(a) == 10 and np.array_equal(a, b) and np.all(np.diff(a) > 0) and set(a) <= set(idx)
    assert not np.array_equal(a, cap_index(idx, 10, [1, 1]))
    assert np.array_equal(cap_index(idx[:5], 10, 0), idx[:5])


def _fake_fmow(root):
    """fmow_v1.1/{RELEASE_v1.1.txt, rgb_metadata.csv, country_code_mapping.csv, images/rgb_img_<row>.png}: two
    images per region (regions numbered by first appearance in the metadata, as ``wilds`` numbers them) and one
    ``seq`` row, which ``wilds`` drops (so file numbers and sample numbers differ after it)."""
    base = root / "fmow_v1.1"
    (base / "images").mkdir(parents=True)
    countries = {"USA": "Americas", "FRA": "Europe", "CHN": "Asia", "NGA": "Africa", "AUS": "Oceania"}
    mapping = "".join(f"c{k},{c[:2]},{c},{r}\n" for k, (c, r) in enumerate(countries.items()))
    (base / "country_code_mapping.csv").write_text("name,alpha-2,alpha-3,region\n" + mapping)
    order = ["FRA", "USA", "seq", "XXX", "CHN", "AUS", "NGA"]  # XXX: not in the mapping -> region "Other"
    rows, k = ["split,img_filename,category,country_code,timestamp"], 0
    for code in order:
        for i in range(1 if code == "seq" else 2):
            split = "seq" if code == "seq" else ("train" if i == 0 else "test")
            year = 2014 if i == 0 else 2017
            cat = ["airport", "zoo", "barn"][k % 3]
            rows.append(f"{split},img_{k}.jpg,{cat},{'USA' if code == 'seq' else code},{year}-06-01T10:00:00Z")
            Image.fromarray(np.full((5, 7, 3), 10 * k, np.uint8)).save(base / "images" / f"rgb_img_{k}.png")
            k += 1
    (base / "rgb_metadata.csv").write_text("\n".join(rows) + "\n")
    (base / "RELEASE_v1.1.txt").write_text("fake\n")
    return root


def test_wilds_fmow_through_the_wilds_package(tmp_path):
    pytest.importorskip("wilds", reason="WILDSFMoW reads its data through `wilds`: pip install wilds==2.0.0")
    root = _fake_fmow(tmp_path / "wilds")
    ds = load_dataset("WILDSFMoW", root=root, image_size=8, data_dir=tmp_path / "c")
    assert ds.domain_names == DOMAINBED_ENVIRONMENTS["WILDSFMoW"] == [f"region_{i}" for i in range(6)]
    assert ds.classes == [str(c) for c in range(62)] and [len(d) for d in ds.domains] == [2] * 6
    # region_k = k-th region in order of appearance: Europe (rows 0, 1), Americas (2, 3; row 4 is 'seq'),
    # Other (5, 6), Asia (7, 8), Oceania (9, 10), Africa (11, 12); labels are wilds' category indices
    from wilds.datasets.fmow_dataset import categories

    rows = [[0, 1], [2, 3], [5, 6], [7, 8], [9, 10], [11, 12]]
    for dom, r in zip(ds.domains, rows):
        assert dom.labels.tolist() == [categories.index(["airport", "zoo", "barn"][k % 3]) for k in r]
    arr = ds.to_arrays(workers=1)
    means = [[float(img.mean()) for img in d.images] for d in arr.domains]
    assert means == [[pytest.approx(10 * k, abs=1) for k in r] for r in rows]  # the seq row's file is skipped
    assert ds["region_0"].sizes.tolist() == [[8, 8], [8, 8]]  # DomainBed resizes to a square before cropping
    with pytest.raises(FileNotFoundError, match=r"fmow_v1.1 not found.*wilds.get_dataset\('fmow'"):
        load_dataset("WILDSFMoW", root=tmp_path / "none")


def test_host_augmentation_uses_the_original_pixels(tmp_path):
    """Streaming with Pillow augmentation on the host: a crop that covers the whole image (scale 1, the image's own
    aspect ratio) reproduces DomainBed's evaluation resize exactly; the default draws are seeded."""
    root = _fake_tree(tmp_path / "data", "PACS", per_class=1, w=12, h=9)
    enc = load_dataset("PACS", root=root, image_size=8, data_dir=tmp_path / "c")
    index = [(np.arange(len(d)), np.arange(0)) for d in enc.domains]
    whole = DomainBedPipeline(size=8, scale=(1.0, 1.0), ratio=(12 / 9, 12 / 9), jitter=0.0, grayscale_p=0.0, flip_p=0.0)
    feed = make_feed(enc, index, torch.device("cpu"), False, whole, mode="stream", workers=2, host_augment=True)
    split = feed[1][0]
    assert split.host_augment
    x, y = split.sample(5, None)
    ev_x, ev_y = (torch.cat(t) for t in zip(*split.eval_batches(100)))
    dist = (x[:, None] - ev_x[None]).abs().amax((2, 3, 4))  # [5, n]
    best = dist.argmin(1)
    # every augmented image is one evaluation image, up to one uint8 level (PIL's HSV round trip of a zero hue
    # shift, which DomainBed's ColorJitter also does): 1 / 255 / 0.224 < 0.02 in normalised units
    assert dist.min(1).values.max() < 0.02, dist.min(1).values
    assert ev_y[best].tolist() == y.tolist()
    feed.close()
    pipe = DomainBedPipeline(size=8)
    a = make_feed(enc, index, torch.device("cpu"), False, pipe, seed=5, mode="stream", workers=2, host_augment=True)
    b = make_feed(enc, index, torch.device("cpu"), False, pipe, seed=5, mode="stream", workers=2, host_augment=True)
    xa, ya = a[0][0].sample(6)
    xb, yb = b[0][0].sample(6)
    assert torch.equal(xa, xb) and torch.equal(ya, yb) and xa.shape == (6, 3, 8, 8)
    a.close()
    b.close()


def test_a_broken_file_fails_the_batch_naming_the_sample(tmp_path, monkeypatch):
    from PIL import ImageFile

    # Pillow's flag is process-global: DomainBed's datasets.py sets it to True when imported in the same process
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)
    root = _fake_tree(tmp_path / "data", "PACS", per_class=1, w=64, h=64)
    bad = root / "PACS" / "cartoon" / "dog" / "img_0.jpg"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) * 2 // 3])  # the header survives (the import reads it), the pixels do not
    enc = load_dataset("PACS", root=root, image_size=8, data_dir=tmp_path / "c")
    index = [(np.zeros(4, np.int64), np.zeros(0, np.int64)) for _ in enc.domains]  # sample 0 = the dog image
    for host in (False, True):
        feed = make_feed(enc, index, torch.device("cpu"), False, DomainBedPipeline(size=8), mode="stream",
                         workers=1, host_augment=host)
        feed[0][0].sample(2)  # another domain is fine
        with pytest.raises(ValueError, match="domain 'C' sample 0: unreadable image"):
            feed[1][0].sample(2)
        feed.close()
