"""Test-only algorithm for the shared-store tests: ERM that logs each training start to a ledger file.

``_EngineLedger`` appends ``start <torch seed> <pid>`` to ``$DGA_TEST_LEDGER`` at its first update and
``end <torch seed> <pid>`` at its last (the torch seed is the job's seed, :func:`dganalysis.training.train.job_seed`, so
the line names the job without any help from the store code under test) and sleeps ``$DGA_TEST_STEP_SLEEP`` seconds per step, so jobs last long enough to be killed
mid-job without using CPU. Importable by spawned processes as a file (``--import tests/_ledger.py``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch

from dganalysis.algorithms import register_algorithm
from dganalysis.algorithms.erm import ERM
from dganalysis.algorithms.registry import ALGORITHMS

LEDGER_FILE = str(Path(__file__).resolve())
LEDGER_ALG = "_EngineLedger"

if LEDGER_ALG not in ALGORITHMS:

    @register_algorithm(LEDGER_ALG)
    class _LedgerERM(ERM):
        """ERM that records its training start in ``$DGA_TEST_LEDGER`` and sleeps per step."""

        def update(self, minibatches, step):
            if step == 0:
                self._log("start")
            time.sleep(float(os.environ.get("DGA_TEST_STEP_SLEEP", "0")))
            out = super().update(minibatches, step)
            if step == int(self.hparams["steps"]) - 1:
                self._log("end")
            return out

        @staticmethod
        def _log(event: str) -> None:
            if os.environ.get("DGA_TEST_LEDGER"):
                with open(os.environ["DGA_TEST_LEDGER"], "a") as fh:
                    fh.write(f"{event} {torch.initial_seed()} {os.getpid()}\n")
