"""The ``dganalysis`` command.

Verbs:
  run      execute study notebooks with papermill for a profile (quick | paper); --dry-run plans only
  report   write outputs/<profile>/report.html: the index summary, every figure and table on one page
  sweep    train a grid of jobs (YAML file or flags) into a job store, resumably
  train    train one run with DomainBed's train.py flags (as python -m dganalysis.scripts.train)
  collect  print the model-selection table of a sweep directory (ours or DomainBed's)
  audit    calibrated verdicts (better/worse/equivalent/undecided) on a sweep or a published table
  download fetch DomainBed's datasets into a data root (as python -m dganalysis.scripts.download), resumably
  list     list notebooks, datasets and algorithms
  env      print versions, commit and machine (what results made here carry), for bug reports
"""

from __future__ import annotations

import argparse
import logging
import sys
import traceback

from dganalysis import progress
from dganalysis.validation import ConfigError

#: the parameter profiles `dganalysis run` accepts (folders of params/)
PROFILES = ("quick", "paper")
#: how to report a bug (the project has no public issue tracker address yet: see pyproject.toml's [project.urls])
REPORT_BUG = ("please report it to the dganalysis maintainers (the project's issue tracker) with the traceback above "
              "and the output of `dganalysis env`")


def _cmd_dry_run(args: argparse.Namespace) -> int:
    from dganalysis.studies.dryrun import dry_run, format_dry_run

    if not args.verbose:  # papermill's per-notebook lines and the planners' INFO lines would bury the report
        for name in ("papermill", "dganalysis"):
            logging.getLogger(name).setLevel(logging.WARNING)
    result = dry_run(args.profile, args.notebooks or None, throughput=args.throughput)
    print(format_dry_run(result))
    if args.jobs_csv:
        from dganalysis import io

        print(f"jobs: {io.write_text(args.jobs_csv, result.jobs.to_csv(index=False))}")
    return 0 if result.ok else 1


