"""Everything a job needs that can be checked without training, checked before any job folder is written.

:func:`job_problems` looks at a list of jobs once per dataset and once per network setting:

- **data**: the dataset's files where the jobs would read them — DomainBed's image benchmarks (PACS, VLCS,
  OfficeHome, TerraIncognita, DomainNet, SVIRO, NICO++): the root, the dataset and environment folders, the class
  folders, at least one image per environment (:meth:`dganalysis.data.benchmarks.Benchmark.check_layout`, the
  rules the build applies, without listing every image); WILDS: the dataset folder; CelebA_Blond: the image and
  split folders. Datasets built from files by other builders (``ImageFolder``, ``CSVImages``, plug-ins) are built
  once when the grid is made (:func:`dganalysis.sweep.grid.make_jobs`), which checks them; synthetic ones need no
  files.
- **weights**: the file the featurizer loads — ``pretrained`` as a path or ``imagenet[:<weights>]`` (torchvision's
  cached file for the architecture): the file must exist and ``torch.load`` must read a state dict of tensors from
  it (a truncated download is caught here, not at the job's first step); ``pretrained: domainbed`` with DomainBed's
  224-px network (timm's ``resnet50.ram_in1k``, torchvision's ResNet-18/50, DINOv2 and its hub checkout,
  :mod:`dganalysis.nets.domainbed_weights`): the files must exist.

Each problem is one line naming the dataset or the hyperparameter, what is missing and how to get it.
:func:`dganalysis.sweep.launcher.run_sweep` refuses to start with any of them (a
:class:`~dganalysis.validation.ConfigError` listing all) and its dry run reports them (``dganalysis sweep
--dry-run`` exits non-zero).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dganalysis.training.job import Job

#: image side of the benchmark builders when ``dataset_kwargs`` has no ``image_size``
DEFAULT_IMAGE_SIZE = 224


def data_problem(dataset: str, dataset_kwargs: Mapping[str, Any]) -> str | None:
    """Why ``dataset`` cannot be read with ``dataset_kwargs`` (one line), or None when its files look right or it
    reads no files checked here (see the module docstring)."""
    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.data.wilds_data import WILDS_BENCHMARKS

    kw = dict(dataset_kwargs or {})
    check: Callable[[], Any] | None = None
    if dataset in BENCHMARKS:
        check = lambda: BENCHMARKS[dataset].check_layout(kw.get("root"))  # noqa: E731
    elif dataset in WILDS_BENCHMARKS:
        check = lambda: WILDS_BENCHMARKS[dataset].locate(kw.get("root"))  # noqa: E731
    elif dataset == "CelebA_Blond":
        from dganalysis.data.celeba import celeba_paths

        check = lambda: celeba_paths(kw.get("root"))  # noqa: E731
    if check is None:
        return None
    try:
        check()
    except (OSError, ValueError) as e:
        return f"dataset {dataset} (dataset_kwargs {json.dumps(kw, sort_keys=True, default=str)}): {e}"
    return None


def _image_size(job: Job) -> int | None:
    """The side of the job's images when known without building the dataset (the file-backed benchmarks)."""
    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.data.wilds_data import WILDS_BENCHMARKS

    if job.dataset in BENCHMARKS or job.dataset in WILDS_BENCHMARKS or job.dataset == "CelebA_Blond":
        return int(job.dataset_kwargs.get("image_size", DEFAULT_IMAGE_SIZE))
    return None


