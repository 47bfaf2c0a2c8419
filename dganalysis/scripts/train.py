"""``python -m dganalysis.scripts.train``: one run, with every flag of DomainBed's ``scripts/train.py``.

A drop-in for ``python -m domainbed.scripts.train`` (Gulrajani & Lopez-Paz 2021, ``domainbed/scripts/train.py``,
b93c22a): the same flags, defaults and meanings, and the same files in ``--output_dir``: ``out.txt`` and ``err.txt``
(everything printed, as DomainBed tees them), ``results.jsonl`` (one record per checkpoint, ``args`` holding
DomainBed's parsed arguments), ``model.pkl`` unless ``--skip_model_save`` (DomainBed's dict: ``args``,
``model_input_shape``, ``model_num_classes``, ``model_num_domains``, ``model_hparams``, ``model_dict``; with
``--save_model_every_checkpoint`` also ``model_step{step}.pkl`` at every checkpoint, as DomainBed's), and ``done``.

With DomainBed's flags only it runs what DomainBed would run (``--mode auto``, the default): our
``domainbed_exact`` mode (:mod:`dganalysis.training.exact`) where it replays DomainBed's random draws in DomainBed's order
(its MNIST datasets and the Debug ones), so for the same flags the records equal DomainBed's (on a CPU, fp32;
``tests/reference/test_domainbed_scripts_train.py`` runs both); our default engine elsewhere (DomainBed's image
benchmarks, ``class_balanced`` / ``augment``: other draws, the same experiment; faster, bf16 where it pays).
``--mode domainbed_exact`` / ``--mode default`` pick one (the first refused by name where it cannot replay the run).
What we add is said in ``out.txt`` (the mode used and why, ``threads``, ``precision``, the cuDNN/TF32 settings) and
in each record (``mode``, ``mode_requested``, ``precision``, ``cuda_backends`` —
:func:`dganalysis.provenance.cuda_backends`, not applicable on a CPU —, ``threads``, ``provenance``, the domain
names, ``spec.json`` beside them).

Failures are said: the run's data (:func:`data_problems`) is checked once ``out.txt`` and ``err.txt`` are open, so
a missing folder or weight file is one line in ``err.txt`` (exit status 2); any other failure leaves its traceback in
``err.txt`` (exit status 1).

``--task domain_adaptation`` and ``--uda_holdout_fraction`` are DomainBed's: each test environment's ``in`` split
gives ``int(len * uda_holdout_fraction)`` examples (chosen by its split seed) to an unlabelled ``uda`` split,
evaluated as ``env{k}_uda_acc``; with ``domain_adaptation`` every step also draws one batch of its images, which an
algorithm whose ``update`` takes ``unlabeled`` receives (DomainBed's all ignore it; :mod:`dganalysis.training.exact` replays
the loaders of those splits draw for draw).

Refused by name, never ignored: ``--task domain_adaptation`` without unlabelled examples (``--uda_holdout_fraction``
0: DomainBed's ``train.py`` raises "Not enough unlabeled samples"), a ``--uda_holdout_fraction`` outside [0, 1), a
dataset or algorithm that is neither DomainBed's nor registered (ours, or a user
module's from ``--import`` / ``$DGANALYSIS_IMPORT``: :mod:`dganalysis.plugins`), an ``--hparams`` key the algorithm
does not have, an explicit ``--mode domainbed_exact`` it cannot replay (DomainBed's image benchmarks,
``class_balanced``, ``augment``). Departures: the run holds a claim on ``--output_dir`` while it trains (our sweep
store's, :mod:`dganalysis.sweep.store`: a second process started on the same folder is refused, and the drop-in
sweep's ``delete_incomplete`` leaves the folder alone); an earlier run's files in ``--output_dir`` are removed first
(DomainBed appends to its ``results.jsonl``); ``model.pkl``'s ``model_dict`` holds DomainBed's parameter names
(:func:`dganalysis.training.exact.domainbed_model_dict`: DomainBed's class loads it for ERM and its kin); ``model.pt``
(ours, what :func:`dganalysis.training.train.load_model` reads) and ``spec.json`` are written too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dganalysis.preflight import mnist_problem
from dganalysis.records.read import DOMAINBED_ENVIRONMENTS
from dganalysis.validation import ConfigError

#: DomainBed's ``MultipleDomainDataset.N_STEPS`` (no dataset overrides it)
DOMAINBED_N_STEPS = 5001
#: DomainBed's ``CHECKPOINT_FREQ`` per dataset (100 where a dataset keeps the default)
DOMAINBED_CHECKPOINT_FREQ = {"VLCS": 300, "PACS": 300, "OfficeHome": 300, "TerraIncognita": 300, "SVIRO": 300,
                             "DomainNet": 1000}
#: datasets read from MNIST's raw files (DomainBed: ``torchvision.datasets.MNIST(data_dir)``)
MNIST_DATASETS = ("RotatedMNIST", "ColoredMNIST")
#: DomainBed's flags (the keys of ``vars(args)`` in its records); ours come after them in the parser
DOMAINBED_FLAGS = ("data_dir", "dataset", "algorithm", "task", "hparams", "hparams_seed", "trial_seed", "seed",
                   "steps", "checkpoint_freq", "test_envs", "output_dir", "holdout_fraction", "uda_holdout_fraction",
                   "skip_model_save", "save_model_every_checkpoint")


#: ``--mode`` values: ``auto`` resolves to one of the other two (:func:`resolved_mode`)
TRAIN_MODES = ("auto", "domainbed_exact", "default")


class Refused(ConfigError):
    """A DomainBed flag (or value) this drop-in cannot honour; the message names it (a
    :class:`~dganalysis.validation.ConfigError`)."""


def exact_problem(args: argparse.Namespace) -> str | None:
    """Why ``domainbed_exact`` cannot replay DomainBed's run of these (checked) flags, or None when it can: its
    MNIST datasets and the Debug ones, without ``class_balanced`` / ``augment`` hparams (:mod:`dganalysis.training.exact`)."""
    from dganalysis.training.job import EXACT_DATASETS

    if args.dataset not in EXACT_DATASETS:
        return (f"--dataset {args.dataset} goes through DomainBed's torchvision image transforms, which "
                "domainbed_exact does not replay")
    over = json.loads(args.hparams) if args.hparams else {}
    for key in ("class_balanced", "augment"):
        if over.get(key):
            return f"--hparams sets {key}, which domainbed_exact does not replay"
    return None


def resolved_mode(args: argparse.Namespace) -> str:
    """The mode the run uses: ``--mode`` when explicit; for ``auto``, ``domainbed_exact`` where it replays
    DomainBed's draws (:func:`exact_problem`), else ``default`` (our engine)."""
    if args.mode != "auto":
        return args.mode
    return "domainbed_exact" if exact_problem(args) is None else "default"


