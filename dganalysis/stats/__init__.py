"""Statistical tests and corrections the audit and the protocols share.

* :mod:`~dganalysis.stats.behrens_fisher` — the two-sample difference test whose size holds for every variance
  ratio (Welch's statistic with its p-value calibrated to the worst case over the unknown ratio, two- and
  one-sided), Welch–Satterthwaite's degrees of freedom, its simultaneous intervals, and the exact size and power
  integrals it rests on;
* :mod:`~dganalysis.stats.ttests` — Welch's, the paired and the one-sample t-test over trials, as the protocols'
  papers use them, and the TOST's p-value of equivalence within a rope;
* :mod:`~dganalysis.stats.pairing` — the one rule deciding paired vs unpaired (≥ 2 shared trial seeds, paired on
  those only) for the audit and the protocols;
* :mod:`~dganalysis.stats.multiplicity` — Holm's step-down, the joint step-down over each claim's difference and
  equivalence hypotheses, and the protocols' named corrections;
* :mod:`~dganalysis.stats.planning` — trials per arm needed to decide an effect of ±rope, or to show equivalence,
  the t-tests' trials for a standardised effect, a paired t-test's power at a stated d_z, and the d_z behind a
  pilot's interval, power table or Holm decision;
* :mod:`~dganalysis.stats.rank_tests` — Friedman / Nemenyi over blocks (critical differences, bootstrap rank
  intervals), the Wilcoxon signed-rank test, and Spearman's ρ with its exact permutation p-value for a few items;
* :mod:`~dganalysis.stats.improvement` — probability of improvement, the IQM of the differences to a baseline and
  their intervals, and the Bayesian signed-rank posterior;
* :mod:`~dganalysis.stats.moments` — the standard error of a mean (SD / √n), from the values or from an SD and n;
* :mod:`~dganalysis.stats.intervals` — exact binomial with ties, trimmed-mean t, Student t over replicates, the
  paired percentile bootstrap, and the expected-max curve of a search (Dodge et al.'s eq. 1 and the unbiased
  estimator) with its intervals.

Each computation exists once, here: the audit (:mod:`dganalysis.audit`) and the protocols (:mod:`dganalysis.protocols`)
call these; what is about claims, inputs and reports stays with them.
"""
