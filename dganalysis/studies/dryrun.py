"""``dganalysis run --profile paper --dry-run``: check a profile and plan its compute without training.

For every notebook of the profile, and every variant its YAML declares (``variants:``, see
:mod:`dganalysis.studies.runner`; planned as its own entry ``<notebook>@<variant>``), the dry run

1. validates ``params/<profile>/<notebook>.yaml`` as ``dganalysis run`` does (unknown names,
   names the runner sets, each variant's overrides) and reads the notebook's parameters cell for the defaults;
2. builds the notebook's jobs with the same function the notebook calls
   (:mod:`dganalysis.studies.plans`), so the dry run cannot drift from the notebook; building the
   jobs also checks algorithm names, hyperparameter overrides and split domain names;
3. counts the jobs (per notebook or variant, per sweep, and once over the profile: notebooks and
   variants share one job store, a job wanted by two of them is trained once) and those already done in
   the store; each sweep's count is broken down exactly (:func:`sweep_breakdown`: algorithms ×
   data splits × override settings × hparam draws × trials, or "not a full grid");
4. estimates their cost: each job's training images (steps × batch size × training domains,
   with the batch size of its own hyperparameter draw) over an images/s figure for its
   featurizer and image size from ``dganalysis/sweep/throughput.yaml``. Those figures say where
   they come from: the CPU ones are measured (``bench/dryrun_throughput.py``); the GPU ones are training
   throughputs others published (timm's train benchmark, each entry with model, GPU, precision, batch and
   reference), or derived from one by forward MACs for small networks nobody publishes (``bench/gpu_flops_derive.py``),
   labelled "published, not measured here" until a lent GPU measures ours. Evaluation passes, pretraining and
   environment classifiers are not counted (the output says so);
5. says which datasets, weights and files are missing, and how to get them (DomainBed's
   benchmarks, WILDS datasets and OoD-Bench's CelebA: their folders are looked for, nothing is read).

Nothing is trained and no dataset is built.
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis.studies.plans import Plan
from dganalysis.studies.runner import injected_params, list_notebooks, load_all_params, repo_root, run_label
from dganalysis.studies.study import build_params, design_for, has_study, plan_for
from dganalysis.sweep.cost import Throughput, job_cost, load_throughput
from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)
ERRORS = (ValueError, KeyError, TypeError, FileNotFoundError)


#: how the dry run labels its GPU-hours: figures others published, not measured on this project's code
GPU_LABEL = "published, not measured here"


def notebook_defaults(notebook: Path) -> dict[str, Any]:
    """The values of the notebook's ``parameters`` cell (each a Python literal)."""
    import papermill as pm

    out = {}
    for name, info in pm.inspect_notebook(str(notebook)).items():
        try:
            out[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError) as e:
            raise ConfigError(f"{notebook.name}: parameter {name} = {info['default']} is not a Python literal") from e
    return out


@cache
def _pahcc_sources() -> tuple[int, bool]:
    from dganalysis.data.pahcc.fonts import discover_fonts
    from dganalysis.data.pahcc.handwriting import hanzi_writer_dir

    return len(discover_fonts()), hanzi_writer_dir().is_dir()