def build_parser() -> argparse.ArgumentParser:
    """DomainBed's parser (names, types, defaults, choices), then ours: ``--mode``, ``--threads``, ``--precision``,
    ``--device``, ``--n_workers``."""
    p = argparse.ArgumentParser(description="Domain generalization")
    p.add_argument("--data_dir", type=str)
    p.add_argument("--dataset", type=str, default="RotatedMNIST")
    p.add_argument("--algorithm", type=str, default="ERM")
    p.add_argument("--task", type=str, default="domain_generalization",
                   choices=["domain_generalization", "domain_adaptation"])
    p.add_argument("--hparams", type=str, help="JSON-serialized hparams dict")
    p.add_argument("--hparams_seed", type=int, default=0, help='Seed for random hparams (0 means "default hparams")')
    p.add_argument("--trial_seed", type=int, default=0,
                   help="Trial number (used for seeding split_dataset and random_hparams).")
    p.add_argument("--seed", type=int, default=0, help="Seed for everything else")
    p.add_argument("--steps", type=int, default=None, help="Number of steps. Default is dataset-dependent.")
    p.add_argument("--checkpoint_freq", type=int, default=None,
                   help="Checkpoint every N steps. Default is dataset-dependent.")
    p.add_argument("--test_envs", type=int, nargs="+", default=[0])
    p.add_argument("--output_dir", type=str, default="train_output")
    p.add_argument("--holdout_fraction", type=float, default=0.2)
    p.add_argument("--uda_holdout_fraction", type=float, default=0,
                   help="For domain adaptation, %% of test to use unlabeled for training.")
    p.add_argument("--skip_model_save", action="store_true")
    p.add_argument("--save_model_every_checkpoint", action="store_true",
                   help="also save model_step{step}.pkl at every checkpoint (DomainBed's; none with --skip_model_save)")
    ours = p.add_argument_group("dganalysis (not DomainBed's)")
    ours.add_argument("--mode", choices=list(TRAIN_MODES), default="auto",
                      help="auto (default): domainbed_exact where it replays the run, else default (out.txt and "
                           "every record say which); domainbed_exact: DomainBed's random draws, records equal to its "
                           "train.py's (refused where it cannot replay the run); default: our engine (other draws, "
                           "the same experiment)")
    ours.add_argument("--threads", type=int, default=None,
                      help="CPU threads for torch (default: $DGANALYSIS_THREADS, else torch's count)")
    ours.add_argument("--precision", choices=["auto", "fp32", "bf16"], default="auto",
                      help="--mode default only (domainbed_exact computes in fp32): auto = bf16 on CUDA and AMX CPUs")
    ours.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: CUDA when available)")
    ours.add_argument("--n_workers", type=int, default=None,
                      help="domainbed_exact: DomainBed's dataset N_WORKERS whose loader prefetching decides when "
                           "its seeds are drawn (default 8, DomainBed's; 0 equals a DomainBed run patched to 0)")
    ours.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                      help="module or .py file registering your own algorithms/datasets (repeatable; also "
                           "$DGANALYSIS_IMPORT, comma-separated; docs/extending.md)")
    return p


