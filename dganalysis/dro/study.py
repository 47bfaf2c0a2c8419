"""The WC-DG poster's evaluation: worst-case curves of trained models and their link to unseen-domain accuracy.

- :func:`source_sample`: the source distribution Q = a seeded sample of the training domains' images.
- :func:`curves_for_models`: worst-case curves (several losses) of many models on the same sample.
- :func:`domain_accuracy`: a model's mean accuracy over named (unseen) domains.
- :func:`rank_correlation`: Spearman ρ (scipy) between the worst-case loss at one radius and that accuracy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from dganalysis.data.checks import check_domain_dataset
from dganalysis.dro.worst_case import DualConfig, check_config, check_scale, worst_case_curve
from dganalysis.stats.rank_tests import spearman_test
from dganalysis.validation import (
    ConfigError,
    check_domains,
    check_features,
    check_frame,
    check_mapping,
    check_rhos,
    check_scalar,
    check_strings,
    describe,
)


def source_sample(dataset, domains: Sequence[str], n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images ``[n, C, H, W]`` (float in [0, 1]) and labels ``[n]`` drawn uniformly without replacement from
    ``domains`` pooled (fewer when the domains hold fewer)."""
    f = "source_sample"
    check_domain_dataset(dataset, func=f)
    names = dataset.domain_names
    domains = check_domains(domains, names, "domains", func=f)
    check_scalar(n, "n", func=f, kind="int", low=1)
    check_scalar(seed, "seed", func=f, kind="int", low=0)
    x = np.concatenate([dataset.domains[names.index(d)].images for d in domains])
    y = np.concatenate([dataset.domains[names.index(d)].labels for d in domains])
    idx = np.random.RandomState(seed).permutation(len(y))[: min(n, len(y))]
    return torch.from_numpy(x[idx]).float() / 255.0, torch.from_numpy(y[idx]).long()


@torch.no_grad()
def domain_accuracy(model, dataset, domains: Sequence[str], batch_size: int = 512) -> float:
    """Mean over ``domains`` of the model's accuracy (a fraction in [0, 1]) on all images of each domain;
    ``model.predict(x)`` gives logits for images in [0, 1]."""
    f = "domain_accuracy"
    if not callable(getattr(model, "predict", None)):
        raise ConfigError(f"{f}: parameter 'model': expected a trained algorithm with .predict(x), got {describe(model)}")
    check_domain_dataset(dataset, func=f)
    names = dataset.domain_names
    domains = check_domains(domains, names, "domains", func=f)
    check_scalar(batch_size, "batch_size", func=f, kind="int", low=1)
    accs = []
    for d in domains:
        dom = dataset.domains[names.index(d)]
        x = torch.from_numpy(dom.images)
        y = torch.from_numpy(dom.labels)
        correct = sum(int((model.predict(x[i:i + batch_size].float() / 255.0).argmax(1) == y[i:i + batch_size]).sum())
                      for i in range(0, len(y), batch_size))
        accs.append(correct / len(y))
    return float(np.mean(accs))


def curves_for_models(models: Mapping[str, object], x: torch.Tensor, y: torch.Tensor, rhos: Sequence[float],
                      losses: Sequence[str] = ("ce",), scale: str | float = "std", config: DualConfig | None = None,
                      progress: bool = True) -> pd.DataFrame:
    """One worst-case curve per (model, loss); ``models`` maps a label to an algorithm (``features``, ``classifier``).

    ``x`` [n, C, H, W] images in [0, 1], ``y`` [n] labels, ``rhos`` radii in units of ``scale`` (default ``"std"``,
    as :func:`dganalysis.dro.worst_case_curve`). Returns the curves stacked, with a first column ``model``.
    """
    f = "curves_for_models"
    check_mapping(models, "models", func=f, what="a mapping label → algorithm (with .features and .classifier)")
    bad = [k for k, m in models.items() if not (callable(getattr(m, "features", None)) and
                                                 callable(getattr(m, "classifier", None)))]
    if bad:
        raise ConfigError(f"{f}: parameter 'models': {bad[:3]} lack .features / .classifier (expected algorithms)")
    check_features(x, "x", func=f, ndim=None, min_ndim=2, to=None)
    check_rhos(rhos, func=f)
    check_strings(list(losses) if isinstance(losses, tuple) else losses, "losses", func=f, min_len=1)
    check_scale(scale, func=f)
    check_config(config, f)
    rows = []
    for label, model in tqdm(models.items(), desc="worst-case curves", disable=not progress):
        with torch.no_grad():
            z = model.features(x)
        for loss in losses:
            df = worst_case_curve(z, y, model.classifier, rhos, loss=loss, scale=scale, config=config)
            df.insert(0, "model", label)
            rows.append(df)
    return pd.concat(rows, ignore_index=True)


