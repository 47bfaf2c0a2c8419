"""Behaviour snapshot: what one checkout's code produces, written to a folder; and two such folders compared.

    python bench/behaviour_snapshot.py snapshot CHECKOUT OUTDIR [--quick-outputs DIR] [--no-notebooks]
    python bench/behaviour_snapshot.py compare BEFORE AFTER

``snapshot`` runs ``CHECKOUT``'s code (its ``dganalysis`` entry point from ``CHECKOUT/pyproject.toml``, with
``PYTHONPATH=CHECKOUT`` and this interpreter's folder first on ``PATH``) in a temporary folder, never in
``CHECKOUT``, and writes into ``OUTDIR``:

- ``dryrun/``: ``dganalysis run --dry-run --jobs-csv`` of ``--profile quick`` and ``--profile paper`` (the jobs CSV
  and the printed report), in a project folder holding copies of ``CHECKOUT``'s ``notebooks/`` and ``params/`` and
  no outputs (so every job reads "new");
- ``sweep/``: the records (``results.jsonl``), ``spec.json`` and file names of every job of two small sweeps trained
  from scratch by ``dganalysis sweep --config`` (:data:`SWEEP`: RotatedDigits from scikit-learn's digits at 12 px,
  ERM and CORAL, 2 test domains x 1 draw x 2 trials x 20 steps, and the 3 two-held-out runs that
  leave-one-domain-out selection needs: 20 jobs), once in the default mode (``normal``) and once with
  ``domainbed_exact: true`` (``exact``), 2 workers of 1 thread each;
- ``domainbed/``: 8 runs of ``dganalysis train`` with DomainBed's flags (Debug28, whose ``--mode auto`` is
  ``domainbed_exact``; ERM and CORAL, test environments 0 and 1, trials 0 and 1, 20 steps) into
  ``out/<md5 of the arguments>/`` as DomainBed's sweep lays them out: each run's ``results.jsonl``, ``err.txt`` and
  ``done`` (no two-held-out runs: leave-one-domain-out selection reads "X" there);
- ``collect/``: ``dganalysis collect`` (text, ``--latex``, and the ``-o`` files) on both stores and on the
  DomainBed folder, and DomainBed's printout (``python -m dganalysis.scripts.collect_results``, text and
  ``--latex``) on the DomainBed folder;
- ``audit/``: ``dganalysis audit`` on both stores: its ``--json``, the HTML page (``-o``) and the claims CSV/TeX
  written beside it, and what it prints;
- ``notebooks/``: ``dganalysis run --profile quick`` in a project folder holding copies of ``CHECKOUT``'s
  ``notebooks/`` and ``params/`` and of ``--quick-outputs`` (default ``/work/main/outputs/quick``, a finished quick
  run) as ``outputs/quick`` (its ``data`` sibling as ``outputs/data``), of which only the job folders of ``store/``
  and ``pretrained/`` are kept, the absolute paths in their records and ``spec.json`` moved to the copy (notebook
  04 finds its pretrained checkpoints by path): nothing is trained (``runs.json`` says so) and every table,
  finding, audit and page is written again by ``CHECKOUT``'s code. Copied back: ``tables/``, ``findings/``,
  ``design/``, ``audits/``, ``audit.json``, the audit report's HTML, CSV, TeX and selected-hparams JSON,
  ``index.md``, ``report.html`` and ``runs.json``; ``store_jobs.txt`` lists the store's job folders (two snapshots
  made from different inputs differ there);
- ``exit_codes.txt``: every command's exit status; ``logs/``: every command's stderr and DomainBed's ``out.txt``
  (kept to read, not compared); ``manifest.json``: the commands, seconds per step, the CPU and the load average
  (not compared).

Every command runs with ``PYTHONHASHSEED=0``: the order of a set of strings is then the same in every run (the
critical-difference diagrams of the audit page differ by a few antialiased pixels otherwise: the same figure drawn
in another order). Every run starts from empty caches: ``$DGANALYSIS_CACHE`` is a fresh folder (the design-power
cache), store indexes are built anew, and ``$DGANALYSIS_PROJECT``, ``$DGANALYSIS_IMPORT``,
``$DGANALYSIS_PROGRESS_FILE`` and ``$DGANALYSIS_THREADS`` are unset (``DGANALYSIS_THREADS=1`` for the two sweeps
and the DomainBed runs only).

``compare`` diffs every file of the two snapshots but ``manifest.json`` and ``logs/``, after normalising clocks
and provenance only, and prints one row per file: ``identical``, ``differs`` (with the first differing line of
each side), or present on one side only. Exit status 1 on any difference. Normalised:

- paths: each snapshot's temporary folder, ``CHECKOUT`` and ``OUTDIR`` (from its manifest) become ``<WORK>``,
  ``<CHECKOUT>`` and ``<OUTDIR>``;
- in JSON text (``.json``, ``.jsonl`` and JSON objects inside any file), the value of every key in
  :data:`CLOCK_KEYS` (``elapsed``, ``step_time``, ``seconds``, ``minutes``) and :data:`PROVENANCE_KEYS`
  (``commit``, ``dirty``, ``dganalysis`` — the package version —, ``host``), wherever it is nested (records,
  ``spec.json``, the audit's ``settings.provenance``, ``runs.json``);
- in any text, the one-line stamp ``dganalysis <version> (commit <hash>[, modified])`` (``index.md``,
  ``report.html``), a date with a time of day (:data:`TIMESTAMP`: ``report.html``'s "Generated ... UTC") and the
  minutes ``dganalysis run`` took (:data:`RUN_MINUTES`: "N min in total", "N min in K sweeps", the minutes column
  of the notebooks' table in ``index.md`` and ``report.html``, "status: ok · N min" in ``report.html``).

The temporary folder is ``<tmp>/dgasnap<8 hex digits>``, as long in every snapshot and free of characters LaTeX
escapes: the tables that print a store's path (``08_audit_*.md`` pads its columns to it, the ``.tex`` escapes it)
then normalise alike.

Nothing else is normalised: a changed number, key order, float formatting, line or file is a difference.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomllib

#: JSON keys whose values are clocks (seconds, durations)
CLOCK_KEYS = ("elapsed", "step_time", "seconds", "minutes")
#: JSON keys whose values say which code and machine made a file, not what it computed
PROVENANCE_KEYS = ("commit", "dirty", "dganalysis", "host")
#: the one-line provenance stamp of index.md and report.html (dganalysis.provenance.one_line)
STAMP = re.compile(r"dganalysis [0-9][^\s()]* \(commit [0-9a-f]{7,40}(, modified)?\)")
#: a date with a time of day (report.html's "Generated 2026-11-29 06:15 UTC"); a date alone is kept
TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?( ?UTC|Z|[+-]\d{2}:?\d{2})?")
#: the minutes `dganalysis run` reports per notebook and in all (index.md, report.html): clocks in text
RUN_MINUTES = (
    (re.compile(r"\b\d+\.\d min in total\b"), "<min> min in total"),
    (re.compile(r"\b\d+\.\d min in (\d+ sweeps?)\b"), r"<min> min in \1"),
    (re.compile(r"^(\| \[[^]]*\]\([^)]*\) \| \w+ \| )\d+\.\d( \|)", re.M), r"\1<min>\2"),
    (re.compile(r"(</a></td>\n<td>\w+</td>\n<td>)\d+\.\d(</td>)"), r"\1<min>\2"),
    (re.compile(r"(status: (<span[^>]*>)?\w+(</span>)? · )\d+\.\d( min ·)"), r"\1<min>\4"),
)
#: what compare leaves out (timings and stderr, kept to read)
NOT_COMPARED = ("manifest.json", "logs")

#: the small sweep (the exact one adds ``domainbed_exact: true``)
SWEEP = """\
dataset: RotatedDigits
dataset_kwargs: {angles: [0, 30, 60], image_size: 12}
algorithms: [ERM, CORAL]
splits: [{train: ["30", "60"], test: ["0"]}, {train: ["0", "60"], test: ["30"]}, {train: ["60"], test: ["0", "30"]},
         {train: ["30"], test: ["0", "60"]}, {train: ["0"], test: ["30", "60"]}]
