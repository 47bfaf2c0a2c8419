"""``dganalysis collect DIR ...``: model-selection tables of a job store or of DomainBed sweep output dirs.

The equivalent of DomainBed's ``python -m domainbed.scripts.collect_results --input_dir DIR [--latex]`` (which prints
training-domain validation, leave-one-domain-out and oracle tables); ``--se-ddof 0`` reproduces its error bars.

Unfinished runs (``results.jsonl`` without ``done``): a DomainBed sweep dir's are read, as DomainBed's
``collect_results`` reads them (it never looks at ``done``), so its table comes out by default; our job stores' are
skipped. Which is which is decided per DIR by :func:`dganalysis.results.is_our_store` (a job folder holding our
``spec.json`` or ``failed`` makes the DIR our store). The footer under each table counts the unfinished runs
included or left out; ``--skip-unfinished`` / ``--include-unfinished`` apply one rule to every DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dganalysis import io
from dganalysis.results import load, summary_line
from dganalysis.selection import METHODS, get_method, methods
from dganalysis.tables import FORMATS, selection_table

DOMAINBED_METHODS = tuple(m for m in methods() if get_method(m).domainbed)  # what DomainBed prints


def add_collect_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``collect`` verb."""
    parser.description = (
        "Print DomainBed-style model-selection tables (rows algorithms, columns test domains + Avg, cells "
        "mean ± SE over trial seeds, in %) for job stores or DomainBed sweep output dirs. Failed jobs are skipped; "
        "unfinished runs (no 'done' file) are read in DomainBed sweep dirs, as DomainBed's collect_results reads "
        "them, and skipped in our job stores (a DIR is our store when a job folder in it holds spec.json or "
        "'failed'). Every job folder is counted in a line under each table: read, failed (with or without "
        "records), without records (a run that crashed before its first checkpoint: DomainBed's err.txt "
        "only), unfinished, unreadable. A job with an unreadable record is "
        "reported (file and line) and skipped, unless --strict; runs whose loss exploded are flagged there too."
    )
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="job store(s) or DomainBed sweep output dir(s)")
    parser.add_argument(
        "--selection", default="all", choices=[*METHODS, "all"],
        help="model selection method; 'all' = DomainBed's three (training_domain, leave_one_out, oracle). "
             "Default: all",
    )
    parser.add_argument("--format", default="text", choices=FORMATS,
                        help="output format (default text); latex tables use booktabs rules: add "
                             "\\usepackage{booktabs} to the preamble (a comment line in the .tex says so)")
    parser.add_argument(
        "--test-domains", default="auto",
        help="which runs make the columns: 'auto' (per dataset, the runs with the fewest test domains), "
             "'all', or a number K of test domains per run (default auto)",
    )
    parser.add_argument(
        "--se-ddof", type=int, default=1, choices=[0, 1],
        help="standard error = std(ddof)/sqrt(n); 1 = sample std (default), 0 = DomainBed's population std",
    )
    parser.add_argument("--digits", type=int, default=1, help="decimals of the percentages (default 1)")
    unfinished = parser.add_mutually_exclusive_group()
    unfinished.add_argument("--include-unfinished", dest="include_unfinished", action="store_const", const=True,
                            default=None, help="read runs without a 'done' file in every DIR, our stores included")
    unfinished.add_argument("--skip-unfinished", dest="include_unfinished", action="store_const", const=False,
                            help="skip runs without a 'done' file in every DIR, DomainBed sweep dirs included "
                                 "(default: read them in DomainBed sweep dirs, as DomainBed does; skip them in "
                                 "our stores)")
    parser.add_argument("--strict", action="store_true",
                        help="stop at the first unreadable record instead of skipping its job")
    parser.add_argument("-o", "--output", default=None, help="also write the tables to this file")


def main_collect(args: argparse.Namespace) -> int:
    """Run the ``collect`` verb; returns the exit status (1 when no finished job was found)."""
    from dganalysis.validation import ConfigError

    for d in args.dirs:
        if Path(d).exists() and not Path(d).is_dir():
            raise ConfigError(f"{d}: a file, not a folder; expected a job store or a DomainBed sweep output dir")
    if args.output:
        out_path = Path(args.output)
        if out_path.is_dir():
            raise ConfigError(f"-o {out_path}: a folder; expected a file name for the tables")
        if out_path.parent.exists() and not out_path.parent.is_dir():
            raise ConfigError(f"-o {out_path}: {out_path.parent} is a file, not a folder")
    df = load(args.dirs, include_unfinished=args.include_unfinished, strict=args.strict)
    for problem in df.attrs.get("problems", []):
        sys.stderr.write(f"collect: skipped a job: {problem}\n")
    if df.empty:
        sys.stderr.write(f"collect: no finished jobs with records under {', '.join(args.dirs)}"
                         f" ({summary_line(df)})\n")
        return 1
    summary = summary_line(df)
    methods = DOMAINBED_METHODS if args.selection == "all" else (args.selection,)
    parts = []
    for i, method in enumerate(methods):
        text = selection_table(df, method, fmt=args.format, test_domains=args.test_domains, ddof=args.se_ddof,
                               digits=args.digits)
        if args.format == "csv":
            lines = text.splitlines(keepends=True)
            text = "".join(lines if i == 0 else lines[1:])  # one header for the whole CSV
        elif args.format == "latex":
            text = f"% ===== model selection: {METHODS[method]}\n" + text + f"% {summary}\n"
        elif args.format == "markdown":
            text = f"## Model selection: {METHODS[method]}\n\n" + text + f"\n*{summary}*\n"
        else:
            text = f"===== Model selection: {METHODS[method]}\n" + text + f"{summary}\n"
        parts.append(text)
    sep = "" if args.format == "csv" else "\n"
    out = sep.join(parts)
    sys.stdout.write(out)
    if args.format == "csv":
        sys.stderr.write(f"collect: {summary}\n")  # a CSV holds the table only
    if args.output:
        io.write_text(args.output, out)
    return 0
