"""Worst-case (Wasserstein DRO) evaluation of DG models and its use in training (the WC-DG poster).

- :func:`worst_case_curve` / :func:`worst_case_samples`: worst-case loss vs ρ in the representation space.
- :func:`input_worst_case_curve` / :func:`compare_input_representation`: the input-space version.
- :func:`robust_surrogate` / :func:`worst_case_penalty`: the differentiable training objective (WCDG).
"""

from dganalysis.dro.input_space import compare_input_representation, input_worst_case_curve
from dganalysis.dro.losses import LOSSES, cross_entropy, get_loss, multiclass_hinge, zero_one
from dganalysis.dro.training import robust_surrogate, worst_case_penalty
from dganalysis.dro.worst_case import (
    DualConfig,
    WorstCaseSamples,
    representation_scale,
    worst_case_curve,
    worst_case_samples,
    zero_one_curve,
)

__all__ = [
    "LOSSES", "DualConfig", "WorstCaseSamples", "compare_input_representation", "cross_entropy", "get_loss",
    "input_worst_case_curve", "multiclass_hinge", "representation_scale", "robust_surrogate", "worst_case_curve",
    "worst_case_penalty", "worst_case_samples", "zero_one", "zero_one_curve",
]
