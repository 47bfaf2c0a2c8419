"""``dganalysis collect DIR ...``: model-selection tables of a job store or of DomainBed sweep output dirs.

The equivalent of DomainBed's ``python -m domainbed.scripts.collect_results --input_dir DIR [--latex]`` (which prints
training-domain validation, leave-one-domain-out and oracle tables); ``--se-ddof 0`` reproduces its error bars.

Records are read through the sweep's columnar index (:mod:`dganalysis.records.index`: ``.dganalysis_index.bin`` beside
the store, or in ``~/.cache/dganalysis/index`` when the store cannot be written) and the selections are made on its
arrays (:mod:`dganalysis.records.rules`, the selection rules :func:`dganalysis.records.select` runs too); the tables'
numbers and the line counting the job folders come from :mod:`dganalysis.records.summaries`, laid out by
:mod:`dganalysis.tables`. The printed output is kept beside the index under a key of every job folder's state, the
options and the code (:class:`~dganalysis.records.memo.SweepMemo`): the same command on an unchanged sweep prints it
again after checking the job folders, without reading a record or importing numpy or pandas.

Runs made under other versions, commits, devices or (for one algorithm) precisions — as their records'
``provenance`` says (:mod:`dganalysis.provenance`) — are combined, with one warning line per difference on stderr.

Unfinished runs (``results.jsonl`` without ``done``): a DomainBed sweep dir's are read, as DomainBed's
``collect_results`` reads them (it never looks at ``done``), so its table comes out by default; our job stores' are
skipped. Which is which is decided per DIR by :func:`dganalysis.records.store.is_our_store` (a job folder holding our
``spec.json`` or ``failed`` makes the DIR our store). The footer under each table counts the unfinished runs
included or left out; ``--skip-unfinished`` / ``--include-unfinished`` apply one rule to every DIR.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from dganalysis import io
from dganalysis.records.selection_methods import DOMAINBED_METHODS, METHODS
from dganalysis.tables import FORMATS


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
    parser.add_argument("dirs", nargs="*", metavar="DIR", help="job store(s) or DomainBed sweep output dir(s)")
    domainbed = parser.add_argument_group("DomainBed's collect_results spellings (aliases)")
    domainbed.add_argument("--input_dir", dest="input_dirs", action="append", default=[], metavar="DIR",
                           help="a DIR, as DomainBed's --input_dir (repeatable; DomainBed's exact printout: "
                                "python -m dganalysis.scripts.collect_results)")
    domainbed.add_argument("--latex", dest="format", action="store_const", const="latex", default="text",
                           help="the same as --format latex")
    domainbed.add_argument("--auto_lr", action="store_true",
                           help="refused: DomainBed's auto-lr selection has no counterpart here")
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
    parser.add_argument("--fresh", action="store_true",
                        help="read and select again even when the sweep, the options and the code are unchanged since "
                             "the same command last ran (by default its output, kept beside the sweep's index, is "
                             "printed again)")


def main_collect(args: argparse.Namespace) -> int:
    """Run the ``collect`` verb; returns the exit status (1 when no finished job was found)."""
    from dganalysis.validation import ConfigError

    args.dirs = [*args.dirs, *getattr(args, "input_dirs", [])]  # DomainBed's --input_dir
    if not args.dirs:
        raise ConfigError("collect: no folder given; expected DIR (or DomainBed's --input_dir DIR)")
    if getattr(args, "auto_lr", False):
        raise ConfigError("collect: --auto_lr is not supported: DomainBed's auto-lr selection "
                          "(IIDAutoLRAccuracySelectionMethod over train_autolr.py's records) has no counterpart here")
    for d in args.dirs:
        if Path(d).exists() and not Path(d).is_dir():
            raise ConfigError(f"{d}: a file, not a folder; expected a job store or a DomainBed sweep output dir")
    if args.output:
        out_path = Path(args.output)
        if out_path.is_dir():
            raise ConfigError(f"-o {out_path}: a folder; expected a file name for the tables")
        if out_path.parent.exists() and not out_path.parent.is_dir():
            raise ConfigError(f"-o {out_path}: {out_path.parent} is a file, not a folder")
    printed = _printed(args)
    sys.stderr.write(printed["stderr"])
    sys.stdout.write(printed["stdout"])
    if args.output and printed["status"] == 0:
        io.write_text(args.output, printed["stdout"])
    return int(printed["status"])


def _printed(args: argparse.Namespace) -> dict[str, Any]:
    """What ``collect`` prints, ``{"stdout", "stderr", "status"}``: kept beside the first sweep's index for an
    unchanged sweep (:class:`~dganalysis.records.memo.SweepMemo`: the job folders checked, nothing read), else the
    sweeps' selections (read through their index) as tables, kept for the next call."""
    from dganalysis.records.memo import SweepMemo
    from dganalysis.records.store import results_dir

    for d in args.dirs:  # every folder checked before any is read
        results_dir(d, "collect", "DIR")
    parts = [[str(Path(d).resolve()) for d in args.dirs], args.selection, args.format, str(args.test_domains),
             args.se_ddof, args.digits, args.include_unfinished, args.strict]
    memo = SweepMemo(args.dirs, "collect", parts)
    printed = None if args.fresh else memo.get()
    if printed is not None:
        printed["stderr"] = (f"collect: the sweep(s), options and code are unchanged since this command last ran: its "
                             f"output is printed again from {memo.file} (--fresh reads again)\n" + printed["stderr"])
        return printed
    from dganalysis.records import gc_pause
    from dganalysis.records.index import provenance_differences
    from dganalysis.records.indexed import select_for_tables
    from dganalysis.records.summaries import summarize_selections
    from dganalysis.tables import selections_text

    methods = DOMAINBED_METHODS if args.selection == "all" else (args.selection,)
    with gc_pause.paused():  # reading, selecting, importing numpy, pandas and tabulate: no cycles to find
        got = select_for_tables(args.dirs, methods, include_unfinished=args.include_unfinished, strict=args.strict,
                                indexes=memo.indexes)
        summaries = summarize_selections(got.selections, methods, test_domains=args.test_domains, ddof=args.se_ddof,
                                         domain_order=got.orders)
        first = got.selections[methods[0]]  # every selection carries the reading's attrs
        err = "".join(f"collect: skipped a job: {problem}\n" for problem in first.attrs.get("problems", []))
        err += "".join(f"collect: {line}\n" for line in provenance_differences(got.indexes))
        if got.rows == 0:
            err += (f"collect: no finished jobs with records under {', '.join(args.dirs)} "
                    f"({summaries.summary_line})\n")
            printed = {"stdout": "", "stderr": err, "status": 1}
        else:
            text, note = selections_text(summaries, fmt=args.format, digits=args.digits)
            printed = {"stdout": text, "stderr": err + "".join(f"collect: {line}\n" for line in note), "status": 0}
    memo.put(printed)
    return printed
