"""One :class:`Study` per notebook, in one registry: its parameter class, its plan and its design.

A study notebook builds its parameter object (:mod:`dganalysis.studies.params`; its sweeps are nested
:class:`dganalysis.sweep.Sweep` parameters), asks its plan (:mod:`dganalysis.studies.plans`) for the jobs and its
design (:mod:`dganalysis.studies.design`) for the claims it tests. :data:`STUDIES` binds the three under the
notebook's name, once; ``dganalysis run``, its dry run and smoke run, the notebooks and the tests look a study up
here (:func:`study`) and nowhere else. A new notebook with one study is a parameter class, a plan function, a design
function (optional: a study that tests no claim has none) and one line in :data:`STUDIES`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dganalysis.registry import Registry
from dganalysis.studies import design as d
from dganalysis.studies import params as p
from dganalysis.studies import plans
from dganalysis.studies.design import ClaimDesign
from dganalysis.studies.params import NotebookParams
from dganalysis.studies.plans import Plan
from dganalysis.validation import ConfigError, check_choice, check_mapping


@dataclass(frozen=True)
class Study:
    """One notebook's study: ``params`` (its parameter class, whose ``notebook`` is the study's name), ``plan``
    (parameter object -> :class:`~dganalysis.studies.plans.Plan`) and ``design`` (parameter object -> its claims;
    ``None``: it tests no claim)."""

    params: type[NotebookParams]
    plan: Callable[[Any], Plan]
    design: Callable[[Any], list[ClaimDesign]] | None = None

    @property
    def name(self) -> str:
        """The notebook's name (``07_worst_case``)."""
        return self.params.notebook

    def claims(self, params: NotebookParams) -> list[ClaimDesign]:
        """The claims the study tests under ``params`` ([] without a design)."""
        return [] if self.design is None else self.design(params)


#: notebook name -> its study
STUDIES: Registry[Study] = Registry("study")
for _s in (
    Study(p.QuickstartParams, plans.quickstart_plan),
    Study(p.DatasetConstructionParams, plans.dataset_construction_plan),
    Study(p.BinarizationParams, plans.binarization_plan, d.binarization_design),
    Study(p.DynamicDGParams, plans.dynamic_dg_plan, d.dynamic_dg_design),
    Study(p.LeakageOracleParams, plans.leakage_oracle_plan, d.leakage_oracle_design),
    Study(p.LeaderboardsParams, plans.leaderboards_plan, d.leaderboards_design),
    Study(p.ShiftEstimationParams, plans.shift_estimation_plan, d.shift_estimation_design),
    Study(p.WorstCaseParams, plans.worst_case_plan, d.worst_case_design),
    Study(p.AuditParams, plans.audit_plan),
):
    STUDIES.register(_s.name)(_s)


def study(notebook: str) -> Study:
    """The study of ``notebook`` (``07_worst_case``, or a run label ``07_worst_case@variant``); an unknown name
    raises :class:`~dganalysis.validation.ConfigError` with the closest names."""
    name = notebook.split("@", 1)[0] if isinstance(notebook, str) else notebook
    check_choice(name, STUDIES.names(), "notebook", func="study")
    return STUDIES.get(name)


def has_study(notebook: str) -> bool:
    """Whether ``notebook`` (or a run label of it) has a registered study."""
    return notebook.split("@", 1)[0] in STUDIES


def params_class(notebook: str) -> type[NotebookParams]:
    """The parameter class of ``notebook`` (``07_worst_case``, or a run label ``07_worst_case@variant``)."""
    return study(notebook).params


def build_params(notebook: str, params: Mapping[str, Any], where: str | None = None) -> NotebookParams:
    """``notebook``'s parameter object from ``params`` (a YAML's values, names the notebook does not know fail);
    errors start with ``where`` (default: the notebook's name)."""
    return params_class(notebook).from_mapping(params, where or notebook)


def plan_for(notebook: str, params: Mapping[str, Any]) -> Plan:
    """``notebook``'s plan from ``params`` (name -> value, e.g. a profile's YAML with the injected folders; names
    not given take the parameters cell's defaults): the parameter object is built and checked
    (:func:`build_params`), then passed to the study's plan."""
    s = study(notebook)
    check_mapping(params, "params", func="plan_for", what="a mapping of parameter names to values")
    return s.plan(build_params(notebook, params))


def design_for(notebook: str, params: NotebookParams) -> list[ClaimDesign]:
    """``notebook``'s claims under ``params`` (its parameter object); [] for a study that tests no claim."""
    s = study(notebook)
    if not isinstance(params, s.params):
        raise ConfigError(f"design_for: parameter 'params': expected a {s.params.__name__}, got {params!r:.80}")
    return s.claims(params)


def merge_overrides(notebook: str, base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` parameters with a variant's ``overrides`` on top. A parameter is replaced whole, except a nested
    sweep (:meth:`~dganalysis.studies.params.NotebookParams.sweep_names`) given as a mapping on both sides: there
    the variant's keys replace those keys only (``oracle: {steps: 15000}`` keeps the base's ``oracle.dataset``,
    ``oracle.splits``, ...); each key's value (a list, ``dataset_kwargs``) is still replaced whole, so no setting of
    the base's dataset leaks into a variant's other dataset."""
    nested = set(params_class(notebook).sweep_names()) if has_study(notebook) else set()
    out = {**base, **overrides}
    for name in nested & set(base) & set(overrides):
        if isinstance(base[name], Mapping) and isinstance(overrides[name], Mapping):
            out[name] = {**base[name], **overrides[name]}
    return out
