"""Shared test set-up."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread for the test (tiny models; the suite runs on 2 xdist workers), restored afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