def check_dataset(name: str, kwargs: Mapping[str, Any]) -> tuple[bool, str]:
    """(available, what was found) for a dataset use; nothing is built or loaded."""
    from dganalysis.data import available

    if name not in available():
        from dganalysis.registry import unknown_name

        return False, unknown_name("dataset", name, available())
    if name in ("RotatedDigits", "ColoredDigits"):
        return True, "scikit-learn's digits (installed with the package)"
    if name in ("Debug28", "Debug224"):
        return True, "SIMULATED random tensors (DomainBed's debug dataset, built in memory)"
    if name in ("RotatedFashionMNIST", "ColoredFashionMNIST"):
        from dganalysis.data.fashion import DEBIAN_DIR, DEBIAN_PACKAGE

        root = Path(kwargs.get("fashion_dir") or DEBIAN_DIR)
        names = [f"{s}-{k}-idx{n}-ubyte" for s in ("train", "t10k") for k, n in (("images", 3), ("labels", 1))]
        missing = [f for f in names if not any((d / f"{f}{gz}").is_file() for d in (root, root / "raw")
                                               for gz in ("", ".gz"))]
        if missing:
            return False, f"Fashion-MNIST IDX files {missing} missing in {root} (apt-get install {DEBIAN_PACKAGE})"
        return True, f"real Fashion-MNIST IDX files in {root}"
    path_key = {"RotatedMNIST": "mnist_dir", "ColoredMNIST": "mnist_dir", "RotatedMNIST_Fixed": "mnist_dir",
                "ColoredMNIST_Fixed": "mnist_dir", "ImageFolder": "root",
                "CSVImages": "csv_path"}.get(name)
    if path_key:
        path = kwargs.get(path_key)
        if not path or not Path(path).expanduser().exists():
            howto = {"mnist_dir": " (a folder with MNIST's raw IDX files: torchvision.datasets.MNIST(<dir>, "
                                  "download=True) writes them to <dir>/MNIST/raw, then set mnist_dir=<dir>/MNIST; "
                                  "or leave mnist_dir unset for the installed scikit-learn digits)"}.get(path_key, "")
            return False, f"MISSING: {path_key}={path!r} does not exist{howto}"
        return True, f"{path_key} {path}"
    if name == "PaHCC":
        real = kwargs.get("gnt_dir") or kwargs.get("handwritten_dir")
        if real and not Path(real).expanduser().exists():
            return False, f"MISSING: handwritten source {real} does not exist"
        n_fonts, strokes = _pahcc_sources()
        if not n_fonts:
            return False, "MISSING: no Chinese fonts found (run dganalysis/data/pahcc/install_fonts.sh)"
        if not real and not strokes:
            return False, "MISSING: hanzi-writer-data stroke medians for the simulated handwriting (install_fonts.sh)"
        hw = f"real handwriting from {real}" if real else "SIMULATED handwriting (hanzi-writer-data)"
        return True, f"built on first use from {n_fonts} installed font faces and {hw}"
    bench = _benchmark_check(name, kwargs)
    return bench if bench is not None else (True, "not checked by the dry run")


def _benchmark_check(name: str, kwargs: Mapping[str, Any]) -> tuple[bool, str] | None:
    """DomainBed's image benchmarks, WILDS datasets and OoD-Bench's CelebA: the folders are there (class folders and images are checked
    when the notebook builds the dataset); None for other datasets."""
    import importlib.util

    from dganalysis.data.benchmarks import BENCHMARKS
    from dganalysis.data.spawrious import SPAWRIOUS
    from dganalysis.data.wilds_data import WILDS_BENCHMARKS

    try:
        if name in SPAWRIOUS:
            sp = SPAWRIOUS[name]
            base = sp.locate(kwargs.get("root"))
            absent = sorted({str(p.folder(base)) for parts in sp.environments().values() for p in parts
                             if not p.folder(base).is_dir()})
            if absent:
                return False, f"MISSING: {len(absent)} folder(s) such as {absent[:2]}; {sp.howto}"
            return True, f"Spawrious layout at {base} (images are listed when it is built)"
        if name in BENCHMARKS:
            b = BENCHMARKS[name]
            base = b.locate(kwargs.get("root"))
            absent = [f for f in b.env_folders if not (base / f).is_dir()]
            if absent:
                return False, f"MISSING: environment folder(s) {absent} under {base}; {b.howto}"
            return True, f"DomainBed layout at {base} (class folders and images are checked when it is built)"
        if name == "CelebA_Blond":
            from dganalysis.data.celeba import celeba_paths

            images, splits = celeba_paths(kwargs.get("root"))
            return True, f"CelebA images {images} with OoD-Bench's split files {splits} (images are checked when it is built)"
        if name in WILDS_BENCHMARKS:
            folder = WILDS_BENCHMARKS[name].locate(kwargs.get("root"))
            if importlib.util.find_spec("wilds") is None:
                return False, f"MISSING: the `wilds` package, which reads {folder}: pip install wilds==2.0.0"
            return True, f"WILDS folder {folder} (read through the `wilds` package when it is built)"
    except (ValueError, FileNotFoundError) as e:
        return False, f"MISSING: {e}"
    return None


@dataclass
class NotebookPlan:
    """One notebook's outcome: its plan, or the error that stopped planning it."""

    name: str
    plan: Plan | None = None
    error: str = ""
    missing: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    #: the study's design (:mod:`dganalysis.studies.design`): its claims, expected effects and power
    design: list = field(default_factory=list)
    #: processes the notebook trains in parallel (its ``n_workers`` / ``workers`` parameter; 1 when it has none)
    workers: int = 1


@dataclass
class DryRun:
    """The dry run of a profile: per notebook, and one row per (notebook, sweep, job) in ``jobs``."""

    profile: str
    notebooks: list[NotebookPlan]
    jobs: pd.DataFrame
    throughput: Throughput

    @property
    def ok(self) -> bool:
        return all(not n.error and not n.missing for n in self.notebooks)


