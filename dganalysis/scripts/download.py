"""``python -m dganalysis.scripts.download --data_dir D [--datasets NAME ...] [--dry-run]``: DomainBed's datasets.

A drop-in for DomainBed's ``python -m domainbed.scripts.download --data_dir D`` (Gulrajani & Lopez-Paz 2021,
``domainbed/scripts/download.py`` at b93c22a): the same files from the same sources (:data:`SOURCES`, one row per
file), unpacked into the folders DomainBed's loaders — and ours (:mod:`dganalysis.data.benchmarks`,
:mod:`dganalysis.preflight`) — read under ``D``:

============== ============================================================================================
dataset        folder under ``D``
============== ============================================================================================
VLCS           ``VLCS/{Caltech101,LabelMe,SUN09,VOC2007}/<class>/<image>``
PACS           ``PACS/{art_painting,cartoon,photo,sketch}/...`` (the archive's ``kfold/``)
OfficeHome     ``office_home/{Art,Clipart,Product,Real World}/...`` (the archive's ``OfficeHomeDataset_10072016/``)
TerraIncognita ``terra_incognita/location_{38,43,46,100}/<category>/<image>``, built from the annotation files
DomainNet      ``domain_net/<domain>/<class>/<image>``, without the files of DomainBed's duplicate list
MNIST          ``MNIST/raw/`` torchvision's four files (the ``.gz`` and unpacked)
WILDSCamelyon  ``camelyon17_v1.0/`` through the ``wilds`` package (``pip install wilds``)
WILDSFMoW      ``fmow_v1.1/`` through the ``wilds`` package
SVIRO          ``sviro/<vehicle>/<class>/<image>`` (the archive's ``SVIRO_DOMAINBED/``)
Spawrious      ``spawrious224/{0,1}/<background>/<breed>/<image>``
============== ============================================================================================

Differences from DomainBed's script, on purpose: its ``__main__`` downloads only TerraIncognita (every other call is
commented out); this one downloads every dataset unless ``--datasets`` names some. Its MNIST call leaves the files in
``D/MNIST/MNIST/raw``; DomainBed's MNIST datasets read ``D/MNIST/raw``, where these go. No ``gdown``: Google Drive's
"cannot scan this file for viruses" page is answered here (:func:`_drive_next_url`).

How: every file is fetched into ``D/.dganalysis-download/<dataset>/`` as ``<file>.part``. An interrupted transfer
continues with an HTTP ``Range`` request (at once, up to ``--retries`` times, and on the next run), or starts again
when the server ignores ranges or the file changed (``If-Range``). The file is checked against the table's checksum
where its source publishes one (a mismatch deletes it: the next run fetches it anew), then unpacked into a temporary
folder beside its destination and moved into place with one ``rename``, so a dataset folder under ``D`` is either
complete or absent. A dataset whose folder exists is checked as our loaders check it and skipped. A source that
cannot be reached gives one line naming the dataset and the URL; the other datasets go on, and the exit status is 1
with the failures listed at the end.

Sources can be redirected without editing the table: ``--mirror BASE`` (or ``$DGANALYSIS_DOWNLOAD_MIRROR``) fetches
every ``scheme://host/path?query`` as ``BASE/host/path?query`` (:func:`mirrored`); ``--url KEY=URL`` replaces one
row's URL (keys as ``--dry-run`` prints them, e.g. ``PACS`` or ``DomainNet/clipart``).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import hashlib
import html.parser
import http.client
import http.cookiejar
import json
import os
import re
import shutil
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dganalysis.validation import ConfigError

#: the environment variable holding a mirror base URL (see :func:`mirrored`)
MIRROR_ENV = "DGANALYSIS_DOWNLOAD_MIRROR"
#: the folder under ``--data_dir`` holding partial downloads and unpacking in progress
WORK = ".dganalysis-download"
NO_CHECKSUM = None  #: the source publishes no checksum for this file (nothing is verified but the archive's own CRCs)
CHUNK = 1 << 20


@dataclass(frozen=True)
class Source:
    """One file DomainBed's ``download.py`` fetches."""

    dataset: str  #: our (and DomainBed's) dataset name
    part: str  #: which file of the dataset ("" when it has one)
    url: str  #: DomainBed's URL
    archive: str  #: "zip", "tar.gz" or "gz" (one gzip-compressed file)
    member: str  #: the folder the archive unpacks to (for "gz": the file name unpacked)
    #: where ``member`` goes: a path relative to ``--data_dir`` (the dataset folder itself when one file makes it),
    #: or, when it starts with ``@``, relative to the dataset's work folder (an input of its build step)
    target: str
    checksum: str | None  #: "md5:<hex>" / "sha256:<hex>" as the source publishes it, or None: none published
    checksum_note: str  #: where the checksum comes from, or that the source publishes none
    mirrors: tuple[str, ...] = ()  #: further URLs of the same file, tried in order when one cannot be reached
    origin: str = ""  #: the table's URL when ``url`` is its copy on a mirror (:func:`apply_overrides`)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.part}" if self.part else self.dataset

    @property
    def filename(self) -> str:
        """The name of the fetched file in the work folder."""
        if self.archive == "gz":
            return self.member + ".gz"
        return (self.part or self.dataset) + "." + self.archive

    @property
    def google_drive(self) -> bool:
        return urllib.parse.urlsplit(self.origin or self.url).netloc == "drive.google.com"