n_hparams: 1
n_trials: 2
steps: 20
checkpoint_freq: 5
hparams_overrides: {featurizer: smallcnn, batch_size: 16}
"""
#: DomainBed runs: Debug28 (its 16 examples per environment need a batch below DomainBed's 64)
DOMAINBED_RUNS = [{"dataset": "Debug28", "algorithm": a, "test_envs": [e], "trial_seed": t, "hparams_seed": 0,
                   "steps": 20, "hparams": '{"batch_size": 8}'}
                  for a in ("ERM", "CORAL") for e in (0, 1) for t in (0, 1)]
#: outputs/quick entries copied back after the notebooks ran
NOTEBOOK_OUTPUTS = ("tables", "findings", "design", "audits", "audit.json", "audit_report.html",
                    "audit_report.claims.csv", "audit_report.claims.tex", "audit_report.store.selected_hparams.json",
                    "index.md", "report.html", "runs.json")
#: job-folder files of a store that are copied (history.log holds clocks, hosts and process ids only)
JOB_FILES = ("results.jsonl", "spec.json", "failed")


# ------------------------------------------------------------------------------------------------ snapshot


class Snapshot:
    """Runs one checkout's commands in a temporary folder and keeps what they write under ``out``."""

    def __init__(self, checkout: Path, out: Path, work: Path, python: str) -> None:
        self.checkout, self.out, self.work, self.python = checkout, out, work, python
        self.steps: list[dict] = []
        self.codes: list[str] = []
        script = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]["scripts"]["dganalysis"]
        module, func = script.split(":")
        self.entry = [python, "-c", f"import sys; from {module} import {func}; sys.exit({func}())"]
        (work / "cache").mkdir(parents=True)
        (out / "logs").mkdir(parents=True)

    def env(self, threads: int | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in (
            "DGANALYSIS_PROJECT", "DGANALYSIS_IMPORT", "DGANALYSIS_PROGRESS_FILE", "DGANALYSIS_THREADS", "PYTHONPATH")}
        env.update(PYTHONPATH=str(self.checkout), DGANALYSIS_CACHE=str(self.work / "cache"), MPLBACKEND="Agg",
                   PYTHONHASHSEED="0",
                   PATH=f"{Path(self.python).parent}{os.pathsep}{env.get('PATH', '')}")
        if threads is not None:
            env["DGANALYSIS_THREADS"] = str(threads)
        return env

    def run(self, name: str, args: list[str], cwd: Path, stdout: Path | None = None, threads: int | None = None,
            module: str | None = None) -> int:
        """One command (the entry point with ``args``, or ``python -m module args``): its stdout into ``stdout``
        (else logs/), its stderr into logs/, its exit status into exit_codes.txt."""
        cmd = [self.python, "-m", module, *args] if module else [*self.entry, *args]
        stdout = stdout or self.out / "logs" / f"{name}.stdout"
        stdout.parent.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        with open(stdout, "wb") as so, open(self.out / "logs" / f"{name}.stderr", "wb") as se:
            rc = subprocess.run(cmd, cwd=cwd, env=self.env(threads), stdout=so, stderr=se).returncode
        self.steps.append({"name": name, "cwd": str(cwd), "command": cmd[3:] if not module else cmd[1:],
                           "seconds": round(time.time() - t0, 1), "rc": rc})
        self.codes.append(f"{name} {rc}")
        print(f"  {name}: exit {rc}, {time.time() - t0:.1f} s", flush=True)
        return rc

    def project(self, name: str) -> Path:
        """A project folder with copies of the checkout's notebooks/ and params/."""
        root = self.work / name
        for sub in ("notebooks", "params"):
            shutil.copytree(self.checkout / sub, root / sub)
        return root

    def dry_runs(self) -> None:
        root = self.project("dry")
        for profile in ("quick", "paper"):
            csv = self.work / f"{profile}.jobs.csv"
            self.run(f"dryrun_{profile}", ["run", "--dry-run", "--profile", profile, "--jobs-csv", str(csv)], root,
                     self.out / "dryrun" / f"{profile}.stdout")
            if csv.exists():
                shutil.copy(csv, self.out / "dryrun" / f"{profile}.jobs.csv")

    def sweeps(self) -> list[Path]:
        root = self.work / "sweep"
        root.mkdir()
        stores = []
        for mode, extra in (("normal", ""), ("exact", "domainbed_exact: true\n")):
            (root / f"{mode}.yaml").write_text(SWEEP + extra)
            self.run(f"sweep_{mode}", ["sweep", "--config", f"{mode}.yaml", "--store", f"store_{mode}", "--workers",
                                       "2", "--no-progress"], root, self.out / "sweep" / f"{mode}.stdout", threads=1)
            copy_jobs(root / f"store_{mode}", self.out / "sweep" / mode, JOB_FILES)
            stores.append(root / f"store_{mode}")
        return stores

    def domainbed(self) -> Path:
        root = self.work / "domainbed"
        (root / "data").mkdir(parents=True)

        def one(run: dict) -> None:
            name = hashlib.md5(json.dumps(run, sort_keys=True).encode()).hexdigest()
            args = ["train", "--data_dir", "data", "--output_dir", f"out/{name}", "--skip_model_save"]
            for k, v in run.items():
                args += [f"--{k}", *map(str, v)] if isinstance(v, list) else [f"--{k}", str(v)]
            self.run(f"domainbed_{name[:8]}", args, root, threads=1)

        first = len(self.codes)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(one, DOMAINBED_RUNS))
        self.codes[first:] = sorted(self.codes[first:])  # the two threads finish in either order
        copy_jobs(root / "out", self.out / "domainbed", ("results.jsonl", "err.txt", "done"))
        for out_txt in sorted((root / "out").glob("*/out.txt")):
            shutil.copy(out_txt, self.out / "logs" / f"domainbed_{out_txt.parent.name[:8]}.out.txt")
        return root / "out"

    def collect(self, dirs: dict[str, Path]) -> None:
        dest = self.out / "collect"
        for name, d in dirs.items():
            for fmt, flags in (("text", []), ("latex", ["--latex"])):
                written = self.work / f"collect_{name}.{fmt}"
                self.run(f"collect_{name}_{fmt}", ["collect", str(d), *flags, "-o", str(written)], d.parent,
                         dest / f"{name}.{fmt}.stdout")
                if written.exists():
                    shutil.copy(written, dest / f"{name}.{fmt}.output")
        d = dirs["domainbed"]
        for fmt, flags in (("text", []), ("latex", ["--latex"])):
            self.run(f"collect_results_{fmt}", ["--input_dir", str(d), *flags], d.parent,
                     dest / f"domainbed.collect_results.{fmt}.stdout", module="dganalysis.scripts.collect_results")

    def audit(self, stores: list[Path]) -> None:
        dest = self.out / "audit"
        for store in stores:
            name = store.name
            report = self.work / "audit" / f"{name}.html"
            report.parent.mkdir(exist_ok=True)
            self.run(f"audit_{name}", ["audit", str(store), "--json", str(dest / f"{name}.json"), "-o", str(report)],
                     store.parent, dest / f"{name}.stdout")
            for f in sorted(report.parent.glob(f"{name}.*")):
                shutil.copy(f, dest / f.name)

    def notebooks(self, quick: Path) -> None:
        root = self.project("nb")
        out = root / "outputs" / "quick"
        out.mkdir(parents=True)
        for sub in ("store", "pretrained"):
            if (quick / sub).is_dir():
                shutil.copytree(quick / sub, out / sub, ignore=shutil.ignore_patterns(".*"))  # no index, memo, lock
        if (quick.parent / "data").is_dir():
            shutil.copytree(quick.parent / "data", root / "outputs" / "data")
        # absolute paths (output_dir, data_dir, pretrained: 04 matches checkpoints by path) moved to the copy: the
        # outputs folder the records were written in (a frozen copy's records still name the original one) and this
        found = re.compile(r'"(/[^"]*?)/quick/(?:pretrained|store)/')
        for f in [*out.glob("store/*/results.jsonl"), *out.glob("store/*/spec.json")]:
            text = f.read_text(encoding="utf-8")
            olds = {str(quick.parent.resolve()), *found.findall(text)} - {str(root / "outputs")}
            new = text
            for old in sorted(olds, key=len, reverse=True):
                new = new.replace(old, str(root / "outputs"))
            if new != text:
                f.write_text(new, encoding="utf-8")
        dest = self.out / "notebooks"
        dest.mkdir(parents=True)
        jobs = sorted(p.name for p in (out / "store").iterdir()) if (out / "store").is_dir() else []
        (dest / "store_jobs.txt").write_text("".join(f"{j}\n" for j in jobs))
        self.run("run_quick", ["run", "--profile", "quick", "--no-progress"], root,
                 self.out / "logs" / "run_quick.stdout")
        for name in NOTEBOOK_OUTPUTS:
            src = out / name
            if src.is_dir():
                shutil.copytree(src, dest / name)
            elif src.is_file():
                shutil.copy(src, dest / name)