def _howto(path: str) -> str:
    """How to get a missing file: the published weight files by name (:mod:`dganalysis.nets.published`)."""
    from dganalysis.nets.published import howto

    how = howto(path)
    return f" — get it: {how}" if how else ""


def _check_files(plan: Plan) -> tuple[list[str], list[str]]:
    missing, found = [], []
    produced = set(plan.produced)
    for key, path in plan.files.items():
        if Path(path).expanduser().exists():
            found.append(f"{key}: {path}")
        else:
            missing.append(f"{key}: {path}{_howto(path)}")
    weights = {j.hparams_overrides.get("pretrained") for js in plan.sweeps.values() for j in js} - {None}
    for w in sorted(weights):
        from dganalysis.nets.torchhub import is_hub_spec  # torch: only where a run names weights

        if w in produced:
            found.append(f"weights {w} (written by the notebook's pretraining)")
        elif is_hub_spec(str(w)):
            path = resolve_hub_path(w, plan)
            (found if path.is_file() else missing).append(f"weights {w} → {path}" + ("" if path.is_file() else
                                                                                     _howto(str(path))))
        else:
            (found if Path(w).exists() else missing).append(f"weights {w}" + ("" if Path(w).exists() else _howto(w)))
    return missing, found


def resolve_hub_path(spec: str, plan: Plan) -> Path:
    """The torchvision cache file an ``imagenet[:<weights>]`` spec names, for the featurizer of the jobs using it."""
    from dganalysis.nets.torchhub import DEFAULT_WEIGHTS, torchvision_weights_file

    arch = next(j.hparams_overrides.get("featurizer") for js in plan.sweeps.values() for j in js
                if j.hparams_overrides.get("pretrained") == spec)
    return torchvision_weights_file(str(arch), spec.split(":", 1)[1] if ":" in spec else DEFAULT_WEIGHTS)


def _plan(out: NotebookPlan, name: str, params: dict) -> NotebookPlan:
    """Build ``out``'s plan from a run's full parameters and check its inputs; errors are recorded, not raised."""
    try:
        if not has_study(name):
            out.error = (f"no study registered in dganalysis.studies.study for {name}: its jobs cannot be listed "
                         "without executing it")
            return out
        out.plan = plan_for(name, params)
        out.design = design_for(name, build_params(name, params))
        out.workers = max(1, int(params.get("n_workers", 1) or 1))
    except ERRORS as e:
        out.error = f"{type(e).__name__}: {e}"
        return out
    for ds, kwargs in out.plan.datasets:
        ok, what = check_dataset(ds, kwargs)
        label = f"{ds} {json.dumps(kwargs, sort_keys=True, default=str)}: {what}"
        if label not in out.missing + out.found:
            (out.found if ok else out.missing).append(label)
    miss, found = _check_files(out.plan)
    out.missing += miss
    out.found += found
    return out


def plan_runs(profile: str, name: str, root: Path, output_root: Path | None = None) -> list[NotebookPlan]:
    """Validate one notebook's YAML and plan its base run and each of its variants (``<notebook>@<variant>``), in the
    order the runner executes them; errors are recorded, not raised (a YAML error: one entry for the notebook)."""
    try:
        defaults = notebook_defaults(root / "notebooks" / f"{name}.ipynb")
        base, variants = load_all_params(profile, name, root)
    except ERRORS as e:
        return [NotebookPlan(name, error=f"{type(e).__name__}: {e}")]
    runs = [(None, base)] + list(variants.items())
    return [_plan(NotebookPlan(run_label(name, v)), name,
                  {**defaults, **params, **injected_params(profile, root, output_root, v)}) for v, params in runs]


def plan_notebook(profile: str, name: str, root: Path, output_root: Path | None = None) -> NotebookPlan:
    """Validate one notebook's YAML and build the plan of its base run; errors are recorded, not raised."""
    return plan_runs(profile, name, root, output_root)[0]


