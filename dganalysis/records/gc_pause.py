"""Python's cyclic garbage collector paused around work that makes millions of objects and no cycles among them:
reading a sweep into the columnar index (:mod:`dganalysis.records.index`), selecting on it
(:mod:`dganalysis.records.indexed`), importing the statistics stack (`dganalysis audit`).

The collector runs a young collection every 700 net allocations of container objects and a full one now and then;
while a sweep of 33,600 jobs is parsed, each pass walks the millions of objects already made, and their sum was
~5-10% of a first index build (measured on 6,000 jobs). :func:`paused` turns it off, and on leaving promotes every
object to the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``: nothing is scanned, nothing stays frozen).
Without that step the objects made while paused sit in the youngest generation, and the next young collections,
then a full one, walk all of them once more: ~0.25 of a 3 CPU-s first `dganalysis collect`. Cycles made inside, if
any, are found by the next full collection, as they would have been.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off inside (a nested use leaves it off), on again after, with what was made promoted to the
    oldest generation (see the module docstring). A collector the caller had turned off stays off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
