"""Run the study notebooks headlessly with papermill, one profile at a time.

``params/<profile>/<notebook>.yaml`` holds the parameters for one notebook and profile (``${data}``, ``${weights}``
in its strings come from ``params/<profile>/paths.yaml``, see :mod:`dganalysis.studies.paths`); the runner checks every name against the notebook's ``parameters`` cell (an unknown
name is an error naming the YAML file) and every value against the kind of the cell's default (an
integer stays an integer, a boolean a boolean), and builds the notebook's parameter object
(:mod:`dganalysis.studies.params`, whose checks span parameters, e.g. ``rho_small`` among ``rhos``) — so a bad YAML
fails before anything runs; it injects the profile's folders
(``output_dir = outputs/<profile>``, ``store_dir = outputs/<profile>/store`` — one job store
per profile, shared by all notebooks — and ``data_dir = outputs/data``), executes into
``outputs/<profile>/notebooks/``, and writes ``outputs/<profile>/index.md`` listing what code and machine ran
them (:mod:`dganalysis.provenance`), each notebook with its status, run time, figures and tables, and ``outputs/<profile>/report.html``
(:mod:`dganalysis.studies.report`: the same on one self-contained page). A failing notebook is still saved
(papermill writes the partial output) and the failing cell is reported.

**Variants.** A YAML may hold the reserved top-level key ``variants:``, a mapping ``<variant name> -> {parameter:
value, ...}`` (names: a letter, then letters, digits, ``_`` or ``-``). Each variant is the base parameters with its
overrides applied (top-level keys replaced, except a nested sweep-settings parameter such as
``sweep`` or ``04_leakage_oracle``'s ``oracle``, whose keys the variant replaces one by one:
:func:`dganalysis.studies.study.merge_overrides`), validated like the base (its errors name the YAML file and the
variant) before anything runs. The runner executes the base run, then one run per variant, labelled
``<notebook>@<variant>`` (:func:`run_label`): executed into ``notebooks/<notebook>@<variant>.ipynb`` with
``output_dir = outputs/<profile>/variants/<variant>`` (its own figures, tables and findings) and the profile's shared
``store_dir`` and ``data_dir`` (a job that a variant shares with the base run is trained once). ``index.md``, the
report and ``runs.json`` list each variant run as its own row; the index's summary adds the variants' findings,
labelled with the variant. Without ``variants:`` nothing changes.

**Progress.** While a notebook runs, the jobs done of its current sweep and an ETA show on stderr under papermill's
cell counter (:func:`sweep_progress`, :mod:`dganalysis.progress`: the kernel's sweeps write
``outputs/<profile>/.progress/<run label>.json``, a thread here draws it); the index's ``jobs`` column and
``runs.json`` record each run's jobs (trained, failed, already done) and minutes inside sweeps.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from dganalysis import io
from dganalysis.progress import PROGRESS_FILE_ENV, ProgressWatcher, sweep_totals
from dganalysis.studies.param_checks import check_notebook_params
from dganalysis.studies.paths import expand, profile_paths
from dganalysis.studies.report import write_report
from dganalysis.studies.run_history import VARIANTS_DIR, NotebookRun, record_run, run_folder, run_label, split_label
from dganalysis.validation import ConfigError, MissingInputError

log = logging.getLogger(__name__)
INJECTED = ("output_dir", "store_dir", "data_dir")
PROGRESS_DIR = ".progress"  #: ``outputs/<profile>/.progress/<run label>.json``: a notebook's sweeps' progress
VARIANTS_KEY = "variants"  #: reserved top-level YAML key: variant name -> parameter overrides
VARIANT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


#: environment variable naming a project folder (holding notebooks/ and params/) to use before any other
PROJECT_ENV = "DGANALYSIS_PROJECT"
#: where an installed wheel puts its copy of notebooks/ and params/, under the installation's data prefix
SHARED_PROJECT = ("share", "dganalysis")


def _is_project(folder: Path) -> bool:
    return (folder / "notebooks").is_dir() and (folder / "params").is_dir()


def installed_projects() -> list[Path]:
    """The folders where an installed wheel's copy of notebooks/ and params/ may lie (``<prefix>/share/dganalysis``
    of the environment's data prefix, ``sys.prefix`` and the user base), existing or not."""
    import site
    import sys
    import sysconfig

    prefixes = [sysconfig.get_path("data"), sys.prefix, site.getuserbase()]
    return list(dict.fromkeys(Path(p).joinpath(*SHARED_PROJECT) for p in prefixes if p))


