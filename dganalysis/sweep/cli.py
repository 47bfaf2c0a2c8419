"""The ``dganalysis sweep`` verb: a job grid from a YAML file or flags, trained into a store.

Examples::

    dganalysis sweep --config sweeps/rotated.yaml --store outputs/quick/store --workers 2
    dganalysis sweep --dataset RotatedDigits --algorithms ERM CORAL --splits leave_one_out \\
        --steps 1000 --checkpoint-freq 200 --store store --dry-run
    dganalysis sweep --config big.yaml --store /scratch/store --launcher slurm --slurm-partition gpu --gpus-per-node 1
    dganalysis sweep --config rotated.yaml --store store --runs-per-gpu auto --batch-runs 8
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the sweep flags to ``parser``."""
    g = parser.add_argument_group("what to train (a YAML file, or flags; flags override the file)")
    g.add_argument("--config", help="sweep YAML with the keys of dganalysis.sweep.Sweep (dataset, dataset_kwargs, "
                                    "algorithms, splits, n_hparams, n_trials, steps, checkpoint_freq, ...)")
    g.add_argument("--dataset", help="registered dataset name")
    g.add_argument("--dataset-kwargs", type=json.loads, help='JSON dict of builder arguments, e.g. \'{"binarize": true}\'')
    g.add_argument("--algorithms", nargs="+", help="algorithm names")
    g.add_argument("--splits", type=_json_arg, help="leave_one_out, '{\"leave_one_group_out\": 2}' or a JSON list of "
                                                    "{train, test, val} dicts (default leave_one_out)")
    g.add_argument("--n-hparams", "--n_hparams", type=int, help="hparam draws per algorithm and split (seed 0 = defaults; default 1)")
    g.add_argument("--n-trials", "--n_trials", type=int, help="trials (data split + init seeds; default 1)")
    g.add_argument("--steps", type=int, help="training steps per job")
    g.add_argument("--checkpoint-freq", "--checkpoint_freq", type=int, help="steps between evaluation records")
    g.add_argument("--hparams-overrides", "--hparams", type=json.loads, help="JSON dict of fixed hparams (flat or per algorithm)")
    g.add_argument("--search-overrides", type=json.loads, help="JSON dict of search distributions")
    g.add_argument("--save-model", action="store_true", default=None, help="save each job's final model (model.pt)")

    r = parser.add_argument_group("where and how")
    r.add_argument("--store", "--output_dir", required=True, help="job store folder (one sub-folder per job)")
    r.add_argument("--data-dir", "--data_dir",
                   help="DomainBed's data root, the folder its download script filled (PACS/, MNIST/, ...; default "
                        "$DGANALYSIS_DATA): the dataset's root= (mnist_dir= for the MNIST datasets) unless "
                        "--dataset-kwargs or the YAML sets it; unused by datasets that read no files")
    r.add_argument("--cache-dir", "--cache_dir",
                   help="where packed copies of image datasets are cached (default $DGANALYSIS_DATA or "
                        "~/.cache/dganalysis); --data_dir meant this before")
    r.add_argument("--launcher", "--command_launcher", choices=["local", "slurm"], default="local", help="local processes or Slurm via submitit")
    r.add_argument("--workers", type=int, default=1, help="local worker processes (default 1: in this process)")
    r.add_argument("--runs-per-gpu", "--runs_per_gpu", default=None,
                   help="worker processes per CUDA device: an integer, or auto (sized by memory from a probe run's "
                        "peak; dganalysis.sweep.packing); replaces --workers on CUDA machines")
    r.add_argument("--no-mps", action="store_true",
                   help="do not start a CUDA MPS daemon for packed runs (default: started when more than one run "
                        "shares a device and nvidia-cuda-mps-control exists)")
    r.add_argument("--batch-runs", "--batch_runs", type=int, default=1,
                   help="train up to M ERM jobs whose shapes agree as one vmapped model (dganalysis.sweep.batched; "
                        "default 1: every job alone)")
    r.add_argument("--device", help="torch device (default: CUDA when available, else CPU)")
    r.add_argument("--compile", action="store_true", help="torch.compile the networks")
    r.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                   help="auto = bf16 autocast on CUDA, fp32 on CPU")
    r.add_argument("--no-retry-failed", action="store_true", help="leave jobs marked failed alone")
    r.add_argument("--import", dest="imports", action="append", default=[],
                   help="module or .py file registering your own datasets/algorithms (repeatable; also "
                        "$DGANALYSIS_IMPORT, comma-separated), imported by every worker too (docs/extending.md)")
    r.add_argument("--dry-run", action="store_true", help="list the jobs and their state, and check the data and weight files; train "
                                                           "nothing (exit 2 when a real run would refuse to start)")
    r.add_argument("--no-wait", action="store_true",
                   help="leave jobs another live runner holds (status busy) instead of waiting for them")
    r.add_argument("--lease-s", type=float, default=None,
                   help="claim lease in seconds: a runner silent this long is presumed dead and its job taken over "
                        "(default $DGANALYSIS_LEASE_S or 120)")
    r.add_argument("--poll-s", type=float, default=None,
                   help="seconds between looks at a job another runner holds and at the submitted tasks of the "
                        "slurm launcher (default 1)")
    r.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    r.add_argument("--mixed-threads", action="store_true",
                   help="reuse finished jobs recorded on another CPU thread count than this sweep gives its jobs "
                        "(default: an error; the count is workers' share of the cores or $DGANALYSIS_THREADS)")

    d = parser.add_argument_group(
        "DomainBed's sweep.py spellings (besides the underscore aliases above: --n_hparams, --n_trials, "
        "--checkpoint_freq, --hparams, --output_dir, --data_dir, --command_launcher); its exact job list and "
        "folders: python -m dganalysis.scripts.sweep")
    d.add_argument("--datasets", nargs="+", help="DomainBed's --datasets: one dataset here (a store per dataset)")
    d.add_argument("--n_hparams_from", type=int, default=0, help="DomainBed's first hparams seed; only 0 here")
    d.add_argument("--holdout_fraction", type=float, default=None,
                   help="each domain's share held out for validation (default 0.2)")
    d.add_argument("--single_test_envs", action="store_true",
                   help="one test domain per run: the same as --splits leave_one_out, the default")
    d.add_argument("--task", default="domain_generalization", help="only domain_generalization")
    d.add_argument("--skip_confirmation", action="store_true", help="accepted: dganalysis sweep never asks")
    d.add_argument("--seed", type=int, default=None,
                   help="accepted and unused, as in DomainBed (each run's seed is DomainBed's seed_hash of the run)")

    s = parser.add_argument_group("slurm (submitit)")
    s.add_argument("--slurm-partition", help="Slurm partition")
    s.add_argument("--slurm-cluster", help="submitit cluster: slurm (default when available), local or debug")
    s.add_argument("--timeout-min", type=int, default=24 * 60, help="time limit per job in minutes")
    s.add_argument("--gpus-per-node", type=int, default=None, help="GPUs per job")
    s.add_argument("--cpus-per-task", type=int, default=None, help="CPU cores per job")
    s.add_argument("--mem-gb", type=float, default=None, help="memory per job in GB")
    s.add_argument("--array-parallelism", type=int, default=None, help="max jobs running at once")


