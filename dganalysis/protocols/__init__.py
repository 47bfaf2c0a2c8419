"""Evaluation protocols of the seed papers.

* :mod:`~dganalysis.protocols.dynamic` — swap test and Domain+ (seed 000 Sec. 4.2–4.3);
* :mod:`~dganalysis.protocols.binarization` — grayscale vs binary tables (seed 000 Sec. 4.1);
* :mod:`~dganalysis.protocols.leaderboard` — ranks, ΔR, Spearman (seed 002 Table 5), ranking score (seed 003);
* :mod:`~dganalysis.protocols.oracle_k` — oracle-selection leakage vs number of test domains (seed 002 Table 4);
* ``leakage`` — pretraining leakage, LP vs FT (seed 002 Sec. 2.1; another module owner).

Submodules are imported on use (``from dganalysis.protocols import dynamic``) so matplotlib/statsmodels load lazily.
"""
