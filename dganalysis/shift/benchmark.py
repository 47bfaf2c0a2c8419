"""The benchmark side of Ye et al. 2022 (OoD-Bench), Tables 1–2: test accuracy per dataset and algorithm
after model selection, and each dataset's dominant shift, as the ranking tables need them
(:func:`dganalysis.shift.study.ranking_tables`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from dganalysis.validation import check_choice, check_frame, check_mapping


def accuracy_by_dataset(selected: pd.DataFrame) -> pd.DataFrame:
    """Test accuracy (%) per (dataset, algorithm): mean and SE over trials (sample std, ddof = 1, / √n)
    of each trial's mean over its test-domain rows of ``selected`` (a :func:`dganalysis.records.selection.select` frame)."""
    from dganalysis.records.selection import summarize

    check_frame(selected, ("dataset", "algorithm", "trial_seed", "acc"), "selected", func="accuracy_by_dataset",
                what="a dganalysis.records.selection.select frame")
    per_trial = selected.groupby(["dataset", "algorithm", "trial_seed"], as_index=False)["acc"].mean()
    summary = summarize(per_trial, by=["dataset", "algorithm"]).rename(columns={"mean": "acc"})
    summary[["acc", "se"]] *= 100
    return summary


def sweep_accuracy(tidy: pd.DataFrame, job_ids: Iterable[str], selection_method: str) -> pd.DataFrame:
    """:func:`accuracy_by_dataset` of the jobs ``job_ids`` of a tidy results frame, selected by ``selection_method``."""
    from dganalysis.records.selection import select
    from dganalysis.records.selection_methods import METHODS

    check_frame(tidy, ("job_id",), "tidy", func="sweep_accuracy", what="the tidy frame of dganalysis.records.load")
    check_choice(selection_method, list(METHODS), "selection_method", func="sweep_accuracy")
    ids = set(job_ids)
    return accuracy_by_dataset(select(tidy[tidy["job_id"].isin(ids)], selection_method))


def dominant_shift(shift_map: pd.DataFrame, overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Dataset → "diversity" | "correlation" from a shift map (:func:`dganalysis.shift.study.dataset_map`);
    ``overrides`` win (e.g. for a dataset not on the map)."""
    f = "dominant_shift"
    check_frame(shift_map, ("dataset", "dominant"), "shift_map", func=f, what="a dganalysis.shift.study.dataset_map frame")
    for k, v in check_mapping(overrides or {}, "overrides", func=f).items():
        check_choice(v, ("diversity", "correlation"), f"overrides[{k!r}] (the ranking_dominant parameter)", func=f)
    return {**dict(zip(shift_map["dataset"], shift_map["dominant"])), **dict(overrides or {})}