def copy_jobs(store: Path, dest: Path, names: tuple[str, ...]) -> None:
    """Each job folder of ``store``: the files ``names`` and ``files.txt``, the names of all its files."""
    if not store.is_dir():
        return
    for job in sorted(p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")):
        (dest / job.name).mkdir(parents=True)
        (dest / job.name / "files.txt").write_text("".join(f"{p.name}\n" for p in sorted(job.iterdir())))
        for n in names:
            if (job / n).is_file():
                shutil.copy(job / n, dest / job.name / n)


def work_folder() -> Path:
    """A new folder ``<tmp>/dgasnap<8 hex digits>``: as long in every snapshot, and nothing in it that LaTeX escapes,
    so the padded Markdown and escaped TeX tables that print a path read alike once the path is normalised."""
    while True:
        path = Path(tempfile.gettempdir()) / f"dgasnap{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def cpu_model() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    return next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Model name")), "?")


def snapshot(checkout: Path, out: Path, quick: Path | None, python: str) -> int:
    """Write the snapshot of ``checkout`` into ``out`` (which must not exist); returns 0."""
    checkout, out = checkout.resolve(), out.resolve()
    if out.exists():
        raise SystemExit(f"{out}: exists; give a new folder")
    t0, load0 = time.time(), load_average()
    work = work_folder()
    snap = Snapshot(checkout, out, work, python)
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"snapshot of {checkout} ({commit[:12]}) into {out}; work folder {work}", flush=True)
    try:
        snap.dry_runs()
        stores = snap.sweeps()
        bed = snap.domainbed()
        snap.collect({"store_normal": stores[0], "store_exact": stores[1], "domainbed": bed})
        snap.audit(stores)
        if quick is not None:
            snap.notebooks(quick)
    finally:
        (out / "exit_codes.txt").write_text("".join(f"{c}\n" for c in snap.codes))
        manifest = {"checkout": str(checkout), "commit": commit, "outdir": str(out), "work": str(work),
                    "python": python, "quick_outputs": None if quick is None else str(quick),
                    "cpu": cpu_model(), "cores": os.cpu_count(), "load_before": load0, "load_after": load_average(),
                    "seconds": round(time.time() - t0, 1), "steps": snap.steps}
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        shutil.rmtree(work, ignore_errors=True)
    print(f"done in {time.time() - t0:.0f} s (load average {load0} before, {load_average()} after)")
    return 0