def dry_run(profile: str = "paper", names: list[str] | None = None, root: Path | None = None,
            output_root: Path | None = None, throughput: str | Path | None = None) -> DryRun:
    """Check and plan ``names`` (default: every notebook) of ``profile`` and their variants; see the module
    docstring."""
    from dganalysis.sweep import job_state

    root = root or repo_root()
    all_names = list_notebooks(root)
    names = [n[:-6] if n.endswith(".ipynb") else n for n in (names or all_names)]
    unknown = [n for n in names if n not in all_names]
    if unknown:
        raise ConfigError(f"unknown notebook(s) {unknown}; available: {all_names}")
    table = load_throughput(throughput)
    store = Path(injected_params(profile, root, output_root)["store_dir"])
    notebooks = [nb for n in names for nb in plan_runs(profile, n, root, output_root)]
    rows, has_store = [], store.is_dir()
    for nb in notebooks:
        for sweep, jobs in (nb.plan.sweeps.items() if nb.plan else ()):
            if nb.plan.search_protocol == "yu2024":  # the search (trial 0) and, standing in for each config's
                # rerun on trial t (ids known after the search), its default-draw job of trial t: same data and steps
                jobs = [j for j in jobs if j.trial_seed == 0 or j.hparams_seed == 0]
            for j in jobs:
                rows.append({"notebook": nb.name, "sweep": sweep, "job_id": j.job_id, "dataset": j.dataset,
                             "algorithm": j.algorithm, "train": ",".join(j.train_domains),
                             "test": ",".join(j.test_domains),
                             "split": json.dumps([j.dataset, j.dataset_kwargs, j.train_domains, j.test_domains],
                                                 sort_keys=True, default=str),
                             "overrides": json.dumps(j.hparams_overrides, sort_keys=True, default=str),
                             "hparams_seed": j.hparams_seed,
                             "trial_seed": j.trial_seed, "steps": j.steps, **job_cost(j, table),
                             "state": job_state(j, store) if has_store else "new",
                             "protocol": nb.plan.search_protocol})
    cols = ["notebook", "sweep", "job_id", "dataset", "algorithm", "train", "test", "split", "overrides", "hparams_seed",
            "trial_seed", "steps", "featurizer", "image_size", "batch_size", "train_images", "cpu_hours", "gpu_hours", "gpu_basis",
            "state", "protocol"]
    return DryRun(profile, notebooks, pd.DataFrame(rows, columns=cols), table)


def _hours(frame: pd.DataFrame, col: str) -> str:
    unknown = int(frame[col].isna().sum())
    text = f"{frame[col].sum():,.2f}"
    return text + (f" (+{unknown} job(s) without a throughput figure)" if unknown else "")


def _values(series: pd.Series) -> str:
    return "/".join(str(v) for v in series.unique())


def sweep_breakdown(g: pd.DataFrame) -> list[str]:
    """How one sweep's jobs multiply out, stated exactly: the number of distinct values of each factor, as a product
    when the jobs are the full grid of them (otherwise said to be no full grid); then, when the hyperparameter
    overrides vary, each setting with its job count (e.g. the leakage study's pretrained weights × LP/FT/frozen stages).
    A setting that belongs to some algorithms only (e.g. ``wc_rho`` of the ``*_WC`` variants) is no separate factor."""
    n_alg, n_settings = g["algorithm"].nunique(), g["overrides"].nunique()
    n_pairs = len(g[["algorithm", "overrides"]].drop_duplicates())
    factors = [(n_alg, "algorithm(s)")] if n_pairs == n_alg else \
        [(n_alg, "algorithm(s)"), (n_settings, "override setting(s)")] if n_pairs == n_alg * n_settings else \
        [(n_pairs, "(algorithm, override setting) pair(s)")]
    factors[1:1] = [(g["split"].nunique(), "data split(s)")]
    n_draws, n_trials = g["hparams_seed"].nunique(), g["trial_seed"].nunique()
    if "protocol" in g and (g["protocol"] == "yu2024").all():  # Yu et al.'s search: draws on trial 0, then reruns
        factors += [(n_draws + n_trials - 1, f"job(s) per config (search protocol yu2024: {n_draws} draws at trial 0 "
                                             f"+ {n_trials - 1} reruns of the selected one, DomainBed's full grid "
                                             f"{n_draws * n_trials} per config)")]
    else:
        factors += [(n_draws, "hparam draw(s)"), (n_trials, "trial(s)")]
    product = 1
    for n, _ in factors:
        product *= n
    terms = " × ".join(f"{n} {what}" for n, what in factors)
    head = (f"{len(g)} jobs = {terms}" if product == len(g)
            else f"{len(g)} jobs, not a full grid of {terms} (= {product})")
    lines = [f"{head} on {', '.join(g['dataset'].unique())}; {_values(g['featurizer'])} at "
             f"{_values(g['image_size'])} px, {_values(g['steps'])} steps; {(g['state'] == 'done').sum()} already done",
             f"   algorithms: {', '.join(g['algorithm'].unique())}"]
    if n_settings > 1:
        settings = [json.loads(o) for o in g["overrides"].unique()]
        varying = [k for k in sorted({k for o in settings for k in o})
                   if len({json.dumps(o.get(k)) for o in settings}) > 1]
        for o, sub in g.groupby("overrides", sort=False):
            values = json.loads(o)
            shown = ", ".join(f"{k}={Path(v).name if isinstance(v, str) and '/' in v else v}"
                              for k, v in ((k, values.get(k)) for k in varying))
            algs = sub["algorithm"].unique()
            only = f" ({', '.join(algs)})" if len(algs) < n_alg else ""
            lines.append(f"   setting {shown}{only}: {len(sub)} jobs")
    return lines


