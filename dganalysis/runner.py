"""Run the study notebooks headlessly with papermill, one profile at a time.

``params/<profile>/<notebook>.yaml`` holds the parameters for one notebook and profile (``${data}``, ``${weights}``
in its strings come from ``params/<profile>/paths.yaml``, see :mod:`dganalysis.paths`); the runner checks every name against the notebook's ``parameters`` cell (an unknown
name is an error naming the YAML file) and every value against the kind of the cell's default (an
integer stays an integer, a boolean a boolean; see :func:`dganalysis.validation.check_notebook_params`), injects the profile's folders
(``output_dir = outputs/<profile>``, ``store_dir = outputs/<profile>/store`` — one job store
per profile, shared by all notebooks — and ``data_dir = outputs/data``), executes into
``outputs/<profile>/notebooks/``, and writes ``outputs/<profile>/index.md`` listing each
notebook with its status, run time, figures and tables, and ``outputs/<profile>/report.html``
(:mod:`dganalysis.report`: the same on one self-contained page). A failing notebook is still saved
(papermill writes the partial output) and the failing cell is reported.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from dganalysis import io
from dganalysis.paths import expand, profile_paths
from dganalysis.report import write_report
from dganalysis.run_history import NotebookRun, record_run
from dganalysis.validation import check_notebook_params

log = logging.getLogger(__name__)
INJECTED = ("output_dir", "store_dir", "data_dir")


def repo_root() -> Path:
    """The project folder (holding notebooks/ and params/): the current folder or the package's parent."""
    for cand in (Path.cwd(), Path(__file__).resolve().parent.parent):
        if (cand / "notebooks").is_dir() and (cand / "params").is_dir():
            return cand
    raise FileNotFoundError("cannot find the project folder with notebooks/ and params/ (run from the repository root)")


def list_notebooks(root: Path | None = None) -> list[str]:
    """Notebook names (without .ipynb) in reading order."""
    root = root or repo_root()
    return sorted(p.stem for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def load_params(profile: str, name: str, root: Path | None = None) -> dict:
    """The parameters of notebook ``name`` for ``profile``, checked against its parameters cell."""
    import papermill as pm

    root = root or repo_root()
    ypath = root / "params" / profile / f"{name}.yaml"
    if not ypath.is_file():
        raise FileNotFoundError(f"{ypath}: no parameters for notebook {name!r} in profile {profile!r}")
    try:
        params = yaml.safe_load(ypath.read_text()) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{ypath}: not valid YAML ({e})") from e
    if not isinstance(params, dict):
        raise ValueError(f"{ypath}: expected a mapping of parameter names to values, got {type(params).__name__}")
    params = expand(params, profile_paths(profile, root), str(ypath))  # ${data}, ${weights}: see dganalysis.paths
    inspected = pm.inspect_notebook(str(root / "notebooks" / f"{name}.ipynb"))
    known = set(inspected)
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"{ypath}: unknown parameter(s) {unknown}; the notebook's parameters cell has {sorted(known)}")
    clash = sorted(set(params) & set(INJECTED))
    if clash:
        raise ValueError(f"{ypath}: {clash} are set by the runner per profile; remove them")
    check_notebook_params(params, inspected, str(ypath))
    return params


def injected_params(profile: str, root: Path, output_root: Path | None = None) -> dict[str, str]:
    """The folders the runner sets in every notebook of ``profile`` (see :data:`INJECTED`)."""
    base = output_root or root / "outputs"
    out = base / profile
    return {"output_dir": str(out.resolve()), "store_dir": str((out / "store").resolve()),
            "data_dir": str((base / "data").resolve())}


def _new_files(folder: Path, since: float) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.stat().st_mtime >= since)