def repo_root() -> Path:
    """The project folder (holding notebooks/ and params/): ``$DGANALYSIS_PROJECT`` when set, else the current
    folder, the checkout the package is imported from, or the copy an installed wheel ships
    (:func:`installed_projects`)."""
    env = os.environ.get(PROJECT_ENV)
    if env:
        if not _is_project(Path(env)):
            raise MissingInputError(f"${PROJECT_ENV}={env}: expected a folder holding notebooks/ and params/ "
                                    "(a checkout of the dganalysis repository)")
        return Path(env)
    for cand in (Path.cwd(), Path(__file__).resolve().parents[2], *installed_projects()):
        if _is_project(cand):
            return cand
    raise MissingInputError(f"cannot find the notebooks/ and params/ folders: run from a checkout of the dganalysis "
                            f"repository or set ${PROJECT_ENV} to one (an installed wheel ships them in "
                            f"{installed_projects()[0]}, missing here)")


def outputs_root(root: Path) -> Path:
    """Where runs of the project ``root`` write (``outputs/<profile>``): ``root/outputs`` in a checkout,
    ``./outputs`` in the current folder for the copy an installed wheel ships (not written into)."""
    resolved = Path(root).resolve()
    if any(resolved == p.resolve() for p in installed_projects()):
        return Path.cwd() / "outputs"
    return Path(root) / "outputs"


def list_notebooks(root: Path | None = None) -> list[str]:
    """Notebook names (without .ipynb) in reading order."""
    root = root or repo_root()
    return sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _check(params: dict, label: str, inspected: dict, profile: str, root: Path, name: str = "") -> dict:
    """``params`` with ``${data}``/``${weights}`` expanded, checked against the notebook's parameters cell and, when
    notebook ``name`` has one, its parameter object (:func:`dganalysis.studies.study.build_params`); errors start
    with ``label`` (the YAML file, and the variant if any)."""
    from dganalysis.studies.study import build_params, has_study, params_class

    params = expand(params, profile_paths(profile, root), label)  # ${data}, ${weights}: see dganalysis.studies.paths
    known = set(inspected)
    unknown = sorted(set(params) - known)
    if unknown:
        hint = params_class(name).sweep_hint(unknown) if has_study(name) else ""
        raise ConfigError(f"{label}: unknown parameter(s) {unknown}; the notebook's parameters cell has "
                          f"{sorted(known)}{hint}")
    clash = sorted(set(params) & set(INJECTED))
    if clash:
        raise ConfigError(f"{label}: {clash} are set by the runner per profile; remove them")
    if has_study(name):
        build_params(name, params, label)
    else:
        check_notebook_params(params, inspected, label)
    return params


def load_all_params(profile: str, name: str, root: Path | None = None) -> tuple[dict, dict[str, dict]]:
    """(base parameters, variant name -> full parameters) of notebook ``name`` for ``profile``, all checked against
    its parameters cell; a YAML without ``variants:`` has no variants (see the module docstring)."""
    import papermill as pm

    from dganalysis.studies.study import merge_overrides

    root = root or repo_root()
    ypath = root / "params" / profile / f"{name}.yaml"
    if not ypath.is_file():
        raise MissingInputError(f"{ypath}: no parameters for notebook {name!r} in profile {profile!r}")
    raw = io.read_yaml_mapping(ypath, "a mapping of parameter names to values")
    has_variants = VARIANTS_KEY in raw
    variants = raw.pop(VARIANTS_KEY, None)
    if has_variants and not isinstance(variants, dict):
        raise ConfigError(f"{ypath}: {VARIANTS_KEY!r} must map variant names to parameter overrides, "
                         f"got {type(variants).__name__}")
    inspected = pm.inspect_notebook(str(root / "notebooks" / f"{name}.ipynb"))
    base = _check(raw, str(ypath), inspected, profile, root, name)
    out: dict[str, dict] = {}
    for vname, overrides in (variants or {}).items():
        label = f"{ypath} (variant {vname!r})"
        if not isinstance(vname, str) or not VARIANT_NAME.fullmatch(vname):
            raise ConfigError(f"{label}: a variant name is a letter, then letters, digits, '_' or '-' (at most 64)")
        if not isinstance(overrides, dict):
            raise ConfigError(f"{label}: expected a mapping of parameter overrides, got {type(overrides).__name__}")
        if VARIANTS_KEY in overrides:
            raise ConfigError(f"{label}: variants cannot be nested")
        out[vname] = _check(merge_overrides(name, raw, overrides), label, inspected, profile, root, name)
    return base, out


