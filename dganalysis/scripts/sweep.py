"""``python -m dganalysis.scripts.sweep launch|delete_incomplete``: DomainBed's sweep, each run by our ``train``.

A drop-in for ``python -m domainbed.scripts.sweep`` (Gulrajani & Lopez-Paz 2021, ``domainbed/scripts/sweep.py``,
b93c22a): the same flags and defaults, the same job list — the same argument dict per run (``dataset``,
``algorithm``, ``test_envs`` — every single test env and every pair unless ``--single_test_envs`` —, ``holdout_fraction``,
``hparams_seed``, ``data_dir``, ``task``, ``trial_seed``, ``seed`` = DomainBed's ``seed_hash`` of the run, and
``steps`` / ``hparams`` when given) and the same output folder, ``<output_dir>/<md5 of the sorted-key JSON of the
dict>`` (``tests/reference/test_domainbed_scripts_sweep.py`` compares both with DomainBed's ``make_args_list`` and
``Job``). Each run's command is DomainBed's with ``domainbed`` replaced by ``dganalysis``:
``python -m dganalysis.scripts.train ...`` (:mod:`dganalysis.scripts.train`, ``--mode auto``: ``domainbed_exact`` where
it replays DomainBed's draws, so the records equal those of DomainBed's sweep; our engine elsewhere). A run is Done
when its folder holds ``done``, Incomplete when the folder exists without it, Not launched otherwise. ``launch``
checks first every run to launch with the train script's own checks (:func:`preflight`: its flags, by
:func:`dganalysis.scripts.train.check_flags`; its data, MNIST's raw files, the benchmark folders and the pretrained
weight files, by :func:`dganalysis.scripts.train.data_problems_of` — not for the ``dummy`` launcher, and
``--no_preflight`` skips the data) and launches nothing, listing the problems, if any fails; then it starts the Not
launched ones. Every launcher returns each run's exit status: it is written into the run's folder
(``exit_status``), and a launch with failed runs lists them (folder, status, the first line of the reason from the
run's ``err.txt``: :func:`failure_reason`) and exits 1. ``delete_incomplete`` deletes the Incomplete ones (after
asking, unless ``--skip_confirmation``), as DomainBed's — but not one whose ``train`` still holds its claim (a run
still training, :mod:`dganalysis.sweep.store`), which DomainBed would delete.

Launchers, by DomainBed's names: ``local`` (one after the other in this machine's shell), ``dummy`` (print each
command), ``multi_gpu`` (one run per visible GPU at a time, ``CUDA_VISIBLE_DEVICES`` set per run; ours:
``--runs_per_gpu N|auto`` packs several per GPU, under CUDA MPS where the machine has it); and ``slurm``
(ours): every command as one task of a Slurm job array through submitit, configured by ``$DGANALYSIS_SLURM`` (a JSON
dict of submitit parameters, e.g. ``{"slurm_partition": "gpu", "gpus_per_node": 1, "timeout_min": 600}``; the
``cluster`` key picks submitit's ``local`` or ``debug`` executor to try it without Slurm) and
``$DGANALYSIS_SLURM_LOGS`` (the log folder, default ``<output_dir>/.submitit``).

Users' own algorithms and datasets (:mod:`dganalysis.plugins`): ``--import MODULE`` (ours, repeatable) or
``$DGANALYSIS_IMPORT`` registers them before the job list is made; the runs' ``train`` commands, DomainBed's as
they are, import them through ``$DGANALYSIS_IMPORT``, which the sweep sets for the processes it starts.

Where we differ, on purpose: ``--seed`` (unused by DomainBed) seeds the order in which runs are launched, so a
launch is repeatable; ``--task domain_adaptation`` is refused before anything is launched (DomainBed's sweep passes
no ``--uda_holdout_fraction``, so each of its runs fails with "Not enough unlabeled samples"; ``train`` refuses it too);
an unknown dataset is an error naming it (DomainBed: ``NotImplementedError``). For claims that let several machines
share one store, failed-run records and preflight checks, use ``dganalysis sweep`` (it accepts these underscore
flags too, see ``docs/domainbed.md``).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from dganalysis.records.read import DOMAINBED_ENVIRONMENTS
from dganalysis.scripts._sweepdir import DOMAINBED_ALGORITHMS
from dganalysis.training.hparams import DOMAINBED_DATASETS, seed_hash
from dganalysis.validation import ConfigError

#: DomainBed's default ``--datasets``: its datasets but the Debug ones
DEFAULT_DATASETS = [d for d in DOMAINBED_DATASETS if "Debug" not in d]
#: the command each run executes (DomainBed's, ``domainbed`` replaced)
TRAIN_MODULE = "dganalysis.scripts.train"
#: the file in a run's folder holding the exit status of its command, when the launcher knows it
EXIT_STATUS_FILE = "exit_status"


class Job:
    """One run of the sweep: DomainBed's ``sweep.Job`` (same folder name, command and state)."""

    NOT_LAUNCHED = "Not launched"
    INCOMPLETE = "Incomplete"
    DONE = "Done"

    def __init__(self, train_args: dict[str, Any], sweep_output_dir: str) -> None:
        args_hash = hashlib.md5(json.dumps(train_args, sort_keys=True).encode("utf-8")).hexdigest()
        self.output_dir = os.path.join(sweep_output_dir, args_hash)
        self.train_args = copy.deepcopy(train_args)
        self.train_args["output_dir"] = self.output_dir
        command = ["python", "-m", TRAIN_MODULE]
        for k, v in sorted(self.train_args.items()):
            if isinstance(v, list):
                v = " ".join(str(x) for x in v)
            elif isinstance(v, str):
                v = shlex.quote(v)
            command.append(f"--{k} {v}")
        self.command_str = " ".join(command)
        if os.path.exists(os.path.join(self.output_dir, "done")):
            self.state = Job.DONE
        elif os.path.exists(self.output_dir):
            self.state = Job.INCOMPLETE
        else:
            self.state = Job.NOT_LAUNCHED

    def __str__(self) -> str:
        info = (self.train_args["dataset"], self.train_args["algorithm"], self.train_args["test_envs"],
                self.train_args["hparams_seed"])
        return f"{self.state}: {self.output_dir} {info}"


