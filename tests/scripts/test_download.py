"""``python -m dganalysis.scripts.download`` (and ``dganalysis download``) against a local HTTP server.

The server (:class:`Mirror`, http.server on 127.0.0.1, port 0) serves tiny archives built here with the internal
structure of the real ones, at the paths ``--mirror`` maps the table's URLs to; it honours ``Range`` (206) unless told
not to, can cut a response halfway, plays Google Drive's "cannot scan for viruses" page, and records every request.
Nothing here reaches the internet. The table's URLs are compared with DomainBed's ``download.py`` (as text) where a
DomainBed checkout is found.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import http.server
import io
import json
import os
import random
import re
import socket
import sys
import tarfile
import threading
import urllib.parse
import zipfile
from pathlib import Path

import pytest

from dganalysis import cli
from dganalysis.data import benchmark_classes as C
from dganalysis.scripts import download as D

IMG = random.Random(0).randbytes(2048)  # 2 KiB per "image", incompressible: archives big enough to cut halfway


# the server ####################################################################################################

class Mirror:
    """A Range-capable file server for the tests (see the module doc)."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}  # request path (with query) -> body
        self.requests: list[dict] = []
        self.cut: dict[str, int] = {}  # path -> bytes to send before closing, once
        self.no_range: set[str] = set()
        self.quota: set[str] = set()  # Google Drive paths answering with a page without a form
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                mirror.handle(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def add(self, url: str, body: bytes) -> None:
        """Serve ``body`` where ``--mirror`` fetches the table's ``url``."""
        self.files[D.mirrored(url, self.base)[len(self.base):]] = body

    def handle(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path, rng = h.path, h.headers.get("Range")
        rec = {"path": path, "range": rng, "if_range": h.headers.get("If-Range")}
        self.requests.append(rec)
        parts = urllib.parse.urlsplit(path)
        if parts.path == "/drive.google.com/uc" and "confirm" not in parts.query:
            if path in self.quota:
                page = b"<html><body>Too many users have viewed or downloaded this file recently.</body></html>"
            else:
                fid = urllib.parse.parse_qs(parts.query)["id"][0]
                page = (f'<html><body>Google Drive can\'t scan this file for viruses.<form id="download-form" '
                        f'action="/drive.usercontent.google.com/download" method="get">'
                        f'<input type="submit" value="Download anyway"/><input type="hidden" name="id" value="{fid}">'
                        f'<input type="hidden" name="export" value="download"><input type="hidden" name="confirm" '
                        f'value="t"><input type="hidden" name="uuid" value="0123"></form></body></html>').encode()
            rec["status"] = 200
            h.send_response(200)
            h.send_header("Content-Type", "text/html; charset=utf-8")
            h.send_header("Content-Length", str(len(page)))
            h.end_headers()
            h.wfile.write(page)
            return
        if parts.path == "/drive.usercontent.google.com/download":
            q = urllib.parse.parse_qs(parts.query)
            assert q["confirm"] == ["t"] and q["uuid"] == ["0123"], q
            path = "/drive.google.com/uc?id=" + q["id"][0]
        body = self.files.get(path)
        if body is None:
            rec["status"] = 404
            h.send_error(404)
            return
        etag = '"' + hashlib.sha1(body).hexdigest() + '"'
        start = 0
        m = re.fullmatch(r"bytes=(\d+)-", rng or "")
        if m and path not in self.no_range and h.headers.get("If-Range") in (None, etag):
            start = int(m[1])
        rec["status"] = 206 if start else 200
        h.send_response(rec["status"])
        h.send_header("Content-Type", "application/octet-stream")
        h.send_header("ETag", etag)
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(body) - start))
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        h.end_headers()
        if path in self.cut:
            h.wfile.write(body[start:start + self.cut.pop(path)])
            h.wfile.flush()
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        h.wfile.write(body[start:])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def mirror():
    m = Mirror()
    yield m
    m.close()


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/PACS.zip"


# archives with the real ones' structure ########################################################################

def zip_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def tgz_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def image_tree(top: str, envs, classes, name: str = "img_0.jpg") -> dict[str, bytes]:
    return {f"{top}/{e}/{c}/{name}": IMG for e in envs for c in classes}


