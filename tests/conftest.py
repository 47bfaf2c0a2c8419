"""Shared test set-up."""

from __future__ import annotations

import os

import pytest
import torch

from dganalysis import threads


@pytest.fixture
def one_thread():
    """One torch thread for the test (tiny models; the suite runs on 2 xdist workers), restored afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


#: test files that take minutes, in this order first: the suite runs on two workers (``--dist loadfile
#: --no-loadscope-reorder``, the README's command), which then start on the two halves of the paper smoke run and never
#: end with one worker alone on a long file while the other idles
SLOW_FIRST = ("tests/studies/smoke/test_paper_", "notebooks/", "tests/reference/test_domainbed_train_e2e.py",
              "tests/sweep/test_store_concurrency.py", "tests/project/test_paper_profile.py", "tests/project/test_docs.py")


def pytest_configure(config):
    """Under pytest-xdist each worker takes its share of the cores, as a sweep worker does
    (:func:`dganalysis.threads.launcher_share`): torch's threads in the worker and ``$DGANALYSIS_THREADS`` for what
    it starts (notebook kernels, the smoke run's sweeps). Without it two workers each run two-thread jobs on two cores
    and their OpenMP teams wait on one another (the paper smoke run took ~3× as long). A count set by the user is kept;
    tests of the thread rule clear the variable themselves."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or os.environ.get(threads.THREADS_ENV):
        return
    share = threads.launcher_share(int(workers))
    os.environ[threads.THREADS_ENV] = str(share)
    torch.set_num_threads(share)


def pytest_collection_modifyitems(config, items):
    """Long files first (:data:`SLOW_FIRST`), the rest in collection order (a stable sort)."""

    def rank(item) -> int:
        return next((i for i, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix)), len(SLOW_FIRST))

    items.sort(key=rank)