def all_test_env_combinations(n: int) -> Iterator[list[int]]:
    """Every single test env and every pair, in DomainBed's order ([0], [0, 1], [0, 2], ..., [1], [1, 2], ...)."""
    if n < 3:
        raise ConfigError(f"sweep: a dataset of {n} environments; pairs of test envs need at least 3")
    for i in range(n):
        yield [i]
        for j in range(i + 1, n):
            yield [i, j]


def num_environments(dataset: str, data_dir: str | None = None) -> int:
    """How many environments DomainBed's dataset has, or a registered one's (a user's: ``--import``,
    ``$DGANALYSIS_IMPORT``); an unknown name is an error naming it."""
    if dataset in DOMAINBED_ENVIRONMENTS:
        return len(DOMAINBED_ENVIRONMENTS[dataset])
    from dganalysis.data.registry import available
    from dganalysis.registry import unknown_name

    if dataset not in available():
        raise ConfigError(f"sweep: --datasets {dataset}: not one of DomainBed's datasets nor a registered one: "
                          f"{unknown_name('dataset', dataset, {*DOMAINBED_ENVIRONMENTS, *available()})} (your own "
                          "datasets: --import MODULE or $DGANALYSIS_IMPORT)")
    from dganalysis.scripts.train import environments

    return len(environments(dataset, data_dir))


def make_args_list(n_trials: int, dataset_names: Sequence[str], algorithms: Sequence[str], n_hparams_from: int,
                   n_hparams: int, steps: int | None, data_dir: str, task: str, holdout_fraction: float,
                   single_test_envs: bool, hparams: str | None) -> list[dict[str, Any]]:
    """DomainBed's ``make_args_list``: one ``train`` argument dict per run, in its order (trial, dataset, algorithm,
    test envs, hparams seed)."""
    args_list = []
    for trial_seed in range(n_trials):
        for dataset in dataset_names:
            n = num_environments(dataset, data_dir)
            for algorithm in algorithms:
                envs = [[i] for i in range(n)] if single_test_envs else all_test_env_combinations(n)
                for test_envs in envs:
                    for hparams_seed in range(n_hparams_from, n_hparams):
                        a: dict[str, Any] = {
                            "dataset": dataset, "algorithm": algorithm, "test_envs": test_envs,
                            "holdout_fraction": holdout_fraction, "hparams_seed": hparams_seed, "data_dir": data_dir,
                            "task": task, "trial_seed": trial_seed,
                            "seed": seed_hash(dataset, algorithm, test_envs, hparams_seed, trial_seed),
                        }
                        if steps is not None:
                            a["steps"] = steps
                        if hparams is not None:
                            a["hparams"] = hparams
                        args_list.append(a)
    return args_list