# ------------------------------------------------------------------------------------------------ compare


def _blank_json_values(text: str, keys: tuple[str, ...]) -> str:
    """``text`` with the JSON value after every ``"key":`` of ``keys`` replaced by ``"<key>"`` (nested values
    whole); the rest of the text byte for byte."""
    pattern = re.compile(r'(?<!\\)"(' + "|".join(map(re.escape, keys)) + r')"(\s*:\s*)')
    decoder = json.JSONDecoder()
    out, pos = [], 0
    for m in pattern.finditer(text):
        if m.start() < pos:  # inside a value already blanked
            continue
        try:
            _, end = decoder.raw_decode(text, m.end())
        except json.JSONDecodeError:
            continue
        out += [text[pos:m.end()], f'"<{m.group(1)}>"']
        pos = end
    return "".join(out) + text[pos:]


def normalise(text: str, paths: dict[str, str]) -> str:
    """``text`` with clocks and provenance normalised (see the module doc); ``paths`` maps folders to
    placeholders."""
    for path, name in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        if path:
            text = text.replace(path, name)
    text = _blank_json_values(text, CLOCK_KEYS + PROVENANCE_KEYS)
    text = STAMP.sub("dganalysis <version> (commit <commit>)", text)
    for pattern, replacement in RUN_MINUTES:
        text = pattern.sub(replacement, text)
    return TIMESTAMP.sub("<time>", text)


