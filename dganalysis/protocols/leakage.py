"""Pretraining leakage (Yu et al. 2024, "Rethinking the Evaluation Protocol of DG", Sec. 2.1).

- LP vs FT per test domain (Tables 1, 3, 6-8): linear probing (frozen featurizer) against full
  fine-tuning from the same pretrained weights; the relative gap (Table 2)
  ``Gap = (Acc_LP − Acc_FT) / Acc_FT``. LP ≥ FT signals that test accuracy comes from the
  pretrained weights rather than from the training domains, i.e. test information leakage.
- Accuracy vs number of frozen stages (Fig. 1).
- A distribution distance between the pretraining data and each test domain (Table 2's FID):
  the Fréchet distance ``‖μ₁ − μ₂‖² + Tr(Σ₁ + Σ₂ − 2 (Σ₁ Σ₂)^{1/2})`` (Heusel et al., 2017, FID)
  between Gaussian fits of features. With a local torchvision Inception-v3 state dict this is FID
  (note: torchvision's weights, not the TF-Inception of the reference implementation, so values
  are not comparable with published FIDs); otherwise a *named substitute* extractor (a randomly
  initialised CNN, or one of our own networks), and the metric name says which.

Runs are annotated from their hparams (``pretrained``, ``linear_probe``, ``freeze_stages``) and
model selection is done separately per (pretraining, mode) setting. Jobs made by :func:`make_leakage_jobs` differ
in their hparams overrides, so the tidy frame's ``setting`` key already keeps them apart in
``dganalysis.records.selection.select``; :func:`select_per_setting` also separates runs whose LP/FT choice came from
anywhere else (e.g. records of another tool) and labels the output.

Oracle-selection leakage (Sec. 2.2, Table 4) is :mod:`dganalysis.protocols.oracle_k`; compare its oracle (last
checkpoint) with ``select(df, "training_domain_last")`` for leakage alone, or with DomainBed's early-stopping
``"training_domain"`` (see that module).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from dganalysis.stats.moments import standard_error
from dganalysis.sweep.spec import Sweep
from dganalysis.validation import (
    ConfigError,
    check_callable,
    check_features,
    check_frame,
    check_mapping,
    check_numeric,
    check_path,
    check_scalar,
    check_shape,
    check_str,
    check_strings,
    describe,
)

log = logging.getLogger(__name__)

SETTING_COLS = ["pretraining", "mode"]


# -- annotating runs ---------------------------------------------------------------------------
def mode_of(hparams: Mapping[str, Any]) -> str:
    """``"LP"`` (linear probe), ``"FT"`` (nothing frozen) or ``"FT-freeze{k}"``."""
    check_mapping(hparams, "hparams", func="mode_of", what="a job's hparams (a mapping)")
    if bool(hparams.get("linear_probe", False)):
        return "LP"
    k = int(hparams.get("freeze_stages", 0) or 0)
    return "FT" if k == 0 else f"FT-freeze{k}"


def annotate(df: pd.DataFrame, pretrained_names: Mapping[str, str | None] | None = None) -> pd.DataFrame:
    """Add ``pretraining`` (a name for the ``pretrained`` path; ``"none"`` for random init),
    ``linear_probe``, ``freeze_stages`` and ``mode`` columns, parsed from the ``hparams`` JSON column.

    ``pretrained_names`` maps a display name to a checkpoint path (paths are compared resolved, then by file name
    where that names one checkpoint: a store copied to another folder keeps the paths its jobs ran with, while
    their job ids do not depend on the folder); unnamed paths keep their file stem.
    """
    check_frame(df, (), "df", func="annotate")
    if pretrained_names is not None:
        check_mapping(pretrained_names, "pretrained_names", func="annotate")
    if "hparams" not in df.columns:
        raise KeyError("annotate: the frame needs an 'hparams' column (JSON) as dganalysis.records.load returns")
    by_path = {str(Path(p).resolve()): name for name, p in (pretrained_names or {}).items() if p}
    n_named = Counter(Path(p).name for p in by_path)
    by_file = {Path(p).name: name for p, name in by_path.items() if n_named[Path(p).name] == 1}
    cache: dict[str, dict[str, Any]] = {}

    def parse(s: Any) -> dict[str, Any]:
        key = s if isinstance(s, str) else json.dumps(s, sort_keys=True)
        if key not in cache:
            hp = json.loads(s) if isinstance(s, str) else dict(s)
            path = hp.get("pretrained")
            name = "none" if not path else by_path.get(str(Path(path).resolve()),
                                                        by_file.get(Path(path).name, Path(path).stem))
            cache[key] = {"pretraining": name, "linear_probe": bool(hp.get("linear_probe", False)),
                          "freeze_stages": int(hp.get("freeze_stages", 0) or 0), "mode": mode_of(hp)}
        return cache[key]

    extra = pd.DataFrame([parse(s) for s in df["hparams"]], index=df.index)
    return pd.concat([df.drop(columns=[c for c in extra.columns if c in df.columns]), extra], axis=1)


def select_per_setting(df: pd.DataFrame, method: str, setting_cols: Sequence[str] = ("pretraining", "mode", "freeze_stages"),
                       select: Callable[..., pd.DataFrame] | None = None) -> pd.DataFrame:
    """Model selection (``dganalysis.records.selection.select``) run separately in each setting; setting columns kept.

    ``method`` is any of ``dganalysis.records.selection_methods.METHODS`` (e.g. DomainBed's early-stopping
    ``"training_domain"`` or ``"training_domain_last"``).
    """
    check_frame(df, (), "df", func="select_per_setting")
    check_str(method, "method", func="select_per_setting")
    if select is None:
        from dganalysis.records import select
    parts = []
    for key, sub in df.groupby(list(setting_cols), sort=True):
        out = select(sub, method)
        for col, val in zip(setting_cols, key if isinstance(key, tuple) else (key,)):
            out[col] = val
        parts.append(out)
    if not parts:
        raise ValueError("select_per_setting: empty frame")
    return pd.concat(parts, ignore_index=True)


# -- LP vs FT tables -----------------------------------------------------------------------------
def _mean_se(values: pd.Series) -> pd.Series:
    v = values.to_numpy(dtype=float)
    se = standard_error(v)
    return pd.Series({"mean": v.mean(), "se": se, "n": len(v)})


def accuracy_table(selected: pd.DataFrame, by: Sequence[str] = ("pretraining", "mode"), scale: float = 100.0,
                   seed_col: str = "trial_seed") -> pd.DataFrame:
    """Long table: mean, se, n of test accuracy per (``by``…, domain), plus ``domain == "Avg"``
    (per-seed mean over the test domains, then mean ± se over seeds, as DomainBed averages).

    ``selected`` has one row per (setting, seed, test domain) with ``acc`` in [0, 1]; ``scale``
    turns it into percent.
    """
    check_frame(selected, (), "selected", func="accuracy_table")
    check_scalar(scale, "scale", func="accuracy_table", low=0.0, low_open=True)
    by = list(by)
    need = set(by) | {"domain", "acc", seed_col}
    if need - set(selected.columns):
        raise KeyError(f"accuracy_table: missing columns {sorted(need - set(selected.columns))}")
    d = selected.assign(acc=selected["acc"] * scale)
    per = d.groupby(by + ["domain"], sort=False)["acc"].apply(_mean_se).unstack().reset_index()
    avg_seed = d.groupby(by + [seed_col])["acc"].mean().reset_index()
    avg = avg_seed.groupby(by, sort=False)["acc"].apply(_mean_se).unstack().reset_index().assign(domain="Avg")
    out = pd.concat([per, avg], ignore_index=True)
    out["n"] = out["n"].astype(int)
    return out


def lp_ft_table(table: pd.DataFrame, by: Sequence[str] = ("pretraining",), digits: int = 1,
                modes: Sequence[str] = ("LP", "FT")) -> pd.DataFrame:
    """Yu et al. (2024) Table 1/3 layout: rows (``by``…, mode ∈ LP/FT), columns test domains + Avg, cells "mean±se"."""
    check_frame(table, (), "table", func="lp_ft_table")
    check_scalar(digits, "digits", func="lp_ft_table", kind='int', low=0)
    from dganalysis.plots import format_mean_se

    t = table[table["mode"].isin(modes)].copy()
    t["cell"] = [format_mean_se(m, s, digits) for m, s in zip(t["mean"], t["se"])]
    wide = t.pivot_table(index=list(by) + ["mode"], columns="domain", values="cell", aggfunc="first", sort=False)
    cols = [c for c in dict.fromkeys(t["domain"]) if c != "Avg"] + ["Avg"]
    wide = wide[cols]
    order = {m: i for i, m in enumerate(modes)}
    wide = wide.reset_index().sort_values(list(by) + ["mode"], key=lambda s: s.map(order) if s.name == "mode" else s,
                                          kind="stable")
    wide.columns.name = None
    return wide.set_index(list(by) + ["mode"])


def gap_table(table: pd.DataFrame, by: Sequence[str] = ("pretraining",)) -> pd.DataFrame:
    """Yu et al. (2024) Table 2: ``Gap = (Acc_LP − Acc_FT) / Acc_FT`` per test domain (and Avg), from mean accuracies.

    Every pretraining keeps its row: a gap that is undefined (FT accuracy 0, e.g. a few-step smoke run) stays NaN
    rather than dropping the row, so readers see it as undefined instead of missing."""
    check_frame(table, (), "table", func="gap_table")
    by = list(by)
    m = table.pivot_table(index=by + ["domain"], columns="mode", values="mean", sort=False)
    if not {"LP", "FT"} <= set(m.columns):
        raise ValueError(f"gap_table: need both LP and FT rows, found modes {sorted(m.columns)}")
    ratio = (m["LP"] - m["FT"]) / m["FT"].where(m["FT"] != 0)  # FT = 0 → NaN, never divided by
    gap = ratio.rename("gap").reset_index()
    wide = gap.pivot_table(index=by, columns="domain", values="gap", sort=False, dropna=False)
    cols = [c for c in dict.fromkeys(gap["domain"]) if c != "Avg"] + ["Avg"]
    wide = wide[cols]
    wide.columns.name = None
    return wide


# -- frozen stages (Fig. 1) --------------------------------------------------------------------------
def frozen_stages_curve(table: pd.DataFrame, n_stages: int | None = None) -> pd.DataFrame:
    """Long frame (``pretraining``, domain, ``frozen``, mean, se): ``frozen`` = number of frozen stages,
    FT = 0, ``FT-freeze{k}`` = k, LP = ``n_stages`` (the whole featurizer) when given, else dropped."""
    check_frame(table, (), "table", func="frozen_stages_curve")
    check_scalar(n_stages, "n_stages", func="frozen_stages_curve", kind='int', low=1, nullable=True)
    def k_of(mode: str) -> float:
        if mode == "FT":
            return 0
        if mode.startswith("FT-freeze"):
            return int(mode[len("FT-freeze"):])
        return n_stages if (mode == "LP" and n_stages is not None) else np.nan

    out = table.assign(frozen=table["mode"].map(k_of)).dropna(subset=["frozen"])
    out["frozen"] = out["frozen"].astype(int)
    return out.sort_values([c for c in ("pretraining", "domain", "frozen") if c in out.columns]).reset_index(drop=True)


def plot_frozen_stages(curve: pd.DataFrame, lp_at: int | None = None):
    """Fig. 1: test accuracy vs number of frozen stages, one line per test domain, one panel per pretraining."""
    check_frame(curve, (), "curve", func="plot_frozen_stages")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(curve["pretraining"])) if "pretraining" in curve else [None]
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 3.0), squeeze=False, sharey=True)
    for ax, g in zip(axes[0], groups):
        sub = curve if g is None else curve[curve["pretraining"] == g]
        for dom, d in sub.groupby("domain", sort=False):
            d = d.sort_values("frozen")
            ax.errorbar(d["frozen"], d["mean"], yerr=d["se"].fillna(0), marker="o", capsize=2, label=str(dom),
                        ls="--" if dom == "Avg" else "-")
        ticks = sorted(sub["frozen"].unique())
        ax.set_xticks(ticks)
        ax.set_xticklabels(["LP" if (lp_at is not None and t == lp_at) else str(t) for t in ticks])
        ax.set_xlabel("frozen stages")
        ax.set_title(f"pretraining: {g}" if g is not None else "")
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][-1].legend(title="test domain", fontsize="small")
    fig.tight_layout()
    return fig


# -- distribution distance (Table 2, FID) ----------------------------------------------------------
def frechet_distance(mu1: np.ndarray, sigma1: np.ndarray, mu2: np.ndarray, sigma2: np.ndarray) -> float:
    """Fréchet (2-Wasserstein) distance between N(μ₁, Σ₁) and N(μ₂, Σ₂) (FID, Heusel et al., 2017, Eq. 6):
    ``‖μ₁ − μ₂‖² + Tr Σ₁ + Tr Σ₂ − 2 Tr (Σ₁^{1/2} Σ₂ Σ₁^{1/2})^{1/2}``, computed with symmetric
    eigendecompositions (Tr (Σ₁Σ₂)^{1/2} equals the trace of the symmetric form); tiny negative
    eigenvalues from round-off are clipped to 0."""
    for name, value in (("mu1", mu1), ("sigma1", sigma1), ("mu2", mu2), ("sigma2", sigma2)):
        check_numeric(value, name, func="frechet_distance")
    mu1, mu2 = np.asarray(mu1, float), np.asarray(mu2, float)
    s1, s2 = np.atleast_2d(np.asarray(sigma1, float)), np.atleast_2d(np.asarray(sigma2, float))
    if s1.shape != s2.shape or s1.shape != (len(mu1), len(mu1)) or mu1.shape != mu2.shape:
        raise ValueError(f"frechet_distance: shapes μ {mu1.shape}/{mu2.shape}, Σ {s1.shape}/{s2.shape} do not agree")
    return _frechet(mu1, s1, mu2, s2)


def _frechet(mu1: np.ndarray, s1: np.ndarray, mu2: np.ndarray, s2: np.ndarray,
             f1: np.ndarray | None = None, f2: np.ndarray | None = None) -> float:
    """:func:`frechet_distance` of checked float arrays; ``f1``/``f2``: the features [N, d] the Gaussians were fitted to
    (:func:`gaussian_fit`), when known. A covariance of N ≤ d features has rank ≤ N − 1: Σ = AᵀA with A the centred
    features / √(N − 1), and the non-zero eigenvalues of Σ₁^{1/2} Σ₂ Σ₁^{1/2} (those of Σ₁Σ₂) are those of the
    N × N matrix A Σ_other Aᵀ; the trace term is then taken from it (exact, without a d × d eigendecomposition:
    FID's d = 2048 with a few images per domain), else from the symmetric form as the docstring above says."""
    low = [(len(f), f, other) for f, other in ((f1, s2), (f2, s1)) if f is not None and len(f) <= f.shape[1]]
    if low:
        n, f, other = min(low, key=lambda t: t[0])
        a = (f - f.mean(0)) / np.sqrt(n - 1)
        m = a @ other @ a.T
    else:
        w, v = np.linalg.eigh((s1 + s1.T) / 2)
        root1 = (v * np.sqrt(np.clip(w, 0, None))) @ v.T
        m = root1 @ s2 @ root1
    tr_sqrt = np.sqrt(np.clip(np.linalg.eigvalsh((m + m.T) / 2), 0, None)).sum()
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * tr_sqrt)