def load_params(profile: str, name: str, root: Path | None = None) -> dict:
    """The (base) parameters of notebook ``name`` for ``profile``, checked against its parameters cell; the YAML's
    variants are checked too (:func:`load_all_params`)."""
    return load_all_params(profile, name, root)[0]


def load_variants(profile: str, name: str, root: Path | None = None) -> dict[str, dict]:
    """Variant name -> full parameters (base with the variant's overrides) of notebook ``name`` for ``profile``."""
    return load_all_params(profile, name, root)[1]


def injected_params(profile: str, root: Path, output_root: Path | None = None,
                    variant: str | None = None) -> dict[str, str]:
    """The folders the runner sets in every notebook of ``profile`` (see :data:`INJECTED`); a variant run writes
    into ``outputs/<profile>/variants/<variant>`` and shares the profile's store and data folders."""
    base = output_root or outputs_root(root)
    out = base / profile
    target = out if variant is None else out / VARIANTS_DIR / variant
    return {"output_dir": str(target.resolve()), "store_dir": str((out / "store").resolve()),
            "data_dir": str((base / "data").resolve())}


@dataclass
class RunTarget:
    """One execution of a notebook: the base run (``variant`` None) or one variant, with its parameters."""

    name: str
    variant: str | None
    params: dict

    @property
    def label(self) -> str:
        return run_label(self.name, self.variant)


def run_targets(profile: str, names: Sequence[str], root: Path,
                variants: Mapping[str, Sequence[str]] | None = None) -> list[RunTarget]:
    """Every run of ``names``, in order: each notebook's base run, then its variants in YAML order. All YAMLs are
    read and checked first (base and every variant). ``variants`` (notebook -> variant names) picks the variants
    that run; None: all of them; a notebook absent from it runs no variant; an undeclared name is an error."""
    targets = []
    for n in names:
        base, declared = load_all_params(profile, n, root)
        picked = list(declared) if variants is None else list(variants.get(n, ()))
        undeclared = [v for v in picked if v not in declared]
        if undeclared:
            raise ConfigError(f"params/{profile}/{n}.yaml: no variant(s) {undeclared}; declared: {list(declared)}")
        targets.append(RunTarget(n, None, base))
        targets += [RunTarget(n, v, declared[v]) for v in picked]
    return targets


def _new_files(folder: Path, since: float) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.stat().st_mtime >= since)


