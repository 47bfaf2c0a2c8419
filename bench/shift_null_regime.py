"""False diversity/correlation shift of :func:`dganalysis.shift.estimate_shift` on SIMULATED i.i.d. data, vs d and n.

Both environments are drawn from the same distribution (standard Gaussian features in d dimensions, binary labels
drawn independently of the features, balanced), so the true D_div and D_cor are 0 and every estimate above 0 is
the estimator's bias. OoD-Bench's calibration (``calibrate.py``, bounds [5e-3, 1e-2]) treats an i.i.d. estimate
up to 0.01 as "no shift"; :data:`dganalysis.shift.regime.MAX_DIM` is the largest d whose null diversity stays
below that at n = 1,000 points per environment (docs/validation.md has the table this script printed).

Run: ``PYTHONPATH=. python bench/shift_null_regime.py [--dims 2 8 16] [--ns 1000] [--reps 3]``.
"""

from __future__ import annotations

import argparse
import logging
import time
import warnings

import numpy as np
import pandas as pd

from dganalysis.shift import allow_high_dim, estimate_shift


def null_estimate(d: int, n: int, seed: int) -> dict:
    rng = np.random.default_rng([d, n, seed])
    z_p, z_q = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    y_p, y_q = np.arange(n) % 2, np.arange(n) % 2
    try:
        with warnings.catch_warnings(), allow_high_dim():
            warnings.simplefilter("ignore")
            est = estimate_shift(z_p, y_p, z_q, y_q, seed=seed)
    except ValueError:  # no class KDE can be built (fewer points per class than dimensions)
        return {"d": d, "n": n, "seed": seed, "diversity": np.nan, "correlation": np.nan}
    return {"d": d, "n": n, "seed": seed, "diversity": est.diversity, "correlation": est.correlation}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dims", type=int, nargs="+", default=[1, 2, 4, 8, 10, 12, 14, 16, 24, 32, 64, 128])
    ap.add_argument("--ns", type=int, nargs="+", default=[250, 1000, 4000])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    logging.getLogger("dganalysis.shift.estimator").setLevel(logging.ERROR)
    rows = []
    t0 = time.perf_counter()
    for n in args.ns:
        for d in args.dims:
            for s in range(args.reps):
                rows.append(null_estimate(d, n, s))
            print(f"n={n} d={d} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    df = pd.DataFrame(rows)
    g = df.groupby(["n", "d"])
    table = g["diversity"].agg(["mean", "max"]).join(g["correlation"].agg(["mean", "max"]), rsuffix="_cor")
    print("SIMULATED i.i.d. Gaussian features, binary labels; mean/max over", args.reps, "seeds")
    print(table.round(3).to_string())
    print(df.pivot_table(index="d", columns="n", values="diversity", aggfunc="mean").round(3).to_string())


if __name__ == "__main__":
    main()