def check_flags(args: argparse.Namespace) -> None:
    """Refuse, by name, what DomainBed accepts and this drop-in cannot do."""
    if not 0 <= args.uda_holdout_fraction < 1:
        raise Refused(f"--uda_holdout_fraction {args.uda_holdout_fraction}: expected a fraction in [0, 1)")
    if args.task == "domain_adaptation" and args.uda_holdout_fraction == 0:
        raise Refused("--task domain_adaptation: not enough unlabeled samples for domain adaptation "
                      "(--uda_holdout_fraction 0 leaves none; DomainBed's train.py raises the same)")
    _check_names(args)
    names = environments(args.dataset, args.data_dir)
    n = len(names)
    bad = [e for e in args.test_envs if not 0 <= e < n]
    if bad or len(set(args.test_envs)) != len(args.test_envs):
        raise Refused(f"--test_envs {' '.join(map(str, args.test_envs))}: expected distinct environment indices "
                      f"in 0..{n - 1} of {args.dataset} ({names})")
    if args.hparams is not None:
        try:
            over = json.loads(args.hparams)
        except ValueError as err:
            raise Refused(f"--hparams {args.hparams!r}: not JSON ({err})") from None
        if not isinstance(over, dict):
            raise Refused(f"--hparams {args.hparams!r}: expected a JSON object of hyperparameters")
        from dganalysis.algorithms.registry import unknown_hparams

        bad = unknown_hparams(args.algorithm, over)
        if bad:
            raise Refused(f"--hparams: {bad}")
    if args.mode == "domainbed_exact":
        why = exact_problem(args)
        if why:
            raise Refused(f"--mode domainbed_exact: {why}; use --mode auto (the default: domainbed_exact where it "
                          "can, else our engine) or --mode default (our engine: the same experiment, other random "
                          "draws)")