# ------------------------------------------------------------------------------------------------ launchers
#: a launcher runs the commands and returns each one's exit status, in order (None: not run, or not known yet)
Statuses = list[int | None]


def local_launcher(commands: list[str]) -> Statuses:
    """DomainBed's ``local``: the commands one after the other, in this machine's shell; their exit statuses."""
    return [subprocess.call(cmd, shell=True) for cmd in commands]


def dummy_launcher(commands: list[str]) -> Statuses:
    """DomainBed's ``dummy``: print each command, run nothing (no exit statuses)."""
    for cmd in commands:
        print(f"Dummy launcher: {cmd}")
    return [None] * len(commands)


#: seconds between looks at the running commands of ``multi_gpu``
POLL_S = 1.0


def multi_gpu_launcher(commands: list[str], runs_per_gpu: int | str | None = None) -> Statuses:
    """DomainBed's ``multi_gpu``: ``runs_per_gpu`` commands per GPU at a time (``$CUDA_VISIBLE_DEVICES``' GPUs, else
    all; DomainBed's: one; ours: ``--runs_per_gpu N|auto`` or ``$DGANALYSIS_RUNS_PER_GPU``, ``auto`` sized by memory
    after the first command ran alone, :mod:`dganalysis.sweep.packing`); their exit statuses. With more than one per
    GPU the commands run under a CUDA MPS daemon of the launcher's own when the machine has one
    (:func:`dganalysis.sweep.packing.mps_daemon`), and each run's records say how it was packed (``packing``, passed as
    ``$DGANALYSIS_PACKING``)."""
    from dganalysis.sweep import packing

    print("WARNING: using experimental multi_gpu_launcher.")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        gpus = [x for x in visible.split(",") if x != ""]
    else:
        import torch

        gpus = [str(i) for i in range(torch.cuda.device_count())]
    if not gpus:
        raise ConfigError("sweep: --command_launcher multi_gpu: no GPU visible (CUDA_VISIBLE_DEVICES is empty or "
                          "torch sees no CUDA device); use --command_launcher local")
    if runs_per_gpu is None:
        runs_per_gpu = os.environ.get("DGANALYSIS_RUNS_PER_GPU") or 1
    n = packing.parse_runs_per_gpu(runs_per_gpu)
    statuses: Statuses = [None] * len(commands)
    pending = list(enumerate(commands))
    if n == "auto":
        n, pending = _probe_runs_per_gpu(pending, gpus, statuses)
    with packing.mps_daemon(enabled=n > 1) as mps_on:
        field = json.dumps(packing.packing_field(n, mps_on, 1))
        slots = packing.gpu_slots(gpus, n)
        procs: list[tuple[int, subprocess.Popen] | None] = [None] * len(slots)
        while pending:
            for idx, gpu in enumerate(slots):
                slot = procs[idx]
                if pending and (slot is None or slot[1].poll() is not None):
                    if slot is not None:
                        statuses[slot[0]] = slot[1].returncode
                    k, cmd = pending.pop(0)
                    procs[idx] = (k, _start(cmd, gpu, field))
            time.sleep(POLL_S)
        for slot in procs:
            if slot is not None:
                statuses[slot[0]] = slot[1].wait()
    return statuses


def _start(cmd: str, gpu: str, packing_json: str) -> subprocess.Popen:
    return subprocess.Popen(f"CUDA_VISIBLE_DEVICES={gpu} DGANALYSIS_PACKING={shlex.quote(packing_json)} {cmd}",
                            shell=True)


def _probe_runs_per_gpu(pending, gpus: list[str], statuses: Statuses) -> tuple[int, list]:
    """``--runs_per_gpu auto``: the first command alone on the first GPU, then the rule of
    :func:`dganalysis.sweep.packing.runs_per_device` on its records' peak ``mem_gb`` and the smallest free memory of
    the GPUs (one run per GPU when either is unknown)."""
    from dganalysis.sweep import packing

    (k, cmd), rest = pending[0], pending[1:]
    print(f"runs per GPU auto: probing with the first command alone on GPU {gpus[0]}")
    statuses[k] = _start(cmd, gpus[0], json.dumps(packing.packing_field(1, False, 1))).wait()
    out = _flag_value(cmd, "--output_dir")
    peak = packing.stored_peak_bytes([out]) if out else None
    free = _free_bytes(gpus)
    if peak is None or free is None:
        print("runs per GPU auto: peak or free memory unknown; one run per GPU")
        return 1, rest
    n = packing.runs_per_device(free, peak, packing.default_cap(n_devices=len(gpus)))
    print(f"runs per GPU auto: peak {peak / 2**30:.2f} GB per run, {free / 2**30:.1f} GB free → {n} per GPU")
    return n, rest


