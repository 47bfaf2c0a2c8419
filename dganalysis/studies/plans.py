"""What each study trains, as a function of its parameter object.

One planner per study builds its job grid (and names the datasets and files it reads) from the study's parameter
object (:mod:`dganalysis.studies.params`): the notebook builds the object from its parameters cell, calls the planner
and hands the jobs to ``run_sweep``; ``dganalysis run --dry-run`` (:mod:`dganalysis.studies.dryrun`) builds the same object
from a profile's YAML and calls the same planner to list the jobs, count them and estimate their cost without
training anything.
Domain names come from :func:`dganalysis.data.domains.domain_names` (re-exported here), which knows the
built-in datasets without building them (PaHCC at paper scale takes hours to render).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dganalysis.algorithms import names as algorithm_names
from dganalysis.data.domains import domain_names
from dganalysis.protocols.leaderboard import board_label, leaderboard_boards  # noqa: F401 (re-exported)
from dganalysis.studies.params import (
    AuditParams,
    BinarizationParams,
    DatasetConstructionParams,
    DynamicDGParams,
    LeaderboardsParams,
    LeakageOracleParams,
    QuickstartParams,
    ShiftEstimationParams,
    WorstCaseParams,
)
from dganalysis.sweep import Job, make_jobs
from dganalysis.validation import ConfigError, check_params


@dataclass
class Plan:
    """What one notebook will compute.

    ``sweeps``: its job lists by name (a notebook may run several sweeps); ``datasets``:
    every (dataset name, kwargs) it loads, the sweeps' included; ``files``: parameter name
    → path of each file or folder it reads (weights, CSVs, image folders); ``other``: work
    that is not a sweep job (pretraining, environment classifiers), in words; ``produced``:
    files the notebook writes before its sweeps read them (e.g. pretrained checkpoints).
    """

    sweeps: dict[str, list[Job]] = field(default_factory=dict)
    datasets: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    other: list[str] = field(default_factory=list)
    produced: list[str] = field(default_factory=list)
    #: how the sweeps search hparams (:mod:`dganalysis.sweep.search_protocol`): ``"domainbed"`` runs every job listed;
    #: ``"yu2024"`` the trial-0 jobs, then one rerun of the selected draw per config and other trial
    search_protocol: str = "domainbed"

    @property
    def jobs(self) -> list[Job]:
        """All jobs of all sweeps, each once, in order."""
        return list(dict.fromkeys(j for js in self.sweeps.values() for j in js))


def _rest(train: Sequence[str], domains: Sequence[str]) -> list[str]:
    return [d for d in domains if d not in train]


def _held_out(jobs: list[Job]) -> list[Job]:
    """``jobs`` evaluated on held-out data only (:attr:`~dganalysis.training.job.Job.evaluate_splits` ``"held_out"``:
    no training accuracy, same seeds), for a study whose selections and findings read nothing else."""
    return [replace(j, evaluate_splits="held_out") for j in jobs]


def quickstart_plan(p: QuickstartParams) -> Plan:
    """DomainBed's protocol: leave-one-domain-out runs plus the runs with two held-out domains that
    leave-one-domain-out model selection needs (Gulrajani & Lopez-Paz 2021, Sec. 3), on each of ``p.sweep.datasets``
    (RotatedDigits, or DomainBed's table: Rotated/Colored MNIST, VLCS, PACS, OfficeHome, TerraIncognita, DomainNet);
    an entry's ``hparams`` go on top of ``hparams_overrides`` for that dataset (e.g. MNIST-CNN for the MNISTs,
    ImageNet ResNet-50 for the others, as DomainBed)."""
    check_params(p, QuickstartParams, "quickstart_plan")
    jobs: list[Job] = []
    for one in p.sweep.per_dataset():
        domains = domain_names(one.dataset, one.dataset_kwargs, p.data_dir)
        jobs += make_jobs(one.replace(splits="leave_one_out"), domains)
        jobs += make_jobs(one.replace(splits={"leave_one_group_out": 2}), domains)
    return Plan({"leave-one-out": jobs}, [(e["name"], e.get("kwargs", {})) for e in p.sweep.datasets])


def dataset_construction_plan(p: DatasetConstructionParams) -> Plan:
    """No training: the PaHCC build (Zhang, Zhang & Liu, Sec. 3), gray and binarized."""
    check_params(p, DatasetConstructionParams, "dataset_construction_plan")
    kwargs = {"size": p.n_classes, "image_size": p.image_size, "writers": p.writers, "seed": p.seed}
    return Plan({}, [("PaHCC", kwargs), ("PaHCC", {**kwargs, "binarize": True})],
                other=[f"PaHCC build: {p.n_classes} classes at {p.image_size} px, {p.writers} simulated writers (CPU)"])


def binarization_plan(p: BinarizationParams) -> Plan:
    """The gray and binary arms of Table 7 (and the full-class binary arm of Table 8) of Zhang, Zhang & Liu,
    Sec. 4.1: each training set is tested on every domain it does not train on, so these jobs are the same
    as the dynamic-DG study's (:func:`dynamic_dg_plan` with ``evaluate_on="rest"``) for the same settings. Both
    evaluate held-out data only (:func:`_held_out`): their tables read test accuracies selected on the training
    domains' ``out`` splits."""
    check_params(p, BinarizationParams, "binarization_plan")
    s = p.sweep
    domains = domain_names(s.dataset, s.dataset_kwargs, p.data_dir)
    splits = [{"train": list(t), "test": _rest(t, domains)} for t in p.train_sets]
    arms = {"gray": {**s.dataset_kwargs, "binarize": False}, "binary": {**s.dataset_kwargs, "binarize": True}}
    if p.full_dataset_kwargs:
        arms["full binary"] = {**p.full_dataset_kwargs, "binarize": True}
    sweeps = {arm: _held_out(make_jobs(s.replace(dataset_kwargs=kw,
                                                 splits=splits if arm != "full binary" else splits[-1:]), domains))
              for arm, kw in arms.items()}
    return Plan(sweeps, [(s.dataset, kw) for kw in arms.values()],
                files={"extra_bars_csv": p.extra_bars_csv} if p.extra_bars_csv else {})