SVIRO_ENVS = ("aclass", "escape", "hilux", "i3", "lexus", "tesla", "tiguan", "tucson", "x5", "zoe")
SINGLE = {  # dataset -> the archive's files
    "PACS": image_tree("kfold", ("art_painting", "cartoon", "photo", "sketch"), C.PACS),
    "VLCS": image_tree("VLCS", ("Caltech101", "LabelMe", "SUN09", "VOC2007"), C.VLCS),
    "OfficeHome": {**image_tree("OfficeHomeDataset_10072016", ("Art", "Clipart", "Product", "Real World"),
                                C.OFFICE_HOME), "OfficeHomeDataset_10072016/ImageInfo.csv": b"x"},
    "SVIRO": image_tree("SVIRO_DOMAINBED", SVIRO_ENVS, C.SVIRO, "img.png"),
    "Spawrious": image_tree("spawrious224", ("0", "1"), [f"{b}/{d}" for b in ("beach", "desert", "dirt", "jungle",
                            "mountain", "snow") for d in ("bulldog", "corgi", "dachshund", "labrador")], "0.png"),
}


def source(name: str) -> D.Source:
    return next(s for s in D.SOURCES if s.key == name)


def serve_single(mirror: Mirror, name: str) -> bytes:
    s = source(name)
    body = zip_of(SINGLE[name]) if s.archive == "zip" else tgz_of(SINGLE[name])
    mirror.add(s.url, body)
    return body


def terra_archives() -> tuple[bytes, bytes, dict]:
    """Images and annotation archives: each kept location has one image per kept category; plus an image of another
    location, one of a category DomainBed leaves out, one with two annotations, one without any."""
    cats = [{"id": i, "name": n} for i, n in enumerate((*D.TERRA_CATEGORIES, "deer"))]
    images, anns, files = [], [], {}

    def add(loc, cat_ids, fname):
        iid = f"id_{len(images)}"
        images.append({"id": iid, "file_name": fname, "location": loc})
        anns.extend({"id": f"a{len(anns)}_{k}", "image_id": iid, "category_id": k} for k in cat_ids)
        files[f"eccv_18_all_images_sm/{fname}"] = IMG

    for loc in D.TERRA_LOCATIONS:
        for k in range(len(D.TERRA_CATEGORIES)):
            add(int(loc) if k % 2 else loc, [k], f"{loc}_{k}.jpg")
    add(99, [0], "other_location.jpg")
    add(38, [10], "deer.jpg")
    add(43, [1, 2], "two.jpg")
    add(46, [], "none.jpg")
    split = {n: {"info": {"version": "x"}, "categories": cats, "images": [], "annotations": []}
             for n in D.TERRA_ANNOTATIONS}
    for i, im in enumerate(images):  # spread the images (with their annotations) over the five files
        n = D.TERRA_ANNOTATIONS[i % 5]
        split[n]["images"].append(im)
        split[n]["annotations"] += [a for a in anns if a["image_id"] == im["id"]]
    notes = {f"eccv_18_annotation_files/{n}": json.dumps(v).encode() for n, v in split.items()}
    return tgz_of(files), tgz_of(notes), files


def duplicates_by_domain(n: int = 2) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in D.DOMAIN_NET_DUPLICATES.read_text().split():
        d = line.split("/")[0]
        if len(out.setdefault(d, [])) < n:
            out[d].append(line)
    return out


def serve_domain_net(mirror: Mirror) -> dict[str, list[str]]:
    dups = duplicates_by_domain()
    for s in (s for s in D.SOURCES if s.dataset == "DomainNet"):
        files = {f"{s.part}/{c}/{s.part}_000001.jpg": IMG for c in C.DOMAIN_NET}
        files.update({f: IMG for f in dups.get(s.part, [])})
        mirror.add(s.url, zip_of(files))
    return dups


def run(data_dir: Path, mirror: Mirror, *names: str, **kw) -> list[str]:
    kw.setdefault("progress", False)
    kw.setdefault("timeout", 10.0)
    return D.download(data_dir, list(names), mirror=mirror.base, log=lambda line: None,
                      err=lambda line: None, **kw)


# the table #####################################################################################################

def test_table_keeps_torchvisions_mnist_files_and_checksums():
    from torchvision.datasets import MNIST

    rows = [s for s in D.SOURCES if s.dataset == "MNIST"]
    assert [(s.member + ".gz", s.checksum) for s in rows] == [(f, "md5:" + m) for f, m in MNIST.resources]
    assert [(s.url, *s.mirrors) for s in rows] == [tuple(m + f for m in MNIST.mirrors) for f, _ in MNIST.resources]
    assert all(s.checksum is None and "none published" in s.checksum_note for s in D.SOURCES if s.dataset != "MNIST")
    assert set(D.DOWNLOAD_DATASETS) == {s.dataset for s in D.SOURCES} | {w[0] for w in D.WILDS}


