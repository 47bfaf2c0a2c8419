"""What each study notebook trains, as a function of its parameters.

One function per notebook builds the notebook's job grid (and names the datasets and files
it reads) from the notebook's own parameters: the notebook calls it and hands the jobs to
``run_sweep``; ``dganalysis run --dry-run`` (:mod:`dganalysis.dryrun`) calls the same
function with a profile's YAML to list the jobs, count them and estimate their cost
without training anything. Each function's keyword names are the notebook's parameter
names (a test checks this), so the dry run passes the parameters through by name.
Domain names come from :func:`dganalysis.data.domains.domain_names` (re-exported here), which knows the
built-in datasets without building them (PaHCC at paper scale takes hours to render).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dganalysis.data.domains import domain_names
from dganalysis.registry import Registry
from dganalysis.sweep import Job, make_jobs
from dganalysis.validation import check_plan_args


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

    @property
    def jobs(self) -> list[Job]:
        """All jobs of all sweeps, each once, in order."""
        return list(dict.fromkeys(j for js in self.sweeps.values() for j in js))


PLANS: Registry[Callable[..., Plan]] = Registry("notebook plan")


def _rest(train: Sequence[str], domains: Sequence[str]) -> list[str]:
    return [d for d in domains if d not in train]


def quickstart_datasets(angles: list[int], image_size: int, datasets: dict | None) -> dict[str, dict]:
    """Notebook 00's datasets: ``datasets`` (name → kwargs) when given, else RotatedDigits at ``angles``."""
    check_plan_args("quickstart_datasets", locals())
    return dict(datasets) if datasets else {"RotatedDigits": {"image_size": image_size, "angles": angles}}


@PLANS.register("00_quickstart")
def quickstart_plan(*, angles: list[int], image_size: int, algorithms: list[str], n_hparams: int, n_trials: int,
                    steps: int, checkpoint_freq: int, hparams_overrides: dict, datasets: dict | None = None,
                    dataset_overrides: dict | None = None, data_dir: str | None = None) -> Plan:
    """DomainBed's protocol: leave-one-domain-out runs plus the runs with two held-out domains that
    leave-one-domain-out model selection needs (Gulrajani & Lopez-Paz 2021, Sec. 3), on RotatedDigits or on each of
    ``datasets`` (DomainBed's table: Rotated/Colored MNIST, VLCS, PACS, OfficeHome, TerraIncognita, DomainNet);
    ``dataset_overrides`` (name → hparams) goes on top of ``hparams_overrides`` for that dataset (e.g. MNIST-CNN for
    the MNISTs, ImageNet ResNet-50 for the others, as DomainBed)."""
    check_plan_args("quickstart_plan", locals())
    jobs: list[Job] = []
    specs = quickstart_datasets(angles, image_size, datasets)
    for name, kwargs in specs.items():
        domains = domain_names(name, kwargs, data_dir)
        over = {**hparams_overrides, **(dataset_overrides or {}).get(name, {})}
        common = dict(n_hparams=n_hparams, n_trials=n_trials, steps=steps, checkpoint_freq=checkpoint_freq,
                      hparams_overrides=over, domains=domains)
        jobs += make_jobs(name, kwargs, algorithms, "leave_one_out", **common)
        jobs += make_jobs(name, kwargs, algorithms, {"leave_one_group_out": 2}, **common)
    return Plan({"leave-one-out": jobs}, list(specs.items()))


@PLANS.register("01_dataset_construction")
def dataset_construction_plan(*, n_classes: int, image_size: int, writers: int, seed: int) -> Plan:
    """No training: the PaHCC build (Zhang, Zhang & Liu, Sec. 3), gray and binarized."""
    check_plan_args("dataset_construction_plan", locals())
    kwargs = {"size": n_classes, "image_size": image_size, "writers": writers, "seed": seed}
    return Plan({}, [("PaHCC", kwargs), ("PaHCC", {**kwargs, "binarize": True})],
                other=[f"PaHCC build: {n_classes} classes at {image_size} px, {writers} simulated writers (CPU)"])


