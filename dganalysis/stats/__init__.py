"""Statistical tests and corrections the audit and the protocols share.

* :mod:`~dganalysis.stats.behrens_fisher` — the two-sample difference test whose size holds for every variance
  ratio (Welch's statistic with its p-value calibrated to the worst case over the unknown ratio), its simultaneous
  intervals, and the exact size and power integrals it rests on;
* :mod:`~dganalysis.stats.ttests` — Welch's and the paired t-test over trials, as the protocols' papers use them;
* :mod:`~dganalysis.stats.multiplicity` — Holm's step-down, the joint step-down over each claim's difference and
  equivalence hypotheses, and the protocols' named corrections;
* :mod:`~dganalysis.stats.planning` — trials per arm needed to decide an effect of ±rope, or to show equivalence,
  and the t-tests' trials for a standardised effect.
"""
