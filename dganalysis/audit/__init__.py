"""``dganalysis audit``: a calibrated trust verdict on domain-generalization results — a sweep directory (ours or
DomainBed's) or a published table (DomainBed's ``collect_results --latex`` output, or a CSV).

Modules: :mod:`~dganalysis.audit.published` (published tables → cells), :mod:`~dganalysis.audit.inputs` (sweeps → cells),
:mod:`~dganalysis.audit.claims` (per-dataset claims against a baseline: the calibrated Welch or paired test,
TOST, one step-down per family, rounding-safe; the statistics live in :mod:`dganalysis.stats`),
:mod:`~dganalysis.audit.aggregate` (across datasets: probability of improvement, IQM, Wilcoxon, Friedman/Nemenyi,
Bayesian signed-rank), :mod:`~dganalysis.audit.coverage` (the measured coverage of the reported intervals), :mod:`~dganalysis.audit.reference` (a sweep against a published table),
:mod:`~dganalysis.audit.run` (the whole audit), :mod:`~dganalysis.audit.words` (its outcome in words and counts, built
once with the result), :mod:`~dganalysis.audit.contract` (the JSON contract), :mod:`~dganalysis.audit.outputs` (HTML,
CSV, LaTeX, JSON, the figures) and
:mod:`~dganalysis.audit.cli` (the ``audit`` verb). See docs/audit.md.
"""