@PLANS.register("02_binarization_study")
def binarization_plan(*, dataset: str, dataset_kwargs: dict, full_dataset_kwargs: dict, train_sets: list[list[str]],
                      algorithms: list[str], n_hparams: int, n_trials: int, steps: int, checkpoint_freq: int,
                      hparams_overrides: dict, extra_bars_csv: str, data_dir: str | None = None) -> Plan:
    """The gray and binary arms of Table 7 (and the full-class binary arm of Table 8) of Zhang, Zhang & Liu,
    Sec. 4.1: each training set is tested on every domain it does not train on, so these jobs are the same
    as notebook 03's for the same settings."""
    check_plan_args("binarization_plan", locals())
    domains = domain_names(dataset, dataset_kwargs, data_dir)
    splits = [{"train": list(t), "test": _rest(t, domains)} for t in train_sets]
    arms = {"gray": {**dataset_kwargs, "binarize": False}, "binary": {**dataset_kwargs, "binarize": True}}
    if full_dataset_kwargs:
        arms["full binary"] = {**full_dataset_kwargs, "binarize": True}
    sweeps = {arm: make_jobs(dataset, kw, algorithms, splits if arm != "full binary" else splits[-1:],
                             n_hparams=n_hparams, n_trials=n_trials, steps=steps, checkpoint_freq=checkpoint_freq,
                             hparams_overrides=hparams_overrides, domains=domains)
              for arm, kw in arms.items()}
    return Plan(sweeps, [(dataset, kw) for kw in arms.values()],
                files={"extra_bars_csv": extra_bars_csv} if extra_bars_csv else {})


@PLANS.register("03_dynamic_dg")
def dynamic_dg_plan(*, dataset: str, dataset_kwargs: dict, test_domain: str, swap_choices: list[list[str]],
                    domain_plus_chains: list[list[list[str]]], evaluate_on: str, algorithms: list[str], n_hparams: int,
                    n_trials: int, steps: int, checkpoint_freq: int, hparams_overrides: dict,
                    data_dir: str | None = None) -> Plan:
    """Every training set of the swap test and of the Domain+ chains (Zhang, Zhang & Liu, Sec. 4.2–4.3), once."""
    check_plan_args("dynamic_dg_plan", locals())
    domains = domain_names(dataset, dataset_kwargs, data_dir)
    train_sets = list(dict.fromkeys(tuple(t) for t in swap_choices + [s for chain in domain_plus_chains for s in chain]))
    splits = [{"train": list(t), "test": _rest(t, domains) if evaluate_on == "rest" else [test_domain]}
              for t in train_sets]
    jobs = make_jobs(dataset, dataset_kwargs, algorithms, splits, n_hparams=n_hparams, n_trials=n_trials, steps=steps,
                     checkpoint_freq=checkpoint_freq, hparams_overrides=hparams_overrides, domains=domains)
    return Plan({"dynamic": jobs}, [(dataset, dataset_kwargs)])


def leakage_checkpoints(*, output_dir: str, dataset: str, dataset_kwargs: dict, train_domains: list[str],
                        featurizer: str, test_like_angles: list[int], source_copies: int, pretrain_steps: int,
                        pretrain_batch_size: int, pretrain_lr: float) -> dict[str, Path]:
    """Where notebook 04 keeps its two pretrained featurizers (supervised on a test-like source, SimCLR on the
    training domains), as :func:`dganalysis.pretrain.checkpoint_path` names them."""
    check_plan_args("leakage_checkpoints", locals())
    from dganalysis.pretrain import checkpoint_path

    common = dict(featurizer=featurizer, steps=pretrain_steps, batch_size=pretrain_batch_size, lr=pretrain_lr, seed=0)
    key = dict(dataset=dataset, **dataset_kwargs, train=train_domains, **common)
    folder = Path(output_dir) / "pretrained"
    return {"supervised": checkpoint_path(folder, "supervised", {**key, "angles": test_like_angles,
                                                                 "copies": source_copies}),
            "simclr": checkpoint_path(folder, "simclr", key)}


