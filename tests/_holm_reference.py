"""statsmodels' Holm adjustment as the tests' reference, without its per-call garbage collection.

``statsmodels.stats.multitest.multipletests(..., method="holm")`` calls ``gc.collect()`` on every call; in a test
process holding many objects that costs up to a second a call and cannot change a number, so the reference runs with
``gc.collect`` stubbed for the duration of the call.
"""

from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests


def statsmodels_holm(p: np.ndarray) -> np.ndarray:
    """The Holm-adjusted p-values of ``multipletests(p, method="holm")``."""
    collect = gc.collect
    gc.collect = lambda *args, **kwargs: 0
    try:
        return multipletests(p, method="holm")[1]
    finally:
        gc.collect = collect