def run_notebooks(
    profile: str = "quick", names: list[str] | None = None, root: Path | None = None, output_root: Path | None = None,
    kernel_name: str | None = None, progress: bool = True, transform: Callable[[str, dict], dict] | None = None,
) -> list[NotebookRun]:
    """Execute ``names`` (default: all notebooks) with ``profile``'s parameters; write the index.

    ``transform(name, params)`` may change each notebook's validated parameters before it runs (the smoke run of
    :mod:`dganalysis.smoke.run` shrinks them)."""
    import papermill as pm

    root = root or repo_root()
    all_names = list_notebooks(root)
    names = names or all_names
    names = [n[:-6] if n.endswith(".ipynb") else n for n in names]
    missing = [n for n in names if n not in all_names]
    if missing:
        raise ValueError(f"unknown notebook(s) {missing}; available: {all_names}")
    out = (output_root or root / "outputs") / profile
    params_all = {n: load_params(profile, n, root) for n in names}  # validate everything before running anything
    if transform is not None:
        params_all = {n: transform(n, p) for n, p in params_all.items()}
    inject = injected_params(profile, root, output_root)
    runs = []
    for i, n in enumerate(names, 1):
        log.info("[%d/%d] %s (profile %s)", i, len(names), n, profile)
        target = out / "notebooks" / f"{n}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        start = time.time()
        ok, err = True, ""
        try:
            pm.execute_notebook(
                str(root / "notebooks" / f"{n}.ipynb"), str(target), parameters={**params_all[n], **inject},
                cwd=str(root / "notebooks"), kernel_name=kernel_name, progress_bar=progress, log_output=False,
            )
        except pm.PapermillExecutionError as e:
            ok, err = False, f"cell {e.exec_count} failed: {e.ename}: {e.evalue}"
            log.error("%s: %s (partial notebook saved to %s)", n, err, target)
        runs.append(NotebookRun(n, target, ok, time.time() - start, err,
                                _new_files(out / "figures", start), _new_files(out / "tables", start)))
        write_index(out, profile, record_run(out, runs[-1]))
    if runs:
        log.info("HTML report: %s", write_report(out, profile))
    return runs


def _store_summary(store: Path) -> str:
    """One line counting the profile's jobs by state (tables and figures use finished jobs only)."""
    from collections import Counter

    from dganalysis.results import job_status

    if not store.is_dir():
        return ""
    counts = Counter(job_status(d) for d in store.iterdir() if d.is_dir() and not d.name.startswith("."))
    return (f"Job store `store/`: {counts['done']} done, {counts['failed']} failed, {counts['unfinished']} "
            "unfinished or running (tables and figures use finished jobs only).")


def write_index(out: Path, profile: str, runs: list[NotebookRun]) -> Path:
    """``<out>/index.md``: the findings summary (:mod:`dganalysis.findings`), then each notebook with its status,
    time, figures (PNG) and tables (Markdown)."""
    from dganalysis.findings import findings_markdown, read_findings

    total = sum(r.seconds for r in runs) / 60
    lines = [f"# dganalysis outputs — profile `{profile}`", "", "## Summary: each paper's finding on this run", "",
             *findings_markdown(read_findings(out)), "",
             f"Notebooks: {sum(r.ok for r in runs)} of {len(runs)} ok, {total:.1f} min in total.", "",
             "| notebook | status | minutes |", "|---|---|---|"]
    for r in runs:
        status = "ok" if r.ok else f"FAILED ({r.error})"
        lines.append(f"| [{r.name}](notebooks/{r.name}.ipynb) | {status} | {r.seconds / 60:.1f} |")
    store_line = _store_summary(out / "store")
    if store_line:
        lines += ["", store_line]
    for r in runs:
        lines += ["", f"## {r.name}", ""]
        pngs = [p for p in r.figures if p.suffix == ".png"]
        mds = [p for p in r.tables if p.suffix == ".md"]
        if not pngs and not mds:
            lines.append("(no figures or tables written)")
        for p in pngs:
            lines.append(f"- figure `{p.stem}`: [png](figures/{p.name}) · [pdf](figures/{p.stem}.pdf)")
        for p in mds:
            lines.append(f"- table `{p.stem}`: [md](tables/{p.name}) · [csv](tables/{p.stem}.csv) · [tex](tables/{p.stem}.tex)")
    return io.write_text(out / "index.md", "\n".join(lines) + "\n")