def _flag_value(cmd: str, flag: str) -> str | None:
    """The value after ``flag`` in the shell command ``cmd`` (None when absent)."""
    try:
        words = shlex.split(cmd)
    except ValueError:
        return None
    return words[words.index(flag) + 1] if flag in words and words.index(flag) + 1 < len(words) else None


def _free_bytes(gpus: list[str]) -> int | None:
    """The smallest free memory of ``gpus``, each measured by a fresh Python process seeing that GPU alone."""
    code = "import torch; print(torch.cuda.mem_get_info(0)[0])"
    frees = []
    for gpu in gpus:
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, "CUDA_VISIBLE_DEVICES": gpu}, timeout=300)
        try:
            frees.append(int(r.stdout.strip().splitlines()[-1]))
        except (ValueError, IndexError):
            return None
    return min(frees) if frees else None


def _shell(cmd: str) -> int:
    """One Slurm array task: run ``cmd`` in the shell; a failing command fails the task."""
    code = subprocess.call(cmd, shell=True)
    if code != 0:
        raise RuntimeError(f"exit status {code}: {cmd}")
    return code


def slurm_launcher(commands: list[str], log_dir: str | None = None) -> Statuses:
    """Ours: the commands as one Slurm job array through submitit (parameters from ``$DGANALYSIS_SLURM``). With
    submitit's ``local`` or ``debug`` executor it waits and returns the exit statuses; on Slurm the tasks run later
    (None: not known yet; submitit's logs and each run folder's ``done`` tell)."""
    import submitit

    try:
        params = json.loads(os.environ.get("DGANALYSIS_SLURM", "{}"))
    except ValueError as err:
        raise ConfigError(f"sweep: $DGANALYSIS_SLURM: not JSON ({err}); expected a dict of submitit parameters") from None
    if not isinstance(params, dict):
        raise ConfigError("sweep: $DGANALYSIS_SLURM: expected a JSON dict of submitit parameters")
    cluster = params.pop("cluster", None)
    folder = os.environ.get("DGANALYSIS_SLURM_LOGS") or log_dir or ".submitit"
    executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
    if params:
        executor.update_parameters(**params)
    jobs = executor.map_array(_shell, commands)
    print(f"Submitted {len(jobs)} tasks through submitit ({executor.cluster}); logs in {folder}")
    if executor.cluster not in ("local", "debug"):
        return [None] * len(commands)
    statuses: Statuses = []
    for job in jobs:
        try:
            statuses.append(int(job.result()))
        except Exception as err:  # the task failed: _shell's "exit status N", or submitit's own failure
            found = re.search(r"exit status (-?\d+)", str(err))
            statuses.append(int(found.group(1)) if found else 1)
    return statuses


REGISTRY: dict[str, Callable[[list[str]], Statuses]] = {
    "local": local_launcher,
    "dummy": dummy_launcher,
    "multi_gpu": multi_gpu_launcher,
    "slurm": slurm_launcher,
}


