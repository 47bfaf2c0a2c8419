"""DomainBed's image benchmarks by name: PACS, VLCS, OfficeHome, TerraIncognita, DomainNet, SVIRO; and NICO++.

NICO++ (Zhang et al. 2023; used by Yu et al. 2024, Tables 4-5) is not in DomainBed at b93c22a: its DG-track
release is already ``<root>/<domain>/<class>/<image>`` with the six public domains autumn, dim, grass, outdoor,
rock, water and 60 classes, read here exactly as the DomainBed folders are (domains named by their folders;
the class *names* are not checked, only their count and that every domain has the same ones).

Each reads the folder layout DomainBed's ``scripts/download.py`` produces under a data root
(Gulrajani & Lopez-Paz, 2021): ``<root>/<folder>/<environment folder>/<class>/<image>``. As DomainBed's
``MultipleEnvironmentImageFolder`` does, environments are the sub-folders *sorted by name* (so
``test_envs`` indices mean the same: TerraIncognita's ``location_100`` sorts before ``location_38``), classes
are each environment's sub-folders sorted by name, and images are listed as torchvision's ``ImageFolder``
lists them (class by class, ``os.walk`` sorted, file names sorted, torchvision's image extensions), so
:func:`dganalysis.training.train.split_indices` gives DomainBed's in/out splits. Domains are named by DomainBed's
``ENVIRONMENTS`` (``A``, ``C``, ``P``, ``S`` for PACS), the names its sweep records get in
:mod:`dganalysis.records.read`; the folder names are kept in ``info['folders']``.

Stricter than DomainBed, each with a clear error naming the folder: a missing dataset or environment
folder, an extra folder (DomainBed would silently count it as an environment and shift every index),
environments whose class folders differ (DomainBed would silently mislabel), a class count other than
DomainBed's, an empty environment. Class folder names are compared with the lists in
:mod:`dganalysis.data.benchmark_classes` (each says where it was verified): a difference is refused for PACS,
VLCS, OfficeHome, TerraIncognita and DomainNet, whose lists were confirmed against public listings of the real
folders, and only logged as a warning for SVIRO, whose folder names inside DomainBed's archive could not be
confirmed.

Storage (``storage=``): ``"encoded"`` (default) keeps the files' bytes packed on the host
(:class:`~dganalysis.data.encoded.EncodedDataset`; training decodes on the fly or all at once, see
:mod:`dganalysis.data.feed`); ``"arrays"`` decodes once into uint8 arrays at ``image_size`` (a
:class:`~dganalysis.data.dataset.DomainDataset`, for the analyses that read whole arrays). Both are cached
under ``data_dir/imported`` keyed by the file list and options. Images pass through DomainBed's pipeline
(:mod:`dganalysis.data.pipeline`): ``info['pipeline']`` says so, and training reads it.
All are large-image datasets: ``small_images = False`` (DomainBed's large-image hparam regime).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dganalysis.data import benchmark_classes as cls_lists
from dganalysis.data.dataset import DomainDataset
from dganalysis.data.encoded import EncodedDataset, pack_files
from dganalysis.data.registry import ROOT_HINT, register_dataset, resolve_data_dir
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)

#: torchvision's ``IMG_EXTENSIONS`` (what DomainBed's ``ImageFolder`` accepts)
TORCHVISION_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
#: how to get one dataset: our drop-in for DomainBed's ``scripts/download.py`` (:mod:`dganalysis.scripts.download`:
#: the same sources, the same folders; DomainBed's own ``__main__`` fetches only TerraIncognita at b93c22a)
DOWNLOAD = ("`python -m dganalysis.scripts.download --data_dir <root> --datasets {name}` (the files DomainBed's "
            "download.py fetches, from its sources, into its folder layout)")

@dataclass(frozen=True)
class Benchmark:
    """A DomainBed image benchmark: where it lives under the data root and what it must contain."""

    name: str
    folder: str  #: sub-folder of the data root
    environments: tuple[str, ...]  #: DomainBed's ENVIRONMENTS (our domain names), in index order
    env_folders: tuple[str, ...]  #: the folders, in the same (sorted) order
    n_classes: int
    classes: tuple[str, ...] | None = None  #: the class folders (sorted), see :mod:`~dganalysis.data.benchmark_classes`
    #: ``"strict"``: other class folders are refused; ``"lenient"``: the list could not be verified against the archive
    #: DomainBed downloads, so a difference is logged as a warning (the class count is still checked)
    class_check: str = "strict"
    checkpoint_freq: int = 300  #: DomainBed's CHECKPOINT_FREQ
    source: str = ""
    download_fn: str = ""  #: the function of DomainBed's ``scripts/download.py`` that fetches it (ours: DOWNLOAD)
    get: str = ""  #: how to get a dataset DomainBed cannot download

    @property
    def howto(self) -> str:
        """How to get the data, for error messages and the dry run."""
        return self.get or "get it with " + DOWNLOAD.format(name=self.name)

    small_images = False  # read by dganalysis.training.hparams.is_small_images: DomainBed's large-image regime

    def __post_init__(self) -> None:
        assert list(self.env_folders) == sorted(self.env_folders), self.name  # DomainBed sorts environments
        assert len(self.environments) == len(self.env_folders), self.name
        assert self.class_check in ("strict", "lenient"), self.name
        assert self.classes is None or (len(self.classes) == self.n_classes and list(self.classes) == sorted(self.classes))

    def locate(self, root: str | Path | None) -> Path:
        """The dataset folder under ``root`` (``root/<folder>``, or ``root`` itself when it holds the
        environment folders); a missing one raises naming the folder and how to get the data."""
        if root is None:
            raise ConfigError(f"dataset {self.name!r} needs root= the data folder DomainBed's download script filled "
                             f"(holding {self.folder}/; {ROOT_HINT}); {self.howto}")
        root = Path(root).expanduser()
        for cand in (root / self.folder, root):
            if cand.is_dir() and any((cand / f).is_dir() for f in self.env_folders):
                return cand
        raise MissingInputError(
            f"dataset {self.name!r}: folder {root / self.folder} not found (expected {root / self.folder}/"
            f"{{{','.join(self.env_folders)}}}/<class>/<image>; source: {self.source}); {self.howto}")

    def check_layout(self, root: str | Path | None) -> tuple[Path, list[str]]:
        """(dataset folder, classes) after checking the layout the build reads — dataset and environment folders,
        no extra folder, the same class folders in every environment, DomainBed's classes, at least one image per
        environment — without listing every image (what a sweep checks before any job folder is written)."""
        base = self.locate(root)
        found = sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
        missing = [f for f in self.env_folders if f not in found]
        if missing:
            raise MissingInputError(f"dataset {self.name!r}: environment folder(s) {[str(base / f) for f in missing]} "
                                    f"not found (expected {list(self.env_folders)}); {self.howto}")
        extra = [f for f in found if f not in self.env_folders]
        if extra:
            raise ConfigError(f"dataset {self.name!r}: unexpected folder(s) {[str(base / f) for f in extra]} in {base} "
                             f"(DomainBed counts every sub-folder as an environment; expected only {list(self.env_folders)})")
        classes: list[str] | None = None
        for folder in self.env_folders:
            eroot = base / folder
            cls = sorted(e.name for e in os.scandir(eroot) if e.is_dir())
            if classes is None:
                classes = cls
                self._check_classes(eroot, cls)
            elif cls != classes:
                raise ConfigError(f"dataset {self.name!r}: {eroot} has classes {_diff(cls, classes)} compared with "
                                 f"{base / self.env_folders[0]} (every environment must have the same class folders)")
            if not any(_has_image(eroot / c) for c in cls):
                raise ConfigError(f"dataset {self.name!r}: {eroot} has no images (extensions {TORCHVISION_EXTENSIONS})")
        return base, list(classes or [])

    def listing(self, root: str | Path | None) -> tuple[Path, list[str], dict[str, list[tuple[Path, int]]]]:
        """(dataset folder, classes, {domain name: [(file, label)]}) in DomainBed's order; checks the layout."""
        base, classes = self.check_layout(root)
        out: dict[str, list[tuple[Path, int]]] = {}
        for env, folder in zip(self.environments, self.env_folders):
            eroot = base / folder
            out[env] = [(f, k) for k, c in enumerate(classes) for f in _image_files(eroot / c)]
        return base, classes, out

    def _check_classes(self, eroot: Path, cls: list[str]) -> None:
        if self.classes is not None and cls != list(self.classes):
            if self.class_check == "strict":
                raise ConfigError(f"dataset {self.name!r}: {eroot} class folders differ from DomainBed's "
                                 f"({_diff(cls, self.classes)}; see dganalysis/data/benchmark_classes.py)")
            log.warning("dataset %r: %s class folders differ from the expected ones (%s); the expected list is not "
                        "verified for DomainBed's archive, so the folders are used as found, sorted",
                        self.name, eroot, _diff(cls, self.classes))
        if len(cls) != self.n_classes:
            raise ConfigError(f"dataset {self.name!r}: {eroot} has {len(cls)} class folders, DomainBed's has {self.n_classes}")

    def __call__(self, root: str | Path | None = None, image_size: int = 224, storage: str = "encoded",
                 data_dir: str | Path | None = None, workers: int = 4) -> EncodedDataset | DomainDataset:
        """Build (or load from the cache) the dataset; see the module doc for ``storage``."""
        check_build_args(self.name, image_size, storage)
        base, classes, listing = self.listing(root)
        return build_image_dataset(self.name, base, classes, listing, image_size, storage, data_dir, workers,
                                   {"source": f"DomainBed layout {base}", "folders": list(self.env_folders),
                                    "pipeline": "domainbed", "checkpoint_freq": self.checkpoint_freq})


