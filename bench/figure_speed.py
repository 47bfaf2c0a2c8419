"""Benchmark: seconds to write the audit's figures and page (:func:`dganalysis.audit.outputs.write_outputs`).

Fixed input: the shipped tables (``shipped:domainbed``, ``shipped:yu2024_table5``) and, when ``--store`` names a job
store with finished runs (e.g. a paper-profile smoke run's ``outputs/paper/store``), that store too — the notebook
08 audit (baseline ERM, all selections, α = 0.05, ROPE 1 point, 200 bootstrap reps, family ``algorithm``). The audit
itself runs once, untimed; then ``write_outputs`` (HTML page with its embedded PNGs, JSON, and with ``--out`` every
figure as PDF and PNG plus the tables) is timed ``--repeat`` times, each into a fresh folder, and the median wall
and CPU seconds are printed (on a shared machine the CPU seconds vary less). Run it once with the code to compare on ``PYTHONPATH`` (e.g. another checkout) and once with this one, on
the same machine, and divide. ``--keep DIR`` keeps the last repetition's files (to compare figures pixel by pixel);
``--profile`` prints the 25 most expensive functions of one extra, profiled repetition.

    PYTHONPATH=$PWD python bench/figure_speed.py [--store PATH] [--repeat N] [--keep DIR] [--profile]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

SHIPPED = ["shipped:domainbed", "shipped:yu2024_table5"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default=None, help="a job store to audit beside the shipped tables (optional)")
    ap.add_argument("--repeat", type=int, default=1, help="timed repetitions of write_outputs (median printed)")
    ap.add_argument("--keep", default=None, help="folder to keep the last repetition's outputs in")
    ap.add_argument("--profile", action="store_true", help="profile one extra repetition (cProfile, by own time)")
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import dganalysis
    from dganalysis import plots
    from dganalysis.audit.outputs import write_outputs
    from dganalysis.audit.run import STORE, resolve_inputs, run_audit

    plots.setup_style()
    inputs = SHIPPED + ([STORE] if args.store else [])
    paths, notes = resolve_inputs(inputs, args.store or "")
    for note in notes:
        print("note:", note)
    t0 = time.perf_counter()
    result = run_audit(paths, baseline="ERM", selection="all", alpha=0.05, rope=1.0, reps=200,
                       optional=[args.store] if args.store else [], family="algorithm")
    print(f"code: {Path(dganalysis.__file__).parent}")
    print(f"inputs: {', '.join(map(str, paths))}; audit {time.perf_counter() - t0:.1f} s (untimed below)")

    def once(folder: Path) -> tuple[float, float, int]:
        start, cpu = time.perf_counter(), time.process_time()
        written = write_outputs(result, html_path=folder / "audit.html", json_path=folder / "audit.json",
                                output_dir=folder)
        return time.perf_counter() - start, time.process_time() - cpu, len(written)

    times, cpus = [], []
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            seconds, cpu, n = once(Path(tmp))
            times.append(seconds)
            cpus.append(cpu)
            print(f"write_outputs #{r + 1}: {seconds:.2f} s wall, {cpu:.2f} CPU-s ({n} files, "
                  f"{len(list((Path(tmp) / 'figures').glob('*.png')))} figures)")
            if args.keep and r == args.repeat - 1:
                shutil.rmtree(args.keep, ignore_errors=True)
                shutil.copytree(tmp, args.keep)
    if times:
        print(f"median write_outputs: {statistics.median(times):.2f} s wall, {statistics.median(cpus):.2f} CPU-s "
              f"over {len(times)} run(s); "
              f"load average {os.getloadavg()[0]:.1f}")
    if args.profile:
        import cProfile
        import pstats

        with tempfile.TemporaryDirectory() as tmp:
            prof = cProfile.Profile()
            prof.enable()
            once(Path(tmp))
            prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
