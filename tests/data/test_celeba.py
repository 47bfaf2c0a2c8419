"""OoD-Bench's CelebA_Blond (Ye et al. 2022, Table 2 / Fig. 3) on a FAKE tree in OoD-Bench's layout."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from dganalysis.data.celeba import BLOND_HAIR, ENVIRONMENTS, MALE, load_center_square, read_split
from dganalysis.data.registry import load_dataset
from dganalysis.data.wilds_data import cap_index
from dganalysis.studies.smoke.trees import write_celeba_blond


def test_reads_oodbench_split_files_label_blond_meta_male(tmp_path):
    root = write_celeba_blond(tmp_path / "data", per_env=6)
    ds = load_dataset("CelebA_Blond", root=root, image_size=8, data_dir=tmp_path / "cache")
    assert ds.domain_names == list(ENVIRONMENTS) == ["tr_env1", "tr_env2", "te_env"]
    assert ds.classes == ["not blond", "blond"] and [len(d) for d in ds.domains] == [6, 6, 6]
    for env in ENVIRONMENTS:
        names, attrs = read_split(root / "celeba" / "blond_split" / f"{env}.csv")
        assert ds[env].labels.tolist() == attrs[:, BLOND_HAIR].tolist()
        assert ds[env].meta["male"].tolist() == attrs[:, MALE].tolist()
    assert ds["te_env"].images.shape == (6, 3, 8, 8) and ds["te_env"].images.dtype == np.uint8
    # cached: the second call reads the arrays
    again = load_dataset("CelebA_Blond", root=root, image_size=8, data_dir=tmp_path / "cache")
    assert np.array_equal(again["tr_env2"].images, ds["tr_env2"].images)


def test_center_square_crop_as_oodbench(tmp_path):
    """178 x 218 portrait: OoD-Bench's CenterCrop(178) keeps rows 20..197, then the resize."""
    arr = np.zeros((218, 178, 3), np.uint8)
    arr[:20] = 255  # top band, cropped away
    arr[198:] = 255  # bottom band, cropped away
    Image.fromarray(arr).save(tmp_path / "p.png")
    out = load_center_square(tmp_path / "p.png", 16)
    assert out.shape == (3, 16, 16) and out.max() == 0


def test_max_per_env_caps_before_decoding_seeded(tmp_path):
    root = write_celeba_blond(tmp_path / "data", per_env=10)
    img = root / "celeba" / "img_align_celeba"
    a = load_dataset("CelebA_Blond", root=root, image_size=8, max_per_env=4, data_dir=tmp_path / "c")
    assert [len(d) for d in a.domains] == [4, 4, 4] and a.info["max_per_env"] == 4
    b = load_dataset("CelebA_Blond", root=root, image_size=8, max_per_env=4, data_dir=tmp_path / "c2")
    assert np.array_equal(a["tr_env1"].images, b["tr_env1"].images)
    c = load_dataset("CelebA_Blond", root=root, image_size=8, max_per_env=4, subsample_seed=1, data_dir=tmp_path / "c")
    assert not all(np.array_equal(a[e].images, c[e].images) for e in ENVIRONMENTS)
    # only the kept images are read: one outside te_env's draw may be missing, one inside may not
    names, _ = read_split(root / "celeba" / "blond_split" / "te_env.csv")
    kept = cap_index(np.arange(len(names)), 4, [0, 2]).tolist()  # te_env is environment 2
    dropped = next(i for i in range(len(names)) if i not in kept)
    (img / names[dropped]).unlink()
    load_dataset("CelebA_Blond", root=root, image_size=8, max_per_env=4, data_dir=tmp_path / "c3")
    with pytest.raises(FileNotFoundError, match=r"1 image\(s\) of .*te_env.csv not found.*img_align_celeba.zip"):
        load_dataset("CelebA_Blond", root=root, image_size=8, data_dir=tmp_path / "c4")
    with pytest.raises(ValueError, match="max_per_env=0"):
        load_dataset("CelebA_Blond", root=root, max_per_env=0)


def test_missing_files_name_them_and_how_to_get_them(tmp_path):
    with pytest.raises(ValueError, match="needs root="):
        load_dataset("CelebA_Blond")
    with pytest.raises(FileNotFoundError, match=r"tr_env1.csv.*not found.*m-Just/OoD-Bench"):
        load_dataset("CelebA_Blond", root=tmp_path)
    root = write_celeba_blond(tmp_path / "data", per_env=2)
    for f in (root / "celeba" / "img_align_celeba").iterdir():
        f.unlink()
    (root / "celeba" / "img_align_celeba").rmdir()
    with pytest.raises(FileNotFoundError, match=r"img_align_celeba not found.*mmlab.ie.cuhk.edu.hk"):
        load_dataset("CelebA_Blond", root=root)
    bad = tmp_path / "bad" / "celeba" / "blond_split"
    bad.mkdir(parents=True)
    (tmp_path / "bad" / "celeba" / "img_align_celeba").mkdir()
    for e in ENVIRONMENTS:
        (bad / f"{e}.csv").write_text(",0,1\nx.jpg,0,1\n")
    with pytest.raises(ValueError, match="header of 41 fields"):
        load_dataset("CelebA_Blond", root=tmp_path / "bad")
    with pytest.raises(ValueError, match="unknown environment"):
        load_dataset("CelebA_Blond", root=root, environments=["val"])


def test_domain_names_without_the_files(tmp_path):
    """The dry run plans notebook 06's Tables 1-2 sweep on a bare machine: the names come without building."""
    from dganalysis.data.domains import domain_names

    assert domain_names("CelebA_Blond", {"root": str(tmp_path / "none")}) == ["tr_env1", "tr_env2", "te_env"]
    assert domain_names("WILDSCamelyon", {"root": str(tmp_path / "none")}) == [f"hospital_{i}" for i in range(5)]