def _check_names(flags: dict[str, Any]) -> None:
    """Unknown algorithm or dataset names given as flags, with the closest known ones (before anything else)."""
    from dganalysis.algorithms import available as algorithms
    from dganalysis.data.registry import available as datasets
    from dganalysis.registry import unknown_name
    from dganalysis.validation import ConfigError

    known = set(algorithms())
    for name in flags["algorithms"] or []:
        if name not in known:
            raise ConfigError(f"--algorithms: {unknown_name('algorithm', name, known)}")
    if flags["dataset"] is not None and flags["dataset"] not in datasets():
        raise ConfigError(f"--dataset: {unknown_name('dataset', flags['dataset'], datasets())}")


def _domainbed_spellings(args: argparse.Namespace) -> None:
    """Fold DomainBed's sweep flags into ours; what has no counterpart is refused by name."""
    from dganalysis.validation import ConfigError

    datasets = getattr(args, "datasets", None)
    if datasets:
        if len(datasets) > 1:
            raise ConfigError(f"--datasets {' '.join(datasets)}: dganalysis sweep trains one dataset per command; run it "
                              "once per dataset, or use python -m dganalysis.scripts.sweep (DomainBed's whole grid)")
        if args.dataset is not None and args.dataset != datasets[0]:
            raise ConfigError(f"--datasets {datasets[0]} and --dataset {args.dataset}: give one")
        args.dataset = datasets[0]
    if getattr(args, "n_hparams_from", 0):
        raise ConfigError(f"--n_hparams_from {args.n_hparams_from}: not supported (hparams seeds always start at 0 "
                          "here, seed 0 = defaults); python -m dganalysis.scripts.sweep takes it")
    if getattr(args, "task", "domain_generalization") != "domain_generalization":
        raise ConfigError(f"--task {args.task}: not supported; only domain_generalization")
    if getattr(args, "single_test_envs", False) and args.splits not in (None, "leave_one_out"):
        raise ConfigError(f"--single_test_envs and --splits {args.splits}: give one")