def leakage_pretrainings(*, output_dir: str, dataset: str, dataset_kwargs: dict, train_domains: list[str],
                         featurizer: str, test_like_angles: list[int], source_copies: int, pretrain_steps: int,
                         pretrain_batch_size: int, pretrain_lr: float,
                         published_weights: dict | None = None) -> dict[str, tuple[str | None, str]]:
    """Notebook 04's initialisations, in order: label → (checkpoint path or None, featurizer).

    With ``pretrain_steps > 0`` the notebook's own two pretrainings come first (supervised on a test-like source,
    SimCLR on the training domains; :func:`leakage_checkpoints`); then ``published_weights`` (label →
    ``{"path": file, "featurizer": arch}``: the authors' files of Yu et al. 2024, Tables 1-3, e.g. MoCo-v2 ResNet-50,
    see :mod:`dganalysis.nets.published`); then ``"none"`` (random init). With ``pretrain_steps == 0`` the notebook
    pretrains nothing (the paper profile on real benchmarks: its test-like source is built from rotated digits)."""
    check_plan_args("leakage_pretrainings", locals())
    out: dict[str, tuple[str | None, str]] = {}
    if pretrain_steps > 0:
        ckpt = leakage_checkpoints(output_dir=output_dir, dataset=dataset, dataset_kwargs=dataset_kwargs,
                                   train_domains=train_domains, featurizer=featurizer,
                                   test_like_angles=test_like_angles, source_copies=source_copies,
                                   pretrain_steps=pretrain_steps, pretrain_batch_size=pretrain_batch_size,
                                   pretrain_lr=pretrain_lr)
        out = {"supervised (test-like)": (str(ckpt["supervised"]), featurizer),
               "SimCLR (train domains)": (str(ckpt["simclr"]), featurizer)}
    for label, spec in (published_weights or {}).items():
        if not isinstance(spec, dict) or set(spec) != {"path", "featurizer"}:
            raise ValueError(f"published_weights[{label!r}]: expected {{path: <file>, featurizer: <arch>}}, got {spec!r}")
        out[str(label)] = (str(spec["path"]), str(spec["featurizer"]))
    out["none"] = (None, featurizer)
    return out


