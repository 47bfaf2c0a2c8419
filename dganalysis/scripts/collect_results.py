"""``python -m dganalysis.scripts.collect_results --input_dir D [--latex] [--auto_lr]``: DomainBed's tables, as it prints them.

A drop-in for DomainBed's ``python -m domainbed.scripts.collect_results`` (Gulrajani & Lopez-Paz 2021,
``domainbed/scripts/collect_results.py``): the same flags, the same text or LaTeX on stdout, byte for byte, the same
``results.txt`` / ``results.tex`` written into ``--input_dir``. The selected accuracies come from our model selection
(:func:`dganalysis.records.selection.select` on :func:`dganalysis.records.load`, proved equal to DomainBed's by
``tests/reference/test_domainbed_selection.py``); this module lays them out as DomainBed does (its cell and
average arithmetic, its column widths, row and column order). One line after the tables, on stdout only, points to
``dganalysis audit D``, which says how far those numbers can be trusted.

Departures, on purpose: ``--auto_lr`` (DomainBed's ``IIDAutoLRAccuracySelectionMethod``, for ``train_autolr.py``'s
``fd_env*`` records) is refused by name: we have no such selection. Runs that differ in more than their
``hparams_seed`` (e.g. ``--steps``) within one (trial, dataset, algorithm, test env) are different experiments to us;
DomainBed would let them compete in one selection, so that sweep is refused with a pointer to ``dganalysis collect``,
which tabulates them apart. Runs our engine marked ``failed`` are left out (DomainBed writes no such mark).
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from dganalysis.records.selection_methods import DOMAINBED_METHODS, METHODS
from dganalysis.scripts._sweepdir import DOMAINBED_ENVIRONMENTS, Group, SweepDir, env_index, read_sweep_dir
from dganalysis.validation import ConfigError

if TYPE_CHECKING:
    import pandas as pd



def build_parser() -> argparse.ArgumentParser:
    """DomainBed's parser: ``--input_dir`` (required), ``--latex``, ``--auto_lr``."""
    parser = argparse.ArgumentParser(description="Domain generalization testbed")
    parser.add_argument("--input_dir", type=str, required=True)
    parser.add_argument("--latex", action="store_true")
    parser.add_argument("--auto_lr", action="store_true",
                        help="refused: DomainBed's auto-lr selection (train_autolr.py's fd_env records) is not "
                             "implemented here")
    return parser


def format_mean(data: Sequence[float], latex: bool) -> tuple[float | None, float | None, str]:
    """DomainBed's ``format_mean``: (mean %, standard error % with the population std, the printed cell)."""
    import numpy as np

    from dganalysis.stats.moments import population_standard_error

    if len(data) == 0:
        return None, None, "X"
    mean = 100 * np.mean(list(data))
    err = 100 * population_standard_error(data)
    if latex:
        return mean, err, f"{mean:.1f} $\\pm$ {err:.1f}"
    return mean, err, f"{mean:.1f} +/- {err:.1f}"


def _row(row: Sequence[object], colwidth: int, latex: bool) -> str:
    """DomainBed's ``misc.print_row`` as a string (cells cut to ``colwidth``; its ``print`` adds the space before
    the line end)."""
    sep, end = (" & ", "\\\\") if latex else ("  ", "")
    return sep.join(str(x).ljust(colwidth)[:colwidth] for x in row) + " " + end + "\n"


def _table(table: list[list[str]], header: str, row_labels: Sequence[str], col_labels: Sequence[str],
           colwidth: int, latex: bool) -> str:
    """DomainBed's ``print_table`` as a string."""
    out = "\n"
    if latex:
        num_cols = len(table[0]) if table else len(col_labels) - 1
        out += ("\\begin{center}\n\\adjustbox{max width=\\textwidth}{%\n\\begin{tabular}{l" + "c" * num_cols
                + "}\n\\toprule\n")
    else:
        out += f"-------- {header}\n"
    labels = list(col_labels)
    if latex:
        labels = ["\\textbf{" + str(c).replace("%", "\\%") + "}" for c in labels]
    for r, row in enumerate([labels, *[[label, *cells] for label, cells in zip(row_labels, table)]]):
        out += _row(row, colwidth, latex)
        if latex and r == 0:
            out += "\\midrule\n"
    if latex:
        out += "\\bottomrule\n\\end{tabular}}\n\\end{center}\n"
    return out


def selected_by_group(selected: pd.DataFrame, what: str) -> dict[Group, float]:
    """Our selection (:func:`dganalysis.records.selection.select`) keyed as DomainBed's groups: (trial_seed, dataset,
    algorithm, test env index) → the selected test accuracy, for single-test-domain configs of DomainBed's datasets.
    Two configs on one group (runs differing in more than ``hparams_seed``) raise :class:`ConfigError`."""
    out: dict[Group, float] = {}
    single = selected[~selected["test_domains"].astype(str).str.contains(",")]
    for r in single.itertuples(index=False):
        env = env_index(str(r.dataset), str(r.domain))
        if env is None:
            continue
        key = (int(r.trial_seed), str(r.dataset), str(r.algorithm), env)
        if key in out:
            raise ConfigError(
                f"{what}: trial_seed {key[0]}, {key[1]}, {key[2]}, test env {env}: runs with the same hparams_seed "
                f"differ in other arguments (e.g. --steps or --hparams); DomainBed would let them compete in one "
                f"selection, we keep them apart: tabulate them with `dganalysis collect` instead")
        out[key] = float(r.acc)
    return out