def weight_problem(job: Job) -> str | None:
    """Why the featurizer of ``job`` cannot load its weights (one line), or None (see the module docstring)."""
    from dganalysis.nets import domainbed_weights as W
    from dganalysis.nets.registry import DOMAINBED_WEIGHTS
    from dganalysis.nets.torchhub import WEIGHT_ENUMS, is_hub_spec, resolve_pretrained
    from dganalysis.training.job_draw import job_hparams

    hp = job_hparams(job)
    spec = hp.get("pretrained")
    featurizer = str(hp.get("featurizer", "auto"))
    size = _image_size(job)
    where = f"{job.algorithm} on {job.dataset}: hparam 'pretrained' = {spec!r} (featurizer {featurizer!r})"
    try:
        if spec == DOMAINBED_WEIGHTS:
            if featurizer != "domainbed" or size != 224:
                return None  # DomainBed loads weights only into its 224-px networks; others start at random
            if hp.get("vit", False) and hp.get("dinov2", False):
                W.dinov2_repo()
                W.dinov2_weights()
            elif hp.get("resnet50_augmix", True):
                W.augmix_weights()
            else:
                W.torchvision_resnet_weights(18 if hp.get("resnet18", False) else 50)
        elif spec:
            arch = featurizer if featurizer in WEIGHT_ENUMS else (
                "resnet18" if featurizer == "auto" and size is not None and size > 32 else None)
            if is_hub_spec(str(spec)) and arch is None:
                return None  # the architecture is known once the dataset is built; checked then
            path = resolve_pretrained(spec, arch)
            if not path.is_file():
                return f"{where}: checkpoint {path} not found (expected a weight file; null for random weights)"
            st = path.stat()
            problem = _checkpoint_problem(str(path), st.st_size, st.st_mtime_ns)
            if problem:
                return f"{where}: checkpoint {path} {problem}"
    except (OSError, ValueError) as e:
        return f"{where}: {e}"
    return None


@functools.lru_cache(maxsize=64)
def _checkpoint_problem(path: str, size: int, mtime_ns: int) -> str | None:
    """Why ``torch.load(path, weights_only=True)`` — what training's :func:`dganalysis.nets.pretrained.read_checkpoint`
    calls — cannot give a state dict of tensors (a truncated download, an HTML error page saved under the name, a
    file of another kind), or None. A zip-format file (torch ≥ 1.6) is memory-mapped, so only its index and pickled
    structure are read; a legacy file is read whole. ``size``/``mtime_ns`` key the cache: a replaced file is read
    again."""
    import zipfile

    import torch

    from dganalysis.nets.pretrained import unwrap_state_dict

    try:
        obj = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
        unwrap_state_dict(obj, "the file")
    except Exception as e:  # noqa: BLE001 - any failure to read is the problem reported
        text = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        return f"cannot be read by torch.load ({type(e).__name__}{': ' + text if text else ''}); download it again"
    return None


def job_problems(jobs: Sequence[Job]) -> list[str]:
    """Every problem of ``jobs`` checkable without training (data files, weight files), one line each, without
    repeats; [] when none. Each dataset setting and each network setting is looked at once."""
    problems: list[str] = []
    seen_data: set[str] = set()
    seen_net: set[str] = set()
    for job in jobs:
        key = json.dumps([job.dataset, job.dataset_kwargs], sort_keys=True, default=str)
        if key not in seen_data:
            seen_data.add(key)
            p = data_problem(job.dataset, job.dataset_kwargs)
            if p:
                problems.append(p)
        net = json.dumps([job.dataset, job.dataset_kwargs, job.algorithm, job.hparams_seed, job.trial_seed,
                          job.hparams_overrides, job.search_overrides], sort_keys=True, default=str)
        if net not in seen_net:
            seen_net.add(net)
            p = weight_problem(job)
            if p and p not in problems:
                problems.append(p)
    return problems


def format_problems(problems: Sequence[str], what: str = "before training") -> str:
    """The problems as one message: a count, then one indented line each."""
    return (f"{len(problems)} problem(s) found {what} (no job folder was written):\n"
            + "\n".join(f"  - {p}" for p in problems))


def mnist_problem(data_dir: str | None) -> str | None:
    """Why DomainBed's MNIST datasets cannot be read from ``data_dir`` (its ``MNIST/raw``), or None."""
    if not data_dir:
        return ("--data_dir: not given; DomainBed's MNIST datasets read MNIST's raw files from <data_dir>/MNIST/raw "
                "(python -m dganalysis.scripts.download --data_dir <data_dir> --datasets MNIST fetches them)")
    root = Path(data_dir)
    for folder in (root / "MNIST" / "raw", root / "raw", root):
        if all((folder / f).is_file() or (folder / f"{f}.gz").is_file()
               for f in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                         "t10k-labels-idx1-ubyte")):
            return None
    return (f"--data_dir {data_dir}: no MNIST raw files (train-images-idx3-ubyte, ... in {root / 'MNIST' / 'raw'}); "
            f"python -m dganalysis.scripts.download --data_dir {data_dir} --datasets MNIST fetches them")


__all__ = ["DEFAULT_IMAGE_SIZE", "data_problem", "format_problems", "job_problems", "mnist_problem", "weight_problem"]