def run_notebooks(
    profile: str = "quick", names: list[str] | None = None, root: Path | None = None, output_root: Path | None = None,
    kernel_name: str | None = None, progress: bool = True, transform: Callable[[str, dict], dict] | None = None,
    variants: Mapping[str, Sequence[str]] | None = None,
) -> list[NotebookRun]:
    """Execute ``names`` (default: all notebooks) with ``profile``'s parameters, and their YAMLs' variants; write the
    index.

    ``transform(name, params)`` may change each run's validated parameters before it runs (the smoke run of
    :mod:`dganalysis.studies.smoke.run` shrinks them); it gets the notebook's name for variant runs too. ``variants``
    restricts the variants that run (see :func:`run_targets`; default: every variant declared)."""
    import papermill as pm

    root = root or repo_root()
    all_names = list_notebooks(root)
    names = names or all_names
    names = [n[:-6] if n.endswith(".ipynb") else n for n in names]
    missing = [n for n in names if n not in all_names]
    if missing:
        raise ConfigError(f"unknown notebook(s) {missing}; available: {all_names}")
    out = (output_root or outputs_root(root)) / profile
    targets = run_targets(profile, names, root, variants)  # validate everything before running anything
    if transform is not None:
        targets = [RunTarget(t.name, t.variant, transform(t.name, t.params)) for t in targets]
    runs = []
    for i, t in enumerate(targets, 1):
        log.info("[%d/%d] %s (profile %s)", i, len(targets), t.label, profile)
        inject = injected_params(profile, root, output_root, t.variant)
        t_out = Path(inject["output_dir"]) if t.variant is not None else out
        target = out / "notebooks" / f"{t.label}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        start = time.time()
        ok, err = True, ""
        progress_path = out / PROGRESS_DIR / f"{t.label}.json"
        progress_path.unlink(missing_ok=True)
        try:
            with sweep_progress(progress_path, t.label, progress):
                pm.execute_notebook(
                    str(root / "notebooks" / f"{t.name}.ipynb"), str(target), parameters={**t.params, **inject},
                    cwd=str(root / "notebooks"), kernel_name=kernel_name, progress_bar=progress, log_output=False,
                )
        except pm.PapermillExecutionError as e:
            ok, err = False, f"cell {e.exec_count} failed: {e.ename}: {e.evalue}"
            log.error("%s: %s (partial notebook saved to %s)", t.label, err, target)
        runs.append(NotebookRun(t.label, target, ok, time.time() - start, err,
                                _new_files(t_out / "figures", start), _new_files(t_out / "tables", start),
                                sweep_totals(progress_path)))
        write_index(out, profile, record_run(out, runs[-1]))
    if runs:
        log.info("HTML report: %s", write_report(out, profile))
    return runs


@contextlib.contextmanager
def sweep_progress(path: Path, label: str, show: bool = True) -> Iterator[None]:
    """While the block runs (a notebook in its kernel): ``$DGANALYSIS_PROGRESS_FILE`` names ``path``, so the
    kernel's sweeps report there (:mod:`dganalysis.progress`), and, with ``show``, a thread draws the current
    sweep's jobs done and ETA on stderr under papermill's cell counter. The variable is restored afterwards."""
    path.parent.mkdir(parents=True, exist_ok=True)
    old = os.environ.get(PROGRESS_FILE_ENV)
    os.environ[PROGRESS_FILE_ENV] = str(path)
    try:
        if show:
            with ProgressWatcher(path, label):
                yield
        else:
            yield
    finally:
        if old is None:
            os.environ.pop(PROGRESS_FILE_ENV, None)
        else:
            os.environ[PROGRESS_FILE_ENV] = old


def _jobs_cell(jobs: dict) -> str:
    """The index's ``jobs`` cell of a run: jobs trained (failed), already done, minutes inside sweeps."""
    if not jobs:
        return "—"
    text = f"{jobs['trained']} trained"
    if jobs.get("failed"):
        text += f" ({jobs['failed']} failed)"
    if jobs.get("skipped"):
        text += f", {jobs['skipped']} already done"
    return text + f"; {jobs['minutes']:.1f} min in {jobs['sweeps']} sweep{'s' if jobs['sweeps'] != 1 else ''}"


def _store_summary(store: Path) -> str:
    """One line counting every job folder of the profile's store by state (:func:`dganalysis.records.store.job_folders`
    and :func:`~dganalysis.records.store.classify_job`, the rule ``collect`` counts by; tables use finished jobs only)."""
    from collections import Counter

    from dganalysis.records.store import classify_job, job_folders

    if not store.is_dir():
        return ""
    folders = job_folders(store) if any(store.iterdir()) else []
    kinds = Counter(classify_job(d) for d in folders)
    done = kinds[("done", True)] + kinds[("done", False)]
    failed = kinds[("failed", True)] + kinds[("failed", False)]
    early = kinds[("failed", False)]
    parts = [f"{done} done", f"{failed} failed" + (f" ({early} before their first record)" if early else ""),
             f"{kinds[('unfinished', True)] + kinds[('unfinished', False)]} unfinished or running"]
    if kinds[("done", False)]:
        parts.append(f"{kinds[('done', False)]} of the done ones without records (unreadable)")
    return (f"Job store `store/`: {len(folders)} job folders: {', '.join(parts)} "
            "(tables and figures use finished jobs only).")