def _paths(snapshot_dir: Path) -> dict[str, str]:
    try:
        m = json.loads((snapshot_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    paths = {m.get("work", ""): "<WORK>", m.get("checkout", ""): "<CHECKOUT>", m.get("outdir", ""): "<OUTDIR>"}
    return {k: v for k, v in paths.items() if k}


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and p.relative_to(root).parts[0] not in NOT_COMPARED}


def first_difference(a: str, b: str) -> str:
    """Where two texts first differ: the line number and both lines (shortened)."""
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb), 1):
        if x != y:
            j = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            lo = max(0, j - 40)
            return f"line {i}: {x[lo:lo + 120]!r} | {y[lo:lo + 120]!r}"
    if len(la) != len(lb):
        return f"line {min(len(la), len(lb)) + 1}: {len(la)} vs {len(lb)} lines"
    return "line endings differ"


def compare_files(before: Path, after: Path, rel: str, paths_b: dict, paths_a: dict) -> tuple[str, str]:
    """(status, detail) of one file present in both snapshots."""
    rb, ra = (before / rel).read_bytes(), (after / rel).read_bytes()
    if rb == ra:
        return "identical", ""
    try:
        tb, ta = normalise(rb.decode("utf-8"), paths_b), normalise(ra.decode("utf-8"), paths_a)
    except UnicodeDecodeError:
        return "differs", "binary"
    if tb == ta:
        return "identical", "(normalised)"
    return "differs", first_difference(tb, ta)


