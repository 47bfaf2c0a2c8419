"""``dganalysis audit INPUT...``: the audit verb (see :mod:`dganalysis.audit` and docs/audit.md)."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

from dganalysis.records.selection_methods import METHODS


def add_audit_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of the ``audit`` verb."""
    parser.description = (
        "Calibrated verdicts on domain-generalization results: per (selection, dataset, algorithm) against a "
        "baseline — better, worse, equivalent (within ±rope points) or undecided — from Welch's statistic with its "
        "p-value calibrated over the unknown variance ratio (paired t where a sweep's arms share trial seeds) and "
        "TOST on the dataset averages over trials, one step-down per family (--family); across datasets the "
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
    parser.add_argument("--family", default="algorithm", choices=["algorithm", "dataset", "table"],
                        help="the family over which the error rate α holds: 'algorithm' (default; one algorithm vs "
                             "the baseline over the datasets of one selection method — the family a paper claims), "
                             "'dataset' (every algorithm vs the baseline on one dataset) or 'table' (every claim of "
                             "one selection method: the strictest). The summary shows the all-claims family beside")
    parser.add_argument("--unpaired", action="store_true",
                        help="test a sweep's claims unpaired even where both arms ran the same trial seeds "
                             "(default: paired there — exact for any variances)")
    parser.add_argument("--reference", default=None, metavar="TABLE",
                        help="compare every input cell by cell with this published table (consistent/lower/higher)")
    parser.add_argument("--trials", type=int, default=None, metavar="N",
                        help="number of runs behind each cell of a table input (default: the table's n; DomainBed 3)")
    parser.add_argument("--json", default=None, metavar="FILE", help="write the machine-readable results here")
    parser.add_argument("-o", "--output", default=None, metavar="report.html",
                        help="write the HTML report here (claims .csv and .tex beside it)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstraps and posterior samples (0)")
    parser.add_argument("--fresh", action="store_true",
                        help="recompute even when the sweep inputs, the other inputs, the options and the code are "
                             "unchanged since the same audit last ran (by default its outputs are then restored "
                             "from the copies kept beside the first sweep's index)")


def main_audit(args: argparse.Namespace) -> int:
    """Run the ``audit`` verb: check everything, audit, print one summary line per input, write the outputs."""
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
    memo = None if args.fresh else _memo(args)
    kept = memo.get() if memo is not None else None
    if kept is not None:
        sys.stdout.write(kept["stdout"])
        sys.stderr.write(kept["stderr"] + f"audit: the sweep(s), inputs, options and code are unchanged since this audit "
                                          f"last ran: its outputs were restored from {memo.copies} (--fresh "
                                          "recomputes)\n")
        return 0
    from dganalysis.records import gc_pause

    with gc_pause.paused():  # the statistics stack's import makes ~10^6 objects: its full collections cost ~0.1 s
        from dganalysis.audit.outputs import write_outputs  # statistics, figures: imported when something is computed
        from dganalysis.audit.run import run_audit

    out, err = [], []
    result = run_audit(args.inputs, baseline=args.baseline, selection=args.selection, alpha=args.alpha, rope=args.rope,
                       reference_table=args.reference, trials=args.trials, seed=args.seed, family=args.family,
                       paired=not args.unpaired, indexes=memo.indexes if memo is not None else ())
    for line in result.summary:
        out.append(line + "\n")
    for a in result.audits:
        for note in a.notes + a.input.notes:
            err.append(f"audit: {a.input.name}: {note}\n")
        if a.reference is not None:
            counts = a.reference["verdict"].value_counts().to_dict()
            out.append(f"reference {args.reference} vs {a.input.name}: {counts} of {len(a.reference)} cells\n")
    sys.stdout.write("".join(out))
    sys.stderr.write("".join(err))
    start = time.perf_counter()
    written = write_outputs(result, html_path=args.output, json_path=args.json)
    if written:
        logging.getLogger("dganalysis.audit.outputs").info("audit: report, figures and tables written in %.1f s",
                                                          time.perf_counter() - start)
    for path in written:
        if path.suffix in (".html", ".json"):
            out.append(f"wrote {path}\n")
            print(f"wrote {path}")
    if memo is not None:
        read = {a.input.path.resolve(): (a.input.path, a.input.index) for a in result.audits
                if a.input.kind == "sweep" and a.input.index is not None}
        as_read = [read.get(p.resolve()) for p in memo.paths]  # the sweeps as the audit read them
        memo.put({"stdout": "".join(out), "stderr": "".join(err)}, files=written,
                 indexes=None if None in as_read else as_read)
    return 0


#: libraries whose versions can change an audit's numbers or figures (part of the memo's key)
_LIBRARIES = ("numpy", "pandas", "scipy", "statsmodels", "scikit-posthocs", "matplotlib")


def _memo(args: argparse.Namespace) -> Any:
    """The :class:`~dganalysis.records.memo.SweepMemo` of this audit when an input is a sweep directory (a table-only
    audit is not kept): keyed by the sweeps' job folders, the other inputs' bytes, the options, the output paths,
    the package's version (its shipped tables with it) and the libraries' versions."""
    import hashlib
    from importlib import metadata

    from dganalysis.records.memo import SweepMemo

    sweeps = [p for p in args.inputs if Path(p).is_dir()]
    named = [*args.inputs, *([args.reference] if args.reference else [])]
    if not sweeps or not all(Path(p).exists() or str(p).startswith("shipped:") for p in named):
        return None  # nothing to keep, or an input error the audit reports before any work
    files = {}
    for p in [*args.inputs, *([args.reference] if args.reference else [])]:
        if Path(p).is_file():
            files[str(Path(p).resolve())] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    versions = {}
    for lib in _LIBRARIES:
        try:
            versions[lib] = metadata.version(lib)
        except metadata.PackageNotFoundError:
            versions[lib] = None
    parts = [[str(Path(p).resolve()) if Path(p).exists() else str(p) for p in args.inputs], files, args.baseline,
             args.selection, args.alpha, args.rope, args.reference, args.trials, args.seed, args.family,
             args.unpaired,
             str(Path(args.json).resolve()) if args.json else None,
             str(Path(args.output).resolve()) if args.output else None, versions]
    return SweepMemo(sweeps, "audit", parts)