def build_parser() -> argparse.ArgumentParser:
    """DomainBed's parser (the command, then its flags with its defaults)."""
    p = argparse.ArgumentParser(description="Run a sweep")
    p.add_argument("command", choices=["launch", "delete_incomplete"])
    p.add_argument("--datasets", nargs="+", type=str, default=DEFAULT_DATASETS)
    p.add_argument("--algorithms", nargs="+", type=str, default=list(DOMAINBED_ALGORITHMS))
    p.add_argument("--task", type=str, default="domain_generalization")
    p.add_argument("--n_hparams_from", type=int, default=0)
    p.add_argument("--n_hparams", type=int, default=20)
    p.add_argument("--output_dir", type=str, required=True)
    p.add_argument("--data_dir", type=str, required=True)
    p.add_argument("--seed", type=int, default=0, help="seeds the launch order (DomainBed leaves it unused)")
    p.add_argument("--n_trials", type=int, default=3)
    p.add_argument("--command_launcher", type=str, required=True, help=f"one of {sorted(REGISTRY)}")
    p.add_argument("--steps", type=int, default=None)
    p.add_argument("--hparams", type=str, default=None)
    p.add_argument("--holdout_fraction", type=float, default=0.2)
    p.add_argument("--single_test_envs", action="store_true")
    p.add_argument("--skip_confirmation", action="store_true")
    p.add_argument("--runs_per_gpu", default=None,
                   help="ours: multi_gpu runs this many commands per GPU at once (an integer, or auto: sized by memory "
                        "after the first ran alone; default $DGANALYSIS_RUNS_PER_GPU or 1, DomainBed's)")
    p.add_argument("--no_preflight", action="store_true",
                   help="ours: launch without first checking that the data and weight files are there")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="ours: module or .py file registering your own algorithms/datasets (repeatable; also "
                        "$DGANALYSIS_IMPORT); each run's train imports them too (through $DGANALYSIS_IMPORT)")
    return p


def _check_algorithms(algorithms: Sequence[str], hparams: str | None) -> None:
    """Before anything is launched: every algorithm is registered (DomainBed's, ours or a user module's) and has
    every key of ``--hparams`` (each run's ``train`` would refuse it)."""
    from dganalysis.algorithms import available
    from dganalysis.algorithms.registry import unknown_hparams
    from dganalysis.registry import unknown_name

    known = available()
    keys = list(json.loads(hparams)) if hparams else []
    for name in algorithms:
        if name not in known:
            raise ConfigError(f"sweep: --algorithms {name}: {unknown_name('algorithm', name, known)} (your own "
                              "algorithms: --import MODULE or $DGANALYSIS_IMPORT)")
        bad = unknown_hparams(name, keys)
        if bad:
            raise ConfigError(f"sweep: --hparams: {bad}")


def domainbed_jobs(args: argparse.Namespace) -> list[Job]:
    """The sweep's runs for parsed flags (DomainBed's ``make_args_list``, then ``Job`` per dict)."""
    args_list = make_args_list(
        n_trials=args.n_trials, dataset_names=args.datasets, algorithms=args.algorithms,
        n_hparams_from=args.n_hparams_from, n_hparams=args.n_hparams, steps=args.steps, data_dir=args.data_dir,
        task=args.task, holdout_fraction=args.holdout_fraction, single_test_envs=args.single_test_envs,
        hparams=args.hparams)
    return [Job(a, args.output_dir) for a in args_list]


def preflight(jobs: Sequence[Job], data: bool = True) -> list[str]:
    """What the runs would refuse or lack, checked before anything is launched, with the train script's own checks
    on each run's flags: :func:`dganalysis.scripts.train.check_flags` (a refusal: one line per message, naming a run
    folder and how many runs share it) and, with ``data``, :func:`dganalysis.scripts.train.data_problems_of` (MNIST's
    raw files; data folders and pretrained weight files through :func:`dganalysis.preflight.job_problems`)."""
    from dganalysis.scripts import train

    parser = train.build_parser()
    parsed, refused = [], {}
    for job in jobs:
        argv = []
        for k, v in job.train_args.items():
            argv += [f"--{k}", *([str(x) for x in v] if isinstance(v, list) else [str(v)])]
        a = parser.parse_args(argv)
        try:
            train.check_flags(a)
        except train.Refused as err:
            refused.setdefault(str(err), []).append(job.output_dir)
            continue
        parsed.append(a)
    problems = [f"{dirs[0]}{f' and {len(dirs) - 1} more run(s)' if len(dirs) > 1 else ''}: train refuses: {msg}"
                for msg, dirs in refused.items()]
    return problems + (train.data_problems_of(parsed) if data else [])


def failure_reason(output_dir: str, status: int) -> str:
    """The first line of why a run exited with ``status``, from its ``err.txt``: the last traceback's exception
    line, else the train script's refusal line, else err.txt's first line; else the status alone."""
    from pathlib import Path

    path = Path(output_dir, "err.txt")
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    marker = "Traceback (most recent call last):"
    if marker in text:
        for line in text.rsplit(marker, 1)[1].splitlines()[1:]:
            if line.strip() and not line.startswith((" ", "\t")):
                return line.strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("dganalysis.scripts.train:"):
            return line
    if lines:
        return lines[0]
    return f"exit status {status}, nothing in err.txt" if path.is_file() else f"exit status {status}, no err.txt"


