"""Size and power of the audit's verdicts on SIMULATED families (tests/audit/_calibration_scenarios.py), with more
simulations than the tests run: the tables of docs/audit.md ("Calibration").

    .venv/bin/python bench/audit_calibration.py [--quick] > bench/results/audit_calibration.md

1. Null family-wise error of better/worse verdicts: SD ratios 1, 3, 10, 30, 100 × n = 3, 5, 10 × published rounding
   on/off × families of 5 and 91 claims — the calibrated test, and Welch's own p-value (Holm) beside it.
2. Power at equal variances (every claim of a family planted at Δ trial SDs): calibrated, Welch, Hsu (df n − 1).
3. Paired vs unpaired on sweeps whose arms share a trial seed's data split (correlation ρ between the arms).
Every number is from simulated data.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from dganalysis.audit.claims import Paired, Summaries, decide  # noqa: E402
from dganalysis.stats.multiplicity import holm  # noqa: E402
from tests.audit._calibration_scenarios import (  # noqa: E402
    ALPHA,
    BETTER,
    WORSE,
    decide_sim,
    fwer,
    simulate,
)


def null_table(sims: dict[int, int]) -> list[str]:
    rows = ["| n | family | rounding | " + " | ".join(f"SD ratio {r}" for r in (1, 3, 10, 30, 100)) + " |",
            "|---|---|---|" + "---|" * 5]
    for n in (3, 5, 10):
        for m in (5, 91):
            for rounding in (False, True):
                cells = []
                for r in (1, 3, 10, 30, 100):
                    d = decide_sim(*simulate(sims[m], m, n, r, seed=1000 * n + m + 7 * r + int(rounding)),
                                   rounding=rounding)
                    welch = (holm(d.p_welch) < ALPHA).any(axis=-1).mean()
                    cells.append(f"{fwer(d.verdict):.3f} ({welch:.3f})")
                rows.append(f"| {n} | {m} | {'on' if rounding else 'off'} | " + " | ".join(cells) + " |")
    return rows


def power_table(sims: int) -> list[str]:
    rows = ["| n | family | Δ (trial SDs) | calibrated | Welch | Hsu |", "|---|---|---|---|---|---|"]
    for n, effects in ((3, (4.0, 6.0, 8.0)), (5, (2.0, 3.0, 4.0)), (10, (1.5, 2.0, 3.0))):
        for m in (5, 91):
            for eff in effects:
                d = decide_sim(*simulate(sims, m, n, 1.0, effect=eff, seed=n + int(eff * 10) + m,
                                         base_sd=np.ones(7)))
                cal = float((d.verdict == BETTER).mean())
                welch = float(((holm(d.p_welch) < ALPHA) & (d.delta > 0)).mean())
                p_hsu = 2 * special.stdtr(n - 1, -np.abs(d.delta) / d.se)
                hsu = float(((holm(p_hsu) < ALPHA) & (d.delta > 0)).mean())
                rows.append(f"| {n} | {m} | {eff:g} | {cal:.3f} | {welch:.3f} | {hsu:.3f} |")
    return rows


def paired_table(sims: int) -> list[str]:
    """One algorithm vs the baseline on 5 datasets, n = 3, trial SD 1, Δ = 3 SDs planted on every dataset; the arms
    of one trial seed share a split effect with correlation ρ."""
    rows = ["| ρ | paired: power | unpaired (calibrated): power | paired: null FWER | unpaired: null FWER |",
            "|---|---|---|---|---|"]
    rng = np.random.default_rng(5)
    n, m = 3, 5
    for rho in (0.0, 0.5, 0.8, 0.95):
        out = []
        for eff in (3.0, 0.0):
            z = rng.standard_normal((sims, m, n))
            a = eff + np.sqrt(rho) * z + np.sqrt(1 - rho) * rng.standard_normal((sims, m, n))
            b = np.sqrt(rho) * z + np.sqrt(1 - rho) * rng.standard_normal((sims, m, n))
            sa, sb = Summaries(a.mean(-1), a.std(-1, ddof=1) / np.sqrt(n), n), Summaries(
                b.mean(-1), b.std(-1, ddof=1) / np.sqrt(n), n)
            dd = a - b
            dp = decide(sa, sb, alpha=ALPHA, paired=Paired(dd.mean(-1), dd.std(-1, ddof=1) / np.sqrt(n), n))
            du = decide(sa, sb, alpha=ALPHA)
            if eff:
                out += [float((dp.verdict == BETTER).mean()), float((du.verdict == BETTER).mean())]
            else:
                out += [fwer(dp.verdict, (BETTER, WORSE)), fwer(du.verdict, (BETTER, WORSE))]
        rows.append(f"| {rho:g} | {out[0]:.3f} | {out[1]:.3f} | {out[2]:.3f} | {out[3]:.3f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer simulations (a minute)")
    args = ap.parse_args()
    sims = {5: 2000, 91: 500} if args.quick else {5: 10000, 91: 2000}
    start = time.time()
    print(f"# Audit calibration (SIMULATED data; {sims[5]} families of 5, {sims[91]} of 91 per cell)\n")
    print("## Null family-wise error of better/worse: calibrated test (Welch's own p with Holm in brackets); "
          f"α = {ALPHA}\n")
    print("\n".join(null_table(sims)))
    print("\n## Power at equal variances (share of planted claims decided better)\n")
    print("\n".join(power_table(sims[91])))
    print("\n## Paired vs unpaired, n = 3, family of 5, Δ = 3 trial SDs (power) and Δ = 0 (FWER)\n")
    print("\n".join(paired_table(sims[5])))
    print(f"\n({time.time() - start:.0f} s)")


if __name__ == "__main__":
    main()
