"""Leaderboards: per-dataset accuracy, average, rank, ΔR, Spearman rank correlation, OoD-Bench ranking score.

Yu et al. (2024, DomainBed-v2) Sec. 3 / Table 5 / App. C: a leaderboard lists, per algorithm, the accuracy on each
dataset (mean ± SE over trials), the average over datasets and the rank by that average; ΔR is the change of rank
between two leaderboards (``rank_reference − rank_other``: positive = the algorithm moved up, as in Table 5) and
leaderboards are compared by Spearman's rank correlation of the algorithms' average accuracies.
Ye et al. (2022, OoD-Bench) Tables 1–2: the *ranking score* of an algorithm adds, over datasets, +1 when its
accuracy is above ERM's standard-error bar, −1 when below, 0 when within (bounds inclusive).

Everything works on one long frame, ``leaderboard, algorithm, dataset, acc, se, n`` — made from our runs by
:func:`from_selected` or read from published numbers by :func:`load_published` (the shipped CSV holds Yu et al. (2024)'s
Table 5), so the user's runs and the literature go through the same functions.

Boards and protocols: Yu et al. (2024) Table 5 / App. C present several *boards* (MoCo-v2 ResNet-50, MoCo-v3 ViT-B/16,
ResNet-50 trained from scratch), each under one protocol; :func:`dganalysis.studies.plans.leaderboards_plan` runs each board under two protocols (LODO,
LOGO). A leaderboard of our runs is named :func:`board_label` ``"<board> / <protocol>"`` (just ``"<protocol>"`` when
there is a single unnamed board, as in the quick profile); :func:`boards` groups the names back, and
:func:`rank_changes` compares the protocols within each board; Table 5's findings are decided in
:mod:`dganalysis.findings.leaderboard`.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dganalysis.latex import latex_escape
from dganalysis.stats.moments import standard_error
from dganalysis.sweep.spec import Sweep
from dganalysis.validation import ConfigError, check_frame, check_path, check_scalar, check_str, describe

log = logging.getLogger(__name__)

LONG_COLUMNS = ["leaderboard", "algorithm", "dataset", "acc", "se", "n"]
PUBLISHED_CSV = Path(__file__).parent / "data" / "yu2023_table5_leaderboards.csv"
BOARD_SEP = " / "  #: between a board's name and the protocol in a leaderboard name (see :func:`board_label`)


# ----------------------------------------------------------------------------------------------- boards
def board_label(board: str, protocol: str) -> str:
    """The name of ``board``'s leaderboard under ``protocol``: ``"MoCo-v2 ResNet-50 / LODO"``, or ``protocol`` alone
    for the unnamed board ``""`` (one board: a leaderboard study without ``leaderboards``). Board names may not contain
    :data:`BOARD_SEP`."""
    check_str(board, "board", func="board_label")
    check_str(protocol, "protocol", func="board_label")
    if BOARD_SEP in board:
        raise ValueError(f"board name {board!r} contains {BOARD_SEP!r}, which separates board and protocol")
    return f"{board}{BOARD_SEP}{protocol}" if board else protocol


#: the keys of a board's sweep (:class:`dganalysis.sweep.Sweep`) a board may set, on top of the study's sweep
BOARD_SWEEP_KEYS = ("hparams_overrides", "search_overrides", "steps")
#: what one board of the leaderboard study's ``leaderboards`` may set (:func:`leaderboard_boards`)
BOARD_KEYS = ("datasets", *BOARD_SWEEP_KEYS, "dataset_overrides", "dataset_steps")


def leaderboard_boards(leaderboards: Mapping[str, Any] | None, *, sweep: Sweep) -> dict[str, dict[str, Any]]:
    """Each board of the leaderboard study with its settings in full: board name → ``datasets`` (names) and
    ``sweep`` (the study's :class:`~dganalysis.sweep.Sweep` with the board's settings, its ``datasets`` the board's
    entries of the study's sweep, in the board's order).

    Yu et al. (2024) Table 5 and App. C.2-C.4 present three boards of the same ten algorithms: MoCo-v2 ResNet-50 and
    MoCo-v3 ViT-B/16 on PACS, VLCS, OfficeHome, NICO++ and DomainNet, and ResNet-50 trained from scratch on DomainNet
    and NICO++ only (App. C.4: learning rate searched over 10^U(-4.5, -3), 60,000 iterations). ``leaderboards`` (board
    name → the keys of :data:`BOARD_KEYS`, each optional) expresses them: ``datasets`` names some of the study's
    sweep's ``datasets`` (default: all); ``hparams_overrides`` and ``search_overrides`` go on top of the study's
    sweep's key by key, ``dataset_overrides`` (name → hparams) on top of each entry's ``hparams`` (so a board states
    only what sets it apart, e.g. ``{featurizer: vit_b_16, pretrained: <file>}``, or ``pretrained: null`` with
    ``search_overrides: {lr: {log10_uniform: [-4.5, -3]}}`` for App. C.4); ``steps`` replaces the sweep's steps and
    ``dataset_steps`` (name → steps) the entries' own (a board with ``steps: 60000`` and no per-dataset steps says
    ``dataset_steps: {}``).

    ``None`` or ``{}``: one unnamed board ``""`` with the study's sweep (the notebook without boards).
    Everything is checked before any job is built; a bad board raises ValueError naming the board.
    """
    if not isinstance(sweep, Sweep):
        raise ConfigError(f"leaderboard_boards: parameter 'sweep': expected a dganalysis.sweep.Sweep, got {sweep!r}")
    entries = {e["name"]: e for e in sweep.datasets}
    if not entries:
        raise ConfigError("leaderboard_boards: parameter 'sweep': expected a sweep with datasets, got none")
    if not leaderboards:
        return {"": {"datasets": list(entries), "sweep": sweep}}
    if not isinstance(leaderboards, Mapping):
        raise ValueError(f"leaderboards: expected a mapping of board names to settings, got {leaderboards!r}")
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
        names = spec.get("datasets", list(entries))
        if isinstance(names, str) or not isinstance(names, Sequence) or not names:
            raise ValueError(f"{where}.datasets: expected a non-empty list of dataset names, got {names!r}")
        for name in names:
            if name not in entries:
                raise ValueError(f"{where}: dataset {name!r} is not in the notebook's sweep.datasets {list(entries)}")
        names = list(dict.fromkeys(names))
        for key in ("dataset_overrides", "dataset_steps"):
            stray = [n for n in (spec.get(key) or {}) if n not in names]
            if stray:
                raise ValueError(f"{where}.{key}: dataset(s) {stray} are not among the board's datasets {names}")
        try:
            board_sweep = sweep.replace(
                hparams_overrides={**sweep.hparams_overrides, **(spec.get("hparams_overrides") or {})},
                search_overrides={**(sweep.search_overrides or {}), **(spec.get("search_overrides") or {})},
                steps=spec.get("steps", sweep.steps),
                datasets=[_board_entry(entries[n], spec) for n in names])
        except ConfigError as e:
            raise ValueError(f"{where}: {e}") from None
        out[board] = {"datasets": names, "sweep": board_sweep}
    return out


def _board_entry(entry: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    """A dataset entry of the study's sweep with a board's ``dataset_overrides`` on its ``hparams`` and the board's
    ``dataset_steps`` (when the board gives them) in place of its ``steps``."""
    name = entry["name"]
    out = {k: v for k, v in entry.items() if k != "steps" or "dataset_steps" not in spec}
    over = (spec.get("dataset_overrides") or {}).get(name)
    if over:
        out["hparams"] = {**entry.get("hparams", {}), **over}
    if name in (spec.get("dataset_steps") or {}):
        out["steps"] = spec["dataset_steps"][name]
    return out


def boards(names: Iterable[str]) -> dict[str, list[str]]:
    """Board → its leaderboard names (in the order given), from names made by :func:`board_label`; names without
    :data:`BOARD_SEP` belong to the unnamed board ``""``."""
    if isinstance(names, str) or not isinstance(names, Iterable):
        raise ConfigError(f"boards: parameter 'names': expected leaderboard names (a list of strings), got {describe(names)}")
    out: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        out.setdefault(str(name).rpartition(BOARD_SEP)[0], []).append(name)
    return out


def file_label(name: str) -> str:
    """``name`` as a figure/table file name part: runs of characters other than letters, digits, ``_ . -`` become
    ``_`` (``"MoCo-v3 ViT-B/16 / LODO"`` → ``"MoCo-v3_ViT-B_16_LODO"``; ``"LODO"`` stays ``"LODO"``)."""
    check_str(name, "name", func="file_label")
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name)).strip("_")
    if not label:
        raise ValueError(f"leaderboard name {name!r} has no letter or digit to name a file by")
    return label


# ----------------------------------------------------------------------------------------------- building
def _check_selected(selected: pd.DataFrame, method_col: str, acc_col: str, func: str) -> None:
    """A selected frame (the contract of ``dganalysis.records.selection.select``) of one selection method, or a clear error."""
    check_frame(selected, (), "selected", func=func)
    check_str(method_col, "method_col", func=func)
    check_str(acc_col, "acc_col", func=func)
    missing = {"dataset", method_col, acc_col, "trial_seed", "domain", "test_domains"} - set(selected.columns)
    if missing:
        raise ValueError(f"selected frame: missing columns {sorted(missing)} (expected the selection contract)")
    if "selection" in selected and selected["selection"].nunique() > 1:
        raise ValueError(f"selected frame mixes selection methods {sorted(selected['selection'].unique())}")


def from_selected(
    selected: pd.DataFrame,
    leaderboard: str = "ours",
    method_col: str = "algorithm",
    acc_col: str = "acc",
    scale: float = 100.0,
    dataset_label: str | None = None,
) -> pd.DataFrame:
    """Long leaderboard frame from a selected frame (contract of ``dganalysis.records.selection.select``).

    As DomainBed's ``collect_results``: per (dataset, algorithm, trial_seed) the accuracy is the mean over all
    selected test-domain rows (leave-one-domain-out: one per domain; leave-one-group-out: one per domain of each
    group), then mean ± SE over trials (SE = sample std with ddof=1 / sqrt(n), not DomainBed's population std).
    Trials that miss some of the dataset's test domains are dropped with a warning. ``scale`` multiplies accuracies
    (100: fractions → percent, as the papers print). ``dataset_label`` renames the dataset (e.g. "RotatedDigits LOGO").
    """
    check_str(leaderboard, "leaderboard", func="from_selected")
    check_scalar(scale, "scale", func="from_selected", low=0.0, low_open=True)
    _check_selected(selected, method_col, acc_col, "from_selected")
    df = selected.copy()
    df["_cell"] = df["test_domains"].astype(str) + "|" + df["domain"].astype(str)
    rows = []
    for ds, dsf in df.groupby("dataset", sort=False):
        cells = set(dsf["_cell"])
        for alg, g in dsf.groupby(method_col, sort=False):
            per_trial = g.groupby("trial_seed").agg(acc=(acc_col, "mean"), cells=("_cell", "nunique"))
            complete = per_trial[per_trial["cells"] == len(cells)]
            if len(complete) < len(per_trial):
                log.warning("leaderboard %s: %s/%s drops %d trial(s) missing test domains", leaderboard, ds, alg,
                            len(per_trial) - len(complete))
            if complete.empty:
                continue
            acc = complete["acc"].to_numpy() * scale
            n = len(acc)
            se = standard_error(acc)
            rows.append(dict(leaderboard=leaderboard, algorithm=alg, dataset=dataset_label or ds, acc=float(acc.mean()),
                             se=se, n=n))
    return pd.DataFrame(rows, columns=LONG_COLUMNS)


def load_published(path: str | Path | None = None) -> pd.DataFrame:
    """Published leaderboard numbers as a long frame (default: Yu et al. (2024) Table 5, typed from the paper).

    CSV columns: ``leaderboard, algorithm, dataset, acc, se`` (+ optional ``rank_published, delta_r_published``);
    lines starting with ``#`` are comments (the shipped file names its source there).
    """
    if path is not None:
        check_path(path, "path", func="load_published", kind="file")
    path = Path(path) if path is not None else PUBLISHED_CSV
    if not path.exists():
        raise FileNotFoundError(f"published leaderboard CSV not found: {path}")
    df = pd.read_csv(path, comment="#")
    missing = {"leaderboard", "algorithm", "dataset", "acc", "se"} - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}; expected leaderboard, algorithm, dataset, acc, se")
    if "n" not in df:
        df["n"] = np.nan
    return df


# ----------------------------------------------------------------------------------------------- tables
def block_scores(
    selected: pd.DataFrame,
    methods: Sequence[str] | None = None,
    method_col: str = "algorithm",
    acc_col: str = "acc",
) -> pd.DataFrame:
    """Blocks × algorithms table of mean accuracy over trials; a block is ``dataset | test group | domain`` (the
    blocks of :func:`dganalysis.stats.rank_tests.friedman`; Demšar 2006).

    Only blocks where every algorithm has a score are kept (the Friedman test needs complete blocks).
    """
    _check_selected(selected, method_col, acc_col, "block_scores")
    df = selected.assign(block=selected["dataset"].astype(str) + " | " + selected["test_domains"].astype(str)
                         + " | " + selected["domain"].astype(str))
    wide = df.groupby(["block", method_col])[acc_col].mean().unstack(method_col)
    if methods is not None:
        unknown = sorted(set(methods) - set(wide.columns))
        if unknown:
            raise ValueError(f"methods: {unknown} have no selected rows")
        wide = wide[list(methods)]
    wide = wide.dropna(axis=0, how="any")
    wide.columns.name = None
    return wide


def leaderboard_table(
    long: pd.DataFrame, leaderboard: str | None = None, datasets: Sequence[str] | None = None, tie_method: str = "min"
) -> pd.DataFrame:
    """Wide table of one leaderboard: per dataset ``acc`` and ``se`` columns (``"<ds>"``, ``"<ds> se"``), ``Average``
    (unweighted mean over ``datasets``; NaN if one is missing) and ``Ranking`` (1 = best average).

    Ranks use the unrounded average (Table 5's ties in print, e.g. ERM/Mixup 69.6, are broken this way);
    exact ties share the ``tie_method`` rank (pandas ``rank``).
    """
    check_frame(long, (), "long", func="leaderboard_table")
    check_str(leaderboard, "leaderboard", func="leaderboard_table", nullable=True)
    df = _one(long, leaderboard)
    datasets = list(datasets) if datasets is not None else list(dict.fromkeys(df["dataset"]))
    algs = list(dict.fromkeys(df["algorithm"]))
    acc = df.pivot_table(index="algorithm", columns="dataset", values="acc", aggfunc="first").reindex(algs)
    se = df.pivot_table(index="algorithm", columns="dataset", values="se", aggfunc="first", dropna=False).reindex(algs)
    out = pd.DataFrame(index=pd.Index(algs, name="algorithm"))
    for ds in datasets:
        out[ds] = acc[ds] if ds in acc else np.nan
        out[f"{ds} se"] = se[ds] if ds in se else np.nan
    out["Average"] = out[datasets].mean(axis=1, skipna=False)
    out["Ranking"] = out["Average"].rank(ascending=False, method=tie_method)
    return out


def _one(long: pd.DataFrame, leaderboard: str | None) -> pd.DataFrame:
    names = list(dict.fromkeys(long["leaderboard"]))
    if leaderboard is None:
        if len(names) != 1:
            raise ValueError(f"leaderboard: the frame holds {names}; name one")
        return long
    if leaderboard not in names:
        raise ValueError(f"leaderboard {leaderboard!r} not in {names}")
    return long[long["leaderboard"] == leaderboard]


def ranks(long: pd.DataFrame, datasets: Sequence[str] | None = None, tie_method: str = "min") -> pd.DataFrame:
    """Algorithm × leaderboard table of ranks by average accuracy (1 = best; see :func:`leaderboard_table`).

    ``long``: one row per (leaderboard, algorithm, dataset) with ``acc`` and ``se`` in percent (:func:`from_selected`,
    :func:`load_published`); ``datasets``: those averaged (default: all); ``tie_method`` as ``DataFrame.rank``."""
    check_frame(long, (), "long", func="ranks")
    cols = {}
    for name in dict.fromkeys(long["leaderboard"]):
        cols[name] = leaderboard_table(long, name, datasets, tie_method)["Ranking"]
    return pd.DataFrame(cols)


def averages(long: pd.DataFrame, datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Algorithm × leaderboard table of the unweighted mean accuracy (percent) over ``datasets`` (``long`` as
    :func:`ranks`; NaN where an algorithm lacks one of the datasets)."""
    check_frame(long, (), "long", func="averages")
    return pd.DataFrame({n: leaderboard_table(long, n, datasets)["Average"] for n in dict.fromkeys(long["leaderboard"])})


def rank_changes(long: pd.DataFrame, datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`ranks` of every leaderboard plus, per board (:func:`boards`) with two or more leaderboards, the ΔR from
    its first to its second (e.g. LODO → LOGO). The column is ``"ΔR"`` when there is one board, else
    ``"ΔR <board>"`` (Yu et al. 2024, Table 5's ΔR, here between protocols of one board)."""
    check_frame(long, (), "long", func="rank_changes")
    rk = ranks(long, datasets)
    groups = boards(rk.columns)
    for board, names in groups.items():
        if len(names) > 1:
            rk["ΔR" if len(groups) == 1 else f"ΔR {board}"] = delta_rank(rk, names[0], names[1])
    return rk


def delta_rank(rank_table: pd.DataFrame, reference: str, other: str) -> pd.Series:
    """ΔR of Yu et al. (2024) Table 5: ``rank[reference] − rank[other]`` (positive = ranks higher in ``other``)."""
    check_frame(rank_table, (), "rank_table", func="delta_rank")
    check_str(reference, "reference", func="delta_rank")
    check_str(other, "other", func="delta_rank")
    for name in (reference, other):
        if name not in rank_table:
            raise ValueError(f"leaderboard {name!r} not in rank table columns {list(rank_table.columns)}")
    return (rank_table[reference] - rank_table[other]).rename(f"ΔR {reference}→{other}")


def spearman_matrix(long: pd.DataFrame, datasets: Sequence[str] | None = None) -> pd.DataFrame:
    """Leaderboard × leaderboard Spearman rank correlation of average accuracy over the algorithms both contain
    (Yu et al. 2024, Sec. 3.2, e.g. 0.794 between the MoCo-v2 and MoCo-v3 leaderboards). scipy ``spearmanr`` (ties get
    average ranks); NaN when fewer than 3 common algorithms."""
    check_frame(long, (), "long", func="spearman_matrix")
    avg = averages(long, datasets)
    names = list(avg.columns)
    mat = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for a, b in itertools.combinations(names, 2):
        common = avg[[a, b]].dropna()
        rho = stats.spearmanr(common[a], common[b]).statistic if len(common) >= 3 else np.nan
        mat.loc[a, b] = mat.loc[b, a] = rho
    return mat


# ----------------------------------------------------------------------------------------------- ranking score
def ranking_marks(
    df: pd.DataFrame,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    se_col: str = "se",
    baseline: str = "ERM",
    dataset_col: str = "dataset",
    tol: float = 1e-6,
) -> pd.DataFrame:
    """Method × dataset marks of OoD-Bench (Ye et al. 2022, Tables 1–2): +1 if acc > baseline acc + baseline SE, −1 if
    acc < baseline acc − baseline SE, else 0. Bounds are inclusive (Table 1: Mixup 94.6 vs ERM 94.7 ± 0.1 scores 0),
    compared with tolerance ``tol`` against floating-point error. A missing baseline SE counts as 0."""
    check_frame(df, [method_col, acc_col, se_col, dataset_col], "df", func="ranking_marks")
    check_str(baseline, "baseline", func="ranking_marks")
    missing = {method_col, acc_col, se_col, dataset_col} - set(df.columns)
    if missing:
        raise ValueError(f"ranking_score: missing columns {sorted(missing)}")
    if df.duplicated([method_col, dataset_col]).any():
        raise ValueError(f"ranking_score: several rows per ({method_col}, {dataset_col}); pass one leaderboard")
    acc = df.pivot(index=method_col, columns=dataset_col, values=acc_col)
    se = df.pivot(index=method_col, columns=dataset_col, values=se_col).fillna(0.0)
    if baseline not in acc.index:
        raise ValueError(f"baseline {baseline!r} not among methods {list(acc.index)}")
    hi = acc.loc[baseline] + se.loc[baseline]
    lo = acc.loc[baseline] - se.loc[baseline]
    marks = pd.DataFrame(0, index=acc.index, columns=acc.columns, dtype=float)
    marks[acc.gt(hi + tol, axis=1)] = 1
    marks[acc.lt(lo - tol, axis=1)] = -1
    marks[acc.isna()] = np.nan
    return marks


def ranking_score(
    df: pd.DataFrame,
    method_col: str = "algorithm",
    acc_col: str = "acc",
    se_col: str = "se",
    baseline: str = "ERM",
    dataset_col: str = "dataset",
    tol: float = 1e-6,
) -> pd.Series:
    """OoD-Bench ranking score: the sum over datasets of :func:`ranking_marks` (baseline scores 0), sorted."""
    check_frame(df, [method_col, acc_col, se_col, dataset_col], "df", func="ranking_score")
    check_str(baseline, "baseline", func="ranking_score")
    marks = ranking_marks(df, method_col, acc_col, se_col, baseline, dataset_col, tol)
    return marks.sum(axis=1, min_count=1).astype("Int64").rename("ranking_score").sort_values(ascending=False)


# ----------------------------------------------------------------------------------------------- LaTeX
def to_latex(
    long: pd.DataFrame,
    leaderboards: Sequence[str] | None = None,
    reference: str | None = None,
    datasets: Sequence[str] | None = None,
    titles: dict[str, str] | None = None,
    caption: str = "",
    digits: int = 1,
) -> str:
    """LaTeX in Yu et al. (2024) Table 5's layout: one block per leaderboard (title row), columns Algorithm, datasets
    (mean ± SE), Average, Ranking, ΔR (relative to ``reference``, default the first leaderboard; "-" for no
    change and for the reference itself; the largest |ΔR| of each block in bold)."""
    check_frame(long, (), "long", func="to_latex")
    check_scalar(digits, "digits", func="to_latex", kind='int', low=0)
    names = list(leaderboards) if leaderboards is not None else list(dict.fromkeys(long["leaderboard"]))
    reference = reference or names[0]
    rk = ranks(long[long["leaderboard"].isin(set(names) | {reference})], datasets)
    datasets = list(datasets) if datasets is not None else list(dict.fromkeys(long["dataset"]))
    ncol = len(datasets) + 4
    lines = ["\\begin{table}[t]", "\\centering"]
    if caption:
        lines.append("\\caption{" + latex_escape(caption) + "}")
    lines += ["\\begin{tabular}{l" + "c" * (ncol - 1) + "}", "\\toprule"]
    head = "Algorithm & " + " & ".join(latex_escape(d) for d in datasets) + " & Average & Ranking & $\\Delta$R \\\\"
    for name in names:
        tab = leaderboard_table(long, name, datasets)
        title = (titles or {}).get(name, name)
        lines += ["\\midrule", f"\\multicolumn{{{ncol}}}{{c}}{{{latex_escape(title)}}} \\\\", "\\midrule", head, "\\midrule"]
        dr = delta_rank(rk, reference, name) if name != reference else pd.Series(0, index=tab.index)
        big = dr.abs().max() if name != reference else 0
        for alg, r in tab.iterrows():
            cells = [latex_escape(str(alg))]
            for ds in datasets:
                m, s = r[ds], r[f"{ds} se"]
                cells.append("-" if pd.isna(m) else f"{m:.{digits}f}" + ("" if pd.isna(s) else f" $\\pm$ {s:.{digits}f}"))
            cells.append("-" if pd.isna(r["Average"]) else f"{r['Average']:.{digits}f}")
            cells.append("-" if pd.isna(r["Ranking"]) else f"{int(r['Ranking'])}")
            d = dr.get(alg, np.nan)
            txt = "-" if pd.isna(d) or d == 0 else f"{int(d):+d}"
            cells.append(f"\\textbf{{{txt}}}" if big and not pd.isna(d) and abs(d) == big else txt)
            lines.append(" & ".join(cells) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)




# ----------------------------------------------------------------------------------------------- bump chart
def bump_chart_data(rank_table: pd.DataFrame, leaderboards: Sequence[str] | None = None) -> pd.DataFrame:
    """Long frame ``leaderboard, position, algorithm, rank`` for a bump chart (x = leaderboard position)."""
    check_frame(rank_table, (), "rank_table", func="bump_chart_data")
    names = list(leaderboards) if leaderboards is not None else list(rank_table.columns)
    rows = [dict(leaderboard=n, position=i, algorithm=alg, rank=rank_table.loc[alg, n])
            for i, n in enumerate(names) for alg in rank_table.index]
    return pd.DataFrame(rows)


def plot_bump_chart(rank_table: pd.DataFrame, leaderboards: Sequence[str] | None = None, ax=None):
    """Bump chart of rank changes across leaderboards (rank 1 on top), one line per algorithm, labelled at both ends."""
    check_frame(rank_table, (), "rank_table", func="plot_bump_chart")
    import matplotlib.pyplot as plt

    data = bump_chart_data(rank_table, leaderboards)
    names = list(dict.fromkeys(data["leaderboard"]))
    n_alg = data["algorithm"].nunique()
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(1.9 * len(names) + 2.5, 0.32 * n_alg + 1.5))
    for i, (alg, g) in enumerate(data.groupby("algorithm", sort=False)):
        g = g.sort_values("position")
        color = f"C{i % 10}"
        ax.plot(g["position"], g["rank"], marker="o", color=color, lw=2, ms=7)
        first, last = g.dropna().iloc[0], g.dropna().iloc[-1]
        ax.annotate(alg, (first["position"], first["rank"]), xytext=(-8, 0), textcoords="offset points",
                    ha="right", va="center", fontsize="small", color=color)
        ax.annotate(alg, (last["position"], last["rank"]), xytext=(8, 0), textcoords="offset points",
                    ha="left", va="center", fontsize="small", color=color)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_xlim(-0.8, len(names) - 0.2)
    ax.invert_yaxis()
    ax.set_ylabel("rank")
    ax.grid(axis="x")
    fig.tight_layout()
    return fig