def _check_names(args: argparse.Namespace) -> None:
    """``--dataset`` and ``--algorithm`` are registered names: DomainBed's, ours, or a user module's (``--import``,
    ``$DGANALYSIS_IMPORT``: :mod:`dganalysis.plugins`)."""
    from dganalysis.algorithms import available as algorithms
    from dganalysis.data.registry import available as datasets
    from dganalysis.registry import unknown_name

    known = datasets()
    if args.dataset not in DOMAINBED_ENVIRONMENTS and args.dataset not in known:
        raise Refused(f"--dataset {args.dataset}: {unknown_name('dataset', args.dataset, {*DOMAINBED_ENVIRONMENTS, *known})}"
                      " (your own datasets: --import MODULE or $DGANALYSIS_IMPORT)")
    if args.algorithm not in algorithms():
        raise Refused(f"--algorithm {args.algorithm}: {unknown_name('algorithm', args.algorithm, algorithms())} "
                      "(your own algorithms: --import MODULE or $DGANALYSIS_IMPORT)")


def environments(dataset: str, data_dir: str | None = None) -> list[str]:
    """The environment names ``--test_envs`` indexes: DomainBed's for its datasets, otherwise the registered
    dataset's domain names (built from ``--data_dir`` when it reads one)."""
    if dataset in DOMAINBED_ENVIRONMENTS:
        return list(DOMAINBED_ENVIRONMENTS[dataset])
    from dganalysis.data.domains import domain_names

    return list(domain_names(dataset, data_kwargs(dataset, data_dir), None))


def data_problems(args: argparse.Namespace) -> list[str]:
    """What the run of these (checked) flags needs and lacks, one line each ([] when nothing): MNIST's raw files,
    or our preflight (:func:`dganalysis.preflight.job_problems`: the benchmark's folders, the pretrained weight
    files)."""
    return data_problems_of([args])


def data_problems_of(runs: Sequence[argparse.Namespace]) -> list[str]:
    """:func:`data_problems` of several runs' (checked) flags, each problem once; each dataset folder and network
    setting is looked at once (the sweep drop-in checks every run with it before launching any)."""
    from dganalysis.preflight import job_problems

    problems: list[str] = []
    ours = []
    for args in runs:
        if args.dataset.startswith("Debug"):
            continue
        if args.dataset not in DOMAINBED_ENVIRONMENTS:  # a registered dataset of ours or a user module's
            ours.append(job_from_args(args))
            continue
        if args.dataset in MNIST_DATASETS:
            p = mnist_problem(args.data_dir)
        elif not args.data_dir:
            p = f"--data_dir: not given; --dataset {args.dataset} reads its files from <data_dir>"
        else:
            ours.append(job_from_args(args))
            continue
        if p and p not in problems:
            problems.append(p)
    return problems + [p for p in job_problems(ours) if p not in problems]


def data_kwargs(dataset: str, data_dir: str | None) -> dict[str, Any]:
    """Where our dataset builder finds DomainBed's ``--data_dir``: ``mnist_dir`` for its MNIST datasets (the folder
    holding ``MNIST/raw``), ``root`` for its image benchmarks, WILDS and Spawrious (and a user's dataset with a
    ``root`` parameter); nothing for the Debug ones (:func:`dganalysis.data.registry.root_kwargs`). Without
    ``--data_dir``, ``$DGANALYSIS_DATA`` is the root (as for ``dganalysis sweep``); the records keep DomainBed's
    ``data_dir`` as given."""
    from dganalysis.data.registry import DATA_ENV, root_kwargs

    return root_kwargs(dataset, data_dir or os.environ.get(DATA_ENV))


