"""A job's hyperparameters as drawn today, and whether a record's ``hparams`` still are.

Torch-free at import, so that :mod:`dganalysis.records` can judge a store's records (``records.store.check_draw``)
without sitting above :mod:`dganalysis.training.train`, which re-exports both functions for its callers. Judging a record
still imports the algorithm and dataset registries (the algorithms declare their hyperparameters on their classes,
the datasets their image regime on their builders), and those import torch: the import is deferred to the call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from dganalysis import io
from dganalysis.training.job import Job


def job_hparams(job: Job) -> dict[str, Any]:
    """The job's concrete hyperparameters (defaults or DomainBed's draw for (dataset, hparams_seed, trial_seed),
    overrides, ``steps``)."""
    from dganalysis.algorithms import default_hparams

    hp = default_hparams(
        job.algorithm, job.hparams_seed, overrides=dict(job.hparams_overrides), search_overrides=dict(job.search_overrides),
        trial_seed=job.trial_seed, dataset=job.dataset,
    )
    hp["steps"] = job.steps
    return hp


def recorded_draw_problem(spec: Mapping[str, Any], recorded: Mapping[str, Any]) -> str | None:
    """None when a record's ``hparams`` are what :func:`job_hparams` draws today for its job spec; otherwise what
    differs (the record was drawn under an older rule, before :data:`dganalysis.training.hparams.DRAW_VERSION`, and its job
    folder would be reused under a spec that now means other hyperparameters). A spec that cannot be drawn here is
    not judged (None): an algorithm or dataset not registered in this process (a dataset's regime, small or large
    images, is read from its registered builder), or one removed since."""
    from dganalysis.data.registry import DATASETS, _import_builtin

    try:
        job = Job.from_dict(spec)
        _import_builtin()
        if job.dataset not in DATASETS:
            return None
        fresh = json.loads(json.dumps(job_hparams(job), sort_keys=True, default=io._json_default))
    except Exception:  # an undrawable spec (e.g. a removed algorithm) is not judged here
        return None
    if fresh == dict(recorded):
        return None
    keys = sorted(k for k in set(fresh) | set(recorded) if fresh.get(k, "<absent>") != recorded.get(k, "<absent>"))
    shown = ", ".join(f"{k}: recorded {recorded.get(k, '<absent>')!r}, drawn now {fresh.get(k, '<absent>')!r}"
                      for k in keys[:5])
    return f"hparams differ from today's draw for this job spec ({shown}{', ...' if len(keys) > 5 else ''})"