def dynamic_dg_plan(p: DynamicDGParams) -> Plan:
    """Every training set of the swap test and of the Domain+ chains (Zhang, Zhang & Liu, Sec. 4.2–4.3), once,
    evaluated on held-out data only (:func:`_held_out`)."""
    check_params(p, DynamicDGParams, "dynamic_dg_plan")
    domains = domain_names(p.sweep.dataset, p.sweep.dataset_kwargs, p.data_dir)
    train_sets = list(dict.fromkeys(tuple(t) for t in p.swap_choices
                                    + [s for chain in p.domain_plus_chains for s in chain]))
    splits = [{"train": list(t), "test": _rest(t, domains) if p.evaluate_on == "rest" else [p.test_domain]}
              for t in train_sets]
    jobs = _held_out(make_jobs(p.sweep.replace(splits=splits), domains))
    return Plan({"dynamic": jobs}, [(p.sweep.dataset, p.sweep.dataset_kwargs)])


def leakage_checkpoints(p: LeakageOracleParams) -> dict[str, Path]:
    """Where the leakage study keeps its two pretrained featurizers (supervised on a test-like source, SimCLR on the
    training domains), as :func:`dganalysis.pretrain.checkpoint_path` names them (under ``p.output_dir``)."""
    check_params(p, LeakageOracleParams, "leakage_checkpoints")
    from dganalysis.pretrain import checkpoint_path

    common = dict(featurizer=p.featurizer, steps=p.pretrain_steps, batch_size=p.pretrain_batch_size,
                  lr=p.pretrain_lr, seed=0)
    key = dict(dataset=p.sweep.dataset, **p.sweep.dataset_kwargs, train=p.pretrain_domains, **common)
    folder = Path(p.output_dir) / "pretrained"
    return {"supervised": checkpoint_path(folder, "supervised", {**key, "angles": p.test_like_angles,
                                                                 "copies": p.source_copies}),
            "simclr": checkpoint_path(folder, "simclr", key)}


