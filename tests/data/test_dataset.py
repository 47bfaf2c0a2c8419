"""DomainDataset: validation, storage round trip, views."""

import json

import numpy as np
import pytest

from dganalysis.data import Domain, DomainDataset, concat_domains


def _ds(n=5):
    rng = np.random.RandomState(0)
    doms = [
        Domain(f"d{i}", rng.randint(0, 256, (n, 1, 8, 8)).astype(np.uint8), rng.randint(0, 3, n),
               {"writer": np.arange(n) + 10 * i})
        for i in range(3)
    ]
    return DomainDataset("toy", ["a", "b", "c"], doms, {"simulated": True})


def test_round_trip_memory_mapped(tmp_path):
    ds = _ds()
    ds.save(tmp_path / "toy")
    back = DomainDataset.load(tmp_path / "toy")
    assert back.domain_names == ["d0", "d1", "d2"] and back.classes == ["a", "b", "c"]
    assert back.info == {"simulated": True}
    for a, b in zip(ds, back):
        np.testing.assert_array_equal(a.images, b.images)
        np.testing.assert_array_equal(a.labels, b.labels)
        np.testing.assert_array_equal(a.meta["writer"], b.meta["writer"])
    assert isinstance(back["d1"].images, np.memmap)
    manifest = json.loads((tmp_path / "toy" / "manifest.json").read_text())
    assert manifest["domains"][0]["samples"] == 5 and manifest["input_shape"] == [1, 8, 8]


def test_validation_errors():
    with pytest.raises(ValueError, match="uint8"):
        Domain("x", np.zeros((2, 1, 4, 4), np.float32), np.zeros(2))
    with pytest.raises(ValueError, match="labels of shape"):
        Domain("x", np.zeros((2, 1, 4, 4), np.uint8), np.zeros(3))
    with pytest.raises(ValueError, match="metadata 'w'"):
        Domain("x", np.zeros((2, 1, 4, 4), np.uint8), np.zeros(2), {"w": np.zeros(1)})
    d = Domain("x", np.zeros((2, 1, 4, 4), np.uint8), np.array([0, 5]))
    with pytest.raises(ValueError, match="labels outside"):
        DomainDataset("t", ["a", "b"], [d])
    with pytest.raises(ValueError, match="duplicate domain"):
        DomainDataset("t", ["a"] * 6, [d, d])


def test_missing_files_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        DomainDataset.load(tmp_path)
    _ds().save(tmp_path / "t")
    (tmp_path / "t" / "d1.labels.npy").unlink()
    with pytest.raises(FileNotFoundError, match="d1.labels.npy"):
        DomainDataset.load(tmp_path / "t")


def test_views():
    ds = _ds()
    sub = ds.subset(["d2", "d0"])
    assert sub.domain_names == ["d2", "d0"]
    inv = ds.map_images(lambda x: 255 - x, "toy-inverted", {"view": "inverted"})
    np.testing.assert_array_equal(inv["d0"].images, 255 - ds["d0"].images)
    assert inv.info["view"] == "inverted" and inv.info["simulated"]
    both = concat_domains("all", [ds["d0"], ds["d1"]])
    assert len(both) == 10 and both.meta["writer"][5] == 10
    with pytest.raises(KeyError, match="domains"):
        ds["nope"]
    assert ds.stats()["samples"].tolist() == [5, 5, 5]
