"""Real digits datasets (DomainBed recipes on sklearn digits) and the MNIST IDX reader."""

import gzip
import struct

import numpy as np
import pytest

from dganalysis.data import available, load_dataset
from dganalysis.data.idx import find_mnist, read_idx


def test_rotated_digits_recipe():
    ds = load_dataset("RotatedDigits", image_size=16)
    assert ds.domain_names == ["0", "15", "30", "45", "60", "75"]
    assert ds.input_shape == (1, 16, 16) and ds.n_classes == 10
    src = np.concatenate([d.meta["source_index"] for d in ds])
    assert len(src) == 1797 and len(np.unique(src)) == 1797  # disjoint split of all real digits
    # rotation changes the images: the 0° and 75° means differ, same digits would look alike
    assert ds["0"].images.mean() > 10


def test_colored_digits_correlations():
    ds = load_dataset("ColoredDigits", image_size=14)
    assert ds.domain_names == ["+90%", "+80%", "-90%"] and ds.input_shape == (2, 14, 14)
    agree = [float((d.meta["color"] == d.labels).mean()) for d in ds]
    assert agree[0] > 0.85 and 0.7 < agree[1] < 0.87 and agree[2] < 0.15
    # label noise 0.25: label agrees with digit>=5 about 75% of the time
    noise = np.mean(np.concatenate([(d.meta["digit"] >= 5) != d.labels for d in ds]))
    assert 0.2 < noise < 0.3
    d = ds["+90%"]
    on = d.images.reshape(len(d), 2, -1).sum(-1)
    assert np.all(on[np.arange(len(d)), 1 - d.meta["color"]] == 0)  # digit drawn only in its colour channel


def _write_idx(path, arr):
    header = struct.pack(">HBB", 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    data = header + arr.astype(np.uint8).tobytes()
    if str(path).endswith(".gz"):
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


def test_idx_round_trip_and_errors(tmp_path):
    imgs = np.random.RandomState(0).randint(0, 256, (7, 28, 28)).astype(np.uint8)
    _write_idx(tmp_path / "a.idx", imgs)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.idx"), imgs)
    _write_idx(tmp_path / "a.idx.gz", imgs)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.idx.gz"), imgs)
    raw = (tmp_path / "a.idx").read_bytes()
    (tmp_path / "trunc").write_bytes(raw[:-5])
    with pytest.raises(ValueError, match="trunc.*data section"):
        read_idx(tmp_path / "trunc")
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01" + raw[4:])
    with pytest.raises(ValueError, match="bad IDX magic"):
        read_idx(tmp_path / "bad")


def test_rotated_mnist_from_idx_files(tmp_path):
    rng = np.random.RandomState(1)
    for split, n in (("train", 8), ("t10k", 4)):
        _write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", rng.randint(0, 256, (n, 28, 28)))
        _write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", rng.randint(0, 10, (n,)))
    x, y = find_mnist(tmp_path)
    assert x.shape == (12, 28, 28) and y.dtype == np.int64
    ds = load_dataset("RotatedMNIST", mnist_dir=tmp_path, angles=(0, 45))
    assert ds.name == "RotatedMNIST" and sum(len(d) for d in ds) == 12
    assert {"RotatedMNIST", "ColoredMNIST", "RotatedDigits", "ColoredDigits"} <= set(available())
    with pytest.raises(ValueError, match="mnist_dir"):
        load_dataset("ColoredMNIST")
    with pytest.raises(FileNotFoundError, match="t10k-images"):
        (tmp_path / "t10k-images-idx3-ubyte.gz").unlink()
        find_mnist(tmp_path)