def job_from_args(args: argparse.Namespace):
    """The :class:`dganalysis.training.job.Job` DomainBed's ``train.py`` runs for these flags."""
    from dganalysis.training.job import Job

    names = environments(args.dataset, args.data_dir)
    test = [names[i] for i in args.test_envs]
    kwargs = data_kwargs(args.dataset, args.data_dir)
    return Job(
        args.dataset, args.algorithm, [d for d in names if d not in test], test,
        hparams_seed=args.hparams_seed, trial_seed=args.trial_seed,
        steps=args.steps or DOMAINBED_N_STEPS,
        checkpoint_freq=args.checkpoint_freq or DOMAINBED_CHECKPOINT_FREQ.get(args.dataset, 100),
        holdout_fraction=args.holdout_fraction, dataset_kwargs=kwargs,
        hparams_overrides=json.loads(args.hparams) if args.hparams else {},
        save_model=not args.skip_model_save, seed=args.seed, domainbed_exact=resolved_mode(args) == "domainbed_exact",
        task=args.task, uda_holdout_fraction=args.uda_holdout_fraction,
    )


class _Tee:
    """DomainBed's ``misc.Tee``: writes go to the stream and to a file (appended), flushed at once."""

    def __init__(self, path: Path, stream: Any) -> None:
        self.stream, self.file = stream, open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def write(self, message: str) -> int:
        self.stream.write(message)
        self.file.write(message)
        self.flush()
        return len(message)

    def flush(self) -> None:
        self.stream.flush()
        self.file.flush()

    def isatty(self) -> bool:
        return False

    def close(self) -> None:
        self.file.close()


def print_row(row: Sequence[Any], colwidth: int = 12) -> None:
    """DomainBed's ``misc.print_row`` (text): floats with 10 decimals, every cell cut to ``colwidth``."""
    import numpy as np

    def fmt(x: Any) -> str:
        if isinstance(x, float) or np.issubdtype(type(x), np.floating):
            x = f"{x:.10f}"
        return str(x).ljust(colwidth)[:colwidth]

    print("  ".join(fmt(x) for x in row), "")


def _environment() -> None:
    import numpy as np
    import PIL
    import torch
    import torchvision

    import dganalysis

    print("Environment:")
    print(f"\tPython: {sys.version.split(' ')[0]}")
    print(f"\tPyTorch: {torch.__version__}")
    print(f"\tTorchvision: {torchvision.__version__}")
    print(f"\tCUDA: {torch.version.cuda}")
    print(f"\tCUDNN: {torch.backends.cudnn.version()}")
    print(f"\tNumPy: {np.__version__}")
    print(f"\tPIL: {PIL.__version__}")
    print(f"\tdganalysis: {getattr(dganalysis, '__version__', 'unknown')}")


#: record fields DomainBed's ``train.py`` writes besides the algorithm's losses and the accuracies
_DOMAINBED_RECORD = ("step", "epoch", "step_time", "mem_gb")


def _rows(records: list[dict[str, Any]], loss_keys: set[str]) -> None:
    """DomainBed's checkpoint table: sorted keys when they change, then the values."""
    last = None
    for rec in records:
        keys = sorted(k for k in rec if k in _DOMAINBED_RECORD or k in loss_keys or
                      (k.startswith("env") and k.endswith("_acc")))
        if keys != last:
            print_row(keys)
            last = keys
        print_row([rec[k] for k in keys])


def describe_backends(backends: dict[str, Any] | str) -> str:
    """:func:`dganalysis.provenance.cuda_backends` in words, for ``out.txt``."""
    if isinstance(backends, str):
        return backends
    return " ".join(f"{k}={v}" for k, v in backends.items())


