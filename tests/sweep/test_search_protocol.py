"""Yu et al. (2024)'s search protocol (``dganalysis.sweep.search_protocol``): counts, the search then reruns of
the chosen draw with its hparams fixed, the selected rows, and the comparison with DomainBed's full grid."""

from __future__ import annotations

import json

import pytest
from _tiny import FAST_HPARAMS, TINY, TINY_FILE

from dganalysis.records import load, select
from dganalysis.sweep import Sweep, make_jobs, run_sweep
from dganalysis.sweep.launcher import ExecutionOptions
from dganalysis.sweep.search_protocol import (
    check_protocol,
    compare_protocols,
    protocol_job_counts,
    protocol_selected,
    run_search_protocol,
)
from dganalysis.training.job_draw import job_hparams

pytestmark = pytest.mark.usefixtures("one_thread")
EXEC = ExecutionOptions(imports=(TINY_FILE,))


def _grid(n_hparams=3, n_trials=3):
    return make_jobs(Sweep(dataset=TINY, dataset_kwargs={}, algorithms=["ERM"], splits=[{"train": ["d0", "d1"],
                           "test": ["d2"]}], n_hparams=n_hparams, n_trials=n_trials, steps=4, checkpoint_freq=2,
                           hparams_overrides=FAST_HPARAMS), domains=["d0", "d1", "d2"])


def test_counts_and_bad_name():
    counts = protocol_job_counts(_grid(10, 3))
    assert counts == {"domainbed": 30, "search": 10, "reruns": 2, "yu2024": 12}
    with pytest.raises(ValueError, match="search_protocol='yu'"):
        check_protocol("yu")


def test_search_then_reruns_of_the_chosen_draw(tmp_path):
    grid = _grid()
    ran = run_search_protocol(grid, tmp_path / "store", "yu2024", progress=False, execution=EXEC)
    search = [j for j in ran if j.trial_seed == 0]
    reruns = [j for j in ran if j.trial_seed != 0]
    assert len(search) == 3 and [j.trial_seed for j in reruns] == [1, 2]
    df = load(tmp_path / "store")
    chosen = select(df[df["job_id"].isin({j.job_id for j in search})], "training_domain")
    best = next(j for j in search if j.job_id == chosen["job_id"].iloc[0])
    for r in reruns:  # the chosen draw's values fixed, whatever the trial seed would draw
        assert r.hparams_seed == best.hparams_seed
        assert {k: v for k, v in job_hparams(r).items()} == job_hparams(best)
    sel = protocol_selected(df, ran, "yu2024")
    assert sorted(sel["trial_seed"]) == [0, 1, 2] and sel["setting"].nunique() == 1
    assert set(protocol_selected(df, search, "domainbed")["trial_seed"]) == {0}


def test_compare_protocols_on_a_full_grid(tmp_path):
    grid = _grid(n_hparams=3, n_trials=2)
    run_sweep(grid, tmp_path / "store", progress=False, execution=EXEC)
    df = load(tmp_path / "store")
    cmp = compare_protocols(df)
    assert len(cmp) == 1
    row = cmp.iloc[0]
    db = select(df, "training_domain")
    assert row["domainbed_acc"] == pytest.approx(db["acc"].mean())
    h = int(db.loc[db["trial_seed"] == 0, "hparams_seed"].iloc[0])
    assert row["yu_hparams_seed"] == h and row["n_trials"] == 2
    # Yu's estimate: the same hparams_seed in every trial, each at its own selected checkpoint
    same_seed = df[df["hparams_seed"] == h]
    assert row["yu_acc"] == pytest.approx(select(same_seed, "training_domain")["acc"].mean())
    assert row["delta"] == pytest.approx(row["yu_acc"] - row["domainbed_acc"])
    assert row["same_hparams"] == (h == 0 or len(set(same_seed["hparams"].map(json.loads).map(json.dumps))) == 1)


def test_leaderboards_plan_states_both_counts():
    from dganalysis.studies.params import LeaderboardsParams
    from dganalysis.studies.plans import leaderboards_plan

    kw = dict(logo_groups={},
              sweep={"datasets": [{"name": "RotatedDigits", "kwargs": {"image_size": 16, "angles": [0, 20, 40]}}],
                     "algorithms": ["ERM"], "n_hparams": 4, "n_trials": 3, "steps": 5, "checkpoint_freq": 5,
                     "hparams_overrides": {"featurizer": "smallcnn"}})
    plan = leaderboards_plan(LeaderboardsParams(**kw, search_protocol="yu2024"))
    assert plan.search_protocol == "yu2024" and len(plan.sweeps["LODO"]) == 36
    assert plan.other == ["search protocol yu2024 (Yu et al. 2024), sweep LODO: runs 18 jobs, 12 searched at trial 0 "
                          "+ 6 reruns of the selected draws (their ids are known after the search), instead of "
                          "DomainBed's 36"]
    assert leaderboards_plan(LeaderboardsParams(**kw)).other == []
    with pytest.raises(ValueError, match="search_protocol"):
        LeaderboardsParams(**kw, search_protocol="Yu")
