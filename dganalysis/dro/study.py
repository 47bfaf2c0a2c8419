"""Helpers of notebook 07 (seed 004): worst-case curves of trained models and their link to unseen-domain accuracy.

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
from scipy.stats import spearmanr
from tqdm.auto import tqdm

from dganalysis.dro.worst_case import DualConfig, worst_case_curve


def source_sample(dataset, domains: Sequence[str], n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` images (float in [0, 1]) and labels drawn uniformly without replacement from ``domains`` pooled."""
    names = dataset.domain_names
    missing = [d for d in domains if d not in names]
    if missing:
        raise KeyError(f"parameter 'domains': {missing} not in dataset {dataset.name!r}; known: {names}")
    x = np.concatenate([dataset.domains[names.index(d)].images for d in domains])
    y = np.concatenate([dataset.domains[names.index(d)].labels for d in domains])
    idx = np.random.RandomState(seed).permutation(len(y))[: min(n, len(y))]
    return torch.from_numpy(x[idx]).float() / 255.0, torch.from_numpy(y[idx]).long()


@torch.no_grad()
def domain_accuracy(model, dataset, domains: Sequence[str], batch_size: int = 512) -> float:
    """Mean over ``domains`` of the model's accuracy on all images of each domain."""
    names = dataset.domain_names
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
    """One worst-case curve per (model, loss); ``models`` maps a label to an algorithm (``features``, ``classifier``)."""
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
    """Spearman rank correlation and its p-value between columns ``x`` and ``y`` (NaN with < 3 rows)."""
    if len(table) < 3:
        return float("nan"), float("nan")
    res = spearmanr(table[x], table[y])
    return float(res.statistic), float(res.pvalue)


MEASURES = ("nominal_ce", "wc_ce", "wc_hinge", "wc_01")


def predictive_table(curves: pd.DataFrame, info: pd.DataFrame, rho_small: float,
                     acc_col: str = "test_acc") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Does the worst-case loss at a small ρ predict accuracy on unseen domains (WC-DG poster, "key results")?

    ``curves``: long frame of worst-case curves (columns model, loss, rho, worst_case_loss) for every model;
    ``info``: one row per model with ``acc_col``. Returns (per-model table with the nominal CE at ρ = 0 and the
    CE / hinge / 0-1 worst cases at ``rho_small``, Spearman table of each measure against ``acc_col``).
    """
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
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    sns.scatterplot(data=pred, x="wc_ce", y=acc_col, hue="algorithm", ax=ax)
    r = corr.set_index("measure")["spearman"]
    ax.set(xlabel=f"worst-case CE at ρ = {rho_small}", ylabel="accuracy on unseen rotations",
           title=f"Spearman {r['wc_ce']:.2f} (nominal CE: {r['nominal_ce']:.2f})")
    return fig
