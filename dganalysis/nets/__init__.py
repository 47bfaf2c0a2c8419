"""Networks: featurizers and heads."""

from dganalysis.nets.featurizers import build_classifier, build_featurizer, resolve_featurizer_name

__all__ = ["build_classifier", "build_featurizer", "resolve_featurizer_name"]