def provenance_line() -> str:
    """The index's line saying what code and machine ran the notebooks (:func:`dganalysis.provenance.local_stamp`:
    versions, commit, CPU and its bf16 support, GPU, the precision and threads a job gets by default); each job's
    own stamp is in its ``spec.json`` and records."""
    from dganalysis.provenance import local_stamp, one_line

    return f"Made with {one_line(local_stamp())}."


def _design_section(out: Path) -> list[str]:
    """The studies' designs, as each notebook wrote it before its runs (:mod:`dganalysis.studies.design`)."""
    from dganalysis.studies.design import read_design_markdown

    lines = read_design_markdown(out)
    return ["", "## Study designs, stated before the runs", "",
            "Each claim, the effect it expects, the power the run's trials give it "
            "(`dganalysis.stats.planning`) and what the run cannot decide.", "", *lines] if lines else []


def write_index(out: Path, profile: str, runs: list[NotebookRun]) -> Path:
    """``<out>/index.md``: the findings summary (:mod:`dganalysis.studies.findings`; a variant run's findings are labelled
    with the variant), then each run with its status, time, figures (PNG) and tables (Markdown)."""
    from dganalysis.studies.findings import (
        findings_markdown,
        read_findings,
        read_variant_findings,
        verdict_counts_line,
    )

    total = sum(r.seconds for r in runs) / 60
    variants = [v for v in (split_label(r.name)[1] for r in runs) if v is not None]
    rows = read_findings(out)
    if variants:
        rows = read_variant_findings(out, rows, {v: out / VARIANTS_DIR / v for v in variants})
    from dganalysis.audit.summary import read_audit_lines

    audits = [f"- {line}" for line in read_audit_lines(out)]
    lines = [f"# dganalysis outputs — profile `{profile}`", "", provenance_line(), "",
             "## Summary: each paper's finding on this run", "",
             *([verdict_counts_line(rows), ""] if rows else []), *findings_markdown(rows), *(["", "Audits (`dganalysis audit`):", "", *audits] if audits else []),
             *_design_section(out),
             "",
             f"Notebooks: {sum(r.ok for r in runs)} of {len(runs)} ok, {total:.1f} min in total.", "",
             "| notebook | status | minutes | jobs |", "|---|---|---|---|"]
    for r in runs:
        status = "ok" if r.ok else f"FAILED ({r.error})"
        lines.append(f"| [{r.name}](notebooks/{r.name}.ipynb) | {status} | {r.seconds / 60:.1f} | "
                     f"{_jobs_cell(r.jobs)} |")
    store_line = _store_summary(out / "store")
    if store_line:
        lines += ["", store_line]
    for r in runs:
        lines += ["", f"## {r.name}", ""]
        pngs = [p for p in r.figures if p.suffix == ".png"]
        mds = [p for p in r.tables if p.suffix == ".md"]
        d = run_folder(r.name)
        if d:
            lines.append(f"Variant run: output folder [{d}]({d}), findings in [{d}findings/]({d}findings/).")
        if not pngs and not mds:
            lines.append("(no figures or tables written)")
        for p in pngs:
            lines.append(f"- figure `{p.stem}`: [png]({d}figures/{p.name}) · [pdf]({d}figures/{p.stem}.pdf)")
        for p in mds:
            lines.append(f"- table `{p.stem}`: [md]({d}tables/{p.name}) · [csv]({d}tables/{p.stem}.csv) · "
                         f"[tex]({d}tables/{p.stem}.tex)")
    return io.write_text(out / "index.md", "\n".join(lines) + "\n")