def _cmd_run(args: argparse.Namespace) -> int:
    if args.dry_run:
        return _cmd_dry_run(args)
    if args.smoke:
        if args.profile != "paper":
            raise ConfigError("--smoke runs the paper profile on FAKE inputs; use it with --profile paper")
        from dganalysis.studies.smoke.run import run_smoke

        out, runs = run_smoke(args.smoke_dir, args.notebooks or None, progress=not args.no_progress)
        print(f"SMOKE RUN on FAKE data and weights (dganalysis.studies.smoke): outputs in {out}")
    else:
        from dganalysis.studies.runner import run_notebooks

        runs = run_notebooks(args.profile, args.notebooks or None, progress=not args.no_progress)
    failed = [r for r in runs if not r.ok]
    for r in runs:
        print(f"{'ok    ' if r.ok else 'FAILED'} {r.name:28s} {r.seconds / 60:5.1f} min  {r.error}")
    if runs:
        print(f"index: {runs[0].output.parent.parent / 'index.md'}")
        print(f"report: {runs[0].output.parent.parent / 'report.html'}")
    return 1 if failed else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from dganalysis.studies.report import write_report
    from dganalysis.studies.runner import outputs_root, repo_root

    if not args.outputs and args.profile not in PROFILES:  # `run` refuses it too: suggest a profile it accepts
        from dganalysis.registry import unknown_name

        raise ConfigError(f"--profile: {unknown_name('profile', args.profile, PROFILES)}")
    out = Path(args.outputs) if args.outputs else outputs_root(repo_root()) / args.profile
    if not out.is_dir():
        hint = (f"run `dganalysis run --profile {args.profile}` first" if args.profile in PROFILES else
                f"--outputs names a folder of `dganalysis run` outputs (outputs/<profile> for profiles "
                f"{', '.join(PROFILES)})")
        raise ConfigError(f"{out}: no outputs for profile {args.profile!r}; {hint}")
    if args.docs:
        from dganalysis.studies.docs_pages import publish

        written = publish(out, Path(args.docs), args.profile)
        print(f"docs: {len(written) - 1} executed notebook(s) and {written[-1]}")
        return 0
    print(f"report: {write_report(out, args.profile, Path(args.output) if args.output else None)}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from dganalysis import algorithms, data, plugins
    from dganalysis.studies.runner import list_notebooks

    plugins.import_requested()  # a user's algorithms and datasets from $DGANALYSIS_IMPORT are listed too
    try:
        notebooks = ", ".join(list_notebooks())
    except FileNotFoundError as e:  # datasets and algorithms need no notebooks
        notebooks = f"none found ({e})"
    print("notebooks: ", notebooks)
    print("datasets:  ", ", ".join(data.available()))
    print("algorithms:", ", ".join(algorithms.available()))
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    from dganalysis.provenance import format_stamp, local_stamp

    print(format_stamp(local_stamp()))
    return 0


def _cmd_download(args: argparse.Namespace) -> int:
    from dganalysis.scripts.download import main_args

    return main_args(args)


def _cmd_train(args: argparse.Namespace) -> int:
    from dganalysis.scripts.train import main_args

    return main_args(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every verb (documented in ``--help``)."""
    from dganalysis.collect import add_collect_arguments, main_collect
    from dganalysis.sweep.cli import add_sweep_arguments, main_sweep

    p = argparse.ArgumentParser(prog="dganalysis", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = p.add_subparsers(dest="verb", required=True)

    r = sub.add_parser("run", help="execute notebooks with papermill from params/<profile>/<notebook>.yaml",
                       description="Execute notebooks (default: all) into outputs/<profile>/notebooks/ and write "
                                   "outputs/<profile>/index.md. Unknown parameter names are an error; a failing "
                                   "notebook is still saved and its failing cell reported (exit status 1).")
    r.add_argument("--profile", default="quick", choices=list(PROFILES), help="parameter profile (default quick)")
    r.add_argument("notebooks", nargs="*", help="notebook names, e.g. 00_quickstart (default: all)")
    r.add_argument("--no-progress", action="store_true", help="hide papermill's per-cell progress bar")
    r.add_argument("--dry-run", action="store_true",
                   help="train nothing: validate every YAML, list each notebook's jobs and their count, estimate "
                        "CPU/GPU-hours from dganalysis/sweep/throughput.yaml, report missing datasets and weights "
                        "(exit status 1 on any problem)")
    r.add_argument("--smoke", action="store_true",
                   help="with --profile paper: run every notebook end to end on FAKE dataset trees and FAKE weight "
                        "files in the published layouts, steps/trials/draws/image sizes shrunk (dganalysis.studies.smoke.run); "
                        "outputs go to a temporary folder (or --smoke-dir), labelled FAKE")
    r.add_argument("--smoke-dir", default=None, help="with --smoke: the folder for the fake inputs and the outputs")
    r.add_argument("--throughput", default=None, help="with --dry-run: a throughput YAML replacing the shipped one")
    r.add_argument("--jobs-csv", default=None, help="with --dry-run: write every planned job (one row each) here")
    r.set_defaults(func=_cmd_run)

    rp = sub.add_parser("report", help="write outputs/<profile>/report.html (one self-contained page)",
                        description="Rebuild the HTML report of a profile from what is on disk: the summary of "
                                    "index.md, then per notebook its status, every figure (embedded PNG) and every "
                                    "table. `dganalysis run` writes it after each run.")
    rp.add_argument("--profile", default="quick", help="profile whose outputs to report (default quick)")
    rp.add_argument("--outputs", default=None, help="the outputs folder (default outputs/<profile>)")
    rp.add_argument("-o", "--output", default=None, help="write the page here instead of <outputs>/report.html")
    rp.add_argument("--docs", default=None, metavar="DIR",
                    help="instead of the HTML page, publish the executed notebooks and the findings summary into the "
                         "documentation site's folder DIR (docs/executed in this repository)")
    rp.set_defaults(func=_cmd_report)

    s = sub.add_parser("sweep", help="train a grid of jobs into a job store (resumable)")
    add_sweep_arguments(s)
    s.set_defaults(func=main_sweep)

    from dganalysis.scripts.train import build_parser as train_parser

    t = sub.add_parser("train", parents=[train_parser()], add_help=False,
                       help="train one run with DomainBed's train.py flags (--mode auto: domainbed_exact where it can)",
                       description="One run, as `python -m domainbed.scripts.train` with the same flags: "
                                   "out.txt, err.txt, results.jsonl, model.pkl and done in --output_dir "
                                   "(dganalysis.scripts.train). A flag DomainBed has and dganalysis cannot honour is "
                                   "refused by name.")
    t.set_defaults(func=_cmd_train)

    from dganalysis.scripts.download import DOWNLOAD_DATASETS
    from dganalysis.scripts.download import add_arguments as add_download_arguments

    dl = sub.add_parser("download", help="fetch DomainBed's datasets into a data root (resumable; --dry-run lists)",
                        description="Fetch what DomainBed's download.py fetches, from the same sources, into the "
                                    "folders DomainBed's loaders and ours read (dganalysis.scripts.download): "
                                    "resumable, checksums checked where published, one line per failure and exit "
                                    "status 1 when any dataset failed.")
    add_download_arguments(dl)
    dl.add_argument("names", nargs="*", metavar="DATASET",
                    help=f"datasets to fetch, as --datasets (default: all): {', '.join(DOWNLOAD_DATASETS)}")
    dl.set_defaults(func=_cmd_download)

    c = sub.add_parser("collect", help="print the model-selection table for a sweep directory")
    add_collect_arguments(c)
    c.set_defaults(func=main_collect)

    from dganalysis.audit.cli import add_audit_arguments, main_audit

    au = sub.add_parser("audit", help="calibrated verdicts on a sweep directory or a published table")
    add_audit_arguments(au)
    au.set_defaults(func=main_audit)

    ls = sub.add_parser("list", help="list notebooks, datasets and algorithms")
    ls.set_defaults(func=_cmd_list)

    en = sub.add_parser("env", help="print the versions, commit and machine that results made here would carry",
                        description="Print what every job's spec.json and records, the index, the report and the "
                                    "audit's JSON record about the code and machine (dganalysis.provenance): package "
                                    "version and commit (and whether the checkout is modified), Python, torch, numpy "
                                    "and CUDA versions, CPU model and its AMX-bf16 support, GPU, the device, "
                                    "precision and torch threads a job gets by default. Paste it into bug reports.")
    en.set_defaults(func=_cmd_env)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dganalysis`` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        with progress.bars(sys.stderr.isatty()):
            return int(args.func(args) or 0)
    except ConfigError as e:  # bad input (and unusable paths), said by our checks: one clear line, no traceback
        if args.verbose:
            raise
        print(f"dganalysis {args.verb}: error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # anything else is ours to fix: the traceback, then where to report it
        traceback.print_exc()
        print(bug_line(f"dganalysis {args.verb}", e), file=sys.stderr)
        return 1


def bug_line(where: str, exc: BaseException) -> str:
    """The line under the traceback of an unexpected exception: a bug of dganalysis, and how to report it."""
    return (f"{where}: internal error ({type(exc).__name__}): this is a bug in dganalysis, not a problem with your "
            f"input; {REPORT_BUG}")


if __name__ == "__main__":
    sys.exit(main())
