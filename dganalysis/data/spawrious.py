"""The six Spawrious datasets by DomainBed's names (Lynch et al. 2023, "Spawrious: A Benchmark for Fine Control of
Spurious Correlation Biases"; DomainBed's ``SpawriousBenchmark`` at b93c22a).

Data: the archive DomainBed's ``scripts/download.py`` fetches (``download_spawrious``) unpacks to
``<data root>/spawrious224/<i>/<background>/<breed>/<image>`` with ``i`` in ``0``, ``1`` (two independently generated
image sets), six backgrounds (beach, desert, dirt, jungle, mountain, snow) and four dog breeds, 224 × 224 px.
DomainBed's classes read ``<root>/<i>/<background>/<breed>`` with ``root`` its ``--data_dir`` (so a DomainBed user
passes the ``spawrious224`` folder itself); ``root=`` here may be either that folder or the folder holding it.

What each dataset is (DomainBed's ``build_type1_combination``/``build_type2_combination`` and the six subclasses,
re-expressed as :class:`Part` lists): three environments in DomainBed's order, ``Test``, ``SC_group_1``,
``SC_group_2``; classes ``bulldog``, ``corgi``, ``dachshund``, ``labrador`` (labels 0–3). Each environment is the
concatenation of parts, one part being the first ``limit`` images of one ``<i>/<background>/<breed>`` folder:

- one-to-one (O2O): training group g ∈ {0, 1} (environment ``SC_group_{g+1}``) reads set ``g``; breed k is shown on
  background ``group[k]`` (bulldog, dachshund, labrador, corgi, in that order) for its first int(0.97·3168) = 3072
  (g = 0) or int(0.87·3168) = 2756 (g = 1) images, then every breed on the ``filler`` background for the first
  96 / 412 images; ``Test`` is breed k on ``test[k]``, all images, from set 0 then from set 1;
- many-to-many (M2M): everything from set 0; group 0 shows bulldog/dachshund/labrador/corgi on
  ``group[0]``/``group[1]``/``group[2]``/``group[3]``, group 1 on ``group[1]``/``group[0]``/``group[3]``/``group[2]``
  (first 3168 images each); ``Test`` the same two patterns on ``test``, all images.

Kept as DomainBed has them (the name means its behaviour): image files are taken in ``os.listdir`` order (unsorted:
the order, hence which files the limits keep and the in/out split, is the file system's, as in DomainBed's
``CustomImageFolder``; on one machine ours and DomainBed's agree) with the case-sensitive extensions ``.png``,
``.jpg``, ``.jpeg``; a folder holding fewer images than its limit gives what it has (logged here). The in/out split
is then :func:`dganalysis.training.train.split_indices` on each environment, DomainBed's ``misc.split_dataset``.

Images: DomainBed's Spawrious transforms ``Resize((224, 224))`` and, when ``data_augmentation``, flip, colour jitter
0.3 and grayscale — no random crop, unlike its other image datasets — so ``info['pipeline'] = 'spawrious'`` makes
:func:`~dganalysis.data.pipeline.make_pipeline` build DomainBed's pipeline with the crop fixed to the whole image.
Departure: DomainBed applies the training transforms to environments 1 and 2 and never to ``Test`` whatever
``test_envs`` is; here, as for every benchmark, the training environments of a run are augmented and the others not
(the same for the standard ``test_envs=[0]``). Large-image datasets (DomainBed's ``SMALL_IMAGES`` omits them);
``CHECKPOINT_FREQ`` 100 (DomainBed's default, not overridden).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from dganalysis.data.benchmarks import DOWNLOAD, build_image_dataset, check_build_args
from dganalysis.data.dataset import DomainDataset
from dganalysis.data.encoded import EncodedDataset
from dganalysis.data.registry import ROOT_HINT, register_dataset
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)

#: DomainBed's ``SpawriousBenchmark.class_list`` (labels in this order)
CLASSES = ("bulldog", "corgi", "dachshund", "labrador")
#: DomainBed's ``SpawriousBenchmark.ENVIRONMENTS``
ENVIRONMENTS = ("Test", "SC_group_1", "SC_group_2")
#: the breeds in the order DomainBed's combination dicts list them (the order images are concatenated)
BREED_ORDER = ("bulldog", "dachshund", "labrador", "corgi")
#: DomainBed's ``CustomImageFolder`` extensions (case-sensitive ``str.endswith``)
EXTENSIONS = (".png", ".jpg", ".jpeg")
TOTAL = 3168  #: DomainBed's ``total`` images per breed and training group
ARCHIVE_FOLDER = "spawrious224"  #: the folder DomainBed's ``download_spawrious`` unpacks


@dataclass(frozen=True)
class Part:
    """The first ``limit`` images (all when None) of ``<set_index>/<background>/<breed>``."""

    set_index: int
    background: str
    breed: str
    limit: int | None = None

    def folder(self, base: Path) -> Path:
        return base / str(self.set_index) / self.background / self.breed


@dataclass(frozen=True)
class SpawriousDataset:
    """One of DomainBed's six Spawrious datasets (see the module doc)."""

    name: str
    one_to_one: bool  #: O2O (DomainBed's ``type1``) or M2M
    group: tuple[str, str, str, str]
    test: tuple[str, str, str, str]
    filler: str | None = None

    small_images = False  # read by dganalysis.training.hparams.is_small_images: DomainBed's large-image regime
    checkpoint_freq = 100  # DomainBed's MultipleDomainDataset.CHECKPOINT_FREQ (Spawrious does not override it)

    def __post_init__(self) -> None:
        assert (self.filler is not None) == self.one_to_one, self.name

    @property
    def howto(self) -> str:
        return "get it with " + DOWNLOAD.format(name="Spawrious")

    def environments(self) -> dict[str, list[Part]]:
        """Environment name → its parts, in DomainBed's environment and concatenation order."""
        g, t = self.group, self.test
        if self.one_to_one:
            counts = (int(0.97 * TOTAL), int(0.87 * TOTAL))
            train = [[Part(i, g[k], b, counts[i]) for k, b in enumerate(BREED_ORDER)]
                     + [Part(i, self.filler, b, TOTAL - counts[i]) for b in BREED_ORDER] for i in (0, 1)]
            test = [Part(i, t[k], b) for i in (0, 1) for k, b in enumerate(BREED_ORDER)]
        else:
            swap = (1, 0, 3, 2)  # group 1 (and the second test half) pairs breed k with background swap[k]
            train = [[Part(0, g[k], b, TOTAL) for k, b in enumerate(BREED_ORDER)],
                     [Part(0, g[swap[k]], b, TOTAL) for k, b in enumerate(BREED_ORDER)]]
            test = ([Part(0, t[k], b) for k, b in enumerate(BREED_ORDER)]
                    + [Part(0, t[swap[k]], b) for k, b in enumerate(BREED_ORDER)])
        return dict(zip(ENVIRONMENTS, [test, *train]))

    def locate(self, root: str | Path | None) -> Path:
        """The folder holding ``0/`` (and ``1/``): ``root`` itself (DomainBed's ``--data_dir``) or
        ``root/spawrious224`` (where the download leaves it); missing, an error naming both and how to get it."""
        if root is None:
            raise ConfigError(f"dataset {self.name!r} needs root= the folder DomainBed's download_spawrious filled "
                             f"(holding {ARCHIVE_FOLDER}/; {ROOT_HINT}); {self.howto}")
        root = Path(root).expanduser()
        for cand in (root, root / ARCHIVE_FOLDER):
            if (cand / "0").is_dir():
                return cand
        raise MissingInputError(
            f"dataset {self.name!r}: folder {root / ARCHIVE_FOLDER} not found (expected {root / ARCHIVE_FOLDER}/"
            f"{{0,1}}/<background>/<breed>/<image>, or root= that folder itself; source: Lynch et al. 2023, "
            f"https://github.com/aengusl/spawrious); {self.howto}")

    def listing(self, root: str | Path | None) -> tuple[Path, list[str], dict[str, list[tuple[Path, int]]]]:
        """(dataset folder, classes, {environment: [(file, label)]}) in DomainBed's order; every folder a part
        reads must exist (all missing ones are named at once)."""
        base = self.locate(root)
        envs = self.environments()
        missing = sorted({str(p.folder(base)) for parts in envs.values() for p in parts if not p.folder(base).is_dir()})
        if missing:
            raise MissingInputError(f"dataset {self.name!r}: {len(missing)} folder(s) not found under {base}: "
                                    f"{missing[:6]}{' …' if len(missing) > 6 else ''}; {self.howto}")
        out: dict[str, list[tuple[Path, int]]] = {}
        for env, parts in envs.items():
            items: list[tuple[Path, int]] = []
            for part in parts:
                folder = part.folder(base)
                files = [folder / f for f in os.listdir(folder) if f.endswith(EXTENSIONS)]  # DomainBed's order
                if part.limit is not None:
                    if len(files) < part.limit:
                        log.warning("dataset %r: %s holds %d images, fewer than the %d DomainBed takes from it",
                                    self.name, folder, len(files), part.limit)
                    files = files[: part.limit]
                items += [(f, CLASSES.index(part.breed)) for f in files]
            if not items:
                raise ConfigError(f"dataset {self.name!r}: environment {env!r} has no images under {base} "
                                 f"(extensions {EXTENSIONS})")
            out[env] = items
        return base, list(CLASSES), out

    def __call__(self, root: str | Path | None = None, image_size: int = 224, storage: str = "encoded",
                 data_dir: str | Path | None = None, workers: int = 4) -> EncodedDataset | DomainDataset:
        """Build (or load from the cache) the dataset; ``storage`` as for :mod:`dganalysis.data.benchmarks`."""
        check_build_args(self.name, image_size, storage)
        base, classes, listing = self.listing(root)
        info = {"source": f"Spawrious (DomainBed layout) {base}", "pipeline": "spawrious",
                "checkpoint_freq": self.checkpoint_freq}
        # square_frame: DomainBed resizes to 224 × 224 first, so any crop would be drawn in that frame
        return build_image_dataset(self.name, base, classes, listing, image_size, storage, data_dir, workers, info,
                                   square_frame=True)


