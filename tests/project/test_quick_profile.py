"""The quick profile's notebooks 02 and 03 share their binary ERM PaHCC jobs through the store (same spec, same hash)."""

from pathlib import Path

import yaml

from dganalysis.sweep import make_jobs

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ["d0", "d1", "d2", "hw"]


def _yaml(name):
    return yaml.safe_load((ROOT / "params" / "quick" / f"{name}.yaml").read_text())


def _jobs3(p3, n_trials):
    """Notebook 03's jobs: swap choices + Domain+ chains, each training set once, evaluate_on "rest"."""
    sets = list(dict.fromkeys(tuple(t) for t in p3["swap_choices"] + [s for c in p3["domain_plus_chains"] for s in c]))
    splits3 = [{"train": list(t), "test": [d for d in DOMAINS if d not in t]} for t in sets]
    return make_jobs(p3["dataset"], p3["dataset_kwargs"], p3["algorithms"], splits3, n_hparams=p3["n_hparams"],
                     n_trials=n_trials, steps=p3["steps"], checkpoint_freq=p3["checkpoint_freq"],
                     hparams_overrides=p3["hparams_overrides"], domains=DOMAINS)


def test_03_reuses_02_binary_erm_jobs():
    p2, p3 = _yaml("02_binarization_study"), _yaml("03_dynamic_dg")
    # notebook 02: the binary arm = dataset_kwargs + binarize=True, every train set tested on the rest
    splits2 = [{"train": t, "test": [d for d in DOMAINS if d not in t]} for t in p2["train_sets"]]
    jobs2 = make_jobs(p2["dataset"], {**p2["dataset_kwargs"], "binarize": True}, p2["algorithms"], splits2,
                      n_hparams=p2["n_hparams"], n_trials=p2["n_trials"], steps=p2["steps"],
                      checkpoint_freq=p2["checkpoint_freq"], hparams_overrides=p2["hparams_overrides"], domains=DOMAINS)
    # notebook 03: swap choices + Domain+ chains, evaluate_on "rest"
    jobs3 = _jobs3(p3, p3["n_trials"])
    ids3 = {j.job_id for j in jobs3}
    assert p3["evaluate_on"] == "rest" and len(jobs2) == 4 * p2["n_trials"]
    assert {j.job_id for j in jobs2} <= ids3  # every binary ERM job of 02 is one of 03's
    assert len(jobs3) == len(p3["algorithms"]) * 4 * p3["n_trials"]


def test_03_more_trials_keep_the_earlier_jobs():
    """Raising 03's n_trials adds trial seeds only: the jobs of fewer trials are all kept, so a store that holds them
    trains only the new trials (the quick profile went from 3 to 6 trials this way)."""
    p3 = _yaml("03_dynamic_dg")
    n, k = p3["n_trials"], p3["n_trials"] // 2
    assert k >= 1, "params/quick/03_dynamic_dg.yaml: n_trials >= 2 expected (paired tests need two trials)"
    fewer, more = _jobs3(p3, k), _jobs3(p3, n)
    assert {j.job_id for j in fewer} < {j.job_id for j in more}
    assert {j.trial_seed for j in more} - {j.trial_seed for j in fewer} == set(range(k, n))
