"""Fill the design-power table shipped with the package (``dganalysis/findings/data/design_power.json``).

Every finding's design simulates its own decision function (:func:`dganalysis.findings.power.design_power`); that
takes seconds to minutes per claim, so the results for the shipped profiles are computed here once and shipped: a
dry run, a notebook's design table and ``index.md`` then read them instead of simulating. A profile the table does not
cover (other trials, other effects) is simulated on first use and kept in the user's cache.

Usage: ``python bench/findings_design.py [--profiles quick paper defaults]`` (prints each claim's power, its Monte-Carlo SE and
the trials for 80%, with the time it took; the table is written atomically).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from dganalysis import io
from dganalysis.findings import power as P
from dganalysis.studies.runner import load_params
from dganalysis.studies.study import STUDIES, build_params, design_for, params_class

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "dganalysis" / "findings" / "data" / P.DESIGN_POWER_FILE


def _params(profile: str, name: str) -> list:
    """The parameter objects whose designs ``profile`` runs for notebook ``name``."""
    if profile == "defaults":
        return [params_class(name).from_mapping({}, name)]
    if profile == "smoke":
        from dganalysis.studies.dryrun import notebook_defaults
        from dganalysis.studies.runner import load_all_params
        from dganalysis.studies.smoke.run import smoke_params

        base, variants = load_all_params("paper", name, ROOT)
        defaults = notebook_defaults(ROOT / "notebooks" / f"{name}.ipynb")
        return [build_params(name, smoke_params(name, p, defaults)) for p in (base, *variants.values())]
    return [build_params(name, load_params(profile, name))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiles", nargs="+", default=["quick", "paper", "defaults", "smoke"],
                    help="profiles under params/; 'defaults': the notebooks' parameters cells (what nbval runs); "
                         "'smoke': the paper profile shrunk as the smoke run shrinks it (its variants included)")
    ap.add_argument("--only", nargs="*", default=None, help="notebooks to compute (default: all)")
    ap.add_argument("--out", type=Path, default=TABLE, help="the table to update (default: the shipped one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DGANALYSIS_CACHE"] = tmp  # compute everything afresh into an empty cache
        shipped = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
        P._shipped = lambda: {}  # noqa: SLF001 (ignore the old table while refilling it)
        for profile in args.profiles:
            for name in sorted(n for n in STUDIES.names() if STUDIES.get(n).design is not None):
                if args.only and name not in args.only:
                    continue
                for c in [c for params in _params(profile, name) for c in design_for(name, params)]:
                    if c.kind != "decision" or c.decide is None:
                        continue
                    t0 = time.perf_counter()
                    sim = c.simulated
                    took = time.perf_counter() - t0
                    if sim is None:
                        continue
                    print(f"{profile} {name} {c.key}: n = {sim.n}, power {sim.power:.3f} ± {sim.mc_se:.3f}, "
                          f"trials for 80%: {sim.n_for_target} ({took:.1f} s)", flush=True)
        cache = Path(tmp) / P.DESIGN_POWER_FILE
        fresh = json.loads(cache.read_text(encoding="utf-8")) if cache.exists() else {}
    shipped.update(fresh)
    io.write_json(args.out, dict(sorted(shipped.items())))
    print(f"wrote {len(fresh)} entries ({len(shipped)} in all) to {args.out}")


if __name__ == "__main__":
    main()
