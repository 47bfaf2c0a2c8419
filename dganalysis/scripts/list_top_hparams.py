"""``python -m dganalysis.scripts.list_top_hparams --input_dir D --dataset DS --algorithm A --test_env E``.

A drop-in for DomainBed's ``domainbed/scripts/list_top_hparams.py`` (Gulrajani & Lopez-Paz 2021): for each of its
three model-selection methods and each trial seed of (dataset, algorithm, test env), every hyperparameter draw ranked
by its validation accuracy — its ``{'val_acc', 'test_acc'}``, its hyperparameters and the output dirs of its runs —
printed as DomainBed prints them. Each draw's (val_acc, test_acc) is our selection within that draw alone
(:func:`dganalysis.records.selection.select` with ``per_draw=True``); ranks tie as DomainBed's (``hparams_accs``: the higher
``hparams_seed`` first). A line after the listing, on stdout, points to ``dganalysis audit D``.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Sequence
from typing import Any

from dganalysis.records.selection_methods import DOMAINBED_METHODS, METHODS
from dganalysis.scripts._sweepdir import env_index
from dganalysis.scripts.collect_results import audit_pointer, load_selected
from dganalysis.validation import ConfigError


def build_parser() -> argparse.ArgumentParser:
    """DomainBed's parser: ``--input_dir``, ``--dataset``, ``--algorithm``, ``--test_env`` (all required)."""
    parser = argparse.ArgumentParser(description="Domain generalization testbed")
    parser.add_argument("--input_dir", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--algorithm", required=True)
    parser.add_argument("--test_env", type=int, required=True)
    return parser


def _run_acc(method: str, val_acc: float, test_acc: float) -> dict[str, Any]:
    """The ``run_acc`` dict of DomainBed's method, with its value types (a numpy mean where DomainBed averages, so
    that it prints alike)."""
    import numpy as np

    val = float(val_acc) if method == "oracle" else np.float64(val_acc)
    return {"val_acc": val, "test_acc": float(test_acc)}


def render(input_dir: str, dataset: str, algorithm: str, test_env: int) -> str:
    """Everything DomainBed's ``list_top_hparams`` prints (the pointer to the audit excluded)."""
    from dganalysis.records import select

    sweep, df = load_selected(input_dir, "list_top_hparams", sys.stderr.write)
    out = io.StringIO()
    out.write(f"Total records: {sweep.n_records}\n")
    trials = [g[0] for g in sweep.groups() if g[1:] == (dataset, algorithm, test_env)]
    runs = [r for r in sweep.runs if r.args.get("dataset") == dataset and r.args.get("algorithm") == algorithm
            and test_env in (r.args.get("test_envs") or [])]
    for key in DOMAINBED_METHODS:
        out.write(f"Model selection: {METHODS[key]}\n")
        draws: dict[tuple[int, int], tuple[float, float]] = {}
        if len(df):
            sel = select(df, key, per_draw=True)
            sel = sel[(sel["dataset"] == dataset) & (sel["algorithm"] == algorithm)
                      & ~sel["test_domains"].astype(str).str.contains(",")]
            for r in sel.itertuples(index=False):
                if env_index(dataset, str(r.domain)) != test_env:
                    continue
                k = (int(r.trial_seed), int(r.hparams_seed))
                if k in draws:
                    raise ConfigError(
                        f"list_top_hparams: trial_seed {k[0]}, hparams_seed {k[1]}: runs differ in arguments other "
                        f"than the seeds (e.g. --steps); DomainBed would merge them, we keep them apart: see "
                        f"`dganalysis collect`")
                draws[k] = (r.val_acc, r.acc)
        for trial in trials:
            out.write(f"trial_seed: {trial}\n")
            ranked = sorted((h, acc) for (t, h), acc in draws.items() if t == trial)  # by hparams_seed, as Q.group
            ranked = sorted(ranked, key=lambda x: float("-inf") if x[1][0] != x[1][0] else x[1][0])[::-1]
            for hseed, (val_acc, test_acc) in ranked:
                mine = [r for r in runs if r.args.get("trial_seed") == trial and r.args.get("hparams_seed") == hseed]
                out.write(f"\t{_run_acc(key, val_acc, test_acc)}\n")
                out.write("\t\thparams:\n")
                for k, v in sorted((mine[0].hparams if mine else {}).items()):
                    out.write(f"\t\t\t{k}: {v}\n")
                out.write("\t\toutput_dirs:\n")
                for output_dir in dict.fromkeys(r.args.get("output_dir") for r in mine):
                    out.write(f"\t\t\t{output_dir}\n")
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the drop-in; returns the exit status (2 for an unusable folder)."""
    args = build_parser().parse_args(argv)
    try:
        text = render(args.input_dir, args.dataset, args.algorithm, args.test_env)
    except ConfigError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    sys.stdout.write(text)
    sys.stdout.write(audit_pointer(args.input_dir, False))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
