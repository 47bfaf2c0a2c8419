"""``dganalysis run --profile paper --smoke``: every notebook of the paper profile, end to end, on FAKE inputs.

The paper profile's YAMLs name real datasets and the authors' weight files (``${data}``, ``${weights}``, see
:mod:`dganalysis.studies.paths`). The smoke run writes FAKE stand-ins in the published layouts into a temporary folder
(:mod:`dganalysis.studies.smoke.trees`, :mod:`dganalysis.studies.smoke.weights`), points ``$DGANALYSIS_DATA`` and
``$DGANALYSIS_WEIGHTS`` at them, and executes each notebook with its paper parameters shrunk by
:func:`smoke_params`, so the paper path (benchmark loaders, NICO++, MNIST IDX files, every weight layout, FID
through pytorch-fid) runs in minutes on a CPU. What is shrunk, and how (chosen so the run stays within a few CPU
minutes while each notebook keeps its paper datasets' kinds, networks and weights):

* scale parameters (sample counts such as the FID's images, environment-classifier steps, the Fig. 4 / Table 3
  grids, frozen stages) take the notebook's own defaults (its "smallest settings that run every cell") when smaller;
  every sweep job trains one step and is evaluated once (DomainBed's rule evaluates at step 0 and at the last step,
  so two steps would cost two evaluations of every split, most of a smoke job's time); trials and draws are 1 except
  where a cell needs two (paired tests, oracle CIs);
* image sizes at most 16 px (:data:`MAX_IMAGE`: a ResNet-50 evaluates in 0.6× the time of 32 px), batch size 8,
  PaHCC 10 classes, 4 writers and 8 px (:data:`PAHCC_IMAGE`: the binarization and dynamic-DG jobs' ResNet-18 keeps
  the full resolution through its 3×3 stem, so 8 px costs 0.4× a 16 px job); algorithm lists their first two (plus those other
  parameters name); dataset collections one dataset per loader kind (MNIST IDX, DomainBed folder, NICO++, PaHCC),
  and for the leaderboards (``05_leaderboards``) those with leave-one-group-out groups (NICO++), every board of its ``leaderboards`` kept on
  those (:func:`_smoke_board`); the shift map (``06_shift_estimation``) its MNIST, Camelyon17-WILDS and CelebA entries (a KDE per
  class and a held-out part need more images than the fake folder trees hold; its ranking sweep keeps the folder
  benchmarks, NICO++, Camelyon17-WILDS and CelebA); the leakage study's (``04_leakage_oracle``) LP/FT splits and
  oracle (Table 4) splits the first one, and the leaderboards' leave-one-group-out groups the first two of each
  dataset (NICO++: 2 of 3), as those notebooks' own defaults have (one split; two groups), and their
  leave-one-domain-out splits one domain, the first of the first kept group (``lodo_domains``; NICO++: 1 of 6):
  every further split is the same code on other domains;
* the leakage study's FID images (``fid_n_samples``) :data:`FID_SAMPLES` per domain and of the reference, the least
  the notebook accepts (its default is 16): pytorch-fid's Inception resizes every image to 299 px, about 1 s each
  on the 2-core fp32 CI machine, and the sampling cap, the Inception and the Fréchet distance run the same with 2.
* the leakage study's published weights (``published_weights``) those its findings compare (the first two) and the
  first of each other featurizer (:func:`_smoke_weights`): that every published layout maps completely onto our
  networks is proved file by file in ``tests/nets/test_published.py``, and a further weight of a kept featurizer
  runs the same LP/FT and FID code (the MoCo-v3 ViT layout is trained by the leaderboards' ViT board);
* the audit's selection methods (``08_audit``'s ``selections``) the notebook's default, one method: every further
  method runs the same claims, figures and tables once more (each audit figure costs ~0.5 s in matplotlib).

Variants (``variants:`` in a YAML, see :mod:`dganalysis.studies.runner`): every variant of every notebook is validated and
shrunk the same way (so a variant that cannot be shrunk, or names a weight file with no fake stand-in, fails here),
and the weight files they name are written; but running each would multiply the run's time, so the smoke run
executes the base run of every notebook and ONE variant in total, :data:`SMOKE_VARIANT`: ``04_leakage_oracle@pacs``
(Table 1 on PACS), the cheapest — LP and FT of two weights and random init on one split (a handful of one-step jobs),
its NICO++ oracle sweep the base run's very jobs (trained once, already in the store), and a new dataset loader
path (a DomainBed folder benchmark other than the base run's OfficeHome). If that variant is not declared (or
``04_leakage_oracle`` is not run) the first declared variant of the first notebook run that has one is executed instead.

Every output is FAKE: the outputs folder holds ``FAKE.md`` and its ``index.md`` starts with a FAKE banner.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dganalysis import io

FAKE_BANNER = ("> **FAKE DATA — smoke run.** Every dataset and weight file of this run is random numbers in the "
               "published layouts (dganalysis.studies.smoke); the numbers below mean nothing.\n\n")
#: the scale parameters besides the sweeps' (which shrink themselves, :meth:`dganalysis.sweep.Sweep.shrunk`)
_SCALE = re.compile(r"(^|_)(steps|trials|writers|n_classes|n_samples|n_eval|n_input|max_per_env|max_points|"
                    r"n_bootstrap)$")
_GRIDS = {"fig4_rho", "fig4_mu", "table3_rho_te", "rhos", "input_rhos", "frozen_stages"}
#: trials / draws a notebook's cells need at least (paired tests over trials, the oracle's CIs)
_AT_LEAST = {"03_dynamic_dg": {"sweep.n_trials": 2},
             "04_leakage_oracle": {"oracle.n_trials": 2, "oracle.n_hparams": 2}}
MAX_IMAGE = 16
#: PaHCC's image size (``02_binarization_study``, ``03_dynamic_dg``): their ResNet-18 has a 3×3 stem (``conv1_3x3``)
#: that keeps the full resolution, so its cost grows with the pixels (a one-step job: 1.3 s at 8 px, 3.2 s at 16 px)
PAHCC_IMAGE = 8
#: the shift map's entries kept (``06_shift_estimation``'s ``map_datasets``): the loaders whose fake inputs hold ~100+ images per environment
_MAP_KINDS = {"mnist", "WILDSCamelyon", "CelebA_Blond"}
BATCH = 8
#: the one variant the smoke run executes (see the module docstring)
SMOKE_VARIANT = ("04_leakage_oracle", "pacs")
SWEEP_STEPS = 1  #: training steps (and checkpoint frequency) of every smoke job: one update, one evaluation
#: images of each domain and of the reference in the leakage study's FID (``fid_n_samples``; the notebook's default 16)
FID_SAMPLES = 2


def _kind(name: str) -> str:
    from dganalysis.data.benchmarks import BENCHMARKS

    if name.endswith("MNIST"):
        return "mnist"
    return "folder" if name in BENCHMARKS and name != "NICO++" else name


def _shrink(obj: Any) -> Any:
    """Image sizes ≤ :data:`MAX_IMAGE` px and PaHCC at 10 classes and :data:`PAHCC_IMAGE` px, recursively."""
    if isinstance(obj, list):
        return [_shrink(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: _shrink(v) for k, v in obj.items()}
    if isinstance(out.get("image_size"), int):
        out["image_size"] = min(out["image_size"], MAX_IMAGE)
    if "size" in out and (isinstance(out["size"], str) or out["size"] > 10):  # PaHCC: 10 classes, 4 writers
        out["size"] = 10
        out["writers"] = min(int(out.get("writers", 4)), 4)
    if "size" in out and isinstance(out.get("image_size"), int):  # PaHCC's dataset kwargs: 8 px
        out["image_size"] = min(out["image_size"], PAHCC_IMAGE)
    return out


def _one_per_kind(specs: Any) -> Any:
    if isinstance(specs, dict):
        seen: dict[str, str] = {}
        for name in specs:
            seen.setdefault(_kind(name), name)
        return {n: specs[n] for n in seen.values()}
    seen_l: dict[str, dict] = {}
    for spec in specs:
        seen_l.setdefault(_kind(spec["name"]), spec)
    return list(seen_l.values())


def smoke_params(name: str, params: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (a paper YAML, validated) shrunk for the smoke run as the module doc says; each nested sweep
    (``sweep``, ``04_leakage_oracle``'s ``oracle``, ``06_shift_estimation``'s ``ranking``) is completed with the
    notebook's defaults for the keys it leaves out and shrinks itself (:meth:`dganalysis.sweep.Sweep.shrunk`)."""
    from dganalysis.studies.study import has_study, params_class
    from dganalysis.sweep.spec import Sweep

    nested = params_class(name).sweep_names() if has_study(name) else []
    out = dict(params)
    for k, v in params.items():
        d = defaults.get(k)
        if k in _GRIDS and isinstance(d, list):
            out[k] = d
        elif _SCALE.search(k) and isinstance(v, int) and not isinstance(v, bool) and isinstance(d, int):
            out[k] = min(v, d)
    if "pretrain_steps" in out:
        out["pretrain_steps"] = min(out["pretrain_steps"], SWEEP_STEPS)
    named = {a for k in ("loss_models", "compare_models") for a in out.get(k, [])}
    at_least = _AT_LEAST.get(name.split("@", 1)[0], {})
    for k in nested:  # each sweep shrinks itself; the keys a YAML leaves out take the notebook's defaults first
        if isinstance(out.get(k, {}), Mapping) and isinstance(defaults.get(k), Mapping):
            sweep = Sweep.from_mapping({**defaults[k], **out.get(k, {})}, k, defaults[k])
            least = {key.split(".", 1)[1]: n for key, n in at_least.items() if key.startswith(f"{k}.")}
            out[k] = sweep.shrunk(SWEEP_STEPS, least, keep=sorted(named), batch_size=BATCH,
                                  one_per_kind=_one_per_kind).as_dict()
    if out.get("map_datasets"):
        out["map_datasets"] = _one_per_kind(out["map_datasets"])
    if out.get("map_datasets"):  # the shift map fits a KDE per class: more images than the fake folder trees hold
        out["map_datasets"] = [m for m in out["map_datasets"] if _kind(m["name"]) in _MAP_KINDS]
    entries = out.get("sweep", {}).get("datasets") if isinstance(out.get("sweep"), Mapping) else None
    if out.get("logo_groups") and entries:  # 05: the datasets with both protocols
        entries = [e for e in entries if e["name"] in out["logo_groups"]] or entries
        out["sweep"] = {**out["sweep"], "datasets": entries}
    if isinstance(out.get("leaderboards"), dict) and entries:
        out["leaderboards"] = {b: _smoke_board(spec or {}, [e["name"] for e in entries])
                               for b, spec in out["leaderboards"].items()}
    if isinstance(out.get("logo_groups"), dict):  # 05: two groups per dataset, as the notebook's own default
        out["logo_groups"] = {n: list(g)[:2] for n, g in out["logo_groups"].items()}
        # 05: LODO holds out one domain, the first of the first kept group (NICO++: 1 split, not 6)
        out["lodo_domains"] = {n: [g[0][0]] for n, g in out["logo_groups"].items()
                               if g and all(isinstance(grp, list) and grp for grp in g)}
    if isinstance(out.get("published_weights"), dict):
        out["published_weights"] = _smoke_weights(out["published_weights"])
    if "selections" in out and "selections" in defaults:
        out["selections"] = defaults["selections"]
    if isinstance(out.get("fid_n_samples"), int):
        out["fid_n_samples"] = min(out["fid_n_samples"], FID_SAMPLES)
    if "batch_size" in out:
        out["batch_size"] = min(out["batch_size"], BATCH)
    if "pretrain_batch_size" in out:
        out["pretrain_batch_size"] = min(out["pretrain_batch_size"], BATCH)
    for k in ("n_workers", "n_threads"):
        if k in out:
            out[k] = 1
    return _shrink(out)


