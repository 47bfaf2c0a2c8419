"""Model selection over hyperparameters (and checkpoints) on the tidy results of :func:`dganalysis.records.load`.

Definitions follow DomainBed (Gulrajani & Lopez-Paz, *In Search of Lost Domain Generalization*, ICLR 2021, Sec. 3
and ``domainbed/model_selection.py``), extended to runs with several test domains (Yu et al. 2024, *Rethinking the
Evaluation Protocol of DG*, Sec. 2.2 and Table 4: leave-one-group-out, oracle over K test domains) and to a held-out
validation domain (Ye et al. 2022, *OoD-Bench*, Sec. 5 "OoD validation"). A *config* is one (dataset, algorithm,
train_domains, test_domains, val_domains, setting, trial_seed) — ``setting`` (see :func:`dganalysis.records.load`)
holds everything else that makes two jobs differ (dataset_kwargs, hparams overrides, steps, holdout fraction, ...), so
only runs that differ in ``hparams_seed`` alone compete. Within a config the candidates are its jobs (one per
``hparams_seed``) and, where the method allows early stopping, their checkpoints. The reported accuracy is always the
test domain's **'in' split** at the chosen (job, step), as DomainBed reports it.

Methods (``select(df, method)``, registered in :mod:`dganalysis.records.selection_methods`; computed by
:mod:`dganalysis.records.rules`, the one implementation of these rules, on the frame's records as arrays — the sweep
index's selections run the same code on the index's arrays; a user may add a method scored on the frame with
:func:`~dganalysis.records.selection_methods.register_method`):

* ``training_domain`` — training-domain validation: argmax over (hparams, step) of the mean 'out'-split accuracy of
  the training domains (DomainBed's ``IIDAccuracySelectionMethod``, which allows early stopping, i.e. every
  checkpoint is a candidate). With several test domains, one choice per config; every test domain is reported.
* ``training_domain_last`` — the same score at each run's last checkpoint only (no early stopping). Not a DomainBed
  method: it compares like with like against ``oracle``, which never early-stops (see
  :mod:`dganalysis.protocols.oracle_k`).
* ``leave_one_out`` — leave-one-domain-out cross-validation (DomainBed's ``LeaveOneOutSelectionMethod``): for a
  config with training domains T, each d in T needs a *helper* job with the same dataset, algorithm, setting,
  trial_seed and hparams_seed trained on T \\ {d} with d held out (DomainBed: ``test_envs = [test, d]``; ours: d a test
  or val domain). The score of (hparams, step) is the mean over d in T of the helper's 'in'-split accuracy on d at
  that step. Steps where any helper is missing are skipped; configs without any complete candidate give no row
  (DomainBed returns None and prints "X").
* ``oracle`` — test-domain validation (DomainBed's ``OracleSelectionMethod``): last checkpoint only (no early
  stopping), argmax over hparams of the test domain's 'out'-split accuracy, chosen separately for each test domain.
* ``oracle_pooled`` — one oracle choice per config by the mean 'out'-split accuracy over its test domains at the last
  checkpoint (Yu et al. 2024, Table 4's oracle with K test domains). The mean runs over the test domains present in
  ``df``, so dropping test-domain rows beforehand selects by a subset of K domains.
* ``ood_validation`` — argmax over (hparams, step) of the mean 'out'-split accuracy of the validation domains
  (``val_domains``; a domain with no 'out' split uses 'in'), OoD-Bench's OoD-validation selection.

Ties and float arithmetic, as DomainBed's ``collect_results``: a score is computed with DomainBed's own arithmetic
(``np.mean`` over the domains in environment order; leave-one-out: ``np.sum(...) / n``), so equal scores are equal
floats exactly when DomainBed's are. Among checkpoints of a run with equal score the earliest wins (its
``argmax`` = Python's ``max``, first maximum in record order); among runs with equal score the highest
``hparams_seed`` wins (``hparams_accs`` sorts runs by ascending seed, stable-sorts by score and reverses); then the
job id. ``tie_tol`` > 0 also treats scores within ``tie_tol`` of the best as ties; the default 0 keeps
bit-for-bit agreement with DomainBed, whose pick between two mathematically equal scores that round differently
(e.g. mean(.1, .2, .3) vs mean(.3, .2, .1)) is decided by that rounding. NaN scores are never chosen.

A frame with a (job_id, step, domain, split) twice is refused (:func:`~dganalysis.records.load` keeps the last
record of a step recorded twice). Deliberate departure (pinned by tests/records/test_selection.py): DomainBed groups runs by (trial_seed, dataset, algorithm,
test_env) only, so two runs with the same hparams_seed but other settings (e.g. ``--steps``) written to one output
folder are merged into one "run" and compete; here they are different configs and are selected separately.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dganalysis.records.selection_methods import CONFIG, OUTPUT, get_method, methods
from dganalysis.validation import ConfigError, check_choice, check_frame, check_scalar, check_strings, describe, is_kind

if TYPE_CHECKING:  # numpy and pandas are imported where a frame is built: the registry and the CLI's choices need none
    import pandas as pd

    from dganalysis.records.rules import Chosen, FrameRecords

log = logging.getLogger(__name__)


def select(df: pd.DataFrame, method: str, tie_tol: float = 0.0, per_draw: bool = False) -> pd.DataFrame:
    """Selected test accuracy per (config, test domain) under ``method`` (DomainBed's model selection, Gulrajani &
    Lopez-Paz 2021, Sec. 3; the methods are described in the module docstring).

    Parameters
    ----------
    df : the tidy frame of :func:`dganalysis.records.load` — one row per (job, step, domain, split) with columns
        dataset, algorithm, train_domains, test_domains, val_domains, trial_seed, job_id, hparams_seed, step, domain,
        split ('in'/'out'), role ('train'/'test'/'val') and acc (a fraction in [0, 1]); ``setting`` and ``hparams``
        are optional (a frame without ``setting`` is one setting).
    method : one of :data:`~dganalysis.records.selection_methods.METHODS` — ``"training_domain"`` (DomainBed's default, early stopping on the training
        domains' holdout), ``"training_domain_last"``, ``"leave_one_out"``, ``"oracle"`` (test-domain holdout, last
        checkpoint), ``"oracle_pooled"``, ``"ood_validation"``.
    tie_tol : scores within ``tie_tol`` (≥ 0, accuracy units) of the best are ties (default 0: exact, as DomainBed).
    per_draw : select within each hyperparameter draw alone (every ``hparams_seed`` its own config): each draw's
        checkpoint choice under ``method``, one row per (config, hparams_seed, test domain), what a search that had
        drawn only those hyperparameters would report (the expected-max curve of Dodge et al. 2019,
        :func:`dganalysis.audit.sweep_analyses.expected_max_curve`, needs every draw's). Equal to ``select`` run on each
        draw's rows separately. Not a DomainBed selection; default False (DomainBed's, across draws).

    Returns
    -------
    pandas.DataFrame with columns :data:`~dganalysis.records.selection_methods.OUTPUT`, one row per (dataset, algorithm, train_domains, test_domains,
    val_domains, setting, trial_seed, domain) (with ``per_draw``: per (..., trial_seed, hparams_seed, domain)): ``acc``
    the chosen job's 'in'-split accuracy on test domain ``domain`` (a fraction), ``val_acc`` the selection score of
    the chosen (job, step), ``hparams_seed``, ``job_id``, ``step`` and ``hparams`` of the choice, ``selection`` =
    ``method``. Average over trials with :func:`summarize`.

    Example: ``summarize(select(load("store"), "training_domain"))``.
    """
    import numpy as np
    import pandas as pd

    from dganalysis.records import rules

    f = "select"
    check_choice(method, methods(), "method", func=f)
    how = get_method(method)
    tie_tol = check_scalar(tie_tol, "tie_tol", func=f, low=0.0)
    if not isinstance(per_draw, bool):
        raise ConfigError(f"select: per_draw={per_draw!r}, expected True or False")
    keys = [*CONFIG, "hparams_seed"] if per_draw else CONFIG
    need = [c for c in CONFIG if c != "setting"]
    check_frame(df, (*need, "job_id", "hparams_seed", "step", "domain", "split", "role", "acc"), "df", func=f,
                what="expected the tidy frame of dganalysis.records.load")
    if "hparams" not in df:
        df = df.assign(hparams="{}")
    if "setting" not in df:
        df = df.assign(setting="")
    if df.empty:
        return pd.DataFrame({c: [] for c in OUTPUT})
    try:
        frame = rules.from_frame(df)
    except ValueError as err:
        raise ConfigError(f"{f}: parameter 'df': {err}") from None
    rec = frame.records
    if how.scores is None:
        chosen = rules.choose(rec, method, tie_tol, per_draw)
    else:
        cand = how.scores(df)
        check_frame(cand, ("job_id", "step", "val_acc", *(("domain", "acc") if how.per_test_domain else ())),
                    f"the scores of method {method!r}", func=f, what="one row per candidate checkpoint")
        job = pd.Index(rec.job_names).get_indexer(cand["job_id"])
        chosen = rules.choose_scored(rec, job, cand["step"].to_numpy(), cand["val_acc"].to_numpy(dtype=float),
                                     tie_tol, per_draw, *((cand["domain"].tolist(), cand["acc"].to_numpy(dtype=float))
                                                          if how.per_test_domain else ()))
    if log.isEnabledFor(logging.INFO):  # counted for the log line only
        t = rec.tables()
        cfg = t.job_draw if per_draw else t.job_cfg
        n_configs, n_chosen = len(np.unique(cfg)), len(np.unique(cfg[chosen.job]))
        if n_chosen < n_configs:
            log.info("%s: %d of %d configs give no result (no test domain, no val domain, or missing leave-one-out "
                     "helper runs; DomainBed's [test, val] runs are such configs themselves)",
                     method, n_configs - n_chosen, n_configs)
    return _selected_frame(df, frame, chosen, method, keys)


def _selected_frame(df: pd.DataFrame, frame: FrameRecords, chosen: Chosen, method: str,
                    keys: list[str]) -> pd.DataFrame:
    """select()'s output frame: the config columns taken from each chosen job's first row of ``df`` and the domain
    and step from the chosen checkpoint's test-domain row, so every column keeps ``df``'s dtype; sorted by the
    config and the domain."""
    import numpy as np
    import pandas as pd

    rec = frame.records
    job_rows = frame.job_rows[chosen.job]
    has_row = chosen.col >= 0
    cols: dict[str, object] = {}
    for c in (*CONFIG, "hparams_seed", "job_id", "hparams"):
        cols[c] = df[c].iloc[job_rows].reset_index(drop=True)
    dom_rows = frame.rows[rec.rec_off[chosen.record] + np.maximum(chosen.col, 0)]
    if has_row.all():
        cols["domain"] = df["domain"].iloc[dom_rows].reset_index(drop=True)
    else:  # a user scorer's domains
        domains = rec.tables().domains
        cols["domain"] = pd.Series([domains[d] for d in chosen.domain.tolist()], dtype=df["domain"].dtype)
    cols["step"] = (df["step"].iloc[dom_rows].reset_index(drop=True) if has_row.all()
                    else pd.Series(rec.rec_step[chosen.record], dtype=df["step"].dtype))
    per_domain = get_method(method).per_test_domain
    if per_domain or not has_row.all():
        cols["acc"] = pd.Series(chosen.acc, dtype=np.float64)
    else:  # the test domain's 'in' row
        cols["acc"] = df["acc"].iloc[dom_rows].reset_index(drop=True)
    cols["val_acc"] = pd.Series(chosen.val, dtype=np.float64)
    if method == "leave_one_out" and isinstance(df["job_id"].dtype, pd.CategoricalDtype):
        cols["job_id"] = cols["job_id"].astype(object)  # as the frame computation of these rules gave it
    out = pd.DataFrame(cols).assign(selection=method)[OUTPUT]
    return out.sort_values([*keys, "domain"], kind="stable").reset_index(drop=True)


def summarize(selected: pd.DataFrame, by: Sequence[str] | None = None, ddof: int = 1) -> pd.DataFrame:
    """Mean, standard error and count of ``acc`` over trials, grouped by ``by``.

    ``by`` defaults to every config column except ``trial_seed``, plus ``domain`` and ``selection``.
    SE = std(acc, ddof) / sqrt(n). We default to ``ddof=1`` (sample standard deviation, the unbiased variance
    estimate): DomainBed's ``collect_results.format_mean`` uses ``np.std`` (ddof=0, population), which shrinks the
    error bar by sqrt((n-1)/n) — 18% with its 3 trials. ``ddof=0`` reproduces DomainBed's numbers exactly.
    With n = 1 and ddof = 1 the SE is undefined and returned as NaN (tables print "± —").

    ``selected``: a :func:`select` frame (or any frame with ``acc`` and the ``by`` columns). Returns one row per
    group: the ``by`` columns, ``mean`` (mean accuracy, a fraction), ``se`` (its standard error) and ``n`` (trials).
    """
    import numpy as np
    import pandas as pd

    from dganalysis.stats.moments import group_std, standard_error_from_sd

    f = "summarize"
    check_frame(selected, ("acc",), "selected", func=f, what="a dganalysis.records.selection.select frame")
    if by is None:
        by = [c for c in ("selection", *CONFIG, "domain") if c != "trial_seed" and c in selected]
    by = check_strings(list(by) if isinstance(by, tuple) else by, "by", func=f)
    check_frame(selected, by, "selected", func=f, what=f"grouped by {by}")
    if not (is_kind(ddof, "int") and int(ddof) in (0, 1)):
        raise ConfigError(f"{f}: parameter 'ddof': expected 0 (DomainBed's np.std) or 1 (sample std), got "
                          f"{describe(ddof)}")
    # a copy without ``attrs`` (a sweep's selection carries job lists there), which pandas would otherwise
    # deep-copy into every intermediate frame; the summary carries none either way
    frame = selected.copy(deep=False)
    frame.attrs = {}
    acc = frame["acc"]
    plain = len(set(by)) == len(by) and not {"mean", "std", "n", "se"} & set(by)  # no key clashes with a result
    g = frame.groupby(by, sort=True, dropna=False)["acc"]
    if not (plain and isinstance(acc, pd.Series) and acc.dtype == np.float64 and len(acc) and not _bottleneck_std()):
        out = g.agg(mean="mean", std=lambda a: a.std(ddof=ddof), n="count").reset_index()
        std = out.pop("std")
    else:  # the same numbers without one Python call per group: the mean is pandas' group mean called as above, n
        # the non-NaN values per group, the standard deviation pandas' arithmetic redone on arrays
        # (:func:`~dganalysis.stats.moments.group_std`). Other dtypes, bottleneck, and keys named like a result
        # column take the path above.
        mean = g.mean()
        values = acc.to_numpy()
        gid = g.ngroup().to_numpy()
        n = np.bincount(gid, weights=~np.isnan(values), minlength=len(mean)).astype(np.int64)
        std = group_std(values, gid, len(mean), ddof)
        out = pd.DataFrame({"mean": mean.to_numpy(), "n": n}, index=mean.index).reset_index()
    out.insert(len(by) + 1, "se", standard_error_from_sd(std, out["n"], ddof))
    return out


def _bottleneck_std() -> bool:
    """Whether pandas' ``Series.std`` may hand the work to bottleneck (pandas imports it with itself where it is
    installed), whose summation order :func:`~dganalysis.stats.moments.group_std` does not follow."""
    import sys

    import pandas as pd

    return "bottleneck" in sys.modules and bool(pd.get_option("compute.use_bottleneck"))


def picks(selected: pd.DataFrame, by: Sequence[str] = ("domain", "trial_seed")) -> pd.DataFrame:
    """Which run each selection method chose: one row per ``by`` (default: test domain and trial), one column per
    method, cells ``"draw h, step s"`` (the chosen ``hparams_seed`` and checkpoint), and ``agree`` (True where every
    method chose the same run and step, so their accuracies are equal by construction).

    ``selected`` is several :func:`select` outputs concatenated (their ``selection`` column tells them apart). Where
    the methods agree everywhere, their tables cannot differ: the search gave them nothing to disagree about.
    """
    by = check_strings(list(by) if isinstance(by, tuple) else by, "by", func="picks", min_len=1)
    check_frame(selected, [*by, "selection", "hparams_seed", "step"], "selected", func="picks",
                what="expected concatenated select() outputs")
    dup = selected.duplicated([*by, "selection"])
    if dup.any():
        raise ValueError(f"picks: {int(dup.sum())} rows repeat a ({', '.join(by)}, selection); keep one config per "
                         "row first (e.g. the single-test-domain runs)")
    label = "draw " + selected["hparams_seed"].astype(int).astype(str) + ", step " + selected["step"].astype(int).astype(str)
    wide = selected.assign(pick=label).pivot_table(index=by, columns="selection", values="pick", aggfunc="first")
    methods = list(dict.fromkeys(selected["selection"]))
    wide = wide[methods]
    wide["agree"] = wide.nunique(axis=1, dropna=False) == 1
    wide.columns.name = None
    return wide