_GD = "https://drive.google.com/uc?id="
_VISDA = "http://csr.bu.edu/ftp/visda/2019/multi-source/"
_LILA = "https://storage.googleapis.com/public-datasets-lila/caltechcameratraps/"
_NONE = "none published by the source"
_TV = "torchvision's MNIST.resources (torchvision.datasets.mnist)"
_MNIST_MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")

#: every file DomainBed's ``download.py`` fetches itself (b93c22a), with its URL as DomainBed has it; the WILDS datasets
#: are fetched by the ``wilds`` package (:data:`WILDS`), as DomainBed does
SOURCES: tuple[Source, ...] = (
    Source("VLCS", "", _GD + "1skwblH1_okBwxWxmRsp9_qi15hyPpxg8", "tar.gz", "VLCS", "VLCS", NO_CHECKSUM, _NONE),
    Source("PACS", "", _GD + "1JFr8f805nMUelQWWmfnJR3y4_SYoN5Pd", "zip", "kfold", "PACS", NO_CHECKSUM, _NONE),
    Source("OfficeHome", "", _GD + "1uY0pj7oFsjMxRwaD3Sxy0jgel0fsYXLC", "zip", "OfficeHomeDataset_10072016",
           "office_home", NO_CHECKSUM, _NONE),
    Source("TerraIncognita", "images", _LILA + "eccv_18_all_images_sm.tar.gz", "tar.gz", "eccv_18_all_images_sm",
           "@eccv_18_all_images_sm", NO_CHECKSUM, _NONE),
    Source("TerraIncognita", "annotations", _LILA + "eccv_18_annotations.tar.gz", "tar.gz", "eccv_18_annotation_files",
           "@eccv_18_annotation_files", NO_CHECKSUM, _NONE),
    *(Source("DomainNet", d, _VISDA + ("groundtruth/" if d in ("clipart", "painting") else "") + d + ".zip", "zip", d,
             "@domain_net/" + d, NO_CHECKSUM, _NONE)
      for d in ("clipart", "infograph", "painting", "quickdraw", "real", "sketch")),
    *(Source("MNIST", f.split("-")[0] + "-" + f.split("-")[1], _MNIST_MIRRORS[0] + f + ".gz", "gz", f,
             "@MNIST/raw/" + f, "md5:" + md5, _TV, tuple(m + f + ".gz" for m in _MNIST_MIRRORS[1:]))
      for f, md5 in (("train-images-idx3-ubyte", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                     ("train-labels-idx1-ubyte", "d53e105ee54ea40749a09fcbcd1e9432"),
                     ("t10k-images-idx3-ubyte", "9fb629c4189551a2d022fa330f9573f3"),
                     ("t10k-labels-idx1-ubyte", "ec29112dd5afa0611ce80d1b7f02629c"))),
    Source("SVIRO", "", "https://sviro.kl.dfki.de/?wpdmdl=1731", "zip", "SVIRO_DOMAINBED", "sviro", NO_CHECKSUM, _NONE),
    Source("Spawrious", "", "https://www.dropbox.com/s/e40j553480h3f3s/spawrious224.tar.gz?dl=1", "tar.gz",
           "spawrious224", "spawrious224", NO_CHECKSUM, _NONE),
)

#: the WILDS datasets: (our name, ``wilds.get_dataset`` name, folder, the URL the package fetches, its version)
WILDS = (
    ("WILDSCamelyon", "camelyon17", "camelyon17_v1.0",
     "https://worksheets.codalab.org/rest/bundles/0xe45e15f39fb54e9d9e919556af67aabe/contents/blob/", "1.0"),
    ("WILDSFMoW", "fmow", "fmow_v1.1",
     "https://worksheets.codalab.org/rest/bundles/0xaec91eb7c9d548ebb15e1b5e60f966ab/contents/blob/", "1.1"),
)

#: every dataset, in the order they are fetched, and the folder each makes under ``--data_dir``
FOLDERS = {"VLCS": "VLCS", "PACS": "PACS", "OfficeHome": "office_home", "TerraIncognita": "terra_incognita",
           "DomainNet": "domain_net", "MNIST": "MNIST/raw", **{w[0]: w[2] for w in WILDS}, "SVIRO": "sviro",
           "Spawrious": "spawrious224"}
DOWNLOAD_DATASETS = tuple(FOLDERS)

#: DomainBed's TerraIncognita split (its ``include_locations`` and ``include_categories``)
TERRA_LOCATIONS = ("38", "46", "100", "43")
TERRA_CATEGORIES = ("bird", "bobcat", "cat", "coyote", "dog", "empty", "opossum", "rabbit", "raccoon", "squirrel")
#: the annotation files DomainBed merges, in its order
TERRA_ANNOTATIONS = ("cis_test_annotations.json", "cis_val_annotations.json", "train_annotations.json",
                     "trans_test_annotations.json", "trans_val_annotations.json")
#: DomainBed's ``domainbed/misc/domain_net_duplicates.txt`` (unmodified copy; see NOTICE)
DOMAIN_NET_DUPLICATES = Path(__file__).resolve().parents[1] / "data" / "domain_net_duplicates.txt"


class DownloadError(Exception):
    """One dataset could not be fetched; the message is the whole line (dataset, URL, why)."""


# names ########################################################################################################

def _aliases() -> dict[str, str]:
    """Lower-cased name → dataset: our names, the folder names, DomainBed's download functions' and dataset classes'."""
    out = {n.lower(): n for n in DOWNLOAD_DATASETS}
    out.update({f.split("/")[0].lower(): n for n, f in FOLDERS.items()})
    out.update({w[1]: w[0] for w in WILDS})
    for n in ("ColoredMNIST", "RotatedMNIST"):
        out[n.lower()] = "MNIST"
    for kind in ("O2O", "M2M"):
        for level in ("easy", "medium", "hard"):
            out[f"spawrious{kind}_{level}".lower()] = "Spawrious"
    return out


def resolve_names(names: Iterable[str] | None) -> list[str]:
    """The datasets to fetch, in :data:`DOWNLOAD_DATASETS` order (all when ``names`` is empty); an unknown name raises
    :class:`ConfigError`."""
    names = list(names or [])
    if not names:
        return list(DOWNLOAD_DATASETS)
    aliases = _aliases()
    wanted = set()
    for n in names:
        if n.lower() not in aliases:
            from dganalysis.registry import unknown_name

            raise ConfigError(f"--datasets: {unknown_name('dataset', n, DOWNLOAD_DATASETS)}")
        wanted.add(aliases[n.lower()])
    return [d for d in DOWNLOAD_DATASETS if d in wanted]


def mirrored(url: str, mirror: str | None) -> str:
    """``url`` fetched from ``mirror``: ``scheme://host/path?query`` → ``<mirror>/host/path?query``."""
    if not mirror:
        return url
    parts = urllib.parse.urlsplit(url)
    return mirror.rstrip("/") + "/" + parts.netloc + parts.path + ("?" + parts.query if parts.query else "")


def apply_overrides(sources: Sequence[Source], mirror: str | None = None,
                    urls: dict[str, str] | None = None) -> list[Source]:
    """``sources`` with ``--url KEY=URL`` replacements, then every other URL (and mirror) through ``mirror``."""
    urls = dict(urls or {})
    unknown = sorted(set(urls) - {s.key for s in sources})
    if unknown:
        raise ConfigError(f"--url: unknown source key(s) {unknown}; known: {sorted(s.key for s in sources)}")
    out = []
    for s in sources:
        if s.key in urls:
            out.append(dataclasses.replace(s, url=urls[s.key], mirrors=()))
        else:
            out.append(dataclasses.replace(s, url=mirrored(s.url, mirror), origin=s.origin or s.url,
                                           mirrors=tuple(mirrored(m, mirror) for m in s.mirrors)))
    return out


# fetching ######################################################################################################

class _Form(html.parser.HTMLParser):
    """The first form of a page: its action and its hidden inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.action: str | None = None
        self.fields: dict[str, str] = {}
        self._in_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and self.action is None:
            self.action, self._in_form = a.get("action", ""), True
        elif tag == "input" and self._in_form and a.get("type", "").lower() == "hidden" and a.get("name"):
            self.fields[a["name"]] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False


def _drive_next_url(page: str, url: str) -> str | None:
    """The URL Google Drive's "cannot scan this file for viruses" page leads to (its download form, or an older
    page's ``confirm=`` link), or None when the page has neither (e.g. the file's download quota is exhausted)."""
    form = _Form()
    form.feed(page)
    if form.action and ("confirm" in form.fields or "id" in form.fields):
        return urllib.parse.urljoin(url, form.action) + "?" + urllib.parse.urlencode(form.fields)
    m = re.search(r"confirm=([0-9A-Za-z_-]+)", page)
    if m:
        parts = urllib.parse.urlsplit(url)
        query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "confirm"] + [("confirm", m[1])]
        return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))
    return None


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))


def file_digest(path: Path, algo: str) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _reason(e: BaseException) -> str:
    if isinstance(e, urllib.error.HTTPError):
        return f"HTTP {e.code} {e.reason}"
    if isinstance(e, urllib.error.URLError):
        return str(e.reason)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


class _Interrupted(Exception):
    """The transfer stopped after some bytes arrived (worth a Range request)."""


def fetch(src: Source, dest: Path, *, retries: int = 3, timeout: float = 60.0, progress: bool = True,
          log: Callable[[str], None] = print) -> Path:
    """``dest`` fetched from ``src.url`` (then its mirrors), resumed from ``dest.part`` when there is one, checked
    against ``src.checksum``; raises :class:`DownloadError` (one line) when it cannot be."""
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    errors = []
    for url in (src.url, *src.mirrors):
        tries = 0
        while True:
            try:
                _transfer(src, url, dest, timeout, progress, log)
                return dest
            except _Interrupted as e:
                tries += 1
                if tries > retries:
                    raise DownloadError(f"{src.dataset}: download of {url} interrupted ({e}); run again to resume "
                                        f"it from {dest}.part") from None
                log(f"{src.dataset}: {url} interrupted ({e}); resuming")
            except DownloadError:
                raise
            except (OSError, http.client.HTTPException) as e:
                errors.append(f"{url} ({_reason(e)})")
                break
    raise DownloadError(f"{src.dataset}: cannot download " + "; ".join(errors))


def _transfer(src: Source, url: str, dest: Path, timeout: float, progress: bool, log: Callable[[str], None]) -> None:
    """One attempt: continue ``dest.part`` from ``url`` (or start it), verify, rename to ``dest``."""
    from tqdm import tqdm

    part, meta = Path(str(dest) + ".part"), Path(str(dest) + ".part.json")
    have = part.stat().st_size if part.is_file() else 0
    info = json.loads(meta.read_text()) if have and meta.is_file() else {}
    headers = {"User-Agent": "dganalysis-download (python urllib)", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
        if info.get("validator"):
            headers["If-Range"] = info["validator"]
    opener = _opener()
    try:
        resp = opener.open(urllib.request.Request(url, headers=headers), timeout=timeout)
    except urllib.error.HTTPError as e:
        if e.code != 416 or not have:
            raise
        log(f"{src.dataset}: {url} refuses to continue {part} (HTTP 416); starting again")
        part.unlink()
        meta.unlink(missing_ok=True)
        headers.pop("Range")
        headers.pop("If-Range", None)
        have = 0
        resp = opener.open(urllib.request.Request(url, headers=headers), timeout=timeout)
    for _hop in range(3):  # Google Drive: its virus-scan page leads to the file
        if resp.headers.get_content_type() != "text/html":
            break
        page = resp.read(2_000_000).decode("utf-8", "replace")
        resp.close()
        nxt = _drive_next_url(page, resp.geturl()) if src.google_drive else None
        if nxt is None:
            why = ("Google Drive answered with a page and no download link (often the file's daily download quota; "
                   "try again later)" if src.google_drive else "the server answered with a web page, not the file")
            raise DownloadError(f"{src.dataset}: cannot download {url}: {why}; or fetch it by hand into {dest}")
        resp = opener.open(urllib.request.Request(nxt, headers=headers), timeout=timeout)
    else:
        if resp.headers.get_content_type() == "text/html":
            resp.close()
            raise DownloadError(f"{src.dataset}: cannot download {url}: still a web page after 3 confirmation pages; "
                                f"fetch it by hand into {dest}")
    with resp:
        if resp.status == 206 and have:
            m = re.match(r"bytes (\d+)-\d+/(\d+|\*)", resp.headers.get("Content-Range", ""))
            if not m or int(m[1]) != have:
                raise DownloadError(f"{src.dataset}: {url} answered a Range request with Content-Range "
                                    f"{resp.headers.get('Content-Range')!r}; delete {part} to start again")
            total = int(m[2]) if m[2] != "*" else None
            mode = "ab"
        else:  # 200: the server ignores ranges, or the file changed (If-Range): start again
            if have:
                log(f"{src.dataset}: {url} does not continue {part} (HTTP {resp.status}); starting again")
            have, mode = 0, "wb"
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        validator = resp.headers.get("ETag") or resp.headers.get("Last-Modified")
        if validator and not validator.startswith("W/"):
            meta.write_text(json.dumps({"url": url, "validator": validator}))
        elif meta.exists():
            meta.unlink()
        got = have
        with open(part, mode) as f, tqdm(total=total, initial=have, unit="B", unit_scale=True, unit_divisor=1024,
                                          desc=src.key, disable=not progress, leave=False) as bar:
            try:
                while True:
                    block = resp.read(CHUNK)
                    if not block:
                        break
                    f.write(block)
                    got += len(block)
                    bar.update(len(block))
            except (OSError, http.client.HTTPException) as e:
                f.flush()
                raise _Interrupted(f"{got} of {total or '?'} bytes; {_reason(e)}") from e
    if total is not None and got < total:
        raise _Interrupted(f"{got} of {total} bytes")
    if src.checksum:
        algo, want = src.checksum.split(":", 1)
        have_sum = file_digest(part, algo)
        if have_sum != want.lower():
            part.unlink()
            meta.unlink(missing_ok=True)
            raise DownloadError(f"{src.dataset}: {url}: {algo} checksum {have_sum} differs from the published {want} "
                                f"({src.checksum_note}); the file was deleted, run again to fetch it anew")
    os.replace(part, dest)
    meta.unlink(missing_ok=True)


# unpacking ###################################################################################################

def _safe_names(src: Source, names: Iterable[str], archive: Path) -> None:
    for n in names:
        p = Path(n)
        if p.is_absolute() or ".." in p.parts:
            raise DownloadError(f"{src.dataset}: {archive} (from {src.url}) has member {n!r}, which would unpack "
                                f"outside its folder; refused")


def unpack(src: Source, archive: Path, target: Path) -> None:
    """``src.member`` of ``archive`` at ``target``: unpacked into a temporary folder beside it, then renamed."""
    tmp = target.parent / f".{target.name}.unpacking"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        if src.archive == "zip":
            with zipfile.ZipFile(archive) as z:
                _safe_names(src, z.namelist(), archive)
                z.extractall(tmp)
        elif src.archive in ("tar.gz", "tar"):
            with tarfile.open(archive, "r:*") as t:
                _safe_names(src, t.getnames(), archive)
                if hasattr(tarfile, "data_filter"):
                    t.extractall(tmp, filter="data")
                else:  # pragma: no cover - Python < 3.10.12
                    t.extractall(tmp)  # noqa: S202 - names checked above
        elif src.archive == "gz":
            with gzip.open(archive, "rb") as g, open(tmp / src.member, "wb") as f:
                shutil.copyfileobj(g, f, CHUNK)
            shutil.copyfile(archive, tmp / archive.name)
        else:
            raise ValueError(f"unknown archive kind {src.archive!r}")
        got = tmp / src.member
        if not got.exists():
            raise DownloadError(f"{src.dataset}: {archive} (from {src.url}) holds {sorted(os.listdir(tmp))[:10]}, "
                                f"not {src.member}/ as expected")
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.archive == "gz":
            os.replace(tmp / archive.name, target.parent / archive.name)
        os.rename(got, target)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, gzip.BadGzipFile) as e:
        raise DownloadError(f"{src.dataset}: {archive} (from {src.url}) cannot be unpacked ({_reason(e)}); delete "
                            f"it to fetch it again") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# the datasets' build steps ######################################################################################

def build_terra_incognita(work: Path, out: Path) -> None:
    """DomainBed's TerraIncognita split: every annotation of an image of a kept location whose category is kept puts
    the image at ``out/location_<loc>/<category>/<file_name>`` (annotation files merged in DomainBed's order)."""
    data: dict[str, list] = defaultdict(list)
    for name in TERRA_ANNOTATIONS:
        with open(work / "eccv_18_annotation_files" / name) as f:
            for k, v in json.load(f).items():
                if isinstance(v, list):
                    data[k].extend(v)
    categories = {c["id"]: c["name"] for c in data["categories"]}
    by_image: dict[object, list] = defaultdict(list)
    for a in data["annotations"]:
        by_image[a["image_id"]].append(a)
    images, missing = work / "eccv_18_all_images_sm", []
    for image in data["images"]:
        loc = str(image["location"])
        if loc not in TERRA_LOCATIONS:
            continue
        (out / f"location_{loc}").mkdir(parents=True, exist_ok=True)
        for a in by_image.get(image["id"], []):
            category = categories[a["category_id"]]
            if category not in TERRA_CATEGORIES:
                continue
            src, dst = images / image["file_name"], out / f"location_{loc}" / category / image["file_name"]
            if dst.exists():
                continue
            if not src.is_file():
                missing.append(image["file_name"])
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
    if missing:
        raise DownloadError(f"TerraIncognita: {len(missing)} annotated image(s) are not in the images archive "
                            f"(first: {missing[0]})")


def remove_domain_net_duplicates(folder: Path) -> int:
    """Delete the files of DomainBed's duplicate list under ``folder`` (absent ones ignored); how many were."""
    n = 0
    for line in DOMAIN_NET_DUPLICATES.read_text().splitlines():
        if line.strip():
            try:
                (folder / line.strip()).unlink()
                n += 1
            except FileNotFoundError:
                pass
    return n


# checks: what our loaders accept ################################################################################

def problem(dataset: str, data_dir: Path) -> str | None:
    """Why the folder of ``dataset`` under ``data_dir`` is not what our loaders read (one line), or None."""
    try:
        if dataset == "MNIST":
            from dganalysis.scripts.train import mnist_problem

            return mnist_problem(str(data_dir))
        if dataset == "Spawrious":
            base = data_dir / "spawrious224"
            lack = [str(base / i) for i in ("0", "1") if not (base / i).is_dir()]
            return f"dataset 'Spawrious': folder(s) {lack} not found" if lack else None
        if dataset in {w[0] for w in WILDS}:
            name, _, folder, _, version = next(w for w in WILDS if w[0] == dataset)
            release = data_dir / folder / f"RELEASE_v{version}.txt"
            return None if release.is_file() else f"dataset {dataset!r}: {release} not found (an unfinished download)"
        from dganalysis.data.benchmarks import BENCHMARKS

        BENCHMARKS[dataset].check_layout(data_dir)
    except (OSError, ValueError) as e:
        return str(e)
    return None


# the driver ####################################################################################################

@dataclass
class DownloadPlan:
    dataset: str
    folder: Path
    sources: list[Source]
    present: bool
    problem: str | None  #: why a present folder is not usable


def plan(data_dir: Path, names: Sequence[str], sources: Sequence[Source]) -> list[DownloadPlan]:
    out = []
    for d in names:
        folder = data_dir / FOLDERS[d]
        present = folder.exists()
        if present and d in {w[0] for w in WILDS}:  # wilds writes its RELEASE file last, and redoes an unfinished one
            present = problem(d, data_dir) is None
        out.append(DownloadPlan(d, folder, [s for s in sources if s.dataset == d], present,
                        problem(d, data_dir) if present else None))
    return out


def _target(s: Source, data_dir: Path, work: Path) -> Path:
    return work / s.target[1:] if s.target.startswith("@") else data_dir / s.target


def describe_plan(p: DownloadPlan, data_dir: Path) -> list[str]:
    """The dry run's lines for one dataset."""
    if p.present:
        return [f"{p.dataset}: present at {p.folder}, skipped" if p.problem is None else
                f"{p.dataset}: {p.folder} exists but is not usable ({p.problem}); move it away to download it again"]
    if not p.sources:
        w = next(w for w in WILDS if w[0] == p.dataset)
        return [f"{p.dataset}: would call wilds.get_dataset({w[1]!r}, root_dir={str(data_dir)!r}, download=True) "
                f"-> {p.folder} (the wilds package fetches {w[3]})"]
    work = data_dir / WORK / p.dataset
    lines = [f"{p.dataset}: would fetch {len(p.sources)} file(s) into {p.folder}"]
    for s in p.sources:
        check = s.checksum + f" ({s.checksum_note})" if s.checksum else "checksum: " + s.checksum_note
        via = " via Google Drive" if s.google_drive else ""
        lines.append(f"  {s.key}: {s.url}{via} -> {work / s.filename} ({s.archive}; {check}); unpacks {s.member} "
                     f"-> {_target(s, data_dir, work)}")
    return lines


def fetch_dataset(p: DownloadPlan, data_dir: Path, *, retries: int, timeout: float, progress: bool,
                  log: Callable[[str], None]) -> None:
    """Fetch, unpack and build one dataset into ``p.folder``; raises :class:`DownloadError`."""
    if not p.sources:
        return _fetch_wilds(p.dataset, data_dir, log)
    work = data_dir / WORK / p.dataset
    for s in p.sources:
        target = _target(s, data_dir, work)
        if target.exists():
            continue
        archive = work / s.filename
        log(f"{s.key}: fetching {s.url}")
        fetch(s, archive, retries=retries, timeout=timeout, progress=progress, log=log)
        unpack(s, archive, target)
        archive.unlink()
    if p.dataset == "DomainNet":
        n = remove_domain_net_duplicates(work / "domain_net")
        log(f"DomainNet: removed {n} duplicate file(s) (DomainBed's list)")
        os.rename(work / "domain_net", p.folder)
    elif p.dataset == "MNIST":
        p.folder.parent.mkdir(parents=True, exist_ok=True)
        os.rename(work / "MNIST" / "raw", p.folder)
    elif p.dataset == "TerraIncognita":
        tmp = work / "terra_incognita"
        if tmp.exists():
            shutil.rmtree(tmp)
        build_terra_incognita(work, tmp)
        os.rename(tmp, p.folder)
    shutil.rmtree(work, ignore_errors=True)
    bad = problem(p.dataset, data_dir)
    if bad:
        raise DownloadError(f"{p.dataset}: fetched into {p.folder}, but our loaders would refuse it: {bad}")


def _fetch_wilds(dataset: str, data_dir: Path, log: Callable[[str], None]) -> None:
    _, wname, folder, url, _ = next(w for w in WILDS if w[0] == dataset)
    try:
        import wilds
    except ImportError:
        raise DownloadError(f"{dataset}: needs the wilds package to download {url}: pip install 'wilds>=2.0,<2.1' "
                            f"(or pip install 'dganalysis[wilds]'), then run again") from None
    log(f"{dataset}: wilds.get_dataset({wname!r}, download=True) into {data_dir / folder}")
    try:
        wilds.get_dataset(dataset=wname, root_dir=str(data_dir), download=True)
    except Exception as e:  # noqa: BLE001 - whatever wilds raises is this dataset's failure, not the others'
        raise DownloadError(f"{dataset}: the wilds package could not download {url} ({_reason(e)})") from e


def download(data_dir: str | Path, datasets: Iterable[str] | None = None, *, mirror: str | None = None,
             urls: dict[str, str] | None = None, sources: Sequence[Source] = SOURCES, dry_run: bool = False,
             retries: int = 3, timeout: float = 60.0, progress: bool = True,
             log: Callable[[str], None] = print, err: Callable[[str], None] | None = None) -> list[str]:
    """Fetch ``datasets`` (default: all) into ``data_dir``; the failures, one line each ([] when none)."""
    err = err or (lambda line: print(line, file=sys.stderr))
    data_dir = Path(data_dir).expanduser()
    names = resolve_names(datasets)
    srcs = apply_overrides(sources, mirror if mirror is not None else os.environ.get(MIRROR_ENV) or None, urls)
    plans = plan(data_dir, names, srcs)
    if dry_run:
        for p in plans:
            for line in describe_plan(p, data_dir):
                log(line)
        return []
    data_dir.mkdir(parents=True, exist_ok=True)
    failures = []
    for p in plans:
        if p.present:
            if p.problem is None:
                log(f"{p.dataset}: present at {p.folder}, skipped")
            else:
                failures.append(describe_plan(p, data_dir)[0])
                err(f"download: {failures[-1]}")
            continue
        try:
            fetch_dataset(p, data_dir, retries=retries, timeout=timeout, progress=progress, log=log)
        except DownloadError as e:
            failures.append(str(e))
            err(f"download: {e}")
            continue
        log(f"{p.dataset}: done, {p.folder}")
    for folder in (*(data_dir / WORK / p.dataset for p in plans), data_dir / WORK):  # empty work folders
        try:
            folder.rmdir()
        except OSError:
            pass
    if failures:
        err(f"download: {len(failures)} of {len(plans)} dataset(s) failed: "
            + ", ".join(f.split(":", 1)[0] for f in failures) + " (see the lines above); run again to resume")
    return failures


def _key_url(text: str) -> tuple[str, str]:
    key, sep, url = text.partition("=")
    if not sep or not url:
        raise argparse.ArgumentTypeError(f"expected KEY=URL (e.g. PACS=https://...), got {text!r}")
    return key, url


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of the drop-in and of ``dganalysis download``."""
    parser.add_argument("--data_dir", "--data-dir", type=str, required=True, help="the data root to fill")
    parser.add_argument("--datasets", nargs="+", default=None, metavar="NAME",
                        help=f"the datasets to fetch (default: all): {', '.join(DOWNLOAD_DATASETS)}; DomainBed's dataset and "
                             "folder names are accepted too (e.g. RotatedMNIST, office_home)")
    parser.add_argument("--dry_run", "--dry-run", action="store_true",
                        help="fetch nothing: list each file's URL, checksum and where it would go")
    parser.add_argument("--mirror", default=None, metavar="BASE",
                        help=f"fetch every URL scheme://host/path as BASE/host/path (default ${MIRROR_ENV})")
    parser.add_argument("--url", action="append", type=_key_url, default=[], metavar="KEY=URL",
                        help="fetch one file from URL instead (keys as --dry-run prints them: PACS, DomainNet/real, ...)")
    parser.add_argument("--retries", type=int, default=3, help="resume an interrupted transfer at once this many times")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds without data before a connection fails")
    parser.add_argument("--no_progress", "--no-progress", action="store_true", help="no progress bars")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Download datasets")
    add_arguments(parser)
    return parser


def main_args(args: argparse.Namespace) -> int:
    names = [*(args.datasets or []), *(getattr(args, "names", None) or [])]
    failures = download(args.data_dir, names, mirror=args.mirror, urls=dict(args.url), dry_run=args.dry_run,
                        retries=args.retries, timeout=args.timeout, progress=not args.no_progress)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drop-in; the exit status (1 when a dataset failed, 2 for bad flags)."""
    args = build_parser().parse_args(argv)
    try:
        return main_args(args)
    except ConfigError as e:
        sys.stderr.write(f"{e}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