def run(args: argparse.Namespace, heartbeat: Any = None) -> Path:
    """Train as DomainBed's ``train.py`` would for ``args`` and leave its files in ``args.output_dir``."""
    import torch

    from dganalysis.training import train

    job = job_from_args(args)
    out = Path(args.output_dir)
    hparams = train.job_hparams(job)
    print("HParams:")
    for k, v in sorted(hparams.items()):
        print(f"\t{k}: {v}")
    exact = job.domainbed_exact
    mode = "domainbed_exact" if exact else "default"
    precision = "fp32" if exact else train.algorithm_precision(job.algorithm, args.precision)
    runtime = train.make_runtime(args.device, precision, None, args.threads, exact=exact)  # as run_job sets it up
    backends = runtime.backends
    precision = "fp32" if exact else runtime.precision
    workers = 8 if args.n_workers is None else args.n_workers
    why = ""
    if args.mode == "auto":
        problem = exact_problem(args)
        why = (" (--mode auto: DomainBed's random draws replayed)" if exact else
               f" (--mode auto: {problem}; our engine runs the same experiment with other random draws)")
    print(f"dganalysis: mode {mode}{why}, device {runtime.device}, precision {precision}, threads {runtime.threads}, "
          f"cuDNN/TF32: {describe_backends(backends)}" + (f", DomainBed's N_WORKERS modelled: {workers}" if exact else ""))
    sys.stdout.flush()
    from dganalysis.sweep.packing import packing_from_env

    extra = {"mode": mode, "mode_requested": args.mode, "cuda_backends": backends, **packing_from_env()}
    if exact:
        import time

        t0 = time.time()
        job_dir = train.start_job_dir(job, out, train.runtime_stamp(runtime, True))
        with train.job_threads(runtime):
            train.run_job_exact(job, job_dir, args.data_dir, runtime.device, t0, heartbeat=heartbeat,
                                num_workers=args.n_workers, n_threads=runtime.threads, extra_fields=extra,
                                on_checkpoint=checkpoint_saver(args, out, hparams))
    else:
        train.run_job(job, out, device=args.device, precision=args.precision, threads=args.threads,
                      heartbeat=heartbeat, extra_fields=extra, on_checkpoint=checkpoint_saver(args, out, hparams))
    db_args = {k: getattr(args, k) for k in DOMAINBED_FLAGS}
    records = _domainbed_args(out / "results.jsonl", db_args)
    losses = {k for k in records[0] if k not in _DOMAINBED_RECORD and isinstance(records[0][k], float)
              and not k.endswith("_acc") and k not in ("elapsed",)} if records else set()
    _rows(records, losses)
    if not args.skip_model_save:
        from dganalysis.training.exact import domainbed_model_dict

        payload = torch.load(out / "model.pt", map_location="cpu", weights_only=False)
        model_dict = domainbed_model_dict(train.load_model(out), payload["algorithm"], job.steps)  # DomainBed's names
        torch.save({"args": db_args, "model_input_shape": tuple(payload["input_shape"]),
                    "model_num_classes": payload["n_classes"], "model_num_domains": payload["n_domains"],
                    "model_hparams": payload["hparams"], "model_dict": model_dict}, out / "model.pkl")
    return out


def checkpoint_saver(args: argparse.Namespace, out: Path, hparams: dict[str, Any]) -> Any:
    """``--save_model_every_checkpoint``: a callback writing ``model_step{step}.pkl`` (DomainBed's ``save_checkpoint``
    dict) after each checkpoint's record; None without the flag or with ``--skip_model_save`` (DomainBed saves
    nothing then)."""
    if not args.save_model_every_checkpoint or args.skip_model_save:
        return None
    import torch

    db_args = {k: getattr(args, k) for k in DOMAINBED_FLAGS}

    from dganalysis.training.exact import domainbed_model_dict

    def save(step: int, algorithm: Any) -> None:  # DomainBed's names, as model.pkl's
        state = {k: v.detach().cpu() for k, v in domainbed_model_dict(algorithm, args.algorithm, step + 1).items()}
        torch.save({"args": db_args, "model_input_shape": tuple(algorithm.input_shape),
                    "model_num_classes": algorithm.n_classes, "model_num_domains": algorithm.n_domains,
                    "model_hparams": dict(hparams), "model_dict": state}, out / f"model_step{step}.pkl")

    return save