def notebook_minutes(result: DryRun, cores: int = 2) -> pd.Series:
    """Estimated wall minutes of each notebook's training: the CPU-hours of the jobs still to train (a job shared
    by several notebooks counted at the first, as the runner trains it there) over min(workers, ``cores``)
    processes. Evaluation, pretraining and environment classifiers are not counted (see the dry run's notes)."""
    df = result.jobs
    todo = df[df["state"] != "done"].drop_duplicates("job_id")
    workers = {nb.name: min(cores, nb.workers) for nb in result.notebooks}
    out = {nb.name: float(todo.loc[todo["notebook"] == nb.name, "cpu_hours"].sum()) * 60 / workers[nb.name]
           for nb in result.notebooks}
    return pd.Series(out, dtype=float)


def format_dry_run(result: DryRun) -> str:
    """The human-readable report printed by ``dganalysis run --dry-run``."""
    df = result.jobs
    lines = [f"dry run of profile {result.profile!r}: nothing is trained", ""]
    for nb in result.notebooks:
        jobs = df[df["notebook"] == nb.name]
        status = "ERROR" if nb.error else ("MISSING INPUTS" if nb.missing else "ok")
        lines.append(f"== {nb.name}: {status}")
        if nb.error:
            lines.append(f"   {nb.error}")
        for sweep, g in jobs.groupby("sweep", sort=False):
            first, *rest = sweep_breakdown(g)
            lines.append(f"   sweep {sweep}: {first}")
            lines += [f"   {line}" for line in rest]
        if nb.plan is not None and not len(jobs):
            lines.append("   no training jobs")
        for text in (nb.plan.other if nb.plan else []):
            lines.append(f"   also: {text}")
        lines += [f"   MISSING {m}" for m in nb.missing] + [f"   found: {f}" for f in nb.found]
        if nb.plan is not None:
            from dganalysis.studies.design import design_lines

            lines += [f"   {line}" for line in design_lines(nb.name, nb.design)]
    todo = df[df["state"] != "done"].drop_duplicates("job_id")
    minutes = notebook_minutes(result)
    if len(minutes):
        from dganalysis.provenance import cpu_kind

        lines += ["", "== estimated minutes per notebook (jobs still to train, each counted at the first notebook "
                      "that needs it; CPU-hours over the notebook's parallel workers, at most 2 cores; for the CPU "
                      "the figures were measured on, named under 'CPU figures' below — this machine is "
                      f"{cpu_kind()}, and the same jobs run ~1.5x as long on an AMD Zen 3 as on a Zen 4, "
                      "README.md lists the times measured per CPU kind)"]
        lines += [f"   {name:28s} {m:6.1f} min" for name, m in minutes.items()]
        lines.append(f"   {'total':28s} {minutes.sum():6.1f} min")
    t = result.throughput
    lines += ["", f"== total: {len(df)} jobs listed, {df['job_id'].nunique()} distinct (notebooks share the store), "
                  f"{len(todo)} still to train",
              f"   training images: {todo['train_images'].sum():,}",
              f"   estimated CPU-hours (one process per job): {_hours(todo, 'cpu_hours')}",
              f"   estimated GPU-hours (one GPU per job; from GPU training throughputs {GPU_LABEL}): "
              f"{_hours(todo, 'gpu_hours')}",
              f"   CPU figures: {t.cpu_source}",
              f"   GPU figures ({GPU_LABEL}): {t.gpu_source}",
              *(f"   GPU cross-check: {c}" for c in t.cross_checks),
              "   not counted: evaluation passes at each checkpoint, pretraining and environment classifiers (see 'also')"]
    by = todo.groupby(["featurizer", "image_size"])[["train_images", "cpu_hours", "gpu_hours"]].sum()
    for (feat, size), r in by.iterrows():
        lines.append(f"   {feat:12s} {size:>4d} px {int(r['train_images']):>15,} images  {r['cpu_hours']:>10,.1f} CPU-h  "
                     f"{r['gpu_hours']:>8,.1f} GPU-h ({t.gpu_basis(feat, int(size))})")
    lines.append("result: " + ("every YAML valid, every input found" if result.ok
                               else "PROBLEMS above (ERROR / MISSING)"))
    return "\n".join(lines)