def _confirm() -> bool:
    response = input("Are you sure? (y/n) ")
    if not response.lower().strip()[:1] == "y":
        print("Nevermind!")
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drop-in; returns the exit status (2 for a refused flag or value)."""
    args = build_parser().parse_args(argv)
    try:
        if args.command_launcher not in REGISTRY:
            raise ConfigError(f"sweep: --command_launcher {args.command_launcher}: unknown; expected one of "
                              f"{sorted(REGISTRY)}")
        if args.task != "domain_generalization":
            raise ConfigError(f"sweep: --task {args.task}: DomainBed's sweep passes its runs no "
                              "--uda_holdout_fraction, so every run would fail (not enough unlabeled samples for "
                              "domain adaptation); only domain_generalization (train takes --task domain_adaptation "
                              "--uda_holdout_fraction F)")
        if args.hparams is not None:
            try:
                ok = isinstance(json.loads(args.hparams), dict)
            except ValueError:
                ok = False
            if not ok:
                raise ConfigError(f"sweep: --hparams {args.hparams!r}: expected a JSON object of hyperparameters")
        from dganalysis import plugins

        plugins.export(plugins.import_requested(args.imports))  # the runs' train commands import them too
        _check_algorithms(args.algorithms, args.hparams)
        jobs = domainbed_jobs(args)
    except ConfigError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    for job in jobs:
        print(job)
    print(f"{len(jobs)} jobs: {sum(j.state == Job.DONE for j in jobs)} done, "
          f"{sum(j.state == Job.INCOMPLETE for j in jobs)} incomplete, "
          f"{sum(j.state == Job.NOT_LAUNCHED for j in jobs)} not launched.")
    if args.command == "launch":
        to_launch = [j for j in jobs if j.state == Job.NOT_LAUNCHED]
        print(f"About to launch {len(to_launch)} jobs.")
        data = not args.no_preflight and args.command_launcher != "dummy"  # dummy runs nothing
        problems = preflight(to_launch, data) if to_launch else []
        if problems:
            from dganalysis.preflight import format_problems

            sys.stderr.write("sweep: nothing launched: " + format_problems(problems, "before launching") + "\n")
            return 2
        if not args.skip_confirmation and not _confirm():
            return 0
        print("Launching...")
        random.Random(args.seed).shuffle(to_launch)
        print("Making job directories:")
        for job in to_launch:
            os.makedirs(job.output_dir, exist_ok=True)
        commands = [job.command_str for job in to_launch]
        if args.command_launcher == "slurm":
            statuses = slurm_launcher(commands, os.path.join(args.output_dir, ".submitit"))
        elif args.command_launcher == "multi_gpu":
            statuses = multi_gpu_launcher(commands, args.runs_per_gpu)
        else:
            statuses = REGISTRY[args.command_launcher](commands)
        statuses = list(statuses or [None] * len(commands))
        print(f"Launched {len(to_launch)} jobs!")
        failed = []
        for job, status in zip(to_launch, statuses):
            if status is None:
                continue
            if os.path.isdir(job.output_dir):  # each run's exit status, beside its files
                with open(os.path.join(job.output_dir, EXIT_STATUS_FILE), "w", encoding="utf-8") as f:
                    f.write(f"{status}\n")
            if status != 0:
                failed.append((job, status))
        if failed:
            sys.stderr.write(f"sweep: {len(failed)} of {len(to_launch)} runs failed (left Incomplete; their err.txt "
                             "says why):\n" + "".join(f"  {job.output_dir}: exit status {status}: "
                                                      f"{failure_reason(job.output_dir, status)}\n"
                                                      for job, status in failed))
            return 1
    else:
        from dganalysis.sweep.store import live_claim

        to_delete = []
        for job in (j for j in jobs if j.state == Job.INCOMPLETE):
            holder = live_claim(job.output_dir)
            if holder is None:
                to_delete.append(job)
            else:  # DomainBed would delete a run still training
                print(f"Left alone, still running ({holder.describe()}): {job.output_dir}")
        print(f"About to delete {len(to_delete)} jobs.")
        if not args.skip_confirmation and not _confirm():
            return 0
        print("Deleting...")
        for job in to_delete:
            shutil.rmtree(job.output_dir)
        print(f"Deleted {len(to_delete)} jobs!")
    return 0


if __name__ == "__main__":
    sys.exit(main())
