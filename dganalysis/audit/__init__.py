"""``dganalysis audit``: a calibrated trust verdict on domain-generalization results — a sweep directory (ours or
DomainBed's) or a published table (DomainBed's ``collect_results --latex`` output, or a CSV).

Modules, in the order an audit runs them (:mod:`~dganalysis.audit.run`, the whole audit): read —
:mod:`~dganalysis.audit.inputs` (every input checked and read), :mod:`~dganalysis.audit.published` (published tables →
cells), :mod:`~dganalysis.audit.sweep_cells` (a sweep's selections → per-trial dataset averages, cells and pairs);
analyse — :mod:`~dganalysis.audit.claims` (per-dataset claims against a baseline: the calibrated Welch or paired
test, TOST, one step-down per family, rounding-safe; and the reproduction check against a published table; the
statistics live in :mod:`dganalysis.stats`), :mod:`~dganalysis.audit.aggregate` (across datasets: probability of
improvement, IQM, Bayesian signed-rank), :mod:`~dganalysis.audit.coverage` (the measured coverage of the reported
intervals), :mod:`~dganalysis.audit.ranks` (every pair of algorithms: Wilcoxon, Friedman/Nemenyi),
:mod:`~dganalysis.audit.sweep_analyses` (what only a raw sweep allows); say — :mod:`~dganalysis.audit.words` (the
outcome in words and counts, built once with the result); write — :mod:`~dganalysis.audit.contract` (the JSON
contract), :mod:`~dganalysis.audit.outputs` (HTML, CSV, LaTeX, JSON, the figures, made first and written together)
and :mod:`~dganalysis.audit.cli` (the ``audit`` verb). See docs/audit.md.
"""
