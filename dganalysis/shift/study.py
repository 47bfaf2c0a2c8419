"""The shift-estimation experiments of OoD-Bench (Ye et al., CVPR 2022): Fig. 4 grids, Table 3, a Fig. 3-style
dataset map, and Tables 1–2 style ranking-score tables grouped by the dominant shift.

Every function returns a tidy DataFrame (plots take those frames), so a caller only calls and shows.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from dganalysis.data.checks import check_domain_dataset
from dganalysis.data.dataset import DomainDataset
from dganalysis.shift.baselines import emd, mmd, ni_index
from dganalysis.shift.env_classifier import EnvClassifierConfig
from dganalysis.shift.pipeline import ShiftOptions, shift_summary, shift_trials
from dganalysis.shift.sanity import colored_digits_shift
from dganalysis.stats.moments import standard_error
from dganalysis.validation import (
    ConfigError,
    check_choice,
    check_frame,
    check_mapping,
    check_rhos,
    check_scalar,
    describe,
)

#: the parameters of :func:`colored_digits_shift` a Fig. 4 grid can vary
GRID_PARAMS = ("rho_tr", "rho_te", "mu_tr", "mu_te", "sigma_tr", "sigma_te", "label_noise")


def sanity_grid(
    x: str, xs: Sequence[float], y: str, ys: Sequence[float], base: Mapping[str, Any] | None = None, *,
    n_trials: int = 1, cfg: EnvClassifierConfig | None = None, seed: int = 0, options: ShiftOptions | None = None,
) -> pd.DataFrame:
    """Fig. 4: shift estimates over a grid of two :func:`colored_digits_shift` parameters ``x`` × ``y``
    (e.g. ``rho_tr`` × ``rho_te``, or ``mu_tr`` × ``mu_te``), other parameters from ``base``. One row per grid
    point: ``x``, ``y``, :func:`dganalysis.shift.shift_summary` of its trials (diversity, correlation, their SEs,
    n_trials) and ``env_acc``; ``options``: the estimate (:class:`~dganalysis.shift.pipeline.ShiftOptions`).
    SIMULATED data."""
    f = "sanity_grid"
    check_choice(x, GRID_PARAMS, "x", func=f)
    check_choice(y, GRID_PARAMS, "y", func=f)
    check_rhos(xs, "xs", func=f)
    check_rhos(ys, "ys", func=f)
    if base is not None:
        check_mapping(base, "base", func=f, what="a mapping of colored_digits_shift parameters")
    check_scalar(n_trials, "n_trials", func=f, kind="int", low=1)
    rows = []
    grid = list(itertools.product(xs, ys))
    for i, (a, b) in enumerate(tqdm(grid, desc=f"Fig. 4 grid {x} x {y}")):
        ds = colored_digits_shift(**{**dict(base or {}), x: a, y: b, "seed": seed + i})
        trials = shift_trials(ds, "train", "test", n_trials=n_trials, cfg=cfg, seed=seed + i, options=options)
        rows.append({x: a, y: b, **shift_summary(trials), "env_acc": float(trials["env_acc"].mean())})
    return pd.DataFrame(rows)


def pixels(ds: DomainDataset, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Flattened images in [0, 1] ``[n, C·H·W]`` and labels ``[n]`` of domain ``name``."""
    check_domain_dataset(ds, "ds", func="pixels")
    check_choice(name, ds.domain_names, "name", func="pixels")
    d = ds[name]
    return np.asarray(d.images, dtype=np.float64).reshape(len(d), -1) / 255.0, np.asarray(d.labels)


