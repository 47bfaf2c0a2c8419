"""The quick profile's notebook 03: what its design lets it train, with notebook 02's binary-arm job spec."""

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


def test_03_trains_only_what_its_design_can_decide():
    """Notebook 03's quick jobs are those of the claims its design can decide (CORAL and IB-ERM adding d2), each
    with notebook 02's binary-arm spec (dataset kwargs, steps, batch, hparams), so both read alike."""
    from dganalysis.studies.design import design_for
    from dganalysis.studies.params import build_params

    p2, p3 = _yaml("02_binarization_study"), _yaml("03_dynamic_dg")
    claims = design_for("03_dynamic_dg", build_params("03_dynamic_dg", p3))
    ran = [c for c in claims if c.runs and not c.shared]
    assert ran and all(c.decidable for c in ran), [(c.key, c.blocker) for c in ran]
    assert {c.key for c in claims if not c.decidable} == {c.key for c in claims if not c.runs}
    jobs3 = _jobs3(p3, p3["n_trials"])
    assert len(jobs3) == len(p3["algorithms"]) * 2 * p3["n_trials"]
    assert {**p2["dataset_kwargs"], "binarize": True} == p3["dataset_kwargs"]
    assert (p2["steps"], p2["hparams_overrides"]) == (p3["steps"], p3["hparams_overrides"])


def test_03_more_trials_keep_the_earlier_jobs():
    """Raising 03's n_trials adds trial seeds only: the jobs of fewer trials are all kept, so a store that holds them
    trains only the new trials (the quick profile went from 3 to 6 trials this way)."""
    p3 = _yaml("03_dynamic_dg")
    n, k = p3["n_trials"], p3["n_trials"] // 2
    assert k >= 1, "params/quick/03_dynamic_dg.yaml: n_trials >= 2 expected (paired tests need two trials)"
    fewer, more = _jobs3(p3, k), _jobs3(p3, n)
    assert {j.job_id for j in fewer} < {j.job_id for j in more}
    assert {j.trial_seed for j in more} - {j.trial_seed for j in fewer} == set(range(k, n))
