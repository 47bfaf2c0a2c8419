"""Rotated/Colored Fashion-MNIST on small IDX files made here (the Debian set is never required)."""

import gzip
import struct

import numpy as np
import pytest

from dganalysis.data import available, fashion, load_dataset
from dganalysis.data.idx import find_idx_set
from dganalysis.training.hparams import is_small_images


def _write_idx(path, arr):
    data = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes()
    with gzip.open(path, "wb") as fh:
        fh.write(data)


@pytest.fixture
def fake_fashion(tmp_path):
    rng = np.random.RandomState(3)
    for split, n in (("train", 40), ("t10k", 20)):
        y = np.arange(n) % 10
        x = rng.randint(0, 50, (n, 28, 28))
        x[:, 4:24, 10:18] = 200  # a bright vertical bar: rotation moves it
        _write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", x)
        _write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", y)
    return tmp_path


def test_rotated_fashion_recipe_and_source(fake_fashion):
    ds = load_dataset("RotatedFashionMNIST", fashion_dir=fake_fashion)
    assert ds.name == "RotatedFashionMNIST" and ds.domain_names == ["0", "15", "30", "45", "60", "75"]
    assert ds.classes == fashion.CLASSES and ds.input_shape == (1, 28, 28)
    src = np.concatenate([d.meta["source_index"] for d in ds])
    assert sorted(src) == list(range(60))  # DomainBed's disjoint split of all 60 images
    assert "Fashion-MNIST" in ds.info["source"] and "Xiao" in ds.info["source"] and "MNIST (LeCun" not in ds.info["source"]
    assert "user-given" in ds.info["source"] and ds.info["real"] is True
    # the bright vertical bar (columns 10-17) stays put at 0° and is tilted out of its columns at 75°
    assert ds["0"].images[:, 0, 4:24, 10:18].min() == 200
    assert ds["75"].images[:, 0, 4:24, 10:18].mean() < 150


def test_subsample_keeps_prefix_of_domainbed_parts(fake_fashion):
    full = load_dataset("RotatedFashionMNIST", fashion_dir=fake_fashion, image_size=14)
    sub = load_dataset("RotatedFashionMNIST", fashion_dir=fake_fashion, image_size=14, n_per_domain=4)
    assert sub.input_shape == (1, 14, 14) and sub.info["n_per_domain"] == 4
    for f, s in zip(full, sub):
        assert len(s) == 4
        np.testing.assert_array_equal(s.meta["source_index"], f.meta["source_index"][:4])
        np.testing.assert_array_equal(s.images, f.images[:4])
    with pytest.raises(ValueError, match="n_per_domain=0"):
        load_dataset("RotatedFashionMNIST", fashion_dir=fake_fashion, n_per_domain=0)


def test_colored_fashion_recipe(fake_fashion):
    ds = load_dataset("ColoredFashionMNIST", fashion_dir=fake_fashion, n_per_domain=15)
    assert ds.domain_names == ["+90%", "+80%", "-90%"] and ds.input_shape == (2, 28, 28)
    assert [len(d) for d in ds] == [15, 15, 15]
    for d in ds:
        on = d.images.reshape(len(d), 2, -1).sum(-1)
        assert np.all(on[np.arange(len(d)), 1 - d.meta["color"]] == 0)  # drawn only in its colour channel
        assert set(np.unique(d.meta["fashion_class"])) <= set(range(10))
    assert ds.info["recipe"] == "DomainBed ColoredMNIST" and "Fashion-MNIST" in ds.info["source"]


def test_missing_files_name_path_and_package(tmp_path, fake_fashion):
    with pytest.raises(FileNotFoundError, match=r"nowhere.*apt-get install dataset-fashion-mnist"):
        load_dataset("RotatedFashionMNIST", fashion_dir=tmp_path / "nowhere")
    (fake_fashion / "t10k-labels-idx1-ubyte.gz").unlink()
    with pytest.raises(FileNotFoundError, match=r"t10k-labels.*Fashion-MNIST raw IDX.*dataset-fashion-mnist"):
        load_dataset("ColoredFashionMNIST", fashion_dir=fake_fashion)


def test_idx_reader_names_the_set(fake_fashion):
    with pytest.raises(FileNotFoundError, match="MNIST raw IDX"):
        find_idx_set(fake_fashion / "none", "MNIST")
    with pytest.raises(ValueError, match="expected one of"):
        find_idx_set(fake_fashion, "KMNIST")
    x, y, files = find_idx_set(fake_fashion, "Fashion-MNIST")
    assert x.shape == (60, 28, 28) and len(files) == 4


def test_registered_small_image_regime():
    assert {"RotatedFashionMNIST", "ColoredFashionMNIST"} <= set(available())
    assert is_small_images("RotatedFashionMNIST") and is_small_images("ColoredFashionMNIST")


@pytest.mark.skipif(not (fashion.DEBIAN_DIR / "train-images-idx3-ubyte.gz").is_file(),
                    reason="Debian's Fashion-MNIST is not installed: `apt-get install dataset-fashion-mnist` enables this")
def test_debian_fashion_mnist_sizes():
    ds = load_dataset("RotatedFashionMNIST", n_per_domain=10)
    assert "Debian package dataset-fashion-mnist" in ds.info["source"] and "70,000" in ds.info["source"]


def test_dry_run_checks_the_fashion_files(tmp_path, fake_fashion):
    from dganalysis.studies.dryrun import check_dataset

    ok, msg = check_dataset("RotatedFashionMNIST", {"fashion_dir": str(fake_fashion)})
    assert ok and "real Fashion-MNIST" in msg
    ok, msg = check_dataset("ColoredFashionMNIST", {"fashion_dir": str(tmp_path / "none")})
    assert not ok and "apt-get install dataset-fashion-mnist" in msg and "t10k-labels-idx1-ubyte" in msg