def table3(
    rho_tr: float = 0.1, rho_tes: Sequence[float] = (0.9, 0.7, 0.5, 0.3, 0.1), *, blue: Mapping[str, float] | None = None,
    n_trials: int = 2, cfg: EnvClassifierConfig | None = None, seed: int = 0, max_points: int = 1000,
    options: ShiftOptions | None = None,
) -> pd.DataFrame:
    """Table 3: EMD, MMD, NI (on raw pixels) and our diversity/correlation shift over ``rho_te`` with one
    training environment; ``blue`` (e.g. ``{"mu_tr": 0, "mu_te": 1, "sigma_tr": .1, "sigma_te": .1}``) adds
    the last row (test ``rho_te = rho_tr`` plus blue, pure diversity shift). Means ± SE over trials.
    Columns ``rho_te``, ``blue``, ``EMD``/``MMD``/``NI`` (+ ``_se``), ``diversity``, ``correlation`` (+ ``_se``),
    ``n_trials``. SIMULATED data (coloured scikit-learn digits). ``.attrs["trials"]``: the per-trial estimates, one
    row per (setting, trial) with columns ``rho_te``, ``blue``, ``trial``, ``diversity``, ``correlation`` (the frame
    of :mod:`dganalysis.findings.shift`)."""
    f = "table3"
    check_scalar(rho_tr, "rho_tr", func=f, low=0.0, high=1.0)
    if (check_rhos(rho_tes, "rho_tes", func=f) > 1).any():
        raise ConfigError(f"{f}: parameter 'rho_tes': expected probabilities in [0, 1], got {describe(rho_tes)}")
    if blue is not None:
        check_mapping(blue, "blue", func=f, what="a mapping such as {'mu_tr': 0, 'mu_te': 1}")
    check_scalar(n_trials, "n_trials", func=f, kind="int", low=1)
    check_scalar(max_points, "max_points", func=f, kind="int", low=2)
    settings = [(r, None) for r in rho_tes]
    if blue is not None:
        settings.append((rho_tr, dict(blue)))
    rows, per_trial = [], []
    for k, (rho_te, extra) in enumerate(tqdm(settings, desc="Table 3")):
        vals: dict[str, list[float]] = {"EMD": [], "MMD": [], "NI": []}
        trials = []
        for t in range(n_trials):
            ds = colored_digits_shift(rho_tr, rho_te, seed=seed + 100 * k + t, **(extra or {}))
            xp, yp = pixels(ds, "train")
            xq, yq = pixels(ds, "test")
            vals["EMD"].append(emd(xp, xq, max_points=max_points, seed=t))
            vals["MMD"].append(mmd(xp, xq, max_points=max_points, seed=t))
            vals["NI"].append(ni_index(xp, yp, xq, yq))
            trials.append(shift_trials(ds, "train", "test", n_trials=1, cfg=cfg, seed=seed + 100 * k + t,
                                       options=options))
        tr = pd.concat(trials, ignore_index=True)
        per_trial += [{"rho_te": rho_te, "blue": extra is not None, "trial": t, "diversity": float(d),
                       "correlation": float(c)} for t, (d, c) in enumerate(zip(tr["diversity"], tr["correlation"]))]
        row: dict[str, Any] = {"rho_te": rho_te, "blue": extra is not None}
        for name, v in vals.items():
            row[name] = float(np.mean(v))
            row[f"{name}_se"] = standard_error(v)
        s = shift_summary(tr)
        row.update({"diversity": s["diversity"], "diversity_se": s["diversity_se"],
                    "correlation": s["correlation"], "correlation_se": s["correlation_se"], "n_trials": n_trials})
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["trials"] = pd.DataFrame(per_trial, columns=["rho_te", "blue", "trial", "diversity", "correlation"])
    return out


def dataset_map(
    entries: Sequence[Mapping[str, Any]], *, n_trials: int = 2, cfg: EnvClassifierConfig | None = None, seed: int = 0,
    max_per_env: int | None = 2000, options: ShiftOptions | None = None,
) -> pd.DataFrame:
    """Fig. 3: one point per entry ``{"label": str, "dataset": DomainDataset, "train": [...], "test": [...]}``
    on the (diversity, correlation) plane, mean ± SE over trials, plus the dominant shift (``dominant``: the larger
    of the two means) and ``env_acc``."""
    f = "dataset_map"
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise ConfigError(f"{f}: parameter 'entries': expected a list of mappings with label, dataset, train, test, "
                          f"got {describe(entries)}")
    for i, e in enumerate(entries):
        check_mapping(e, f"entries[{i}]", func=f, what="a mapping with keys label, dataset, train, test")
        missing = [k for k in ("label", "dataset", "train", "test") if k not in e]
        if missing:
            raise ConfigError(f"{f}: parameter 'entries[{i}]': lacks keys {missing}")
        check_domain_dataset(e["dataset"], f"entries[{i}]['dataset']", func=f)
    check_scalar(n_trials, "n_trials", func=f, kind="int", low=1)
    rows = []
    for e in tqdm(entries, desc="dataset map"):
        tr = shift_trials(e["dataset"], e["train"], e["test"], n_trials=n_trials, cfg=cfg, seed=seed,
                          max_per_env=max_per_env, options=options)
        s = shift_summary(tr)
        rows.append({"label": e["label"], "dataset": e["dataset"].name, **s,
                     "dominant": "diversity" if s["diversity"] >= s["correlation"] else "correlation",
                     "env_acc": float(tr["env_acc"].mean())})
    return pd.DataFrame(rows)


