"""The ``dganalysis`` command.

Verbs:
  run      execute study notebooks with papermill for a profile (quick | paper)
  sweep    train a grid of jobs (YAML file or flags) into a job store, resumably
  collect  print the model-selection table of a sweep directory (ours or DomainBed's)
  list     list notebooks, datasets and algorithms
"""

from __future__ import annotations

import argparse
import logging
import sys


def _cmd_run(args: argparse.Namespace) -> int:
    from dganalysis.runner import run_notebooks

    runs = run_notebooks(args.profile, args.notebooks or None, progress=not args.no_progress)
    failed = [r for r in runs if not r.ok]
    for r in runs:
        print(f"{'ok    ' if r.ok else 'FAILED'} {r.name:28s} {r.seconds / 60:5.1f} min  {r.error}")
    if runs:
        print(f"index: {runs[0].output.parent.parent / 'index.md'}")
    return 1 if failed else 0


def _cmd_list(args: argparse.Namespace) -> int:
    from dganalysis import algorithms, data
    from dganalysis.runner import list_notebooks

    print("notebooks: ", ", ".join(list_notebooks()))
    print("datasets:  ", ", ".join(data.available()))
    print("algorithms:", ", ".join(algorithms.available()))
    return 0


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
    r.add_argument("--profile", default="quick", choices=["quick", "paper"], help="parameter profile (default quick)")
    r.add_argument("notebooks", nargs="*", help="notebook names, e.g. 00_quickstart (default: all)")
    r.add_argument("--no-progress", action="store_true", help="hide papermill's per-cell progress bar")
    r.set_defaults(func=_cmd_run)

    s = sub.add_parser("sweep", help="train a grid of jobs into a job store (resumable)")
    add_sweep_arguments(s)
    s.set_defaults(func=main_sweep)

    c = sub.add_parser("collect", help="print the model-selection table for a sweep directory")
    add_collect_arguments(c)
    c.set_defaults(func=main_collect)

    ls = sub.add_parser("list", help="list notebooks, datasets and algorithms")
    ls.set_defaults(func=_cmd_list)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``dganalysis`` command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, OSError) as e:  # bad input (and unusable paths): one clear line, no traceback
        if args.verbose:
            raise
        text = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"dganalysis {args.verb}: error: {text}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
