"""Drop-ins for DomainBed's scripts: ``python -m dganalysis.scripts.<name>`` takes what ``domainbed.scripts.<name>``
takes (Gulrajani & Lopez-Paz 2021, https://github.com/facebookresearch/DomainBed, ``domainbed/scripts/``).

* :mod:`~dganalysis.scripts.train` — one run, DomainBed's flags; ``domainbed_exact`` mode where it replays DomainBed's
  draws, our engine elsewhere (``--mode auto``, the default);
* :mod:`~dganalysis.scripts.sweep` — ``launch`` / ``delete_incomplete``, DomainBed's job list and folder names; every run
  checked before any is launched, failed runs listed;
* :mod:`~dganalysis.scripts.collect_results` — DomainBed's tables, byte for byte, then a pointer to the audit;
* :mod:`~dganalysis.scripts.list_top_hparams` — DomainBed's ranking of hyperparameters per selection;
* :mod:`~dganalysis.scripts.download` — DomainBed's datasets from its sources into its folders, resumably, checksums
  checked where published, every dataset by default (``--datasets`` for some, ``--dry-run`` to list).

``docs/domainbed.md`` ("Switching from DomainBed") lists what is identical, what differs on purpose, and which test
shows each.
"""