def leakage_pretrainings(p: LeakageOracleParams) -> dict[str, tuple[str | None, str]]:
    """The leakage study's initialisations, in order: label → (checkpoint path or None, featurizer).

    With ``p.pretrain_steps > 0`` the study's own two pretrainings come first (supervised on a test-like source,
    SimCLR on the training domains; :func:`leakage_checkpoints`); then ``p.published_weights`` (label →
    ``{"path": file, "featurizer": arch}``: the authors' files of Yu et al. 2024, Tables 1-3, e.g. MoCo-v2 ResNet-50,
    see :mod:`dganalysis.nets.published`); then ``"none"`` (random init). With ``pretrain_steps == 0`` nothing is
    pretrained (the paper profile on real benchmarks: its test-like source is built from rotated digits)."""
    check_params(p, LeakageOracleParams, "leakage_pretrainings")
    out: dict[str, tuple[str | None, str]] = {}
    if p.pretrain_steps > 0:
        ckpt = leakage_checkpoints(p)
        out = {"supervised (test-like)": (str(ckpt["supervised"]), p.featurizer),
               "SimCLR (train domains)": (str(ckpt["simclr"]), p.featurizer)}
    for label, spec in (p.published_weights or {}).items():
        if not isinstance(spec, dict) or set(spec) != {"path", "featurizer"}:
            raise ValueError(f"published_weights[{label!r}]: expected {{path: <file>, featurizer: <arch>}}, got {spec!r}")
        out[str(label)] = (str(spec["path"]), str(spec["featurizer"]))
    out["none"] = (None, p.featurizer)
    return out