def _domainbed_src() -> Path | None:
    for cand in (os.environ.get("DOMAINBED_SRC"), Path(__file__).resolve().parents[3] / "shared/reference/DomainBed"):
        if cand and (Path(cand) / "domainbed/scripts/download.py").is_file():
            return Path(cand)
    return None


@pytest.mark.skipif(_domainbed_src() is None, reason="no DomainBed checkout ($DOMAINBED_SRC)")
def test_table_has_domainbeds_urls_split_and_duplicate_list():
    root = _domainbed_src()
    text = (root / "domainbed/scripts/download.py").read_text()
    theirs = set(re.findall(r"[\"'](https?://[^\"']+)[\"']", "\n".join(
        line for line in text.splitlines() if not line.lstrip().startswith("#"))))
    ours = {s.url for s in D.SOURCES if s.dataset != "MNIST"}  # DomainBed's MNIST goes through torchvision
    assert ours == theirs
    assert all(f'"{loc}"' in text for loc in D.TERRA_LOCATIONS)
    assert all(f'"{c}"' in text for c in D.TERRA_CATEGORIES)
    assert D.DOMAIN_NET_DUPLICATES.read_bytes() == (root / "domainbed/misc/domain_net_duplicates.txt").read_bytes()


# layouts our loaders accept ####################################################################################

@pytest.mark.parametrize("name", sorted(SINGLE))
def test_single_archive_datasets_land_where_the_loaders_look(tmp_path, mirror, name):
    serve_single(mirror, name)
    assert run(tmp_path, mirror, name) == []
    assert D.problem(name, tmp_path) is None
    assert (tmp_path / D.FOLDERS[name]).is_dir()
    assert not (tmp_path / D.WORK / name).exists()  # archive and work folder gone
    if source(name).google_drive:  # the confirm page was answered
        assert [r["path"].split("?")[0] for r in mirror.requests] == ["/drive.google.com/uc",
                                                                       "/drive.usercontent.google.com/download"]


def test_preflight_accepts_the_downloaded_pacs(tmp_path, mirror):
    from dganalysis.preflight import data_problem

    serve_single(mirror, "PACS")
    assert data_problem("PACS", {"root": str(tmp_path)}) is not None
    assert run(tmp_path, mirror, "PACS") == []
    assert data_problem("PACS", {"root": str(tmp_path)}) is None


def test_terra_incognita_keeps_domainbeds_locations_and_categories(tmp_path, mirror):
    images, notes, _ = terra_archives()
    mirror.add(source("TerraIncognita/images").url, images)
    mirror.add(source("TerraIncognita/annotations").url, notes)
    assert run(tmp_path, mirror, "TerraIncognita") == []
    base = tmp_path / "terra_incognita"
    assert sorted(os.listdir(base)) == ["location_100", "location_38", "location_43", "location_46"]
    for loc in D.TERRA_LOCATIONS:
        assert sorted(os.listdir(base / f"location_{loc}")) == sorted(D.TERRA_CATEGORIES)
    assert (base / "location_43/bobcat/two.jpg").is_file() and (base / "location_43/cat/two.jpg").is_file()
    got = {p.name for p in base.rglob("*.jpg")}
    assert not got & {"other_location.jpg", "deer.jpg", "none.jpg"}
    assert len(list(base.rglob("*.jpg"))) == 4 * 10 + 2
    assert D.problem("TerraIncognita", tmp_path) is None


def test_domain_net_drops_domainbeds_duplicates(tmp_path, mirror):
    dups = serve_domain_net(mirror)
    assert run(tmp_path, mirror, "DomainNet") == []
    base = tmp_path / "domain_net"
    assert sorted(os.listdir(base)) == ["clipart", "infograph", "painting", "quickdraw", "real", "sketch"]
    assert all(not (base / f).exists() for fs in dups.values() for f in fs)
    assert (base / "real" / C.DOMAIN_NET[0] / "real_000001.jpg").is_file()
    assert D.problem("DomainNet", tmp_path) is None


def mnist_sources(mirror: Mirror, correct: bool = True) -> list[D.Source]:
    out = []
    for s in (s for s in D.SOURCES if s.dataset == "MNIST"):
        body = gzip.compress(s.member.encode() * 100)
        mirror.add(s.url, body)
        out.append(dataclasses.replace(s, checksum="md5:" + hashlib.md5(body).hexdigest()) if correct else s)
    return out


def test_mnist_raw_files_where_domainbeds_mnist_reads_them(tmp_path, mirror):
    from dganalysis.scripts.train import mnist_problem

    sources = mnist_sources(mirror)
    assert run(tmp_path, mirror, "RotatedMNIST", sources=sources) == []
    raw = tmp_path / "MNIST" / "raw"
    assert sorted(os.listdir(raw)) == sorted([s.member for s in sources] + [s.member + ".gz" for s in sources])
    assert (raw / "t10k-labels-idx1-ubyte").read_bytes() == b"t10k-labels-idx1-ubyte" * 100
    assert mnist_problem(str(tmp_path)) is None


