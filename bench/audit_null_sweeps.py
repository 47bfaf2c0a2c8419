"""The audit's verdicts end to end on SIMULATED raw sweeps: family-wise error under the null and power at planted
effects, through everything a sweep's audit runs (the index, DomainBed's three selections, the per-trial dataset
averages, the calibrated or paired claims, the step-down).

``tests/audit/test_calibration.py`` measures the claims' core on thousands of simulated 91-claim families at once;
this measures the whole path on sweep folders, as a user's sweep reaches it: ``--sweeps`` DomainBed-format sweeps (3
datasets × 4 test environments with their leave-one-out pair runs, 2 hparams draws, 3 trials; accuracies drawn
around planted per-algorithm offsets by ``tests/audit/_simulated_sweep.py``), each audited with
:func:`dganalysis.audit.run.run_audit`. A *family* is one selection method's claims on one sweep (4 algorithms × 3
datasets = 12 claims against ERM); under the null every algorithm has ERM's distribution, so a family with any
``better`` or ``worse`` claim is a family-wise error, which the audit states at most α. Printed: per selection, the
share of such families with a Monte-Carlo standard error, and the share of planted claims decided in the right
direction.

Usage::

    python bench/audit_null_sweeps.py [--sweeps 200] [--alpha 0.05] [--effect 0.05] [--seed 0]
"""

from __future__ import annotations

import argparse
import logging
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the project's tests/ (the simulated sweep)

from dganalysis.audit.run import run_audit  # noqa: E402
from tests.audit._simulated_sweep import write_sweep  # noqa: E402

DATASETS = {"PACS": 4, "VLCS": 4, "OfficeHome": 4}
SELECTIONS = ("training_domain", "leave_one_out", "oracle")


def audit_one(root: Path, offsets: dict[str, float], seed: int, alpha: float) -> dict[str, list[str]]:
    """Write one simulated sweep, audit it, remove it; {selection: the verdicts of its claims, in claim order}."""
    write_sweep(root, offsets, datasets=DATASETS, noise=0.02, seed=seed, pairs=True)
    try:
        # the family here is the selection method's 12 claims (--family table): the bound is stated over them
        result = run_audit([root], selection="all", alpha=alpha, sweep_analyses=False, reps=200, seed=seed,
                           family="table")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    claims = result.audits[0].claims
    return {s: claims.loc[claims["selection"] == s, ["algorithm", "verdict"]].values.tolist() for s in SELECTIONS}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweeps", type=int, default=200, help="simulated sweeps per scenario (default 200)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--effect", type=float, default=0.05, help="planted offset of the 'Good' algorithm (fraction)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    if a.sweeps < 1 or not 0 < a.alpha < 1:
        raise SystemExit("--sweeps ≥ 1 and --alpha in (0, 1) expected")
    logging.disable(logging.INFO)
    scenarios = {"null": {"ERM": 0.0, "A": 0.0, "B": 0.0, "C": 0.0, "D": 0.0},
                 f"planted +{100 * a.effect:g} points": {"ERM": 0.0, "Good": a.effect, "A": 0.0, "B": 0.0,
                                                         "C": 0.0}}
    print(f"SIMULATED sweeps: {a.sweeps} per scenario, {sum(DATASETS.values())} test environments over "
          f"{len(DATASETS)} datasets, leave-one-out pairs, 2 hparams draws, 3 trials, each run's accuracy drawn "
          f"with SD 2 points; α = {a.alpha}")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="audit_null_") as tmp:
        for name, offsets in scenarios.items():
            errors = dict.fromkeys(SELECTIONS, 0)
            right = dict.fromkeys(SELECTIONS, 0)
            wrong = dict.fromkeys(SELECTIONS, 0)
            planted = dict.fromkeys(SELECTIONS, 0)
            for i in range(a.sweeps):
                if i and i % 25 == 0:  # progress: a scenario takes minutes
                    print(f"  {name}: {i}/{a.sweeps} sweeps audited ({time.perf_counter() - start:.0f} s)",
                          file=sys.stderr, flush=True)
                got = audit_one(Path(tmp) / f"{name[:4]}{i}", offsets, a.seed + i, a.alpha)
                for s, rows in got.items():
                    nulls = [v for alg, v in rows if offsets[alg] == 0.0]
                    errors[s] += any(v in ("better", "worse") for v in nulls)
                    for alg, v in rows:
                        if offsets[alg] > 0:
                            planted[s] += 1
                            right[s] += v == "better"
                            wrong[s] += v == "worse"
            print(f"--- {name}")
            for s in SELECTIONS:
                rate = errors[s] / a.sweeps
                se = math.sqrt(max(rate * (1 - rate), 1e-12) / a.sweeps)
                line = (f"{s:16s} families with a better/worse claim among identical algorithms: {rate:.3f} "
                        f"(± {se:.3f} MC SE; bound α = {a.alpha})")
                if planted[s]:
                    line += (f"; planted claims decided 'better': {right[s] / planted[s]:.3f}, 'worse': "
                             f"{wrong[s] / planted[s]:.3f} (of {planted[s]})")
                print(line)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
