"""LARS's input checks (its updates against DomainBed's: tests/reference/test_domainbed_lars.py)."""

from __future__ import annotations

import pytest
import torch

from dganalysis.training.lars import LARS


def test_lars_rejects_negative_settings():
    with pytest.raises(ValueError, match="LARS: lr must be ≥ 0"):
        LARS([torch.nn.Parameter(torch.ones(2))], lr=-1.0)
