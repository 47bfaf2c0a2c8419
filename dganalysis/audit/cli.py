"""``dganalysis audit INPUT...``: the audit verb (see :mod:`dganalysis.audit` and docs/audit.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dganalysis.selection import METHODS


def add_audit_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``audit`` verb."""
    parser.description = (
        "Calibrated verdicts on domain-generalization results: per (selection, dataset, algorithm) against a "
        "baseline — better, worse, equivalent (within ±rope points) or undecided — from Welch t-tests and TOST on "
        "the dataset averages over trials, Holm-corrected over each selection method's claims; across datasets the "
        "probability of improvement, IQM, Wilcoxon/Friedman and the Bayesian signed-rank test. INPUT is a sweep "
        "directory (ours or DomainBed's, read as `collect` reads it), a published table (.tex from DomainBed's "
        "collect_results --latex, or .csv with selection, dataset, algorithm, mean, se, n), or shipped:domainbed / "
        "shipped:yu2024_table5 (the tables shipped with dganalysis). Published rounding is honoured: a printed "
        "'± 0.0' is an SE below 0.05, and no verdict rests on it."
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="sweep directory, .tex/.csv table, or shipped:NAME")
    parser.add_argument("--baseline", default="ERM", help="the algorithm every claim compares with (default ERM)")
    parser.add_argument("--selection", default="all", choices=[*METHODS, "all"],
                        help="model selection method; 'all' = DomainBed's three (a table: those it has). Default all")
    parser.add_argument("--alpha", type=float, default=0.05, help="family-wise error level of the claims (0.05)")
    parser.add_argument("--rope", type=float, default=1.0,
                        help="region of practical equivalence, ± accuracy points (default 1.0; 0 = no equivalence)")
    parser.add_argument("--reference", default=None, metavar="TABLE",
                        help="compare every input cell by cell with this published table (consistent/lower/higher)")
    parser.add_argument("--trials", type=int, default=None, metavar="N",
                        help="number of runs behind each cell of a table input (default: the table's n; DomainBed 3)")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the machine-readable results here")
    parser.add_argument("-o", "--output", default=None, metavar="report.html",
                        help="write the HTML report here (claims .csv and .tex beside it)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstraps and posterior samples (0)")


def main_audit(args: argparse.Namespace) -> int:
    """Run the ``audit`` verb: check everything, audit, print one summary line per input, write the outputs."""
    from dganalysis.audit.report import write_outputs
    from dganalysis.audit.run import run_audit
    from dganalysis.validation import ConfigError

    for flag, path, suffix in (("--json", args.json, ".json"), ("-o", args.output, ".html")):
        if path is None:
            continue
        p = Path(path)
        if p.is_dir():
            raise ConfigError(f"{flag} {p}: a folder; expected a file name ({suffix})")
        if p.parent.exists() and not p.parent.is_dir():
            raise ConfigError(f"{flag} {p}: {p.parent} is a file, not a folder")
    if not 0 < args.alpha < 1:
        raise ConfigError(f"--alpha {args.alpha}: expected a level in (0, 1)")
    if args.rope < 0:
        raise ConfigError(f"--rope {args.rope}: expected a width ≥ 0 in accuracy points")
    if args.trials is not None and args.trials < 2:
        raise ConfigError(f"--trials {args.trials}: expected at least 2 runs per cell")
    result = run_audit(args.inputs, baseline=args.baseline, selection=args.selection, alpha=args.alpha, rope=args.rope,
                       reference_table=args.reference, trials=args.trials, seed=args.seed)
    for line in result.summary_lines():
        print(line)
    for a in result.audits:
        for note in a.notes + a.input.notes:
            sys.stderr.write(f"audit: {a.input.name}: {note}\n")
        if a.reference is not None:
            counts = a.reference["verdict"].value_counts().to_dict()
            print(f"reference {args.reference} vs {a.input.name}: {counts} of {len(a.reference)} cells")
    for path in write_outputs(result, html_path=args.output, json_path=args.json):
        if path.suffix in (".html", ".json"):
            print(f"wrote {path}")
    return 0
