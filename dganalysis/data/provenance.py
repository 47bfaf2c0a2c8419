"""One line saying what data a number rests on: real (which set) or SIMULATED, and each test domain's size.

Used by every findings row (:func:`dganalysis.studies.findings.replace_findings` ``data=``), so the index summary says on each
row whether the images were real or simulated and how many images each test domain had. A dataset is
SIMULATED when its builder says so in ``info`` (``simulated`` or ``writers_simulated``, e.g. PaHCC's default
handwriting); otherwise its images are real and the set is named from ``info["source"]`` (up to its first ``(`` or
``:``), e.g. "Fashion-MNIST", "scikit-learn digits", "PaHCC".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dganalysis.data.dataset import DomainDataset
from dganalysis.validation import ConfigError


def is_simulated(ds: DomainDataset) -> bool:
    """Whether ``ds`` holds simulated images (its builder's ``info`` flags)."""
    return bool(ds.info.get("simulated") or ds.info.get("writers_simulated"))


def source_name(ds: DomainDataset) -> str:
    """The image set's short name from ``info["source"]`` (the dataset name when there is none)."""
    src = str(ds.info.get("source") or ds.name)
    return re.split(r"\s*[(:]", src, maxsplit=1)[0].strip() or ds.name


def data_label(ds: DomainDataset, test_domains: Sequence[str], note: str = "") -> str:
    """``"real Fashion-MNIST (RotatedFashionMNIST, 3,500 a domain, subsampled), 16×16 px; images per test domain: 15: 3,500, …"``.

    ``test_domains`` must name domains of ``ds`` (an unknown one is an error listing the known ones); ``note`` is
    appended (e.g. which split a number was reported on).
    """
    names = ds.domain_names
    unknown = [d for d in test_domains if d not in names]
    if unknown:
        raise ConfigError(f"test_domains {unknown} not in {ds.name}'s domains {names}")
    kind = "SIMULATED" if is_simulated(ds) else "real"
    extra = f", {ds.info['n_per_domain']:,} a domain, subsampled" if ds.info.get("n_per_domain") else ""
    size = "×".join(str(s) for s in ds.input_shape[1:])
    sizes = ", ".join(f"{d}: {len(ds[d]):,}" for d in test_domains)
    return f"{kind} {source_name(ds)} ({ds.name}{extra}), {size} px; images per test domain: {sizes}" + (f"; {note}" if note else "")
