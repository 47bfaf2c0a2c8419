"""The job grid: datasets × algorithms × splits × hparam draws × trials, and sweep YAML files.

Splits (which domains train, which are tested, which validate):

- ``"leave_one_out"``: each domain in turn is the test domain, all others train
  (DomainBed's protocol).
- ``{"leave_one_group_out": k}``: every k-combination of domains is a test group, the
  rest train (the leave-one-group-out protocol of Yu et al. (2024); k = 1 equals
  leave-one-out).
- a list of ``{"train": [...], "test": [...], "val": [...]}`` dicts of domain names
  (``val`` optional), e.g. the dynamic studies' ``{d0, d1} → hw``. Domains in none of the
  lists are unused (still evaluated, never trained on).

Hparam draws follow DomainBed: ``hparams_seed`` 0 … n_hparams−1 with seed 0 giving the
defaults; trials are ``trial_seed`` 0 … n_trials−1 and change the in/out split, the
initialisation and, for seeds ≠ 0, the draw itself (DomainBed seeds it with
``seed_hash(hparams_seed, trial_seed)``; resolved per job by ``dganalysis.training.job_draw.job_hparams``,
see :mod:`dganalysis.training.hparams`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dganalysis.sweep.spec import Sweep
from dganalysis.training.job import Job
from dganalysis.validation import ConfigError, MissingInputError, UnknownKeyError

Split = dict[str, list[str]]


def expand_splits(splits: Any, domains: Sequence[str] | None) -> list[Split]:
    """Turn a ``splits`` spec into a list of ``{"train", "test", "val"}`` dicts."""
    if isinstance(splits, str):
        splits = {splits: 1} if splits == "leave_one_out" else splits
        if isinstance(splits, str):
            raise ConfigError(
                f"splits: unknown protocol {splits!r}; expected 'leave_one_out', {{'leave_one_group_out': k}} "
                "or a list of {train, test, val} dicts"
            )
    if isinstance(splits, Mapping):
        if set(splits) == {"leave_one_out"}:
            k = 1
        elif set(splits) == {"leave_one_group_out"}:
            from dganalysis.validation import Check

            k = Check("int", low=1)(splits["leave_one_group_out"], "splits.leave_one_group_out")
        else:
            raise ConfigError(f"splits: expected {{'leave_one_group_out': k}}, got {dict(splits)}")
        if domains is None:
            raise ConfigError("splits: leave-one-(group-)out needs the dataset's domain names")
        if not 1 <= k < len(domains):
            raise ConfigError(f"splits: leave_one_group_out k must be in [1, {len(domains) - 1}], got {k}")
        out = []
        for test in itertools.combinations(domains, k):
            out.append({"train": [d for d in domains if d not in test], "test": list(test), "val": []})
        return out
    if isinstance(splits, Sequence):
        out = []
        for i, s in enumerate(splits):
            if not isinstance(s, Mapping) or "train" not in s:
                raise ConfigError(f"splits[{i}]: expected a dict with keys train, test (and optional val), got {s!r}")
            extra = set(s) - {"train", "test", "val"}
            if extra:
                raise ConfigError(f"splits[{i}]: unknown keys {sorted(extra)}; expected train, test, val")
            split = {k: [str(d) for d in _as_list(s.get(k, []), f"splits[{i}].{k}")] for k in ("train", "test", "val")}
            if domains is not None:
                for k, names in split.items():
                    bad = [d for d in names if d not in domains]
                    if bad:
                        raise ConfigError(f"splits[{i}].{k}: unknown domains {bad}; the dataset has {list(domains)}")
            out.append(split)
        return out
    raise ConfigError(f"splits: unsupported type {type(splits).__name__}")


def _as_list(value: Any, name: str) -> list[Any]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Sequence):
        return list(value)
    raise ConfigError(f"{name}: expected a list of domain names, got {value!r}")


def _needs_domains(splits: Any) -> bool:
    return isinstance(splits, (str, Mapping))


def overrides_for(algorithm: str, overrides: Mapping[str, Any] | None, what: str = "hparams_overrides") -> dict[str, Any]:
    """The overrides that apply to ``algorithm``.

    ``overrides`` may mix flat entries (``{"lr": 1e-4}``, applied to every algorithm that
    has that hyperparameter) and per-algorithm entries (``{"MMD": {"mmd_gamma": 1.0}}``,
    which win). A flat name that no algorithm of the sweep knows is caught by
    :func:`make_jobs`.
    """
    from dganalysis.algorithms import available, hparam_specs

    specs = hparam_specs(algorithm)
    names = set(available())
    out: dict[str, Any] = {}
    for key, value in (overrides or {}).items():
        if key in names:
            continue
        if key in specs:
            out[key] = value
    per_alg = (overrides or {}).get(algorithm)
    if per_alg is not None:
        if not isinstance(per_alg, Mapping):
            raise ConfigError(f"{what}.{algorithm}: expected a dict of hparams, got {per_alg!r}")
        unknown = set(per_alg) - set(specs)
        if unknown:
            raise UnknownKeyError(f"{what}.{algorithm}: unknown hyperparameters {sorted(unknown)}; known: {sorted(specs)}")
        out.update(per_alg)
    return out


def _check_flat_overrides(algorithms: Sequence[str], overrides: Mapping[str, Any] | None, what: str) -> None:
    from dganalysis.algorithms import available, hparam_specs

    names = set(available())
    known = set().union(*(hparam_specs(a) for a in algorithms)) if algorithms else set()
    bad = [k for k in (overrides or {}) if k not in names and k not in known]
    if bad:
        raise UnknownKeyError(f"{what}: hyperparameters {bad} belong to none of the algorithms {list(algorithms)}")


def make_jobs(sweep: Sweep, domains: Sequence[str] | None = None) -> list[Job]:
    """The full job grid of ``sweep`` (one dataset: a sweep over ``datasets`` is made per entry,
    :meth:`Sweep.per_dataset`), in a stable order (algorithm, split, hparams seed, trial), checked before any work.

    ``domains``: the dataset's domain names; when None they are looked up (built-in datasets) or the dataset is built
    (without a data folder; :func:`grid_domains` looks them up in one), which also checks ``dataset_kwargs``. The
    sweep's values were checked when it was built (a job needs its ``dataset``, ``algorithms`` and
    ``checkpoint_freq``, which a notebook's sweep may leave to its plan); here every split is checked against the
    domain names and every job's concrete hyperparameters (defaults, draws and overrides) against their
    declarations (:mod:`dganalysis.validation`); the first problem raises a
    :class:`~dganalysis.validation.ConfigError` naming the key.
    """
    from dganalysis.data.checks import check_dataset_kwargs

    if not isinstance(sweep, Sweep):
        raise ConfigError(f"sweep: expected a dganalysis.sweep.Sweep, got {sweep!r}")
    for key, missing in (("dataset", sweep.dataset is None or bool(sweep.datasets)),
                         ("algorithms", not sweep.algorithms), ("checkpoint_freq", sweep.checkpoint_freq is None)):
        if missing:
            hint = " (a sweep over several datasets: one make_jobs per Sweep.per_dataset())" if key == "dataset" else ""
            raise ConfigError(f"{sweep.label(key)}: required to make jobs{hint}")
    dataset, algorithms = sweep.dataset, list(sweep.algorithms)
    hparams_overrides, search_overrides = sweep.hparams_overrides, sweep.search_overrides
    dataset_kwargs = dict(sweep.dataset_kwargs)
    check_dataset_kwargs(dataset, dataset_kwargs, "dataset_kwargs")
    if domains is None:
        domains = grid_domains(dataset, dataset_kwargs, None)
    try:
        split_list = expand_splits(sweep.splits, list(domains))
        _check_flat_overrides(algorithms, hparams_overrides, "hparams_overrides")
        _check_flat_overrides(algorithms, search_overrides, "search_overrides")
    except (KeyError, TypeError) as e:
        raise ConfigError(e.args[0] if e.args else str(e)) from None
    except ValueError as e:
        raise ConfigError(str(e)) from None
    jobs = []
    for alg in algorithms:
        try:
            hp_over = overrides_for(alg, hparams_overrides, "hparams_overrides")
            search_over = overrides_for(alg, search_overrides, "search_overrides")
        except (KeyError, TypeError) as e:
            raise ConfigError(e.args[0] if e.args else str(e)) from None
        for i, split in enumerate(split_list):
            for hp_seed in range(sweep.n_hparams):
                for trial in range(sweep.n_trials):
                    jobs.append(_job(
                        i, split, dataset=dataset, algorithm=alg, train_domains=split["train"],
                        test_domains=split["test"], val_domains=split.get("val", []), hparams_seed=hp_seed,
                        trial_seed=trial, steps=sweep.steps, checkpoint_freq=sweep.checkpoint_freq,
                        holdout_fraction=sweep.holdout_fraction, dataset_kwargs=dataset_kwargs,
                        hparams_overrides=hp_over, search_overrides=search_over, save_model=sweep.save_model,
                        domainbed_exact=sweep.domainbed_exact,
                    ))
    check_grid_hparams(jobs)
    return jobs


def _job(i: int, split: Split, **kw: Any) -> Job:
    from dganalysis.validation import ConfigError

    try:
        return Job(**kw)
    except (TypeError, ValueError) as e:  # Job's own checks (ConfigError) too: the split they are about
        raise ConfigError(f"splits[{i}] {split}: {e}") from None


def hparams_key(job: Job) -> tuple:
    """Everything a job's concrete hyperparameters depend on (:func:`dganalysis.training.job_draw.job_hparams`): the algorithm,
    the dataset (DomainBed's small- or large-image regime), ``hparams_seed``, ``trial_seed`` (DomainBed seeds a draw
    with ``seed_hash(hparams_seed, trial_seed)``), the overrides and ``steps``."""
    trial = job.trial_seed if job.hparams_seed != 0 else None  # hparams_seed 0: the defaults, whatever the trial
    return (job.algorithm, job.dataset, job.hparams_seed, trial, job.steps,  # overrides: canonical JSON types (Job)
            json.dumps(job.hparams_overrides, sort_keys=True), json.dumps(job.search_overrides, sort_keys=True))


def check_grid_hparams(jobs: Iterable[Job]) -> None:
    """Check the hyperparameters of every job of a grid, once per distinct :func:`hparams_key` — every
    (algorithm, dataset, hparams_seed, trial_seed, overrides) the grid will run — before any work."""
    checked: set[tuple] = set()
    for job in jobs:
        key = hparams_key(job)
        if key not in checked:
            checked.add(key)
            check_job_hparams(job)


def check_job_hparams(job: Job) -> None:
    """Check the job's concrete hyperparameters against their declared types and ranges; the error names where
    the bad value came from (``hparams_overrides``, ``search_overrides`` or the algorithm's declaration)."""
    from dganalysis.algorithms import hparam_specs
    from dganalysis.training.hparams import hparam_check
    from dganalysis.training.job_draw import job_hparams
    from dganalysis.validation import ConfigError

    try:
        hp = job_hparams(job)
    except (KeyError, TypeError, ValueError) as e:
        raise ConfigError(f"hyperparameters of {job.algorithm} (hparams_seed {job.hparams_seed}): "
                          f"{e.args[0] if e.args else e}") from None
    specs = hparam_specs(job.algorithm)
    for name, value in hp.items():
        if name in job.hparams_overrides:
            where = f"hparams_overrides.{name} ({job.algorithm})"
        elif name in job.search_overrides and job.hparams_seed != 0:
            where = f"search_overrides.{name} ({job.algorithm}, the draw of hparams_seed {job.hparams_seed})"
        elif name == "steps":
            where = "steps"
        else:
            where = f"{job.algorithm}.{name} (declared default or search distribution, hparams_seed {job.hparams_seed})"
        hparam_check(name, specs.get(name))(value, where)


def grid_domains(dataset: str, dataset_kwargs: Mapping[str, Any] | None, data_dir: str | Path | None) -> list[str]:
    """The dataset's domain names for :func:`make_jobs`'s ``domains``: the built-in datasets' without building them
    (:func:`dganalysis.data.domains.domain_names`; PaHCC at paper scale takes hours to render), others by building
    the dataset from ``data_dir`` once per process; ``dataset_kwargs`` is checked first (:class:`ConfigError`
    naming the key)."""
    from dganalysis.data.checks import check_dataset_kwargs, load_checked_dataset
    from dganalysis.data.domains import domain_names
    from dganalysis.validation import ConfigError

    dataset_kwargs = dict(dataset_kwargs or {}) if isinstance(dataset_kwargs, Mapping) or not dataset_kwargs \
        else dataset_kwargs
    check_dataset_kwargs(dataset, dataset_kwargs, "dataset_kwargs")

    try:
        return list(domain_names(dataset, dataset_kwargs, data_dir))
    except Exception:  # noqa: BLE001 - rebuild through the checker for a message naming the key
        load_checked_dataset(dataset, dataset_kwargs, data_dir, "dataset_kwargs")
        raise ConfigError(f"dataset {dataset!r}: could not be built with dataset_kwargs {dict(dataset_kwargs)}") from None


#: keys of a job list file besides ``jobs`` (kept for the reader, ignored by the sweep)
JOB_LIST_EXTRA_KEYS = ("selected",)
#: command-line settings that may replace a listed job's field
JOB_LIST_OVERRIDES = ("steps", "checkpoint_freq", "save_model")


def _listed_jobs(path: Path, cfg: dict, data_dir: str | Path | None, overrides: dict[str, Any]) -> list[Job]:
    """Jobs listed one by one (``{"jobs": [{dataset, algorithm, train_domains, test_domains, ...}, ...]}``, e.g. the
    selected hyperparameters of :func:`dganalysis.audit.outputs.selected_hparams_config`), each checked as a grid's
    jobs are (domain names, hyperparameters)."""
    import dataclasses

    from dganalysis.validation import ConfigError

    unknown = [k for k in cfg if k not in ("jobs", *JOB_LIST_EXTRA_KEYS)]
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown} beside 'jobs'; allowed: {['jobs', *JOB_LIST_EXTRA_KEYS]}")
    bad = [k for k in overrides if k not in JOB_LIST_OVERRIDES]
    if bad:
        raise ConfigError(f"{path}: a job list takes only {list(JOB_LIST_OVERRIDES)} from the command line, got {bad}")
    entries = cfg["jobs"]
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{path}: 'jobs' must be a non-empty list of job dicts, got {entries!r:.80}")
    names = {f.name for f in dataclasses.fields(Job)}
    domains: dict[str, list[str]] = {}
    jobs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: jobs[{i}] must be a dict of job fields, got {entry!r:.80}")
        extra = sorted(set(entry) - names)
        if extra:
            raise ConfigError(f"{path}: jobs[{i}] has unknown field(s) {extra}; a job has {sorted(names)}")
        try:
            job = dataclasses.replace(Job(**entry), **overrides)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"{path}: jobs[{i}]: {e}") from None
        key = json.dumps([job.dataset, dict(job.dataset_kwargs)], sort_keys=True)
        if key not in domains:
            domains[key] = grid_domains(job.dataset, job.dataset_kwargs, data_dir)
        wrong = [d for d in (*job.train_domains, *job.test_domains, *job.val_domains) if d not in domains[key]]
        if wrong:
            raise ConfigError(f"{path}: jobs[{i}]: unknown domains {wrong}; {job.dataset} has {domains[key]}")
        try:
            check_job_hparams(job)
        except ConfigError as e:
            raise ConfigError(f"{path}: jobs[{i}]: {e}") from None
        jobs.append(job)
    return jobs