def _smoke_weights(weights: Mapping[str, Any]) -> dict[str, Any]:
    """The leakage study's ``published_weights`` for the smoke run: the first two (the weights its findings compare)
    and, after them, the first of each featurizer not yet kept; order kept."""
    feats = {w.get("featurizer") for w in list(weights.values())[:2] if isinstance(w, Mapping)}
    out = dict(list(weights.items())[:2])
    for label, w in list(weights.items())[2:]:
        feat = w.get("featurizer") if isinstance(w, Mapping) else None
        if feat not in feats:
            feats.add(feat)
            out[label] = w
    return out


def _smoke_board(spec: Mapping[str, Any], datasets: list[str]) -> dict[str, Any]:
    """One board of the leaderboards' ``leaderboards`` parameter, shrunk: its steps at :data:`SWEEP_STEPS`, its datasets those of
    the shrunk sweep's ``datasets`` (all of them when it keeps none), its per-dataset settings on those datasets only; its
    networks, weights and search spaces stay (every board still runs, minimally)."""
    out = dict(spec)
    names = [n for n in out.get("datasets") or datasets if n in datasets] or datasets
    if "datasets" in out:
        out["datasets"] = names
    if "steps" in out:
        out["steps"] = min(int(out["steps"]), SWEEP_STEPS)
    for key in ("dataset_steps", "dataset_overrides"):
        if isinstance(out.get(key), dict):
            out[key] = {n: v for n, v in out[key].items() if n in names}
    if isinstance(out.get("dataset_steps"), dict):
        out["dataset_steps"] = {n: min(int(v), SWEEP_STEPS) for n, v in out["dataset_steps"].items()}
    if isinstance(out.get("hparams_overrides"), dict) and "batch_size" in out["hparams_overrides"]:
        out["hparams_overrides"] = {**out["hparams_overrides"], "batch_size": BATCH}
    return out


