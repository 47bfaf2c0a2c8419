"""Held-out table of the dynamic-DG report on a toy selected frame."""

import numpy as np
import pandas as pd

from dganalysis.protocols import dynamic_report as dr


def toy():
    rng = np.random.default_rng(0)
    rows = []
    means = {"d0,d1": 0.6, "d0,d2": 0.7, "d1,d2": 0.75, "d0,d1,d2": 0.8}
    for train, m in means.items():
        for alg, off in (("ERM", 0.0), ("CORAL", 0.02), ("IB_ERM", 0.04)):
            for t in range(3):
                for dom in ["hw"] + [d for d in ("d0", "d1", "d2") if d not in train.split(",")]:
                    rows.append(dict(dataset="P", algorithm=alg, train_domains=train, test_domains="x", trial_seed=t,
                                     domain=dom, acc=(m + off if dom == "hw" else 0.9) + rng.normal(0, 0.01)))
    return pd.DataFrame(rows)


def test_heldout_table():
    sel = toy()
    choices = ["d0,d1", "d0,d2", "d1,d2"]
    held = dr.heldout_table(sel, choices, exclude=["hw"])
    assert set(zip(held["train"], held["domain"])) == {("d0,d1", "d2"), ("d0,d2", "d1"), ("d1,d2", "d0")}
    assert (held["n"] == 3).all() and (held["ci_low"] < held["mean"]).all()
