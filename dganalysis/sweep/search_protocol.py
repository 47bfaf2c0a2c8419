"""Search protocols: DomainBed's full grid, or Yu et al. (2024)'s search on one seed and reruns of the best draw.

- ``"domainbed"`` (Gulrajani & Lopez-Paz 2021, Sec. 3): every hparam draw runs in every trial; the selection picks
  a draw per trial and the reported accuracy is the mean over trials. ``n_hparams × n_trials`` jobs per config.
- ``"yu2024"`` (Yu et al. 2024, *Rethinking the Evaluation Protocol of Domain Generalization*, Sec. 3.1; their
  code, DomainBed-v2: ``generate_scripts.py`` runs the draws with one data seed, ``collect.py`` keeps the draw
  whose final ``default`` score (the pooled training-domain validation accuracy at the best checkpoint) is highest,
  ``generate_scripts_seed.py`` reruns that draw's fixed hparams with the other data seeds). Here: the trial-0 jobs
  of every draw (the *search*), the selection method's choice among them per config, then one job per other trial
  of the full grid with the chosen draw's hparams fixed (``hparams_overrides`` = every drawn value: in DomainBed a
  draw depends on the trial seed, so the rerun fixes the values, as Yu et al.'s ``--hparams_fixed_config``).
  ``n_hparams + n_trials − 1`` jobs per config.

:func:`run_search_protocol` runs either; :func:`protocol_job_counts` counts both for a grid (the dry run);
:func:`protocol_selected` gives a protocol's selected rows (as :func:`dganalysis.records.selection.select`) and
:func:`compare_protocols` compares the two protocols' selected accuracies on a sweep that ran the full grid.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from dganalysis.training.job import Job
from dganalysis.validation import ConfigError

SEARCH_PROTOCOLS = ("domainbed", "yu2024")


def check_protocol(protocol: str) -> str:
    """``protocol`` when it is one of :data:`SEARCH_PROTOCOLS`, else a ValueError naming it."""
    if protocol not in SEARCH_PROTOCOLS:
        raise ConfigError(f"search_protocol={protocol!r}: expected one of {list(SEARCH_PROTOCOLS)}")
    return protocol


def config_key(job: Job) -> str:
    """Everything but the hparam draw and the trial: the jobs that compete in one selection."""
    d = job.to_dict()
    for k in ("hparams_seed", "trial_seed", "save_model"):
        d.pop(k, None)
    return json.dumps(d, sort_keys=True)


def search_jobs(jobs: Sequence[Job]) -> list[Job]:
    """The search stage of ``yu2024``: the trial-0 job of every draw."""
    return [j for j in jobs if j.trial_seed == 0]


def protocol_job_counts(jobs: Sequence[Job]) -> dict[str, int]:
    """Jobs of the full grid ``jobs`` under each protocol: ``domainbed`` (all), ``yu2024`` (= ``search`` +
    ``reruns``: the trial-0 jobs, and per config one job per other trial)."""
    search = search_jobs(jobs)
    trials: dict[str, set[int]] = {}
    for j in jobs:
        trials.setdefault(config_key(j), set()).add(j.trial_seed)
    reruns = sum(len(t - {0}) for t in trials.values())
    return {"domainbed": len(jobs), "search": len(search), "reruns": reruns, "yu2024": len(search) + reruns}


def _fixed_hparams(job: Job) -> dict[str, Any]:
    from dganalysis.training.job_draw import job_hparams

    return {k: v for k, v in job_hparams(job).items() if k != "steps"}


def rerun_jobs(jobs: Sequence[Job], selected: pd.DataFrame) -> list[Job]:
    """The reruns of ``yu2024``: for each config of the full grid ``jobs`` whose trial-0 job was chosen in
    ``selected`` (rows of :func:`dganalysis.records.selection.select` on the search's records), one job per other trial of
    the grid with that job's hparams fixed."""
    by_id = {j.job_id: j for j in jobs}
    trials: dict[str, set[int]] = {}
    for j in jobs:
        trials.setdefault(config_key(j), set()).add(j.trial_seed)
    out: dict[str, Job] = {}
    for job_id in dict.fromkeys(selected["job_id"]):
        chosen = by_id.get(job_id)
        if chosen is None or chosen.trial_seed != 0:
            continue
        fixed = {**chosen.hparams_overrides, **_fixed_hparams(chosen)}
        for t in sorted(trials[config_key(chosen)] - {0}):
            job = replace(chosen, trial_seed=t, hparams_overrides=fixed)
            out[job.job_id] = job
    return list(out.values())


def run_search_protocol(jobs: Sequence[Job], store_dir: str | Path, protocol: str = "domainbed",
                        selection_method: str = "training_domain", **run_kw: Any) -> list[Job]:
    """Run the full grid ``jobs`` under ``protocol`` into ``store_dir`` (``run_kw`` go to
    :func:`dganalysis.sweep.run_sweep`); returns the jobs run (``yu2024``: the search, then the reruns)."""
    from dganalysis.records import load, select
    from dganalysis.sweep.launcher import run_sweep

    check_protocol(protocol)
    if protocol == "domainbed":
        run_sweep(list(jobs), store_dir, **run_kw)
        return list(jobs)
    search = search_jobs(jobs)
    run_sweep(search, store_dir, **run_kw)
    df = load(store_dir)
    reruns = rerun_jobs(jobs, select(df[df["job_id"].isin({j.job_id for j in search})], selection_method))
    run_sweep(reruns, store_dir, **run_kw)
    return search + reruns


def protocol_selected(df: pd.DataFrame, jobs_run: Sequence[Job], protocol: str,
                      selection_method: str = "training_domain") -> pd.DataFrame:
    """The selected rows of ``protocol`` (columns of :func:`dganalysis.records.selection.select`) from the records ``df`` of
    ``jobs_run`` (what :func:`run_search_protocol` returned). ``yu2024``: the search's choice on trial 0, then each
    rerun at its own selected checkpoint, its ``setting`` set to the search config's so trials group together."""
    from dganalysis.records import select

    check_protocol(protocol)
    df = df[df["job_id"].isin({j.job_id for j in jobs_run})]
    if protocol == "domainbed":
        return select(df, selection_method)
    search_ids = {j.job_id for j in jobs_run if j.trial_seed == 0}
    first = select(df[df["job_id"].isin(search_ids)], selection_method)
    rest = select(df[~df["job_id"].isin(search_ids)], selection_method)
    by_id = {j.job_id: j for j in jobs_run}
    setting = {config_key(by_id[i]): s for i, s in zip(first["job_id"], first["setting"]) if i in by_id}
    searched = {config_key(by_id[i]): by_id[i] for i in first["job_id"] if i in by_id}
    keys = [_rerun_config(by_id.get(i), searched) for i in rest["job_id"]]
    rest = rest.assign(setting=[setting.get(k, s) for k, s in zip(keys, rest["setting"])])
    return pd.concat([first, rest], ignore_index=True)


def _rerun_config(job: Job | None, searched: dict[str, Job]) -> str | None:
    """The search config a rerun belongs to (its overrides minus the fixed draw)."""
    if job is None:
        return None
    for key, chosen in searched.items():
        if replace(chosen, trial_seed=job.trial_seed, hparams_overrides=job.hparams_overrides) == job:
            return key
    return None


def compare_protocols(df: pd.DataFrame, selection_method: str = "training_domain") -> pd.DataFrame:
    """What ``yu2024`` changes, measured on a sweep ``df`` that ran the full grid (every draw in every trial).

    One row per (config, test domain): ``domainbed_acc`` (the mean over trials of each trial's selected accuracy),
    ``yu_acc`` (the draw chosen on trial 0, then, in each other trial, the job of the same ``hparams_seed`` at its
    own selected checkpoint), ``yu_hparams_seed``, ``same_hparams`` (whether those jobs hold the trial-0 values:
    true for the default draw, 0; for other draws DomainBed's trial seed redraws the values, so ``yu_acc`` is then
    an approximation of the reruns), ``n_trials``, ``delta = yu_acc − domainbed_acc`` and ``same_choice`` (trial 0
    picks the same draw in both protocols: always; the share of trials whose DomainBed pick equals Yu's draw).
    Accuracies as in ``df`` (fractions)."""
    from dganalysis.records.selection import select
    from dganalysis.records.selection_methods import CONFIG

    db = select(df, selection_method)
    group = [c for c in CONFIG if c != "trial_seed"] + ["domain"]
    first = db[db["trial_seed"] == 0][group + ["hparams_seed", "hparams"]].rename(
        columns={"hparams_seed": "yu_hparams_seed", "hparams": "yu_hparams"})
    cand = df.merge(first[[c for c in group if c != "domain"] + ["yu_hparams_seed", "yu_hparams"]].drop_duplicates(),
                    on=[c for c in group if c != "domain"])
    cand = cand[cand["hparams_seed"] == cand["yu_hparams_seed"]]
    yu = select(cand.drop(columns=["yu_hparams_seed", "yu_hparams"]), selection_method)
    yu = yu.merge(first, on=group)
    yu["same"] = yu["hparams"] == yu["yu_hparams"]
    rows = []
    for key, g in db.groupby(group, sort=False):
        y = yu.set_index(group).loc[[key]] if key in set(map(tuple, yu[group].itertuples(index=False))) else None
        if y is None:
            continue
        rows.append(dict(zip(group, key), domainbed_acc=float(g["acc"].mean()), yu_acc=float(y["acc"].mean()),
                         yu_hparams_seed=int(y["yu_hparams_seed"].iloc[0]), same_hparams=bool(y["same"].all()),
                         n_trials=int(g["trial_seed"].nunique()),
                         same_choice=float((g["hparams_seed"] == int(y["yu_hparams_seed"].iloc[0])).mean())))
    out = pd.DataFrame(rows)
    if len(out):
        out["delta"] = out["yu_acc"] - out["domainbed_acc"]
    return out
