"""A job's hyperparameters as drawn today, and whether a record's ``hparams`` still are.

Torch-free at import, so that :mod:`dganalysis.records` can judge a store's records (``records.store.check_draw``)
without importing torch. A job folder's ``spec.json`` holds the job's id, and from
:data:`dganalysis.training.hparams.DRAW_VERSION` 2 on the id carries the drawing rule's version: a job whose id is
its spec's id today was drawn under today's rule, and its records are read without drawing again (torch-free). Only
a folder whose id is another rule's (or a spec without an id) is judged by drawing its hyperparameters again, which
imports the algorithm and dataset registries (the algorithms declare their hyperparameters on their classes, the
datasets their image regime on their builders) and with them torch: the import is deferred to that call.
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


def drawn_under_todays_rule(spec: Mapping[str, Any]) -> bool:
    """Whether ``spec`` (a ``spec.json``) names the id its job has today: the id carries the hyperparameter-drawing
    rule's version (:attr:`dganalysis.training.job.Job.job_id`), so such a job was drawn under today's rule. False for
    a spec without an id, with another rule's id, or that is no job spec. Torch-free."""
    try:
        return isinstance(spec.get("job_id"), str) and Job.from_dict(spec).job_id == spec["job_id"]
    except Exception:  # not a job spec of today's fields: judged by drawing (recorded_draw_problem)
        return False


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
