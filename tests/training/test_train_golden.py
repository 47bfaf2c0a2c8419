"""``run_job`` writes the same records as when the golden file was made: a guard for refactors of ``train.py``.

Four short jobs on the tiny simulated dataset (``tests/_tiny.py``; 12 steps, checkpoints at steps 0, 5, 10 and
the last, 11): ERM, ERM with the batched random-affine augmentation (the sampling generator's randomness), Mixup
(λ from numpy's global generator inside ``update``) and RSC (torch's global generator inside ``update``), one with
``save_model``. Compared with ``tests/fixtures/run_job_golden.json``: each job's id and ``spec.json`` byte for byte; its ``results.jsonl``
records minus the wall-clock and machine fields (:data:`VOLATILE`), every non-float value exactly and every float
within :func:`float_tolerance`; and a fingerprint of the saved weights (per tensor: float64 sum, L2 norm and two
fixed random projections) within :func:`weights_tolerance`. fp32 and one torch thread, so the numbers do not depend
on the CPU's bf16 support. Why tolerances, not bytes: this project's CPUs (AMD with AVX-512, Intel with AMX) run
other fp32 GEMM kernels, which sum in other orders, so losses and weights agree only to the last bits (a byte hash
of the weights failed on one kind).

A change that is *meant* to change records or ids (a ``DRAW_VERSION`` bump, new hparam keys, a new record field)
regenerates the golden file with one line, then review its diff::

    DGA_REGEN_GOLDEN=1 .venv/bin/python -m pytest -q -p no:cacheprovider -n 0 tests/training/test_train_golden.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from _tiny import FAST_HPARAMS, TINY

from dganalysis import io
from dganalysis.sweep import Job
from dganalysis.training.train import run_job

GOLDEN = Path(__file__).parent.parent / "fixtures" / "run_job_golden.json"
#: record fields that depend on the clock or the machine, not on the computation (``provenance``: versions, commit,
#: CPU; spec.json's too is compared without it, see :func:`_spec_text`)
VOLATILE = ("elapsed", "step_time", "host", "mem_gb", "provenance")

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


#: float32 unit roundoff
EPS32 = float(torch.finfo(torch.float32).eps)
#: the longest reduction in these jobs' forward and backward passes (MLP width 256): the number of float32 terms
#: whose summation order a GEMM kernel chooses
REDUCTION = 256


def float_tolerance(steps: int) -> float:
    """Relative tolerance of a record's float (loss, penalty): a sum of ``REDUCTION`` fp32 terms taken in another
    order differs by ~``√REDUCTION · eps32`` relative (the probabilistic rounding bound, Higham 2002, §3.1), and
    the ``steps`` updates add their differences: 12 steps give 2.3e-5; measured between an AMD and an Intel-AMX
    CPU: ≤ 1.1e-7. Accuracies are ratios of counts and compare exactly (a logit tie would have to flip)."""
    return steps * REDUCTION ** 0.5 * EPS32


def weights_tolerance(norm: float, numel: int, lr: float, steps: int) -> float:
    """Absolute tolerance of one fingerprint entry of a tensor (L2 ``norm``, ``numel`` weights) after ``steps``
    Adam steps at ``lr``. Two parts: storing each weight rounds it by ≤ eps32 relative, so an entry (a sum or a
    projection of the weights) moves by ~eps32·norm (factor 8 of margin); and the training moved the tensor by at
    most ``lr · steps · √numel`` (Adam moves a weight by ~``lr`` a step, factor 3 for its bias-corrected first
    steps), of which :func:`float_tolerance` is summation-order error. For the 256×256 weights here: ~2e-5.
    The golden file was written on an Intel-AMX CPU (records and fingerprint); an AMD CPU's losses differed from
    it by ≤ 1.1e-7 relative when measured, well inside :func:`float_tolerance`."""
    return 8 * EPS32 * norm + 3 * float_tolerance(steps) * lr * steps * numel ** 0.5


def _fingerprint(path: Path) -> dict[str, dict]:
    """Per tensor: its size and [sum, L2 norm, projections on two fixed random unit vectors], in float64."""
    state = torch.load(path, map_location="cpu", weights_only=False)["state_dict"]
    out = {}
    for k in sorted(state):
        w = state[k].double().flatten()
        r = torch.randn(2, w.numel(), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        r /= r.norm(dim=1, keepdim=True)
        out[k] = {"numel": w.numel(), "values": [float(w.sum()), float(w.norm()), *(float(v) for v in r @ w)]}
    return out


def _compare(got, want, rtol: float, where: str) -> None:
    """Same structure and non-float values; accuracies equal; other floats within ``rtol`` (absolute below 1)."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            _compare(got[k], want[k], rtol, f"{where}.{k}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {got!r} != {want!r}"
        for i, (g, w) in enumerate(zip(got, want)):
            _compare(g, w, rtol, f"{where}[{i}]")
    elif isinstance(want, float):
        assert isinstance(got, float), f"{where}: {got!r} is not a float like {want!r}"
        if where.endswith("_acc"):
            assert got == want, f"{where}: accuracy {got!r} != {want!r}"
        else:
            assert abs(got - want) <= rtol * max(1.0, abs(want)), f"{where}: {got!r} != {want!r} (rtol {rtol:.2g})"
    else:
        assert got == want, f"{where}: {got!r} != {want!r}"


def _spec_text(path: Path) -> str:
    """``spec.json``'s bytes without its ``provenance`` (which says where and under what versions it ran): the
    file re-encoded as :func:`dganalysis.io.write_json` writes it, so the rest still compares byte for byte."""
    spec = json.loads(path.read_text())
    assert isinstance(spec.pop("provenance"), dict), f"{path}: no provenance"
    return json.dumps(spec, indent=2, sort_keys=True) + "\n"


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
        got[name] = {"job_id": job.job_id, "spec": _spec_text(d / "spec.json"), "records": lines,
                     "model_fingerprint": _fingerprint(d / "model.pt") if job.save_model else None}
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
        steps = _jobs()[name].steps
        for i, (g, w) in enumerate(zip(got[name]["records"], want[name]["records"])):
            _compare(json.loads(g), json.loads(w), float_tolerance(steps), f"{name}: record {i}")
        want_fp, got_fp = want[name]["model_fingerprint"], got[name]["model_fingerprint"]
        assert (got_fp is None) == (want_fp is None), f"{name}: saved model present/absent changed"
        if want_fp is None:
            continue
        assert sorted(got_fp) == sorted(want_fp), f"{name}: state dict keys changed"
        lr = json.loads(want[name]["records"][-1])["hparams"]["lr"]
        for k, w in want_fp.items():
            assert got_fp[k]["numel"] == w["numel"], f"{name}: {k} changed size"
            tol = weights_tolerance(w["values"][1], w["numel"], lr, steps)
            diff = max(abs(a - b) for a, b in zip(got_fp[k]["values"], w["values"]))
            assert diff <= tol, f"{name}: weights {k} moved by {diff:.3g} (tolerance {tol:.3g})"