def gaussian_fit(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean ``[d]`` and covariance ``[d, d]`` (ddof = 1) of features ``[N, d]`` (N ≥ 2), the Gaussian of FID."""
    check_features(features, "features", func="gaussian_fit", min_samples=2)
    f = np.asarray(features, dtype=np.float64)
    if f.ndim != 2 or len(f) < 2:
        raise ValueError(f"gaussian_fit: need features [N ≥ 2, d], got {list(f.shape)}")
    return f.mean(0), np.cov(f, rowvar=False)


@dataclass
class FeatureExtractor:
    """A named map from uint8 images [N, C, H, W] to features [N, d]; ``name`` labels the distance metric."""

    name: str
    network: nn.Module
    preprocess: Callable[[torch.Tensor], torch.Tensor]
    batch_size: int = 256

    @torch.no_grad()
    def __call__(self, images: Any) -> np.ndarray:
        x_all = torch.as_tensor(np.asarray(images))
        self.network.eval()
        feats = []
        for i in range(0, len(x_all), self.batch_size):
            feats.append(self.network(self.preprocess(x_all[i:i + self.batch_size].float() / 255.0)).double().numpy())
        return np.concatenate(feats)


def _to_rgb(x: torch.Tensor) -> torch.Tensor:
    c = x.shape[1]
    if c == 1:
        return x.repeat(1, 3, 1, 1)
    if c == 2:  # two colour channels (ColoredDigits: red, green) → RGB with an empty blue channel
        return torch.cat([x, torch.zeros_like(x[:, :1])], 1)
    return x[:, :3]


def inception_extractor(weights_path: str | Path, batch_size: int = 64) -> FeatureExtractor:
    """FID features: torchvision Inception-v3 (local state dict at ``weights_path``), 2048-d pool features,
    images resized to 299² and replicated to RGB, ImageNet-normalised (torchvision's convention)."""
    check_path(weights_path, "weights_path", func="inception_extractor", kind="file")
    check_scalar(batch_size, "batch_size", func="inception_extractor", kind='int', low=1)
    from dganalysis.compat import torchvision

    path = Path(weights_path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"inception weights {str(path)!r} do not exist (torchvision inception_v3 state dict)")
    net = torchvision().models.inception_v3(weights=None, aux_logits=True, init_weights=False, transform_input=True)
    state = torch.load(path, map_location="cpu", weights_only=True)
    net.load_state_dict(state.get("state_dict", state) if isinstance(state, dict) else state)
    net.fc = nn.Identity()
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

    def prep(x: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(_to_rgb(x), size=(299, 299), mode="bilinear", align_corners=False)
        return (x - mean) / std

    return FeatureExtractor("FID (torchvision Inception-v3)", net, prep, batch_size)


def network_extractor(featurizer: nn.Module, name: str, batch_size: int = 256) -> FeatureExtractor:
    """Fréchet distance on the features of ``featurizer`` (e.g. our SSL network); ``name`` says which."""
    check_callable(featurizer, "featurizer", func="network_extractor", what="a featurizer network (nn.Module)")
    check_str(name, "name", func="network_extractor")
    check_scalar(batch_size, "batch_size", func="network_extractor", kind='int', low=1)
    return FeatureExtractor(f"Fréchet distance on {name} features (FID substitute)", featurizer, lambda x: x, batch_size)


def random_network_extractor(input_shape: Sequence[int], featurizer: str = "cnn", seed: int = 0,
                             batch_size: int = 256) -> FeatureExtractor:
    """Fréchet distance on a *randomly initialised* ``featurizer`` (seeded): the substitute when no
    Inception weights are available locally. Random conv features still capture low-level image
    statistics (strokes, orientation), not semantics."""
    check_shape(input_shape, "input_shape", func="random_network_extractor")
    check_str(featurizer, "featurizer", func="random_network_extractor")
    check_scalar(seed, "seed", func="random_network_extractor", kind='int', low=0)
    from dganalysis.pretrain._loop import make_featurizer

    torch.manual_seed(seed)
    net = make_featurizer(tuple(input_shape), featurizer, None)
    return FeatureExtractor(f"Fréchet distance on random-init {featurizer} features, seed {seed} (FID substitute)",
                            net, lambda x: x, batch_size)


def pytorch_fid_extractor(weights_path: str | Path, batch_size: int = 64) -> FeatureExtractor:
    """FID features of pytorch-fid's Inception (:mod:`dganalysis.protocols.fid`), weights from ``weights_path``;
    images in [0, 1] replicated to RGB (pytorch-fid resizes and rescales them itself)."""
    check_path(weights_path, "weights_path", func="pytorch_fid_extractor", kind="file")
    check_scalar(batch_size, "batch_size", func="pytorch_fid_extractor", kind='int', low=1)
    from dganalysis.protocols.fid import PoolFeatures, fid_inception

    return FeatureExtractor("FID (pytorch-fid Inception-v3)", PoolFeatures(fid_inception(weights_path)), _to_rgb,
                            batch_size)


def default_extractor(input_shape: Sequence[int], inception_weights: str | Path | None = None,
                      featurizer: str = "cnn", seed: int = 0) -> FeatureExtractor:
    """Inception FID when ``inception_weights`` exists (pytorch-fid's ``pt_inception-2015-12-05-*.pth`` through
    pytorch-fid, any other file as a torchvision inception_v3 state dict), else :func:`random_network_extractor`
    (logged)."""
    check_shape(input_shape, "input_shape", func="default_extractor")
    check_str(featurizer, "featurizer", func="default_extractor")
    from dganalysis.protocols.fid import is_pytorch_fid_file

    if inception_weights and is_pytorch_fid_file(inception_weights):
        return pytorch_fid_extractor(inception_weights)  # a missing published file is an error, not a substitute
    if inception_weights and Path(inception_weights).expanduser().is_file():
        return inception_extractor(inception_weights)
    log.info("no Inception weights at %r: using the random-network Fréchet distance substitute", inception_weights)
    return random_network_extractor(input_shape, featurizer, seed)


def distance_table(reference: Any, domains: Mapping[str, Any], extractor: FeatureExtractor,
                   reference_name: str = "pretraining") -> pd.DataFrame:
    """Fréchet distance between ``reference`` images (the pretraining data) and each domain's images.

    Returns columns ``reference, domain, distance, metric, n_reference, n_domain``.
    """
    check_mapping(domains, "domains", func="distance_table", what="a mapping domain name → images")
    if not isinstance(extractor, FeatureExtractor):
        raise ConfigError(f"distance_table: parameter 'extractor': expected a FeatureExtractor, got {describe(extractor)}")
    check_features(reference, "reference", func="distance_table", ndim=None, min_ndim=2, finite=False, to=None)
    f_r = extractor(reference)
    mu_r, s_r = gaussian_fit(f_r)
    rows = []
    for name, imgs in domains.items():
        f = extractor(imgs)
        mu, s = gaussian_fit(f)
        rows.append({"reference": reference_name, "domain": name,
                     "distance": _frechet(mu_r, s_r, mu, s, np.asarray(f_r, float), np.asarray(f, float)),
                     "metric": extractor.name, "n_reference": len(reference), "n_domain": len(imgs)})
    return pd.DataFrame(rows)


# -- job grids ---------------------------------------------------------------------------------------
def mode_overrides(mode: str) -> dict[str, Any]:
    """hparams for a mode name: ``LP`` → linear_probe, ``FT`` → nothing frozen, ``FT-freeze{k}`` → freeze_stages=k."""
    check_str(mode, "mode", func="mode_overrides")
    if mode == "LP":
        return {"linear_probe": True, "freeze_stages": 0}
    if mode == "FT":
        return {"linear_probe": False, "freeze_stages": 0}
    if mode.startswith("FT-freeze") and mode[len("FT-freeze"):].isdigit():
        return {"linear_probe": False, "freeze_stages": int(mode[len("FT-freeze"):])}
    raise ValueError(f"mode {mode!r}: expected 'LP', 'FT' or 'FT-freeze<k>'")


def make_leakage_jobs(sweep: Sweep, pretrained: Mapping[str, str | Path | None], modes: Sequence[str]) -> list:
    """Jobs (:func:`dganalysis.sweep.make_jobs`) of ``sweep`` for every (pretraining, mode): ``pretrained`` maps a
    name to a checkpoint path (None = random init; paths are resolved to absolute), ``modes`` as
    :func:`mode_overrides`; both go on top of the sweep's ``hparams_overrides``."""
    from dganalysis.sweep import make_jobs

    if not isinstance(sweep, Sweep):
        raise ConfigError(f"make_leakage_jobs: parameter 'sweep': expected a dganalysis.sweep.Sweep, got {sweep!r}")
    check_mapping(pretrained, "pretrained", func="make_leakage_jobs", what="a mapping name → weights path or None")
    check_strings(list(modes) if isinstance(modes, tuple) else modes, "modes", func="make_leakage_jobs", min_len=1)
    jobs = []
    for path in pretrained.values():
        for mode in modes:
            over = {**sweep.hparams_overrides, **mode_overrides(mode),
                    "pretrained": str(Path(path).resolve()) if path else None}
            jobs += make_jobs(sweep.replace(hparams_overrides=over))
    log.info("%d leakage jobs for pretrainings %s × modes %s", len(jobs), list(pretrained), list(modes))
    return jobs