def ranking_tables(summary: pd.DataFrame, dominant: Mapping[str, str], baseline: str = "ERM") -> dict[str, pd.DataFrame]:
    """Tables 1–2: per dominant shift, algorithm × dataset accuracy (mean, se), the OoD-Bench marks and ranking
    score vs ``baseline`` (``dganalysis.protocols.leaderboard.ranking_score``). ``summary`` has columns
    dataset, algorithm, acc, se (one row per pair); ``dominant`` maps dataset → "diversity"/"correlation".
    Returns shift → table (rows: algorithms; one "acc ± se ↑/↓" column per dataset, ``Average``, ``Ranking score``)."""
    f = "ranking_tables"
    check_frame(summary, ["dataset", "algorithm", "acc", "se"], "summary", func=f,
                what="dganalysis.shift.benchmark.accuracy_by_dataset")
    check_mapping(dominant, "dominant", func=f, what="a mapping dataset → 'diversity' | 'correlation'")
    for k, v in dominant.items():
        check_choice(v, ("diversity", "correlation"), f"dominant[{k!r}]", func=f)
    from dganalysis.protocols.leaderboard import ranking_marks, ranking_score

    out = {}
    for shift in ("diversity", "correlation"):
        names = [d for d, s in dominant.items() if s == shift]
        part = summary[summary["dataset"].isin(names)]
        if part.empty or baseline not in set(part["algorithm"]):
            continue
        marks = ranking_marks(part, baseline=baseline)
        acc = part.pivot(index="algorithm", columns="dataset", values="acc")
        se = part.pivot(index="algorithm", columns="dataset", values="se")
        arrow = marks.replace({1.0: " ↑", -1.0: " ↓", 0.0: ""})
        table = pd.DataFrame(index=acc.index)
        for d in acc.columns:
            table[d] = [f"{a:.1f} ± {s:.1f}{m}" if np.isfinite(s) else f"{a:.1f}{m}"
                        for a, s, m in zip(acc[d], se[d].fillna(np.nan), arrow[d].fillna(""))]
        table["Average"] = acc.mean(axis=1).round(1)
        table["Ranking score"] = ranking_score(part, baseline=baseline)
        out[shift] = table.sort_values("Ranking score", ascending=False)
    return out


def plot_heatmap(df: pd.DataFrame, x: str, y: str, value: str, ax, title: str = "") -> None:
    """A Fig. 4-style heatmap of ``value`` over ``x`` (columns) × ``y`` (rows), annotated (a :func:`sanity_grid` frame)."""
    check_frame(df, [x, y, value], "df", func="plot_heatmap", what="a sanity_grid frame")
    import seaborn as sns

    grid = df.pivot(index=y, columns=x, values=value).sort_index(ascending=False)
    sns.heatmap(grid, annot=True, fmt=".2f", vmin=0, vmax=1, cmap="viridis", ax=ax, cbar=False)
    ax.set_title(title or value)


def plot_shift_map(df: pd.DataFrame, ax) -> None:
    """Fig. 3: datasets on the (diversity, correlation) plane with SE error bars (a :func:`dataset_map` frame)."""
    check_frame(df, ["label", "diversity", "correlation", "diversity_se", "correlation_se"], "df",
                func="plot_shift_map", what="a dataset_map frame")
    ax.errorbar(df["diversity"], df["correlation"], xerr=df["diversity_se"].fillna(0),
                yerr=df["correlation_se"].fillna(0), fmt="o", capsize=3)
    for _, r in df.iterrows():
        ax.annotate(r["label"], (r["diversity"], r["correlation"]), textcoords="offset points", xytext=(4, 4),
                    fontsize=8)
    ax.set_xlabel("diversity shift")
    ax.set_ylabel("correlation shift")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.plot([0, 1], [0, 1], ls=":", c="grey", lw=0.8)
