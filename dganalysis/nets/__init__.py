"""Networks: featurizers and heads."""

from dganalysis.nets.featurizers import build_classifier, build_featurizer

__all__ = ["build_classifier", "build_featurizer"]
