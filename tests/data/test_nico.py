"""NICO++ by name on a FAKE tree in its DG-track layout; clear errors when it is missing."""

from __future__ import annotations

import pytest

from dganalysis.data import load_dataset
from dganalysis.studies.dryrun import check_dataset
from dganalysis.studies.smoke.trees import write_benchmark_tree, write_mnist_idx


def test_nicopp_reads_its_dg_track_layout(tmp_path):
    base = write_benchmark_tree(tmp_path / "data", "NICO++", per_class=2)
    assert base.name == "NICO_DG" and (base / "autumn" / "class_00" / "img_1.jpg").is_file()
    ds = load_dataset("NICO++", root=tmp_path / "data", image_size=8, data_dir=tmp_path / "cache")
    assert ds.domain_names == ["autumn", "dim", "grass", "outdoor", "rock", "water"]
    assert ds.n_classes == 60 and all(len(d) == 120 for d in ds.domains)
    # the folder itself may be given as the root
    assert load_dataset("NICO++", root=base, image_size=8, data_dir=tmp_path / "cache").domain_names == ds.domain_names
    assert check_dataset("NICO++", {"root": str(tmp_path / "data")})[0]


def test_nicopp_missing_names_the_folder_and_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"NICO_DG.*xxgege/NICO-plus"):
        load_dataset("NICO++", root=tmp_path, data_dir=tmp_path / "c")
    ok, what = check_dataset("NICO++", {"root": str(tmp_path)})
    assert not ok and "MISSING" in what and "NICO-plus" in what
    (tmp_path / "NICO_DG" / "autumn" / "cat").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match=r"environment folder\(s\).*dim"):
        load_dataset("NICO++", root=tmp_path, data_dir=tmp_path / "c")


def test_rotated_and_colored_mnist_on_idx_files(tmp_path):
    raw = write_mnist_idx(tmp_path / "MNIST" / "raw", n_train=30, n_test=12)
    rot = load_dataset("RotatedMNIST", mnist_dir=str(raw), image_size=28, angles=[0, 45])
    assert rot.domain_names == ["0", "45"] and sum(len(d) for d in rot.domains) == 42
    col = load_dataset("ColoredMNIST", mnist_dir=str(raw.parent), image_size=28, data_dir=tmp_path / "c")
    assert sum(len(d) for d in col.domains) == 42 and col.input_shape[0] == 2
    assert check_dataset("RotatedMNIST", {"mnist_dir": str(raw)})[0]