def rank_correlation(table: pd.DataFrame, x: str, y: str) -> tuple[float, float]:
    """Spearman rank correlation and its two-sided p-value between columns ``x`` and ``y`` (NaN with < 3 rows):
    the exact permutation p-value up to 8 rows (:func:`dganalysis.stats.rank_tests.spearman_test`; with 4 rows it is
    at least 1/12), scipy's t approximation above."""
    check_frame(table, [x, y], "table", func="rank_correlation")
    return spearman_test(table[x], table[y])


MEASURES = ("nominal_ce", "wc_ce", "wc_hinge", "wc_01")


def predictive_table(curves: pd.DataFrame, info: pd.DataFrame, rho_small: float,
                     acc_col: str = "test_acc") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Does the worst-case loss at a small ρ predict accuracy on unseen domains (WC-DG poster, "key results")?

    ``curves``: long frame of worst-case curves (columns model, loss, rho, worst_case_loss) for every model;
    ``info``: one row per model with ``acc_col``. Returns (per-model table with the nominal CE at ρ = 0 and the
    CE / hinge / 0-1 worst cases at ``rho_small``, Spearman table of each measure against ``acc_col``).
    """
    f = "predictive_table"
    check_frame(curves, ["model", "loss", "rho", "worst_case_loss"], "curves", func=f, what="curves_for_models")
    check_frame(info, ["model", acc_col], "info", func=f)
    check_scalar(rho_small, "rho_small", func=f, low=0.0)
    def at(rho: float, loss: str) -> pd.Series:
        d = curves[(curves["loss"] == loss) & np.isclose(curves["rho"], rho)]
        return d.set_index("model")["worst_case_loss"]

    pred = info.set_index("model").assign(
        nominal_ce=at(0.0, "ce"), wc_ce=at(rho_small, "ce"), wc_hinge=at(rho_small, "hinge"), wc_01=at(rho_small, "01"),
    ).reset_index()
    rows = []
    for m in MEASURES:
        r, p = rank_correlation(pred, m, acc_col)
        rows.append({"measure": m, "spearman": r, "p_value": p, "n_models": len(pred)})
    return pred, pd.DataFrame(rows)


def plot_predictive(pred: pd.DataFrame, corr: pd.DataFrame, rho_small: float, acc_col: str = "test_acc"):
    """Scatter of the worst-case CE at ``rho_small`` against unseen accuracy, one colour per algorithm."""
    check_frame(pred, ["wc_ce", acc_col, "algorithm"], "pred", func="plot_predictive", what="predictive_table")
    check_frame(corr, ["measure", "spearman"], "corr", func="plot_predictive", what="predictive_table")
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    sns.scatterplot(data=pred, x="wc_ce", y=acc_col, hue="algorithm", ax=ax)
    r = corr.set_index("measure")["spearman"]
    ax.set(xlabel=f"worst-case CE at ρ = {rho_small}", ylabel="accuracy on unseen rotations",
           title=f"Spearman {r['wc_ce']:.2f} (nominal CE: {r['nominal_ce']:.2f})")
    return fig


# ----------------------------------------------------------------------------------------------- the poster's claims
# (decided by dganalysis.findings.worst_case; this table is the one the notebook shows for claim (b))
def attainment_table(cmp: pd.DataFrame) -> pd.DataFrame:
    """Claim (b): how much of the representation-space worst case real input perturbations attain.

    ``cmp`` from :func:`dganalysis.dro.compare_input_representation` (+ ``model``). At matched radii (ρ_z = the
    transport the input worst case induces in z, so g#P_x is feasible at ρ_z and ``rep_wc ≥ input_primal`` by
    construction) we report the excess losses over the nominal one and ``attained = (input_primal − nominal) /
    (rep_wc − nominal)``: 1 means the representation worst case is reached by changing images (not an
    over-estimate), values near 0 mean it is mostly unreachable (an over-estimate). ``rep/input`` is the ratio
    of the two worst-case losses. ρ_input = 0 rows (no excess) are dropped.
    """
    check_frame(cmp, ["input_primal", "rep_wc", "nominal"], "cmp", func="attainment_table",
                what="dganalysis.dro.compare_input_representation")
    d = cmp.copy()
    d["excess_input"] = d["input_primal"] - d["nominal"]
    d["excess_rep"] = d["rep_wc"] - d["nominal"]
    d = d[d["excess_rep"] > 1e-9].copy()
    d["attained"] = d["excess_input"] / d["excess_rep"]
    d["rep/input"] = d["rep_wc"] / d["input_primal"].clip(lower=1e-12)
    return d
