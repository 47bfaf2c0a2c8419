"""Import of DomainBed-layout image folders and CSV manifests."""

import numpy as np
import pytest
from PIL import Image

from dganalysis.data import load_dataset
from dganalysis.data.folder import import_csv, import_folder


def _img(path, value, size=(10, 12)):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full(size[::-1] + (3,), value, np.uint8)).save(path)


def _layout(root):
    for d, base in (("photo", 10), ("sketch", 200)):
        for k, c in enumerate(("cat", "dog")):
            for i in range(2 + k):
                _img(root / d / c / f"{i}.png", base + 10 * k + i)


def test_domainbed_layout(tmp_path):
    _layout(tmp_path / "toy")
    ds = import_folder(tmp_path / "toy", image_size=8, channels=3, data_dir=tmp_path / "cache")
    assert ds.domain_names == ["photo", "sketch"] and ds.classes == ["cat", "dog"]
    assert ds.input_shape == (3, 8, 8) and len(ds["photo"]) == 5
    assert ds["photo"].labels.tolist() == [0, 0, 1, 1, 1]
    assert ds["sketch"].images[0].mean() == pytest.approx(200, abs=1)
    # cached: a second import loads the converted arrays
    again = load_dataset("ImageFolder", root=tmp_path / "toy", image_size=8, channels=1, data_dir=tmp_path / "cache")
    assert again.input_shape == (1, 8, 8)
    assert len(list((tmp_path / "cache" / "imported").iterdir())) == 2


def test_bad_folders_are_named(tmp_path):
    _layout(tmp_path / "a")
    (tmp_path / "a" / "sketch" / "dog").rename(tmp_path / "a" / "sketch" / "wolf")
    with pytest.raises(ValueError, match="sketch: class folders"):
        import_folder(tmp_path / "a", data_dir=tmp_path / "c")
    _layout(tmp_path / "b")
    for f in (tmp_path / "b" / "photo").rglob("*.png"):
        f.unlink()
    with pytest.raises(ValueError, match="photo: domain has no images"):
        import_folder(tmp_path / "b", data_dir=tmp_path / "c")
    _layout(tmp_path / "c1")
    (tmp_path / "c1" / "photo" / "cat" / "0.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="0.png: unreadable image"):
        import_folder(tmp_path / "c1", data_dir=tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="not a folder"):
        import_folder(tmp_path / "missing")


def test_csv_manifest(tmp_path):
    for i in range(4):
        _img(tmp_path / "img" / f"{i}.png", 50 * i)
    rows = ["path,label,env", "img/0.png,1,train", "img/1.png,0,train", "img/2.png,1,test", "img/3.png,0,test"]
    (tmp_path / "split.csv").write_text("\n".join(rows) + "\n")
    ds = import_csv(tmp_path / "split.csv", image_size=4, channels=1, data_dir=tmp_path / "cache")
    assert ds.domain_names == ["train", "test"] and ds.classes == ["0", "1"]
    assert ds["test"].labels.tolist() == [1, 0]
    (tmp_path / "bad.csv").write_text("file,label\nimg/0.png,1\n")
    with pytest.raises(ValueError, match="missing columns"):
        import_csv(tmp_path / "bad.csv")
    (tmp_path / "gone.csv").write_text("path,label,env\nimg/9.png,1,a\n")
    with pytest.raises(FileNotFoundError, match="row 2"):
        import_csv(tmp_path / "gone.csv")