def leakage_oracle_plan(p: LeakageOracleParams) -> Plan:
    """LP vs FT (and frozen stages) from each pretraining, and the Table 4 oracle-vs-K sweep (Yu et al. 2024).

    Initialisations: :func:`leakage_pretrainings` (own pretrainings, the published files, random init), each with its
    featurizer, on the splits of ``p.sweep`` (several let Tables 1 and 3 hold out each domain in turn). The oracle sweep (``p.oracle``, a :class:`~dganalysis.sweep.Sweep`)
    trains from scratch on ``p.oracle.dataset`` (which may differ from the pretraining part's) over
    ``p.oracle.splits`` with a random search of ``oracle.n_hparams`` draws and ``oracle.n_trials`` trials,
    with the seeds of checkpoints every ``oracle.steps // 2`` steps but evaluated at the last step only
    (:attr:`~dganalysis.training.job.Job.evaluate_at` ``"last"``: every selection here reads the last checkpoint)
    and on held-out data only (:func:`_held_out`): the leakage is computed per trial.
    ``p.oracle.search_overrides`` widens or narrows that search (YAML distribution specs,
    :func:`dganalysis.training.hparams.parse_distribution`), e.g. ``{"augment": {"choice": [true, false]}}``: a choice
    that moves test-domain accuracy more than training-domain validation accuracy is what an oracle can exploit."""
    check_params(p, LeakageOracleParams, "leakage_oracle_plan")
    from dganalysis.protocols.leakage import make_leakage_jobs

    inits = leakage_pretrainings(p)
    jobs = []
    for label, (path, feat) in inits.items():
        hp = {"featurizer": feat, "batch_size": p.batch_size, "lr": p.lr}
        modes = ["LP", "FT"] + ([f"FT-freeze{k}" for k in p.frozen_stages] if path else [])
        jobs += make_leakage_jobs(p.sweep.replace(hparams_overrides=hp), {label: path}, modes)
    o = p.oracle
    oracle = make_leakage_jobs(o.replace(algorithms=p.sweep.algorithms, checkpoint_freq=max(1, o.steps // 2),
                                         hparams_overrides={"featurizer": p.featurizer, "batch_size": p.batch_size}),
                               {"none": None}, ["FT"])
    # both oracles and the IID selection read the last checkpoint only: evaluate nothing else (same seeds, Job.evaluate_at)
    oracle = [replace(j, evaluate_at="last") for j in _held_out(oracle)]
    files = {"inception_weights": p.inception_weights} if p.inception_weights else {}
    if p.fid_reference:
        files["fid_reference"] = p.fid_reference
    produced = [str(Path(c).resolve()) for c, _ in list(inits.values())[:2]] if p.pretrain_steps > 0 else []
    other = [f"2 pretraining runs of {p.featurizer} ({p.pretrain_steps} steps × batch {p.pretrain_batch_size}; "
             f"supervised and SimCLR) into {Path(produced[0]).parent} — not counted in the budget"] if produced else []
    datasets = list({json.dumps([d, kw], sort_keys=True): (d, kw) for d, kw in
                     [(p.sweep.dataset, p.sweep.dataset_kwargs), (o.dataset, o.dataset_kwargs)]}.values())
    return Plan({"LP/FT": jobs, "oracle-K": oracle}, datasets, files, other, produced=produced)


def leaderboards_plan(p: LeaderboardsParams) -> Plan:
    """Leave-one-domain-out and leave-one-group-out sweeps per dataset (Yu et al. 2024, Table 5), per board.

    The datasets are ``p.sweep.datasets``: an entry's ``hparams`` (on top of ``hparams_overrides``) and ``steps`` set
    one dataset apart, as Yu et al. (Sec. 3.1) train DomainNet 15,000 and NICO++ 10,000 steps; ``search_overrides``
    replaces search distributions (:func:`dganalysis.training.hparams.parse_distribution`, e.g. Yu et al.'s MMD γ space).
    ``leaderboards`` names several boards (Table 5 / App. C.4: MoCo-v2 ResNet-50, from scratch, MoCo-v3 ViT-B/16),
    each with its own datasets, overrides and steps (:func:`leaderboard_boards`); the sweeps are then keyed
    ``"<board> / LODO"`` and ``"<board> / LOGO"``
    (:func:`dganalysis.protocols.leaderboard.board_label`). Without it there is one board and the sweeps are
    ``"LODO"`` and ``"LOGO"``. ``search_protocol``: ``"domainbed"`` (every draw in every trial) or ``"yu2024"`` (Yu
    et al.'s search on trial 0, then the selected draw rerun on the other trials,
    :mod:`dganalysis.sweep.search_protocol`); the sweeps list the full grid either way, ``other`` says the counts.
    With ``skip_undecidable``, when the study's design (:func:`dganalysis.studies.design.leaderboards_design`)
    computes that the claim on our runs cannot be decided (too few algorithms for a rank test), the sweeps are empty
    and ``other`` says why."""
    check_params(p, LeaderboardsParams, "leaderboards_plan")
    from dganalysis.sweep.search_protocol import check_protocol, protocol_job_counts

    check_protocol(p.search_protocol)
    specs = p.boards()
    domains = {e["name"]: domain_names(e["name"], e.get("kwargs", {}), p.data_dir) for e in p.sweep.datasets}
    sweeps: dict[str, list[Job]] = {}
    for board, spec in specs.items():
        for proto in ("LODO", "LOGO"):
            sweeps[board_label(board, proto)] = []
        for one in spec["sweep"].per_dataset():
            name, doms = one.dataset, domains[one.dataset]
            held = p.lodo_domains.get(name) or doms
            unknown = [d for d in held if d not in doms]
            if unknown:
                raise ConfigError(f"leaderboards_plan: parameter 'lodo_domains[{name!r}]': unknown domains {unknown}; "
                                  f"expected some of {doms}")
            lodo = [{"train": [d for d in doms if d != t], "test": [t]} for t in doms if t in held]
            logo = [{"train": _rest(g, doms), "test": list(g)} for g in p.logo_groups.get(name, [])]
            for proto, splits in (("LODO", lodo), ("LOGO", logo)):
                if splits:
                    sweeps[board_label(board, proto)] += make_jobs(one.replace(splits=splits), doms)
    other = []
    from dganalysis.studies.design import leaderboards_design

    skipped = [c for c in leaderboards_design(p) if not c.runs and not c.shared]
    if skipped and p.skip_undecidable:  # the runs feed only the claim of our runs; the design computed that it cannot be decided
        sweeps = {label: [] for label in sweeps}
        other += [f"no training: claim {c.key} ({c.claim}) cannot be decided: {c.blocker}" for c in skipped]
    if p.search_protocol == "yu2024":
        for label, jobs in sweeps.items():
            c = protocol_job_counts(jobs)
            if jobs:
                other.append(f"search protocol yu2024 (Yu et al. 2024), sweep {label}: runs {c['yu2024']:,} jobs, "
                             f"{c['search']:,} searched at trial 0 + {c['reruns']:,} reruns of the selected draws "
                             f"(their ids are known after the search), instead of DomainBed's {c['domainbed']:,}")
    return Plan(sweeps, [(e["name"], e.get("kwargs", {})) for e in p.sweep.datasets], other=other,
                search_protocol=p.search_protocol)


def shift_estimation_plan(p: ShiftEstimationParams) -> Plan:
    """The Tables 1–2 ranking sweep of Ye et al. 2022 (one split per dataset); the shift estimates themselves
    train small environment classifiers, counted in ``other``. The sweep is ``p.ranking`` (a
    :class:`~dganalysis.sweep.Sweep`); an entry of ``ranking.datasets`` may add ``hparams`` on top
    of ``ranking.hparams_overrides`` for that dataset (OoD-Bench: ImageNet ResNet-18 on the image benchmarks, an
    MNIST CNN on Colored MNIST)."""
    check_params(p, ShiftEstimationParams, "shift_estimation_plan")
    jobs: list[Job] = []
    r = p.ranking
    for one in r.per_dataset():
        jobs += make_jobs(one, domain_names(one.dataset, one.dataset_kwargs, p.data_dir))
    datasets = [(s["name"], s.get("kwargs", {})) for s in [*p.map_datasets, *r.datasets]]
    if p.folder_root is not None:
        datasets.append(("ImageFolder", {"root": p.folder_root, "image_size": p.folder_image_size}))
    n_env = (len(p.fig4_rho) ** 2 + 2 * len(p.fig4_mu) ** 2) * p.fig4_trials \
        + (len(p.table3_rho_te) + 1) * p.table3_trials + (len(p.map_datasets) + (p.folder_root is not None)) * p.map_trials
    other = [f"{n_env} environment-classifier trainings of {p.env_steps} steps (Fig. 4, Table 3, Fig. 3 map) "
             "— not counted in the budget"]
    return Plan({"ranking": jobs}, datasets, {"folder_root": p.folder_root} if p.folder_root else {}, other)


def worst_case_plan(p: WorstCaseParams) -> Plan:
    """One model per (algorithm, hparams draw), saved for the worst-case curves of the WC-DG poster."""
    check_params(p, WorstCaseParams, "worst_case_plan")
    overrides: dict[str, Any] = {"featurizer": p.featurizer, "batch_size": p.batch_size, "lr": p.lr}
    if set(p.sweep.algorithms) & set(algorithm_names(tag="wc")):  # the worst-case family reads wc_rho
        overrides["wc_rho"] = p.wc_rho
    jobs = make_jobs(p.sweep.replace(n_trials=1, hparams_overrides=overrides, save_model=True))
    return Plan({"models": jobs}, [(p.sweep.dataset, p.sweep.dataset_kwargs)])


def audit_plan(p: AuditParams) -> Plan:
    """The audit trains nothing: it reads its inputs (the profile's store, shipped tables, files). The files it
    names are checked by the dry run; the store (``"store"``) is written by the other notebooks."""
    check_params(p, AuditParams, "audit_plan")
    files = {f"inputs[{i}]": str(x) for i, x in enumerate(p.inputs)
             if str(x) != "store" and not str(x).startswith("shipped:")}
    if p.reference and not str(p.reference).startswith("shipped:"):
        files["reference"] = str(p.reference)
    n_store = sum(str(x) == "store" for x in p.inputs)
    return Plan({}, [], files, [f"audit of {len(p.inputs)} input(s), no training"
                                + (" (the profile's job store, written by the notebooks before it)" if n_store else "")])
