"""Training one job: its spec and id (:mod:`~dganalysis.training.job`), its hyperparameters as DomainBed draws them
(:mod:`~dganalysis.training.hparams`, :mod:`~dganalysis.training.job_draw`), the loop that trains it and writes its
records (:mod:`~dganalysis.training.train`; DomainBed's exact draws in :mod:`~dganalysis.training.exact`), the
optimisers and schedules the algorithms use (:mod:`~dganalysis.training.optim`, :mod:`~dganalysis.training.lars`)
and the CPU memory setting a job runs under (:mod:`~dganalysis.training.speed`).

Importing the package imports nothing: :mod:`~dganalysis.training.job` and :mod:`~dganalysis.training.hparams` stay
torch-free for the readers of stores and the grids of sweeps.
"""