def results_tables(sweep: SweepDir, selected: dict[Group, float], method_name: str, latex: bool) -> str:
    """DomainBed's ``print_results_tables`` for one selection method, as a string: per dataset, rows algorithms and
    columns test envs (mean +/- SE over trial seeds, in %) and "Avg"; then the "Averages" table over datasets."""
    import numpy as np

    order = sweep.groups()
    groups = sorted((k for k in selected if k in order), key=order.__getitem__)  # get_grouped_records' order
    alg_names = sweep.algorithms()
    dataset_names = sweep.datasets()
    out = ""
    for dataset in dataset_names:
        if latex:
            out += f"\n\\subsubsection{{{dataset}}}\n"
        envs = range(len(DOMAINBED_ENVIRONMENTS[dataset]))
        table = [[""] * (len(envs) + 1) for _ in alg_names]
        for i, algorithm in enumerate(alg_names):
            means = []
            for j, env in enumerate(envs):
                accs = [selected[g] for g in groups if g[1:] == (dataset, algorithm, env)]
                mean, _, table[i][j] = format_mean(accs, latex)
                means.append(mean)
            table[i][-1] = "X" if None in means else f"{sum(means) / len(means):.1f}"
        header = f"Dataset: {dataset}, model selection method: {method_name}"
        out += _table(table, header, alg_names, ["Algorithm", *DOMAINBED_ENVIRONMENTS[dataset], "Avg"], 20, latex)
    if latex:
        out += "\n\\subsubsection{Averages}\n"
    table = [[""] * (len(dataset_names) + 1) for _ in alg_names]
    for i, algorithm in enumerate(alg_names):
        means = []
        for j, dataset in enumerate(dataset_names):
            by_trial: dict[int, list[float]] = {}
            for g in groups:
                if g[1:3] == (dataset, algorithm):
                    by_trial.setdefault(g[0], []).append(selected[g])
            trial_means = [float(np.mean(by_trial[t])) for t in sorted(by_trial)]
            mean, _, table[i][j] = format_mean(trial_means, latex)
            means.append(mean)
        table[i][-1] = "X" if None in means else f"{sum(means) / len(means):.1f}"
    header = f"Averages, model selection method: {method_name}"
    out += _table(table, header, alg_names, ["Algorithm", *dataset_names, "Avg"], 25, latex)
    return out


def load_selected(input_dir: str, script: str, err: Callable[[str], object]) -> tuple[SweepDir, pd.DataFrame]:
    """The sweep as DomainBed lists it and our tidy frame of it (every run read, finished or not, as DomainBed
    reads them; runs our engine marked failed and unreadable ones are left out, said on ``err``)."""
    from dganalysis.records import load

    sweep = read_sweep_dir(input_dir, script)
    df = load(input_dir, include_unfinished=True, progress=False, strict=False)
    for problem in df.attrs.get("problems", []):
        err(f"{script}: skipped a run: {problem}\n")
    return sweep, df


def render(input_dir: str, latex: bool) -> str:
    """Everything DomainBed's ``collect_results`` prints for ``input_dir`` (the pointer to the audit excluded)."""
    from dganalysis.records import select

    sweep, df = load_selected(input_dir, "collect_results", sys.stderr.write)
    out = io.StringIO()
    if latex:
        out.write("\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{adjustbox}\n\\begin{document}\n"
                  "\\section{Full DomainBed results}\n")
        out.write(f"% Total records: {sweep.n_records}\n")
    else:
        out.write(f"Total records: {sweep.n_records}\n")
    for key in DOMAINBED_METHODS:  # in DomainBed's order, under its printed names
        name = METHODS[key]
        if latex:
            out.write(f"\n\\subsection{{Model selection: {name}}}\n")
        chosen = selected_by_group(select(df, key), "collect_results") if len(df) else {}
        out.write(results_tables(sweep, chosen, name, latex))
    if latex:
        out.write("\\end{document}\n")
    return out.getvalue()


def audit_pointer(input_dir: str, latex: bool) -> str:
    """The line after the tables: how to audit the same sweep."""
    line = (f"How far these numbers can be trusted (seeds, selection, test-set noise): dganalysis audit "
            f"{input_dir}\n")
    return "% " + line if latex else line


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drop-in; returns the exit status (2 for a refused flag or an unusable folder)."""
    args = build_parser().parse_args(argv)
    if args.auto_lr:
        sys.stderr.write("collect_results: --auto_lr is not supported: DomainBed's auto-lr selection "
                         "(IIDAutoLRAccuracySelectionMethod over train_autolr.py's fd_env*_in_acc records) has no "
                         "counterpart in dganalysis; run DomainBed's own collect_results for it\n")
        return 2
    from pathlib import Path

    try:
        text = render(args.input_dir, args.latex)
    except ConfigError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    (Path(args.input_dir) / ("results.tex" if args.latex else "results.txt")).write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    sys.stdout.write(audit_pointer(args.input_dir, args.latex))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