# resuming, checksums, failures #################################################################################

def test_an_interrupted_transfer_continues_with_a_range_request(tmp_path, mirror):
    body = serve_single(mirror, "VLCS")
    path = D.mirrored(source("VLCS").url, mirror.base)[len(mirror.base):]
    mirror.cut[path] = len(body) // 2
    assert run(tmp_path, mirror, "VLCS") == []
    files = [r for r in mirror.requests if "usercontent" in r["path"]]  # VLCS: after Google Drive's confirm page
    assert [(r["range"], r["status"]) for r in files] == [(None, 200), (f"bytes={len(body) // 2}-", 206)]
    assert files[1]["if_range"]  # the ETag of the first answer: a changed file starts again
    assert D.problem("VLCS", tmp_path) is None


def test_a_partial_download_left_by_a_run_is_resumed_by_the_next(tmp_path, mirror):
    body = serve_single(mirror, "PACS")  # through Google Drive's confirm page
    mirror.cut["/drive.google.com/uc?id=" + source("PACS").url.split("=")[-1]] = 10_000
    failures = run(tmp_path, mirror, "PACS", retries=0)
    assert len(failures) == 1 and "interrupted" in failures[0] and failures[0].startswith("PACS: ")
    part = tmp_path / D.WORK / "PACS" / "PACS.zip.part"
    assert part.stat().st_size == 10_000 and not (tmp_path / "PACS").exists()
    mirror.requests.clear()
    assert run(tmp_path, mirror, "PACS") == []
    assert mirror.requests[-1]["range"] == "bytes=10000-" and mirror.requests[-1]["status"] == 206
    assert D.problem("PACS", tmp_path) is None and len(body) > 10_000


def test_a_server_ignoring_ranges_gets_the_whole_file_again(tmp_path, mirror):
    body = serve_single(mirror, "Spawrious")
    path = D.mirrored(source("Spawrious").url, mirror.base)[len(mirror.base):]
    mirror.cut[path] = len(body) // 3
    mirror.no_range.add(path)
    assert run(tmp_path, mirror, "Spawrious") == []
    assert [r["status"] for r in mirror.requests] == [200, 200] and mirror.requests[1]["range"]
    assert D.problem("Spawrious", tmp_path) is None


def test_a_wrong_checksum_is_refused_and_the_file_deleted(tmp_path, mirror):
    mnist_sources(mirror, correct=False)  # the real table's md5s; the served files are not MNIST's
    failures = run(tmp_path, mirror, "MNIST")
    assert len(failures) == 1 and "md5 checksum" in failures[0] and "deleted" in failures[0]
    assert mirror.base in failures[0] and failures[0].startswith("MNIST: ")
    work = tmp_path / D.WORK / "MNIST"
    assert not list(work.glob("*.gz")) and not list(work.glob("*.part"))  # nothing left as if complete
    assert not (tmp_path / "MNIST").exists()


def test_an_unreachable_source_is_one_line_and_the_others_go_on(tmp_path, mirror, capsys):
    serve_single(mirror, "VLCS")
    serve_single(mirror, "SVIRO")
    url = closed_port_url()
    status = D.main(["--data_dir", str(tmp_path), "--datasets", "PACS", "VLCS", "SVIRO", "--mirror", mirror.base,
                     "--url", f"PACS={url}", "--no_progress", "--timeout", "10"])
    err = capsys.readouterr().err
    assert status == 1
    lines = [x for x in err.splitlines() if x.startswith("download: PACS: cannot download ")]
    assert len(lines) == 1 and url in lines[0] and "refused" in lines[0].lower()
    assert "1 of 3 dataset(s) failed: PACS" in err
    assert D.problem("VLCS", tmp_path) is None and D.problem("SVIRO", tmp_path) is None
    assert sorted(os.listdir(tmp_path)) == ["VLCS", "sviro"]  # no work folder left behind: nothing was fetched


def test_google_drives_quota_page_is_a_clear_line(tmp_path, mirror):
    s = source("OfficeHome")
    mirror.add(s.url, b"unused")
    mirror.quota.add(D.mirrored(s.url, mirror.base)[len(mirror.base):])
    failures = run(tmp_path, mirror, "OfficeHome")
    assert len(failures) == 1 and "Google Drive" in failures[0] and "quota" in failures[0]


