"""Held-out table, power table and findings of the dynamic-DG report on a toy selected frame."""

import numpy as np
import pandas as pd

from dganalysis.protocols import dynamic
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


def test_report_tables():
    sel = toy()
    choices = ["d0,d1", "d0,d2", "d1,d2"]
    st = dynamic.swap_test(sel, "hw", choices)
    dp = dynamic.adjust_domain_plus(pd.concat([dynamic.domain_plus(sel, [c, "d0,d1,d2"], "hw", correction="none")
                                               for c in choices], ignore_index=True))
    held = dr.heldout_table(sel, choices, exclude=["hw"])
    assert set(zip(held["train"], held["domain"])) == {("d0,d1", "d2"), ("d0,d2", "d1"), ("d1,d2", "d0")}
    assert (held["n"] == 3).all() and (held["ci_low"] < held["mean"]).all()
    power = dr.power_table(st, dp, trials_run=3)
    undecided = int((st.pairs["verdict"] == "undecided").sum()) + int((dp["verdict"] == "no significant change").sum())
    assert len(power) == undecided and (power["trials_run"] == 3).all()
    f = dr.findings(st, dp).set_index("finding")
    assert len(f) == 2 + 3
    row = f.loc[[i for i in f.index if "+d1" in i][0]]
    assert row["reproduced"] in ("no", "not decided")  # ERM gains when d1 is added here (paper: degrades)
    assert "Δ > 0" in row["ours"]


def test_findings_without_a_swap_test():
    """A run whose design leaves the swap test out (swap_choices = []) reports its Domain+ rows only; the claim
    names the methods run."""
    sel = toy()
    dp = dynamic.adjust_domain_plus(dynamic.domain_plus(sel, ["d0,d1", "d0,d1,d2"], "hw", methods=["CORAL", "IB_ERM"],
                                                        correction="none"))
    f = dr.findings(None, dp)
    assert len(f) == 1 and "+d2" in f["finding"].iloc[0] and "(CORAL, IB_ERM)" in f["finding"].iloc[0]
    assert f["reproduced"].iloc[0] == "yes"  # both gain 0.2 with SD 0.01 over 3 trials
    assert len(dr.power_table((), dp, trials_run=3)) == int((dp["verdict"] == "no significant change").sum())
