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