def test_a_second_run_skips_finished_datasets(tmp_path, mirror, capsys):
    serve_single(mirror, "PACS")
    serve_single(mirror, "VLCS")
    argv = ["--data_dir", str(tmp_path), "--datasets", "PACS", "VLCS", "--mirror", mirror.base, "--no-progress"]
    assert D.main(argv) == 0
    mirror.requests.clear()
    capsys.readouterr()
    assert D.main(argv) == 0
    assert mirror.requests == []
    out = capsys.readouterr().out
    assert f"PACS: present at {tmp_path / 'PACS'}, skipped" in out and "VLCS: present" in out


def test_a_broken_existing_folder_is_reported_not_overwritten(tmp_path, mirror):
    (tmp_path / "PACS" / "photo").mkdir(parents=True)
    serve_single(mirror, "PACS")
    failures = run(tmp_path, mirror, "PACS")
    assert len(failures) == 1 and "move it away" in failures[0] and mirror.requests == []


def test_dry_run_lists_and_fetches_nothing(tmp_path, mirror, capsys):
    assert D.main(["--data_dir", str(tmp_path / "d"), "--dry-run", "--mirror", mirror.base]) == 0
    out = capsys.readouterr().out
    assert mirror.requests == [] and not (tmp_path / "d").exists()
    for s in D.SOURCES:
        assert f"  {s.key}: {D.mirrored(s.url, mirror.base)}" in out
    assert "wilds.get_dataset('camelyon17'" in out and "checksum: none published" in out
    assert "md5:f68b3c2dcbeaaa9fbdd348bbdeb94873" in out


def test_wilds_without_the_package_says_how_to_install_it(tmp_path, monkeypatch, mirror):
    monkeypatch.setitem(sys.modules, "wilds", None)
    serve_single(mirror, "PACS")
    failures = run(tmp_path, mirror, "PACS", "camelyon17", "WILDSFMoW")
    assert len(failures) == 2 and all("pip install" in f and "wilds" in f for f in failures)
    assert D.problem("PACS", tmp_path) is None


def test_wilds_goes_through_the_package_and_an_unfinished_folder_is_redone(tmp_path, monkeypatch):
    calls = []

    def get_dataset(dataset, root_dir, download):
        calls.append((dataset, root_dir, download))
        folder = Path(root_dir) / ("camelyon17_v1.0" if dataset == "camelyon17" else "fmow_v1.1")
        folder.mkdir(exist_ok=True)
        (folder / f"RELEASE_v{folder.name.split('_v')[1]}.txt").write_text("")

    monkeypatch.setitem(sys.modules, "wilds", type(sys)("wilds"))
    monkeypatch.setattr(sys.modules["wilds"], "get_dataset", get_dataset, raising=False)
    (tmp_path / "fmow_v1.1").mkdir()  # an interrupted download: no RELEASE file
    assert D.download(tmp_path, ["WILDSCamelyon", "WILDSFMoW"], log=lambda x: None, progress=False) == []
    assert calls == [("camelyon17", str(tmp_path), True), ("fmow", str(tmp_path), True)]
    assert D.problem("WILDSCamelyon", tmp_path) is None and D.problem("WILDSFMoW", tmp_path) is None
    assert D.download(tmp_path, ["WILDSCamelyon", "WILDSFMoW"], log=lambda x: None, progress=False) == []
    assert len(calls) == 2  # finished: skipped


def test_the_cli_verb_and_names(tmp_path, mirror, capsys, monkeypatch):
    serve_single(mirror, "PACS")
    monkeypatch.setenv(D.MIRROR_ENV, mirror.base)
    assert cli.main(["download", "--data_dir", str(tmp_path), "pacs", "--no-progress"]) == 0
    assert D.problem("PACS", tmp_path) is None
    capsys.readouterr()
    assert cli.main(["download", "--data_dir", str(tmp_path), "PAC"]) == 2
    assert "did you mean 'PACS'" in capsys.readouterr().err
    assert D.resolve_names(["office_home", "SpawriousM2M_hard", "fmow"]) == ["OfficeHome", "WILDSFMoW", "Spawrious"]
    assert D.resolve_names(None) == list(D.DOWNLOAD_DATASETS)


def test_archives_with_paths_outside_their_folder_are_refused(tmp_path, mirror):
    mirror.add(source("PACS").url, zip_of({"kfold/photo/dog/a.jpg": IMG, "../evil.txt": b"x"}))
    failures = run(tmp_path, mirror, "PACS")
    assert len(failures) == 1 and "outside" in failures[0] and not (tmp_path.parent / "evil.txt").exists()
