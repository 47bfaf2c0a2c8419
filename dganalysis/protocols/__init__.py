"""Evaluation protocols of the seed papers.

* :mod:`~dganalysis.protocols.dynamic` — swap test and Domain+ (Zhang, Zhang & Liu Sec. 4.2–4.3);
* :mod:`~dganalysis.protocols.binarization` — grayscale vs binary tables (Zhang, Zhang & Liu Sec. 4.1);
* :mod:`~dganalysis.protocols.leaderboard` — ranks, ΔR, Spearman (Yu et al. (2024) Table 5), ranking score (Ye et al. (2022));
* :mod:`~dganalysis.protocols.oracle_k` — oracle-selection leakage vs number of test domains (Yu et al. (2024) Table 4);
* ``leakage`` — pretraining leakage, LP vs FT (Yu et al. (2024) Sec. 2.1; another module owner).

Submodules are imported on use (``from dganalysis.protocols import dynamic``) so matplotlib/statsmodels load lazily.
"""
