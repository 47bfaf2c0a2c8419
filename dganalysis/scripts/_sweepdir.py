"""What DomainBed's ``reporting.load_records`` sees in a sweep output dir, for the drop-in scripts' order and labels.

DomainBed's ``collect_results`` and ``list_top_hparams`` (Gulrajani & Lopez-Paz 2021, ``domainbed/scripts/``) read
``results.jsonl`` of every entry of ``os.listdir(input_dir)`` and keep the records in that order. The numbers they
print come from model selection, which the drop-ins take from :func:`dganalysis.records.selection.select`; this module gives
the rest: the record count, the algorithms' and datasets' row/column order, the order in which runs are grouped
(it decides the order of the floats averaged, hence their last bits), and each run's recorded ``output_dir``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dganalysis.records.read import DOMAINBED_ENVIRONMENTS
from dganalysis.training.hparams import DOMAINBED_DATASETS
from dganalysis.validation import ConfigError

#: DomainBed's ``algorithms.ALGORITHMS`` (b93c22a), the row order of its tables; others follow in order of appearance.
DOMAINBED_ALGORITHMS = (
    "ERM", "ERMPlusPlus", "Fish", "IRM", "GroupDRO", "Mixup", "MLDG", "CORAL", "MMD", "DANN", "CDANN", "MTL",
    "SagNet", "ARM", "VREx", "RSC", "SD", "ANDMask", "SANDMask", "IGA", "SelfReg", "Fishr", "TRM", "IB_ERM",
    "IB_IRM", "CAD", "CondCAD", "Transfer", "CausIRL_CORAL", "CausIRL_MMD", "EQRM", "RDM", "ADRMX", "URM",
)

#: (trial_seed, dataset, algorithm, test_env): one group of DomainBed's ``reporting.get_grouped_records``
Group = tuple[int, str, str, int]


@dataclass
class Run:
    """One entry of the sweep dir holding records: its folder name, the ``args`` and ``hparams`` of its first
    record, and how many records (lines) it holds."""

    name: str
    args: dict[str, Any]
    n_records: int
    hparams: dict[str, Any] = field(default_factory=dict)


@dataclass
class SweepDir:
    """The runs of a DomainBed sweep output dir in ``os.listdir`` order (what ``load_records`` iterates)."""

    path: Path
    runs: list[Run] = field(default_factory=list)

    @property
    def n_records(self) -> int:
        """DomainBed's "Total records": every line of every ``<entry>/results.jsonl``."""
        return sum(r.n_records for r in self.runs)

    def algorithms(self) -> list[str]:
        """Row order: DomainBed's algorithms first, in its order, then the others as they first appear."""
        seen = list(dict.fromkeys(str(r.args.get("algorithm")) for r in self.runs))
        return [a for a in DOMAINBED_ALGORITHMS if a in seen] + [a for a in seen if a not in DOMAINBED_ALGORITHMS]

    def datasets(self) -> list[str]:
        """The datasets DomainBed tabulates (its own only), in its order."""
        seen = {str(r.args.get("dataset")) for r in self.runs}
        return [d for d in DOMAINBED_DATASETS if d in seen]

    def groups(self) -> dict[Group, int]:
        """Each group of ``get_grouped_records`` → its position (groups come in order of first appearance)."""
        order: dict[Group, int] = {}
        for r in self.runs:
            for env in r.args.get("test_envs") or []:
                key = (r.args.get("trial_seed"), r.args.get("dataset"), r.args.get("algorithm"), env)
                order.setdefault(key, len(order))
        return order


def read_sweep_dir(path: str | Path, script: str) -> SweepDir:
    """The runs under ``path`` as DomainBed lists them; ``script`` names the caller in errors."""
    root = Path(path)
    if not root.is_dir():
        what = "does not exist" if not root.exists() else "is a file, not a folder"
        raise ConfigError(f"{script}: --input_dir {path}: {what}; expected a sweep output dir (one folder per run "
                          f"holding results.jsonl)")
    out = SweepDir(root)
    for name in os.listdir(root):
        results = root / name / "results.jsonl"
        if not results.is_file():
            continue  # DomainBed's ``open`` fails and it moves on
        first = None
        n = 0
        with open(results, encoding="utf-8", errors="replace") as f:
            for line in f:
                if first is None:
                    first = line
                n += 1
        if first is None:
            continue
        try:
            record = json.loads(first)
            args, hparams = record.get("args") or {}, record.get("hparams") or {}
        except (ValueError, AttributeError):
            args, hparams = {}, {}
        out.runs.append(Run(name, args, n, hparams))
    return out


def env_index(dataset: str, domain: str) -> int | None:
    """DomainBed's env index of a domain name of one of its datasets (``None`` for another dataset)."""
    names = DOMAINBED_ENVIRONMENTS.get(dataset)
    if names is None:
        return None
    if domain in names:
        return names.index(domain)
    if domain.startswith("env") and domain[3:].isdigit():
        return int(domain[3:])
    return None
