"""The papers' findings, each a set of claims decided by the audit's engine (:mod:`dganalysis.findings.engine`),
with designs from the simulated power of the decision itself (:mod:`dganalysis.findings.power`)."""
