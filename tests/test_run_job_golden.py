"""``run_job`` writes the same records as when the golden file was made: a guard for refactors of ``train.py``.

Four short jobs on the tiny simulated dataset (``tests/_tiny.py``; 12 steps, checkpoints at steps 0, 5, 10 and
the last, 11): ERM, ERM with the batched random-affine augmentation (the sampling generator's randomness), Mixup
(λ from numpy's global generator inside ``update``) and RSC (torch's global generator inside ``update``), one with
``save_model``. Compared with ``tests/data/run_job_golden.json``: each job's id, its ``spec.json``, its
``results.jsonl`` lines minus the wall-clock and machine fields (:data:`VOLATILE`), byte for byte, and the sha256 of
the saved state dict. fp32 and one torch thread, so the numbers do not depend on the CPU's bf16 support.

A change that is *meant* to change records or ids (a ``DRAW_VERSION`` bump, new hparam keys, a new record field)
regenerates the golden file with one line, then review its diff::

    DGA_REGEN_GOLDEN=1 .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 tests/test_run_job_golden.py
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis import io
from dganalysis.sweep import Job
from dganalysis.train import run_job

GOLDEN = Path(__file__).parent / "data" / "run_job_golden.json"
#: record fields that depend on the clock or the machine, not on the computation
VOLATILE = ("elapsed", "step_time", "host", "mem_gb")

pytestmark = pytest.mark.usefixtures("one_thread")


def _jobs() -> dict[str, Job]:
    common = dict(dataset=TINY, train_domains=["d0", "d1"], test_domains=["d2"], steps=12, checkpoint_freq=5)
    return {
        "erm": Job(algorithm="ERM", hparams_overrides=FAST_HPARAMS, save_model=True, **common),
        "erm_augment": Job(algorithm="ERM", hparams_overrides={**FAST_HPARAMS, "augment": True}, hparams_seed=1,
                           **common),
        "mixup": Job(algorithm="Mixup", hparams_overrides=FAST_HPARAMS, hparams_seed=2, trial_seed=1, **common),
        "rsc": Job(algorithm="RSC", hparams_overrides=FAST_HPARAMS, **common),
    }


def _state_sha256(path: Path) -> str:
    state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
    h = hashlib.sha256()
    for k in sorted(state):
        h.update(k.encode())
        h.update(state[k].float().numpy().tobytes())
    return h.hexdigest()


def _observed(tmp_path: Path) -> dict:
    got = {}
    for name, job in _jobs().items():
        d = run_job(job, tmp_path / name, device="cpu", precision="fp32")
        lines = []
        for line in (d / "results.jsonl").read_text().splitlines():
            rec = json.loads(line)
            for k in VOLATILE:
                rec.pop(k, None)
            rec["args"].pop("output_dir", None)  # the job folder: a tmp path
            lines.append(json.dumps(rec))  # key order kept: the file's own order is part of its bytes
        got[name] = {"job_id": job.job_id, "spec": (d / "spec.json").read_text(), "records": lines,
                     "model_sha256": _state_sha256(d / "model.pt") if job.save_model else None}
    return got


def test_run_job_records_match_the_golden_file(tmp_path):
    got = _observed(tmp_path)
    if os.environ.get("DGA_REGEN_GOLDEN") == "1":
        io.write_text(GOLDEN, json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"regenerated {GOLDEN} (DGA_REGEN_GOLDEN=1); review its diff and commit it")
    if not GOLDEN.is_file():
        pytest.fail(f"{GOLDEN} missing: create it with DGA_REGEN_GOLDEN=1 (see this file's docstring)")
    want = json.loads(GOLDEN.read_text())
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name]["job_id"] == want[name]["job_id"], f"{name}: job hash changed"
        assert got[name]["spec"] == want[name]["spec"], f"{name}: spec.json changed"
        assert len(got[name]["records"]) == len(want[name]["records"]), f"{name}: number of checkpoint records"
        for i, (g, w) in enumerate(zip(got[name]["records"], want[name]["records"])):
            assert g == w, f"{name}: record {i} differs from {GOLDEN.name}"
        assert got[name]["model_sha256"] == want[name]["model_sha256"], f"{name}: saved weights changed"
