"""Coverage of the audit's across-dataset and expected-max intervals, measured on SIMULATED data, written to the
table the audit ships (``dganalysis/audit/data/interval_coverage.json``) and printed as Markdown.

For each interval construction of :data:`dganalysis.audit.coverage.CI_METHODS` and each simulated size, every scenario
of the simulators in :mod:`dganalysis.audit.coverage` is simulated ``--sims`` times (fewer for the bootstraps, see
below) and the share of intervals containing the true parameter is recorded; a row's ``coverage`` is the smallest
over its scenarios, the number the audit prints beside the interval (``ci_coverage``). The shipped table is what
``tests/audit/test_aggregate.py`` and ``tests/audit/test_sweep_analyses.py`` check a quick rerun against, within Monte-Carlo
error.

* table PoI (Clopper–Pearson with ties; and, for comparison, a bootstrap over datasets): 3, 5, 7, 12, 20, 40
  datasets; per-dataset differences N(μ, σ) rounded to 0.1 (null, +1, +3 SD, mostly ties);
* table IQM of Δ (Tukey–McLaughlin): 3, 5, 7, 12, 20, 40 datasets; normal, t₃ and exponential differences;
* sweep PoI and IQM of Δ (stratified bootstrap, 1000 resamples; the audit's bootstrap SE with t, and the percentile
  interval for comparison): 2, 3, 4, 5, 8, 10 trials × 7 datasets; null, +1 SD, unequal SDs, heterogeneous effects;
* expected-max curve (t over trials): 2, 3, 5, 10 trials × 5, 20, 50 hparams draws × 4 test domains; bivariate-normal
  validation/test accuracy with correlation 0.8 and 0.2; budgets 1, ⌈N/2⌉, N and the gain ⌈N/2⌉ → N; and the
  percentile bootstrap over draws, for comparison (3 trials).

Usage::

    python bench/audit_interval_coverage.py [--sims 20000] [--seed 0] [--out dganalysis/audit/data/interval_coverage.json]
        [--only METHOD ...]   # re-measure those methods' rows only, keep the rest of the table at --out
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from pathlib import Path

import numpy as np

from dganalysis.audit import coverage as iv

OUT = Path(__file__).resolve().parent.parent / "dganalysis" / "audit" / "data" / iv.COVERAGE_FILE


def _row(size: dict, scenarios: dict[str, float], sims: int, detail: dict | None = None) -> dict:
    cov = min(scenarios.values())
    row = {"size": size, "coverage": round(cov, 4), "mc_se": round(math.sqrt(max(cov * (1 - cov), 1e-4) / sims), 4),
           "sims": sims, "scenarios": {k: round(v, 4) for k, v in scenarios.items()}}
    if detail:
        row["detail"] = {k: {kk: round(vv, 4) for kk, vv in d.items()} for k, d in detail.items()}
    return row


def measure(sims: int, seed: int, only: set[str] | None = None) -> dict:
    """Every method's rows (see the module docstring), or only those of the methods in ``only`` (the random stream
    then differs from a full run's); ``sims`` for the closed-form intervals, sims/20 (at most 1000, fewer at more
    trials) for the stratified bootstraps, sims/10 for the expected-max curve and sims/40 for the bootstrap of the
    curve measured for comparison."""
    rng = np.random.default_rng(seed)
    methods: dict[str, list] = {m: [] for m in iv.CI_METHODS}

    def want(*names: str) -> bool:
        return only is None or bool(set(names) & only)

    for n in (3, 5, 7, 12, 20, 40) if want("poi_table_clopper_pearson", "iqm_delta_table_trimmed_t") else ():
        methods["poi_table_clopper_pearson"].append(
            _row({"n_datasets": n}, iv.simulate_poi_table(n, sims, rng), sims))
        methods["iqm_delta_table_trimmed_t"].append(_row({"n_datasets": n}, iv.simulate_iqm_table(n, sims, rng), sims))
    boot = max(100, min(1000, sims // 20))
    if want("poi_table_dataset_bootstrap"):
        methods["poi_table_dataset_bootstrap"].append(_row(
            {"n_datasets": 7}, iv.simulate_poi_table(7, boot, rng, method="poi_table_dataset_bootstrap"), boot))
    for method, keys in (("bootstrap_se_t", ("poi_sweep_bootstrap_se_t", "iqm_delta_sweep_bootstrap_se_t")),
                         ("percentile", ("poi_sweep_stratified_bootstrap", "iqm_delta_sweep_stratified_bootstrap"))):
        for runs in (2, 3, 4, 5, 8, 10) if want(*keys) else ():
            n = max(100, boot * 3 // runs)
            got = iv.simulate_sweep_aggregate(runs, n, rng, method=method)
            methods[keys[0]].append(_row({"runs": runs, "n_datasets": 7}, got["poi"], n))
            methods[keys[1]].append(_row({"runs": runs, "n_datasets": 7}, got["iqm_delta"], n))
    search = max(200, sims // 10)
    for trials in (2, 3, 5, 10) if want("expected_max_trials_t") else ():
        for draws in (5, 20, 50):
            detail: dict = {}
            got = iv.simulate_search(trials, draws, search, rng, detail=detail)
            methods["expected_max_trials_t"].append(_row({"trials": trials, "draws": draws}, got, search, detail))
    old = max(100, search // 4)
    for draws in (5, 20) if want("expected_max_bootstrap") else ():
        detail = {}
        got = iv.simulate_search(3, draws, old, rng, method="expected_max_bootstrap", detail=detail)
        methods["expected_max_bootstrap"].append(_row({"trials": 3, "draws": draws}, got, old, detail))
    return {"nominal": iv.NOMINAL, "generated_by": "bench/audit_interval_coverage.py", "seed": seed,
            "date": datetime.date.today().isoformat(), "note": "coverage measured on SIMULATED data",
            "methods": {m: {"ci_method": iv.CI_METHODS[m], "rows": rows} for m, rows in methods.items()}}


def markdown(table: dict) -> str:
    lines = ["| interval | size | measured coverage (min over scenarios) | per scenario | sims |", "|---|---|---|---|---|"]
    for m, entry in table["methods"].items():
        for r in entry["rows"]:
            size = ", ".join(f"{k} {v}" for k, v in r["size"].items())
            per = "; ".join(f"{k} {v:.3f}" for k, v in r["scenarios"].items())
            lines.append(f"| {m} | {size} | {r['coverage']:.3f} ± {r['mc_se']:.3f} | {per} | {r['sims']} |")
            for scen, d in r.get("detail", {}).items():
                lines.append(f"| | {scen} | | " + "; ".join(f"{k} {v:.3f}" for k, v in d.items()) + " | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sims", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--only", nargs="+", choices=sorted(iv.CI_METHODS), default=None,
                    help="re-measure only these methods; the other rows are kept from the table at --out")
    args = ap.parse_args()
    start = time.perf_counter()
    table = measure(args.sims, args.seed, set(args.only) if args.only else None)
    if args.only:
        old = json.loads(args.out.read_text(encoding="utf-8"))
        for m in args.only:
            old["methods"][m] = table["methods"][m]
        old["note"] = (f"{old.get('note', '')}; {', '.join(args.only)} re-measured on {table['date']} "
                       f"(seed {args.seed}, --only)")
        table = old
    args.out.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(markdown(table))
    print(f"\nwritten {args.out} in {time.perf_counter() - start:.0f} s (nominal {iv.NOMINAL})")


if __name__ == "__main__":
    main()