def compare(before: Path, after: Path) -> int:
    """Print one row per file of either snapshot; 1 when any file differs or is on one side only."""
    paths_b, paths_a = _paths(before), _paths(after)
    fb, fa = _files(before), _files(after)
    rows, bad = [], 0
    for rel in sorted(fb | fa):
        if rel not in fa:
            status, detail = f"only in {before.name}", ""
        elif rel not in fb:
            status, detail = f"only in {after.name}", ""
        else:
            status, detail = compare_files(before, after, rel, paths_b, paths_a)
        bad += status != "identical"
        rows.append((rel, status, detail))
    width = max((len(r[0]) for r in rows), default=4)
    for rel, status, detail in rows:
        print(f"{rel:{width}s}  {status:9s}  {detail}".rstrip())
    print(f"{len(rows)} files: {len(rows) - bad} identical, {bad} differ or are on one side only")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    s = sub.add_parser("snapshot", help="write what CHECKOUT's code produces into OUTDIR")
    s.add_argument("checkout", type=Path)
    s.add_argument("outdir", type=Path)
    s.add_argument("--quick-outputs", type=Path, default=Path("/work/main/outputs/quick"),
                   help="a finished quick run whose store the notebooks reuse (default /work/main/outputs/quick)")
    s.add_argument("--no-notebooks", action="store_true", help="skip rerunning the quick profile's notebooks")
    s.add_argument("--python", default=sys.executable, help="the interpreter (default this one)")
    c = sub.add_parser("compare", help="diff two snapshots file by file (exit 1 on any difference)")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args(argv)
    if args.verb == "compare":
        return compare(args.before, args.after)
    quick = None if args.no_notebooks else args.quick_outputs
    if quick is not None and not (quick / "store").is_dir():
        raise SystemExit(f"--quick-outputs {quick}: no store/ there (a finished `dganalysis run --profile quick`)")
    return snapshot(args.checkout, args.outdir, quick, args.python)


if __name__ == "__main__":
    sys.exit(main())