@PLANS.register("04_leakage_oracle")
def leakage_oracle_plan(*, output_dir: str, dataset: str, dataset_kwargs: dict, train_domains: list[str],
                        test_domains: list[str], featurizer: str, test_like_angles: list[int], source_copies: int,
                        pretrain_steps: int, pretrain_batch_size: int, pretrain_lr: float, algorithm: str, steps: int,
                        checkpoint_freq: int, batch_size: int, lr: float, n_trials: int, frozen_stages: list[int],
                        oracle_dataset: str, oracle_dataset_kwargs: dict, oracle_splits: list[dict],
                        oracle_n_hparams: int, oracle_steps: int, oracle_n_trials: int,
                        inception_weights: str | None, oracle_search_overrides: dict | None = None,
                        published_weights: dict | None = None, lp_ft_splits: list[dict] | None = None,
                        fid_reference: str | None = None) -> Plan:
    """LP vs FT (and frozen stages) from each pretraining, and the Table 4 oracle-vs-K sweep (Yu et al. 2024).

    Initialisations: :func:`leakage_pretrainings` (own pretrainings, the published files, random init), each with its
    featurizer. ``lp_ft_splits`` (default: the one split ``train_domains`` → ``test_domains``) lets Tables 1 and 3 hold
    out each domain in turn. The oracle sweep trains from scratch on ``oracle_dataset`` (which may differ from the
    pretraining part's) with a random search of ``oracle_n_hparams`` draws and ``oracle_n_trials`` trials: the leakage
    is computed per trial. ``oracle_search_overrides`` widens or narrows that search (YAML distribution specs,
    :func:`dganalysis.hparams.parse_distribution`), e.g. ``{"augment": {"choice": [true, false]}}``: a choice that
    moves test-domain accuracy more than training-domain validation accuracy is what an oracle can exploit."""
    check_plan_args("leakage_oracle_plan", locals())
    from dganalysis.protocols.leakage import make_leakage_jobs

    inits = leakage_pretrainings(output_dir=output_dir, dataset=dataset, dataset_kwargs=dataset_kwargs,
                                 train_domains=train_domains, featurizer=featurizer, test_like_angles=test_like_angles,
                                 source_copies=source_copies, pretrain_steps=pretrain_steps,
                                 pretrain_batch_size=pretrain_batch_size, pretrain_lr=pretrain_lr,
                                 published_weights=published_weights)
    split = list(lp_ft_splits or [{"train": train_domains, "test": test_domains}])
    common = dict(algorithms=[algorithm], n_trials=n_trials, steps=steps, checkpoint_freq=checkpoint_freq)
    jobs = []
    for label, (path, feat) in inits.items():
        hp = {"featurizer": feat, "batch_size": batch_size, "lr": lr}
        modes = ["LP", "FT"] + ([f"FT-freeze{k}" for k in frozen_stages] if path else [])
        jobs += make_leakage_jobs(dataset, dataset_kwargs, split, {label: path}, modes, hparams_overrides=hp, **common)
    oracle = make_leakage_jobs(oracle_dataset, oracle_dataset_kwargs, oracle_splits, {"none": None}, ["FT"],
                               algorithms=[algorithm], n_hparams=oracle_n_hparams, n_trials=oracle_n_trials,
                               steps=oracle_steps,
                               checkpoint_freq=max(1, oracle_steps // 2),
                               hparams_overrides={"featurizer": featurizer, "batch_size": batch_size},
                               search_overrides=oracle_search_overrides or None)
    files = {"inception_weights": inception_weights} if inception_weights else {}
    if fid_reference:
        files["fid_reference"] = fid_reference
    produced = [str(Path(p).resolve()) for p, _ in list(inits.values())[:2]] if pretrain_steps > 0 else []
    other = [f"2 pretraining runs of {featurizer} ({pretrain_steps} steps × batch {pretrain_batch_size}; supervised "
             f"and SimCLR) into {Path(produced[0]).parent} — not counted in the budget"] if produced else []
    datasets = list({json.dumps([d, kw], sort_keys=True): (d, kw) for d, kw in
                     [(dataset, dataset_kwargs), (oracle_dataset, oracle_dataset_kwargs)]}.values())
    return Plan({"LP/FT": jobs, "oracle-K": oracle}, datasets, files, other, produced=produced)


#: what one board of notebook 05's ``leaderboards`` may set (:func:`leaderboard_boards`)
BOARD_KEYS = ("datasets", "hparams_overrides", "search_overrides", "dataset_overrides", "steps", "dataset_steps")


def leaderboard_boards(leaderboards: Mapping[str, Any] | None, *, datasets: Mapping[str, dict],
                       hparams_overrides: Mapping[str, Any], search_overrides: Mapping[str, Any] | None = None,
                       dataset_overrides: Mapping[str, Mapping[str, Any]] | None = None, steps: int,
                       dataset_steps: Mapping[str, int] | None = None) -> dict[str, dict[str, Any]]:
    """Each board of notebook 05 with its settings in full: board name → ``datasets`` (names), ``hparams_overrides``,
    ``search_overrides``, ``dataset_overrides``, ``steps``, ``dataset_steps``.

    Yu et al. (2024) Table 5 and App. C.2-C.4 present three boards of the same ten algorithms: MoCo-v2 ResNet-50 and
    MoCo-v3 ViT-B/16 on PACS, VLCS, OfficeHome, NICO++ and DomainNet, and ResNet-50 trained from scratch on DomainNet
    and NICO++ only (App. C.4: learning rate searched over 10^U(-4.5, -3), 60,000 iterations). ``leaderboards`` (board
    name → the keys of :data:`BOARD_KEYS`, each optional) expresses them: ``datasets`` is a subset of the notebook's
    ``datasets`` (default: all); ``hparams_overrides`` and ``search_overrides`` go on top of the notebook-wide ones
    key by key, ``dataset_overrides`` dataset by dataset (so a board states only what sets it apart, e.g.
    ``{featurizer: vit_b_16, pretrained: <file>}``, or ``pretrained: null`` with ``search_overrides: {lr:
    {log10_uniform: [-4.5, -3]}}`` for App. C.4); ``steps`` and ``dataset_steps`` replace the notebook-wide values
    (a board with ``steps: 60000`` and no per-dataset steps says ``dataset_steps: {}``).

    ``None`` or ``{}``: one unnamed board ``""`` with the notebook-wide settings (the notebook without boards).
    Everything is checked before any job is built; a bad board raises ValueError naming the board.
    """
    check_plan_args("leaderboard_boards", locals())
    base = {"datasets": list(datasets), "hparams_overrides": dict(hparams_overrides or {}),
            "search_overrides": dict(search_overrides or {}),
            "dataset_overrides": {k: dict(v) for k, v in (dataset_overrides or {}).items()}, "steps": steps,
            "dataset_steps": dict(dataset_steps or {})}
    if not leaderboards:
        return {"": base}
    if not isinstance(leaderboards, Mapping):
        raise ValueError(f"leaderboards: expected a mapping of board names to settings, got {leaderboards!r}")
    from dganalysis.protocols.leaderboard import BOARD_SEP

    out: dict[str, dict[str, Any]] = {}
    for board, spec in leaderboards.items():
        where = f"leaderboards[{board!r}]"
        if not isinstance(board, str) or not board.strip() or BOARD_SEP in board:
            raise ValueError(f"{where}: a board name is a non-empty string without {BOARD_SEP!r}")
        spec = {} if spec is None else spec
        if not isinstance(spec, Mapping):
            raise ValueError(f"{where}: expected a mapping with keys among {list(BOARD_KEYS)}, got {spec!r}")
        unknown = sorted(set(spec) - set(BOARD_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; a board may set {list(BOARD_KEYS)}")
        for key in ("hparams_overrides", "search_overrides", "dataset_overrides", "dataset_steps"):
            if spec.get(key) is not None and not isinstance(spec[key], Mapping):
                raise ValueError(f"{where}.{key}: expected a mapping, got {spec[key]!r}")
        names = spec.get("datasets", base["datasets"])
        if isinstance(names, str) or not isinstance(names, Sequence) or not names:
            raise ValueError(f"{where}.datasets: expected a non-empty list of dataset names, got {names!r}")
        for name in names:
            if name not in datasets:
                raise ValueError(f"{where}: dataset {name!r} is not in the notebook's datasets {list(datasets)}")
        for key in ("dataset_overrides", "dataset_steps"):
            stray = [n for n in (spec.get(key) or {}) if n not in names]
            if stray:
                raise ValueError(f"{where}.{key}: dataset(s) {stray} are not among the board's datasets {list(names)}")
        dover = {k: dict(v) for k, v in base["dataset_overrides"].items()}
        for name, over in (spec.get("dataset_overrides") or {}).items():
            dover[name] = {**dover.get(name, {}), **over}
        out[board] = {"datasets": list(dict.fromkeys(names)),
                      "hparams_overrides": {**base["hparams_overrides"], **(spec.get("hparams_overrides") or {})},
                      "search_overrides": {**base["search_overrides"], **(spec.get("search_overrides") or {})},
                      "dataset_overrides": dover, "steps": spec.get("steps", steps),
                      "dataset_steps": dict(spec["dataset_steps"] or {}) if "dataset_steps" in spec
                      else base["dataset_steps"]}
    return out


@PLANS.register("05_leaderboards")
def leaderboards_plan(*, datasets: dict[str, dict], logo_groups: dict[str, list[list[str]]], algorithms: list[str],
                      n_hparams: int, n_trials: int, steps: int, checkpoint_freq: int, hparams_overrides: dict,
                      data_dir: str | None = None, dataset_overrides: dict | None = None,
                      dataset_steps: dict | None = None, search_overrides: dict | None = None,
                      leaderboards: dict | None = None) -> Plan:
    """Leave-one-domain-out and leave-one-group-out sweeps per dataset (Yu et al. 2024, Table 5), per board.

    ``dataset_overrides`` (name → hparams on top of ``hparams_overrides``) and ``dataset_steps`` (name → steps) set
    one dataset apart, as Yu et al. (Sec. 3.1) train DomainNet 15,000 and NICO++ 10,000 steps; ``search_overrides``
    replaces search distributions (:func:`dganalysis.hparams.parse_distribution`, e.g. Yu et al.'s MMD γ space).
    ``leaderboards`` names several boards (Table 5 / App. C.4: MoCo-v2 ResNet-50, from scratch, MoCo-v3 ViT-B/16),
    each with its own datasets, overrides and steps (:func:`leaderboard_boards`); the sweeps are then keyed
    ``"<board> / LODO"`` and ``"<board> / LOGO"``
    (:func:`dganalysis.protocols.leaderboard.board_label`). Without it there is one board and the sweeps are
    ``"LODO"`` and ``"LOGO"``."""
    check_plan_args("leaderboards_plan", locals())
    from dganalysis.protocols.leaderboard import board_label

    specs = leaderboard_boards(leaderboards, datasets=datasets, hparams_overrides=hparams_overrides,
                               search_overrides=search_overrides, dataset_overrides=dataset_overrides, steps=steps,
                               dataset_steps=dataset_steps)
    domains = {name: domain_names(name, kwargs, data_dir) for name, kwargs in datasets.items()}
    sweeps: dict[str, list[Job]] = {}
    for board, spec in specs.items():
        for proto in ("LODO", "LOGO"):
            sweeps[board_label(board, proto)] = []
        for name in spec["datasets"]:
            kwargs, doms = datasets[name], domains[name]
            lodo = [{"train": [d for d in doms if d != t], "test": [t]} for t in doms]
            logo = [{"train": _rest(g, doms), "test": list(g)} for g in logo_groups.get(name, [])]
            for proto, splits in (("LODO", lodo), ("LOGO", logo)):
                if splits:
                    over = {**spec["hparams_overrides"], **spec["dataset_overrides"].get(name, {})}
                    sweeps[board_label(board, proto)] += make_jobs(
                        name, kwargs, algorithms, splits, n_hparams=n_hparams, n_trials=n_trials,
                        steps=int(spec["dataset_steps"].get(name, spec["steps"])), checkpoint_freq=checkpoint_freq,
                        hparams_overrides=over, search_overrides=spec["search_overrides"] or None, domains=doms)
    return Plan(sweeps, [(name, kwargs) for name, kwargs in datasets.items()])


@PLANS.register("06_shift_estimation")
def shift_estimation_plan(*, ranking_datasets: list[dict], ranking_algorithms: list[str], ranking_n_hparams: int,
                          ranking_n_trials: int, ranking_steps: int, ranking_checkpoint_freq: int,
                          ranking_hparams_overrides: dict, map_datasets: list[dict], folder_root: str | None,
                          folder_image_size: int, fig4_rho: list[float], fig4_mu: list[float], fig4_trials: int,
                          table3_rho_te: list[float], table3_trials: int, map_trials: int, env_steps: int,
                          data_dir: str | None = None) -> Plan:
    """The Tables 1–2 ranking sweep of Ye et al. 2022 (one split per dataset); the shift estimates themselves
    train small environment classifiers, counted in ``other``. A ranking spec's optional ``hparams`` go on top of
    ``ranking_hparams_overrides`` for that dataset (OoD-Bench: ImageNet ResNet-18 on the image benchmarks, an
    MNIST CNN on Colored MNIST)."""
    check_plan_args("shift_estimation_plan", locals())
    jobs: list[Job] = []
    for spec in ranking_datasets:
        kwargs = spec.get("kwargs", {})
        over = {**ranking_hparams_overrides, **spec.get("hparams", {})}
        jobs += make_jobs(spec["name"], kwargs, ranking_algorithms, [{"train": spec["train"], "test": spec["test"]}],
                          n_hparams=ranking_n_hparams, n_trials=ranking_n_trials, steps=ranking_steps,
                          checkpoint_freq=ranking_checkpoint_freq, hparams_overrides=over,
                          domains=domain_names(spec["name"], kwargs, data_dir))
    datasets = [(s["name"], s.get("kwargs", {})) for s in [*map_datasets, *ranking_datasets]]
    if folder_root is not None:
        datasets.append(("ImageFolder", {"root": folder_root, "image_size": folder_image_size}))
    n_env = (len(fig4_rho) ** 2 + 2 * len(fig4_mu) ** 2) * fig4_trials + (len(table3_rho_te) + 1) * table3_trials \
        + (len(map_datasets) + (folder_root is not None)) * map_trials
    other = [f"{n_env} environment-classifier trainings of {env_steps} steps (Fig. 4, Table 3, Fig. 3 map) "
             "— not counted in the budget"]
    return Plan({"ranking": jobs}, datasets, {"folder_root": folder_root} if folder_root else {}, other)


@PLANS.register("07_worst_case")
def worst_case_plan(*, dataset: str, dataset_kwargs: dict, train_domains: list[str], test_domains: list[str],
                    algorithms: list[str], featurizer: str, n_hparams: int, steps: int, checkpoint_freq: int,
                    batch_size: int, lr: float, wc_rho: float) -> Plan:
    """One model per (algorithm, hparams draw), saved for the worst-case curves of the WC-DG poster."""
    check_plan_args("worst_case_plan", locals())
    overrides: dict[str, Any] = {"featurizer": featurizer, "batch_size": batch_size, "lr": lr}
    if any(a.endswith("_WC") or a == "WCDG" for a in algorithms):
        overrides["wc_rho"] = wc_rho
    jobs = make_jobs(dataset, dataset_kwargs, algorithms, [{"train": train_domains, "test": test_domains}],
                     n_hparams=n_hparams, n_trials=1, steps=steps, checkpoint_freq=checkpoint_freq,
                     hparams_overrides=overrides, save_model=True)
    return Plan({"models": jobs}, [(dataset, dataset_kwargs)])


def plan_for(notebook: str, params: Mapping[str, Any]) -> Plan:
    """Call ``notebook``'s plan function with the parameters it names, taken from ``params``."""
    check_plan_args("plan_for", locals())
    import inspect

    fn = PLANS.get(notebook)
    names = list(inspect.signature(fn).parameters)
    missing = [n for n in names if n not in params and inspect.signature(fn).parameters[n].default is inspect.Parameter.empty]
    if missing:
        raise KeyError(f"{notebook}: parameters {missing} are needed to plan its jobs but are not set")
    return fn(**{n: params[n] for n in names if n in params})
