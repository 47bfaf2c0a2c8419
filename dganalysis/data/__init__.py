"""Datasets: the DomainDataset container, a registry, and builders/importers."""

from dganalysis.data.dataset import Domain, DomainDataset, concat_domains
from dganalysis.data.registry import available, load_dataset, register_dataset

__all__ = ["Domain", "DomainDataset", "available", "concat_domains", "load_dataset", "register_dataset"]
