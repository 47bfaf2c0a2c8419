"""Oracle leakage vs K per trial, with CIs and the paired fall from K=1 (Yu et al. 2024 Table 4)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dganalysis.protocols import oracle_k_trials as okt

G = dict(dataset="D", algorithm="ERM", train_domains="a,b")


def frames(leak1, leak2):
    """IID accuracy 0.5 on domains x, y; oracle K=1 adds leak1[t], K=2 adds leak2[t] (fractions) in trial t."""
    iid, orc = [], []
    for t, (l1, l2) in enumerate(zip(leak1, leak2)):
        for d in ("x", "y"):
            iid.append(dict(G, trial_seed=t, domain=d, acc=0.5))
            orc.append(dict(G, trial_seed=t, domain=d, acc=0.5 + l1, subset=d, k=1))
            orc.append(dict(G, trial_seed=t, domain=d, acc=0.5 + l2, subset="x,y", k=2))
    return pd.DataFrame(iid), pd.DataFrame(orc)


def test_leakage_per_trial_ci_and_paired_fall():
    l1, l2 = [0.04, 0.05, 0.06], [0.02, 0.035, 0.03]
    per = okt.leakage_by_trial(*frames(l1, l2))
    assert set(per["trial_seed"]) == {0, 1, 2}
    s = okt.leakage_vs_k(per).set_index("k")
    assert s.loc[1, "leakage"] == pytest.approx(5.0) and s.loc[2, "leakage"] == pytest.approx(100 * np.mean(l2))
    half = stats.t.ppf(0.975, 2) * np.std(np.array(l1) * 100, ddof=1) / np.sqrt(3)
    assert (s.loc[1, "ci_low"], s.loc[1, "ci_high"]) == pytest.approx((5.0 - half, 5.0 + half))
    d = (np.array(l2) - np.array(l1)) * 100
    assert s.loc[2, "fall"] == pytest.approx(d.mean())
    half = stats.t.ppf(0.975, 2) * np.std(d, ddof=1) / np.sqrt(3)  # paired over the trial seeds
    assert (s.loc[2, "fall_ci_low"], s.loc[2, "fall_ci_high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert not {"p_positive", "p_fall", "trials_needed"} & set(s.columns)  # decisions are dganalysis.findings'
    assert okt.plot_leakage_vs_k(okt.leakage_vs_k(per)) is not None


def test_last_checkpoints_and_errors():
    tidy = pd.DataFrame({"job_id": ["a", "a", "b"], "step": [5, 9, 3], "acc": [0.1, 0.2, 0.3]})
    assert okt.last_checkpoints(tidy)["acc"].tolist() == [0.2, 0.3]
    with pytest.raises(ValueError, match="job_id"):
        okt.last_checkpoints(tidy.drop(columns="step"))
    iid, orc = frames([0.1], [0.1])
    with pytest.raises(ValueError, match="trial_seed"):
        okt.leakage_by_trial(iid.drop(columns="trial_seed"), orc)