def check_build_args(name: str, image_size: int, storage: str) -> None:
    """Refuse a bad ``storage`` or ``image_size`` before any folder is read."""
    if storage not in ("encoded", "arrays"):
        raise ConfigError(f"dataset {name!r}: storage={storage!r}, expected 'encoded' or 'arrays'")
    if int(image_size) < 1:
        raise ConfigError(f"dataset {name!r}: image_size={image_size}, expected a positive int")


def build_image_dataset(
    name: str, base: Path, classes: list[str], listing: dict[str, list[tuple[Path, int]]], image_size: int = 224,
    storage: str = "encoded", data_dir: str | Path | None = None, workers: int = 4, info: dict | None = None,
    square_frame: bool = False,
) -> EncodedDataset | DomainDataset:
    """Pack (or load from the cache under ``data_dir/imported``) the files of ``listing`` (domain → [(file, label)],
    in DomainBed's order) as ``storage`` (see the module doc); ``info`` is added to the dataset's info."""
    check_build_args(name, image_size, storage)
    from dganalysis.data.folder import _fingerprint

    files = [f for items in listing.values() for f, _ in items]
    key = _fingerprint(files, {"benchmark": name, "root": str(base.resolve()), "image_size": int(image_size)})
    cache = resolve_data_dir(data_dir) / "imported" / f"{name}-{key}"
    info = {"benchmark": name, **(info or {})}
    enc_dir = cache / "encoded"
    if (enc_dir / "manifest.json").is_file():
        enc = EncodedDataset.load(enc_dir)
    else:
        log.info("packing %s (%d images) into %s", name, len(files), enc_dir)
        enc = pack_files(enc_dir, name, classes, listing, int(image_size), info, square_frame=square_frame)
    if storage == "encoded":
        return enc
    arr_dir = cache / "arrays"
    if not (arr_dir / "manifest.json").is_file():
        enc.to_arrays(workers).save(arr_dir)
    return DomainDataset.load(arr_dir)