def jobs_from_args(args: argparse.Namespace):
    """The job list described by the parsed flags (and ``--config``): a :class:`~dganalysis.sweep.spec.Sweep` of the
    flags given (on top of the file's keys)."""
    from dganalysis.sweep.grid import grid_domains, load_sweep_yaml, make_jobs
    from dganalysis.sweep.spec import KEYS, Sweep

    _domainbed_spellings(args)
    # every key of a sweep has its flag, but datasets: --datasets is DomainBed's list of names, folded into --dataset
    flags = {k: getattr(args, k, None) for k in KEYS if k != "datasets"}
    _check_names(flags)  # an unknown name is the first thing to hear about, before any missing flag
    if args.config:
        return with_data_root(load_sweep_yaml(args.config, data_dir=args.cache_dir, **flags), args.data_dir)
    missing = [f"--{k.replace('_', '-')}" for k in ("dataset", "algorithms", "steps", "checkpoint_freq") if flags[k] is None]
    if missing:
        from dganalysis.validation import ConfigError

        raise ConfigError(f"give --config or the flags {', '.join(missing)}")
    sweep = Sweep(**{k: v for k, v in flags.items() if v is not None})
    domains = None if args.cache_dir is None else grid_domains(sweep.dataset, sweep.dataset_kwargs, args.cache_dir)
    return with_data_root(make_jobs(sweep, domains), args.data_dir)


def with_data_root(jobs: list, data_dir: str | None) -> list:
    """The jobs with ``--data_dir`` (else ``$DGANALYSIS_DATA``) as the builder keyword that takes DomainBed's data
    root (:func:`dganalysis.data.registry.root_kwargs`), where their ``dataset_kwargs`` do not set it already; a
    location keyword, so no job id changes (:func:`dganalysis.training.job.is_location_kwarg`). A ``--data_dir`` that
    looks like our cache folder and holds no data for the dataset is an error naming ``--cache_dir``."""
    import dataclasses
    import os

    from dganalysis.data.registry import DATA_ENV, root_kwargs

    root = data_dir or os.environ.get(DATA_ENV) or None
    out = []
    for job in jobs:
        extra = {k: v for k, v in root_kwargs(job.dataset, root).items() if k not in job.dataset_kwargs}
        if data_dir:
            check_not_a_cache(job.dataset, data_dir, root_kwargs(job.dataset, data_dir))
        out.append(dataclasses.replace(job, dataset_kwargs={**job.dataset_kwargs, **extra}) if extra else job)
    return out


#: what our dataset cache holds (packed image datasets, PaHCC's renders, its npm packages), DomainBed's roots do not
CACHE_MARKERS = ("imported", "pahcc", "npm")