def _domainbed_args(path: Path, db_args: dict[str, Any]) -> list[dict[str, Any]]:
    """Rewrite ``results.jsonl`` with each record's ``args`` holding DomainBed's parsed arguments as given (``steps``
    None when not given, ``hparams`` the string passed, ...) over ours; returns the records."""
    from dganalysis import io

    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for rec in records:
        rec["args"] = {**rec.get("args", {}), **db_args}
    io.write_text(path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
    return records


def main(argv: Sequence[str] | None = None) -> int:
    """Parse DomainBed's flags and run; returns the exit status (2 for a refused flag, missing data or a run exact mode
    cannot replay; 1 for a run that failed, its traceback in ``err.txt``)."""
    return main_args(build_parser().parse_args(argv))


def main_args(args: argparse.Namespace) -> int:
    """:func:`main` on flags already parsed (by :func:`build_parser`'s arguments; ``dganalysis train`` uses it)."""
    from dganalysis import plugins
    from dganalysis.validation import ConfigError

    try:
        try:
            plugins.import_requested(getattr(args, "imports", ()))
        except ConfigError as err:
            raise Refused(str(err)) from None
        check_flags(args)
    except Refused as err:
        sys.stderr.write(f"dganalysis.scripts.train: {err}\n")
        return 2
    from dganalysis.sweep.store import JobClaim, try_claim

    os.makedirs(args.output_dir, exist_ok=True)
    out_dir = Path(args.output_dir)
    claim = try_claim(out_dir)
    if not isinstance(claim, JobClaim):
        sys.stderr.write(f"dganalysis.scripts.train: --output_dir {args.output_dir}: another live process is "
                         f"training this run ({claim.describe()}); nothing written\n")
        return 2
    try:
        return _run_claimed(args, out_dir, claim)
    finally:
        claim.release()


def _run_claimed(args: argparse.Namespace, out_dir: Path, claim: Any) -> int:
    """The run under its claim (renewed by a heartbeat; checked before every write)."""
    for name in ("out.txt", "err.txt"):
        (out_dir / name).unlink(missing_ok=True)
    for old in out_dir.glob("model_step*.pkl"):  # an earlier run's --save_model_every_checkpoint files
        old.unlink()
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out_dir / "out.txt", stdout), _Tee(out_dir / "err.txt", stderr)
    try:
        _environment()
        print("Args:")
        for k, v in sorted(vars(args).items()):
            print(f"\t{k}: {v}")
        try:
            problems = data_problems(args)
            if problems:  # said in err.txt too (the sweep drop-in checks them before launching)
                sys.stderr.write(f"dganalysis.scripts.train: nothing trained: {problems[0]}\n"
                                 + "".join(f"  and: {p}\n" for p in problems[1:]))
                return 2
            run(args, heartbeat=claim.check)
        except ValueError as err:
            if "domainbed_exact" not in str(err) or isinstance(err, ConfigError):
                raise
            sys.stderr.write(f"dganalysis.scripts.train: {err}\n(--mode default runs it with our own draws)\n")
            return 2
        io_done = out_dir / "done"
        io_done.write_text("done")
        return 0
    except ConfigError as err:  # bad input found late: one line, in err.txt too
        sys.stderr.write(f"dganalysis.scripts.train: {err}\n")
        return 2
    except Exception as err:  # printed while err.txt is still written, so the run's folder keeps the traceback
        traceback.print_exc()
        sys.stderr.write(f"dganalysis.scripts.train: the run failed ({type(err).__name__}); the traceback above is "
                         f"in {out_dir / 'err.txt'}\n")
        return 1
    finally:
        for tee in (sys.stdout, sys.stderr):
            if isinstance(tee, _Tee):
                tee.close()
        sys.stdout, sys.stderr = stdout, stderr


if __name__ == "__main__":
    sys.exit(main())
