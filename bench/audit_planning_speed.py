"""Time the audit's planning figures: :func:`dganalysis.stats.planning.trials_to_decide` and
:func:`~dganalysis.stats.planning.trials_for_equivalence` on a fixed set of SIMULATED cells.

The cells are simulated (seeded; no real results): per level 0.05/k, k in 1, 6, 12, 91 (Holm's first step in
families of those sizes; 91 is DomainBed's table), 8 pairs of arms with n_a, n_b drawn from 3–10 trials, a trial SD
from 0.3–3 accuracy points on arm A and an SD ratio from {1, 2, 5, 20}; effect and ROPE 1 point — what
``dganalysis.audit.claims`` asks for its undecided claims. Each run starts a fresh process, so every cache of
:mod:`dganalysis.stats.behrens_fisher` (the calibrated levels, per process) starts empty, as in one audit.

Usage::

    python bench/audit_planning_speed.py                      # this checkout: seconds and the numbers
    python bench/audit_planning_speed.py --ref /path/to/other # also another checkout (PYTHONPATH), ratio, equality

``--ref`` runs the same cells with another checkout's ``dganalysis`` first on the import path (read only) and
prints both times, their ratio and whether every planning number agrees exactly. ``--load N`` repeats the timing
with N busy processes started by the script (default: one per core), so the ratio is taken idle and loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KS = (1, 6, 12, 91)


def simulated_cells(seed: int = 0):
    """The SIMULATED cells: per k, arrays (sd_a, sd_b, n_a, n_b) of 8 pairs of arms."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = {}
    for k in KS:
        sd_a = np.exp(rng.uniform(np.log(0.3), np.log(3.0), 8))
        ratio = rng.choice([1.0, 2.0, 5.0, 20.0], 8)
        sd_b = sd_a * np.where(rng.random(8) < 0.5, ratio, 1 / ratio)
        n_a, n_b = rng.integers(3, 11, 8), rng.integers(3, 11, 8)
        out[k] = (sd_a, sd_b, n_a.astype(float), n_b.astype(float))
    return out


def measure() -> dict:
    """Plan every simulated cell in this process; seconds and the numbers (inf as the string "inf")."""
    import dganalysis
    from dganalysis.stats import planning

    cells = simulated_cells()
    t0 = time.perf_counter()
    numbers = {}
    for k, (sd_a, sd_b, n_a, n_b) in cells.items():
        level = 0.05 / k
        got = planning.trials_to_decide(sd_a, sd_b, n_a, n_b, 1.0, level)
        eq = planning.trials_for_equivalence(sd_a, sd_b, n_a, n_b, 1.0, level)
        numbers[str(k)] = [[str(v) if v == float("inf") else float(v) for v in arr] for arr in (*got, *eq)]
    return {"seconds": time.perf_counter() - t0, "numbers": numbers, "module": dganalysis.__file__}


def _busy_default() -> int:
    sys.path.insert(0, str(ROOT))
    from bench import _busy

    return _busy.default_load()


def _run_child(pythonpath: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", type=Path, help="another checkout to time on the same cells (its root folder)")
    ap.add_argument("--load", type=int, default=None, help="busy processes of the loaded round (default: one per "
                    "core; 0: idle only)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(measure()))
        return 0
    if args.load is None:
        args.load = _busy_default()
    if args.ref is not None and not (args.ref / "dganalysis" / "__init__.py").is_file():
        raise SystemExit(f"--ref {args.ref}: no dganalysis package there (expected {args.ref}/dganalysis/__init__.py)")
    print("SIMULATED cells: 4 levels (0.05/k, k = " + ", ".join(map(str, KS)) + ") × 8 pairs of arms, n 3–10")
    sys.path.insert(0, str(ROOT))
    from bench import _busy

    same = True
    for phase, n_busy in [("idle", 0)] + ([("loaded", args.load)] if args.load > 0 else []):
        with _busy.busy_load(n_busy):
            time.sleep(1.0 if n_busy else 0.0)
            print(f"== {phase}: {n_busy} busy processes started by this script; {_busy.load_line()}")
            this = _run_child(ROOT)
            print(f"this checkout ({this['module']}): {this['seconds']:.2f} s")
            if phase == "idle":
                for k, arrs in this["numbers"].items():
                    names = ("decide", "decide_low", "decide_high", "equiv", "equiv_low", "equiv_high")
                    print(f"  k={k:>3}: " + "; ".join(f"{nm} {arr}" for nm, arr in zip(names, arrs, strict=True)))
            if args.ref is not None:
                ref = _run_child(args.ref)
                same = same and ref["numbers"] == this["numbers"]
                print(f"reference ({ref['module']}): {ref['seconds']:.2f} s")
                print(f"ratio reference / this: {ref['seconds'] / this['seconds']:.2f}×; planning numbers identical: "
                      f"{ref['numbers'] == this['numbers']}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