def check_not_a_cache(dataset: str, data_dir: str, kwargs: dict) -> None:
    """Refuse a ``--data_dir`` that looks like a cache folder (it holds ``imported/``, ``pahcc/`` or ``npm/``) and
    not the dataset's data (or the dataset reads no files, so the folder would go unused): before the rename
    ``--data_dir`` meant the cache, now ``--cache_dir`` does."""
    from pathlib import Path

    from dganalysis.validation import ConfigError

    folder = Path(data_dir).expanduser()
    marks = [m for m in CACHE_MARKERS if (folder / m).is_dir()]
    if not marks:
        return
    if kwargs:  # the dataset reads a root: is its data there too (a shared $DGANALYSIS_DATA holds both)?
        from dganalysis.preflight import data_problem, mnist_problem

        key, value = next(iter(kwargs.items()))
        if key == "mnist_dir" or dataset_checked(dataset):
            found = mnist_problem(value) is None if key == "mnist_dir" else data_problem(dataset, kwargs) is None
        else:  # files we do not check (Spawrious, a user's dataset): anything beside the cache's folders
            found = any(p.name not in CACHE_MARKERS and not p.name.startswith(".") for p in folder.iterdir())
        if found:
            return
    raise ConfigError(f"--data_dir {data_dir}: looks like a dganalysis cache folder (it holds {', '.join(m + '/' for m in marks)}) "
                      f"and not the data of {dataset}; --data_dir is DomainBed's data root (the folder holding "
                      f"PACS/, MNIST/, ...): pass the cache as --cache_dir {data_dir}")


def dataset_checked(dataset: str) -> bool:
    """Whether :func:`dganalysis.preflight.data_problem` checks ``dataset``'s files (else it cannot tell data from a
    cache, and a cache-looking ``--data_dir`` is refused)."""
    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.data.wilds_data import WILDS_BENCHMARKS

    return dataset in BENCHMARKS or dataset in WILDS_BENCHMARKS or dataset == "CelebA_Blond"


def main_sweep(args: argparse.Namespace) -> int:
    """Run the ``sweep`` verb; exit status 1 when any job failed, 2 when a dry run found problems (missing data
    or weight files, see :mod:`dganalysis.preflight`) that a real run refuses before writing any job folder."""
    from dganalysis import plugins
    from dganalysis.sweep.launcher import ClaimPolicy, ExecutionOptions, run_sweep

    imports = plugins.import_requested(args.imports)  # registrations must exist before the grid is built
    jobs = jobs_from_args(args)
    slurm = {
        k: v
        for k, v in {
            "cluster": args.slurm_cluster,
            "slurm_partition": args.slurm_partition,
            "timeout_min": args.timeout_min,
            "gpus_per_node": args.gpus_per_node,
            "cpus_per_task": args.cpus_per_task,
            "mem_gb": args.mem_gb,
            "slurm_array_parallelism": args.array_parallelism,
        }.items()
        if v is not None
    }
    status = run_sweep(
        jobs,
        args.store,
        data_dir=args.cache_dir,
        launcher=args.launcher,
        n_workers=args.workers,
        progress=not args.no_progress,
        dry_run=args.dry_run,
        retry_failed=not args.no_retry_failed,
        execution=ExecutionOptions(device=args.device, compile=args.compile, precision=args.precision,
                                   imports=imports, mixed_threads=args.mixed_threads,
                                   runs_per_gpu=args.runs_per_gpu, mps=not args.no_mps, batch_runs=args.batch_runs),
        claims=ClaimPolicy(wait=not args.no_wait, lease_s=args.lease_s,
                           **({} if args.poll_s is None else {"poll_s": args.poll_s})),
        slurm=slurm,
    )
    cols = ["job_id", "algorithm", "train_domains", "test_domains", "hparams_seed", "trial_seed", "status"]
    print(status[cols].to_string(index=False))
    counts = status["status"].value_counts().to_dict()
    print("jobs: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    problems = status.attrs.get("problems") or []
    if problems:  # the dry run: the problems a real run would refuse to start with
        import sys

        from dganalysis.preflight import format_problems

        sys.stderr.write("dganalysis sweep --dry-run: " + format_problems(problems, "in the dry run; a real run refuses to start")
                         + "\n")
        return 2
    return 1 if counts.get("failed", 0) else 0