#: DomainBed's six subclasses: (group, test, filler) as each passes them
SPAWRIOUS: dict[str, SpawriousDataset] = {d.name: d for d in (
    SpawriousDataset("SpawriousO2O_easy", True, ("desert", "jungle", "dirt", "snow"),
                     ("dirt", "snow", "desert", "jungle"), "beach"),
    SpawriousDataset("SpawriousO2O_medium", True, ("mountain", "beach", "dirt", "jungle"),
                     ("jungle", "dirt", "beach", "snow"), "desert"),
    SpawriousDataset("SpawriousO2O_hard", True, ("jungle", "mountain", "snow", "desert"),
                     ("mountain", "snow", "desert", "jungle"), "beach"),
    SpawriousDataset("SpawriousM2M_easy", False, ("desert", "mountain", "dirt", "jungle"),
                     ("dirt", "jungle", "mountain", "desert")),
    SpawriousDataset("SpawriousM2M_medium", False, ("beach", "snow", "mountain", "desert"),
                     ("desert", "mountain", "beach", "snow")),
    SpawriousDataset("SpawriousM2M_hard", False, ("dirt", "jungle", "snow", "beach"),
                     ("snow", "beach", "dirt", "jungle")),
)}

for _name, _ds in SPAWRIOUS.items():
    register_dataset(_name)(_ds)
