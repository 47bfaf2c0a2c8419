"""The study notebooks' machinery: profiles and their parameters, plans, the runner, findings, the index and report.

``dganalysis run`` (:mod:`dganalysis.studies.runner`) executes the notebooks with papermill from
``params/<profile>/<notebook>.yaml`` (:mod:`~dganalysis.studies.params` checks them; :mod:`~dganalysis.studies.plans`
lists each notebook's jobs; :mod:`~dganalysis.studies.dryrun` costs them), records each paper's finding
(:mod:`~dganalysis.studies.findings`) and writes the profile's ``index.md`` and ``report.html``
(:mod:`~dganalysis.studies.run_history`, :mod:`~dganalysis.studies.report`). The library below it (datasets,
algorithms, training, records, statistics, protocols) runs without notebooks.
"""
