"""The quick profile's notebook 03: what its design lets it train, with notebook 02's binary-arm job spec."""

from pathlib import Path

import yaml

from dganalysis.sweep import Sweep, make_jobs

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ["d0", "d1", "d2", "hw"]


def _yaml(name):
    return yaml.safe_load((ROOT / "params" / "quick" / f"{name}.yaml").read_text())


def _jobs3(p3, n_trials):
    """Notebook 03's jobs: swap choices + Domain+ chains, each training set once, evaluate_on "rest"."""
    sets = list(dict.fromkeys(tuple(t) for t in p3["swap_choices"] + [s for c in p3["domain_plus_chains"] for s in c]))
    splits3 = [{"train": list(t), "test": [d for d in DOMAINS if d not in t]} for t in sets]
    return make_jobs(Sweep(**{**p3["sweep"], "splits": splits3, "n_trials": n_trials}), domains=DOMAINS)


def test_03_trains_only_what_its_design_can_decide():
    """Notebook 03's quick jobs are those of the claims its design can decide (CORAL and IB-ERM adding d2), each
    with notebook 02's binary-arm spec (dataset kwargs, steps, batch, hparams), so both read alike."""
    from dganalysis.studies.study import build_params, design_for

    p2, p3 = _yaml("02_binarization_study"), _yaml("03_dynamic_dg")
    claims = design_for("03_dynamic_dg", build_params("03_dynamic_dg", p3))
    ran = [c for c in claims if c.runs and not c.shared]
    assert ran and all(c.decidable for c in ran), [(c.key, c.blocker) for c in ran]
    assert {c.key for c in claims if not c.decidable} == {c.key for c in claims if not c.runs}
    s2, s3 = p2["sweep"], p3["sweep"]
    jobs3 = _jobs3(p3, s3["n_trials"])
    assert len(jobs3) == len(s3["algorithms"]) * 2 * s3["n_trials"]
    assert {**s2["dataset_kwargs"], "binarize": True} == s3["dataset_kwargs"]
    assert (s2["steps"], s2["hparams_overrides"]) == (s3["steps"], s3["hparams_overrides"])


def test_03_more_trials_keep_the_earlier_jobs():
    """Raising 03's n_trials adds trial seeds only: the jobs of fewer trials are all kept, so a store that holds them
    trains only the new trials (the quick profile went from 3 to 6 trials this way)."""
    p3 = _yaml("03_dynamic_dg")
    n, k = p3["sweep"]["n_trials"], p3["sweep"]["n_trials"] // 2
    assert k >= 1, "params/quick/03_dynamic_dg.yaml: sweep.n_trials >= 2 expected (paired tests need two trials)"
    fewer, more = _jobs3(p3, k), _jobs3(p3, n)
    assert {j.job_id for j in fewer} < {j.job_id for j in more}
    assert {j.trial_seed for j in more} - {j.trial_seed for j in fewer} == set(range(k, n))