def _referenced(obj: Any, prefix: str) -> set[str]:
    if isinstance(obj, str):
        return {Path(obj).name} if obj.startswith(prefix) else set()
    if isinstance(obj, dict):
        return set().union(*(_referenced(v, prefix) for v in obj.values())) if obj else set()
    if isinstance(obj, list):
        return set().union(*(_referenced(v, prefix) for v in obj)) if obj else set()
    return set()


@contextmanager
def _environ(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def prepare(folder: Path, names: list[str], root: Path) -> dict[str, dict]:
    """Write the FAKE data and the weight files the paper YAMLs of ``names`` (and their variants) reference; the
    shrunk parameters of every run, by run label (``<notebook>`` or ``<notebook>@<variant>``)."""
    from dganalysis.nets.published import by_file
    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.runner import load_all_params, run_label
    from dganalysis.studies.smoke.trees import write_fake_data, write_reference_images
    from dganalysis.studies.smoke.weights import write_fake_weights
    from dganalysis.studies.study import build_params, has_study

    data, weights = folder / "fake_data", folder / "fake_weights"
    shrunk = {}
    for n in names:
        base, variants = load_all_params("paper", n, root)
        defaults = notebook_defaults(root / "notebooks" / f"{n}.ipynb")
        shrunk[n] = smoke_params(n, base, defaults)
        shrunk.update({run_label(n, v): smoke_params(n, p, defaults) for v, p in variants.items()})
    for label, p in shrunk.items():  # the shrunk parameters pass the notebook's own checks
        if has_study(label):
            build_params(label, p, f"smoke run of {label}")
    files = set().union(*(_referenced(p, str(weights)) for p in shrunk.values()))
    unknown = sorted(f for f in files if by_file(f) is None)
    if unknown:
        raise ValueError(f"the paper YAMLs reference weight files that are no published entry: {unknown}")
    write_fake_weights(weights, sorted(by_file(f).name for f in files))
    write_fake_data(data)
    write_reference_images(data / "imagenet_fid_reference")
    io.write_text(folder / "FAKE.md", FAKE_BANNER + f"fake data: {data}\nfake weights: {weights} ({sorted(files)})\n")
    return shrunk


def smoke_variants(names: list[str], labels: list[str]) -> dict[str, list[str]]:
    """The variants the smoke run executes (notebook -> names): :data:`SMOKE_VARIANT` if it is among ``labels``
    (run labels of every declared run), otherwise the first declared variant of the first notebook in ``names``
    that has one; {} when no YAML declares a variant."""
    from dganalysis.studies.runner import run_label, split_label

    name, variant = SMOKE_VARIANT
    if name in names and run_label(name, variant) in labels:
        return {name: [variant]}
    for n in names:
        declared = [v for lab in labels for nb, v in [split_label(lab)] if nb == n and v is not None]
        if declared:
            return {n: declared[:1]}
    return {}


def run_smoke(folder: str | Path | None = None, names: list[str] | None = None, root: Path | None = None,
              progress: bool = False) -> tuple[Path, list]:
    """Run ``names`` (default: every notebook) of the paper profile on FAKE inputs in ``folder`` (default: a new
    temporary folder), with one variant (:func:`smoke_variants`); returns (the outputs folder, the runs)."""
    from dganalysis.studies.dryrun import notebook_defaults
    from dganalysis.studies.runner import list_notebooks, repo_root, run_notebooks

    root = root or repo_root()
    folder = Path(folder or tempfile.mkdtemp(prefix="dganalysis-smoke-")).resolve()
    names = names or list_notebooks(root)
    from dganalysis.data.pahcc.fonts import npm_dir

    # $DGANALYSIS_DATA also locates the installed PaHCC sources (npm packages): keep them where they are
    with _environ(DGANALYSIS_DATA=str(folder / "fake_data"), DGANALYSIS_WEIGHTS=str(folder / "fake_weights"),
                  DGANALYSIS_NPM_DIR=str(npm_dir())):
        shrunk = prepare(folder, names, root)  # every run's parameters, variants included, shrunk
        defaults = {n: notebook_defaults(root / "notebooks" / f"{n}.ipynb") for n in names}
        runs = run_notebooks("paper", names, root, output_root=folder / "outputs", progress=progress,
                             transform=lambda n, p: smoke_params(n, p, defaults[n]),
                             variants=smoke_variants(names, list(shrunk)))
    out = folder / "outputs" / "paper"
    index = out / "index.md"
    if index.is_file():
        io.write_text(index, FAKE_BANNER + index.read_text())
    io.write_text(out / "FAKE.md", FAKE_BANNER)
    return out, runs