def _diff(got: Sequence[str], want: Sequence[str]) -> str:
    extra, missing = sorted(set(got) - set(want)), sorted(set(want) - set(got))
    return f"extra {extra[:10]}, missing {missing[:10]}" if extra or missing else f"order {list(got)[:10]}"


def _has_image(folder: Path) -> bool:
    """Whether ``folder`` (searched as :func:`_image_files` searches) holds at least one image; stops at the first."""
    for _dirpath, _dirs, files in os.walk(folder, followlinks=True):
        if any(f.lower().endswith(TORCHVISION_EXTENSIONS) for f in files):
            return True
    return False


def _image_files(folder: Path) -> list[Path]:
    """Files as torchvision's ``make_dataset`` lists them: ``sorted(os.walk)``, sorted names, its extensions."""
    out = []
    for dirpath, _, fnames in sorted(os.walk(folder, followlinks=True)):
        for fname in sorted(fnames):
            if fname.lower().endswith(TORCHVISION_EXTENSIONS):
                out.append(Path(dirpath) / fname)
    return out


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("PACS", "PACS", ("A", "C", "P", "S"), ("art_painting", "cartoon", "photo", "sketch"), 7, cls_lists.PACS,
              download_fn="download_pacs", source="Li et al. 2017, http://www.eecs.qmul.ac.uk/~dl307/project_iccv2017"),
    Benchmark("VLCS", "VLCS", ("C", "L", "S", "V"), ("Caltech101", "LabelMe", "SUN09", "VOC2007"), 5, cls_lists.VLCS,
              download_fn="download_vlcs", source="Fang et al. 2013"),
    Benchmark("OfficeHome", "office_home", ("A", "C", "P", "R"), ("Art", "Clipart", "Product", "Real World"), 65,
              cls_lists.OFFICE_HOME, download_fn="download_office_home",
              source="Venkateswara et al. 2017, http://hemanthdv.org/OfficeHome-Dataset/"),
    Benchmark("TerraIncognita", "terra_incognita", ("L100", "L38", "L43", "L46"),
              ("location_100", "location_38", "location_43", "location_46"), 10, cls_lists.TERRA_INCOGNITA,
              download_fn="download_terra_incognita",
              source="Beery et al. 2018, https://beerys.github.io/CaltechCameraTraps/"),
    Benchmark("DomainNet", "domain_net", ("clip", "info", "paint", "quick", "real", "sketch"),
              ("clipart", "infograph", "painting", "quickdraw", "real", "sketch"), 345, cls_lists.DOMAIN_NET,
              checkpoint_freq=1000, download_fn="download_domain_net", source="Peng et al. 2019, http://ai.bu.edu/M3SDA/"),
    Benchmark("SVIRO", "sviro", ("aclass", "escape", "hilux", "i3", "lexus", "tesla", "tiguan", "tucson", "x5", "zoe"),
              ("aclass", "escape", "hilux", "i3", "lexus", "tesla", "tiguan", "tucson", "x5", "zoe"), 7, cls_lists.SVIRO,
              class_check="lenient", download_fn="download_sviro",
              source="Dias Da Cruz et al. 2020, https://sviro.kl.dfki.de"),
    # checkpoint_freq: chosen as DomainNet's (a dataset of similar size; Yu et al. 2024 train it 10,000 steps)
    Benchmark("NICO++", "NICO_DG", ("autumn", "dim", "grass", "outdoor", "rock", "water"),
              ("autumn", "dim", "grass", "outdoor", "rock", "water"), 60, checkpoint_freq=1000,
              source="Zhang et al. 2023 (NICO++), https://github.com/xxgege/NICO-plus",
              get="download the NICO++ DG track (the public domains autumn, dim, grass, outdoor, rock, water) from "
                  "https://github.com/xxgege/NICO-plus (dataset links in its README) and unpack it as "
                  "<root>/NICO_DG/<domain>/<class>/<image>"),
)}

for _name, _bench in BENCHMARKS.items():
    register_dataset(_name)(_bench)