def load_sweep_yaml(path: str | Path, data_dir: str | Path | None = None, **overrides: Any) -> list[Job]:
    """Jobs from a sweep YAML file holding a :class:`~dganalysis.sweep.spec.Sweep`'s keys
    (:data:`dganalysis.sweep.spec.KEYS`).

    ``overrides`` replace keys of the file (e.g. ``steps`` from the command line).
    Unknown keys are an error naming the file and the key. A file with a ``jobs`` list instead holds the jobs one by
    one (see :func:`_listed_jobs`); JSON is valid YAML, so such a file may be JSON.
    """
    from dganalysis.io import read_yaml_mapping

    path = Path(path)
    if not path.is_file():
        raise MissingInputError(f"{path}: sweep file not found")
    from dganalysis.validation import ConfigError

    if path.suffix.lower() == ".json":  # JSON's numbers (5e-05) are not all YAML 1.1 floats: read JSON as JSON
        try:
            cfg = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: not valid JSON ({e})") from None
        if not isinstance(cfg, dict):
            raise ConfigError(f"{path}: expected a mapping of sweep settings at the top level, got {type(cfg).__name__}")
    else:
        cfg = read_yaml_mapping(path, "a mapping of sweep settings at the top level")

    if "jobs" in cfg:
        return _listed_jobs(path, cfg, data_dir, {k: v for k, v in overrides.items() if v is not None})
    sweep = Sweep.from_mapping({**cfg, **{k: v for k, v in overrides.items() if v is not None}}, str(path),
                               required=("dataset", "algorithms", "splits", "steps", "checkpoint_freq"))
    try:
        return make_jobs(sweep, None if data_dir is None else grid_domains(sweep.dataset, sweep.dataset_kwargs,
                                                                            data_dir))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None
