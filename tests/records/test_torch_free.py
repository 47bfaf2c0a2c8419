"""Reading a store does not import torch: ``dganalysis.records`` sits below ``dganalysis.train`` (the draw check it
runs on our jobs lives in the torch-free :mod:`dganalysis.job_draw`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.project.test_import_graph import PACKAGE, import_edges

TORCH_FREE = ("dganalysis.records", "dganalysis.job_draw", "dganalysis.job")


def _record(step: int) -> dict:
    r = {"args": {"dataset": "PACS", "algorithm": "ERM", "test_envs": [0], "hparams_seed": 0, "trial_seed": 0,
                  "holdout_fraction": 0.2}, "step": step, "loss": 1.0 + step / 100}
    for i in range(4):
        r[f"env{i}_in_acc"], r[f"env{i}_out_acc"] = 0.1 * i + 0.01 * step, 0.1 * i + 0.02 * step
    return r


def _job(root: Path, name: str, spec: dict | None) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "results.jsonl").write_text("".join(json.dumps(_record(s)) + "\n" for s in (0, 5, 10)))
    (d / "done").write_text("")
    if spec is not None:
        (d / "spec.json").write_text(json.dumps(spec))


def test_loading_a_store_does_not_import_torch(tmp_path):
    _job(tmp_path / "domainbed", "run0", None)  # DomainBed's layout: results.jsonl and done
    _job(tmp_path / "ours", "job0", {})  # ours: spec.json too (records without hparams are not judged)
    code = ("import sys, dganalysis.records as r\n"
            f"n = [len(r.load(p, progress=False)) for p in {[str(tmp_path / 'domainbed'), str(tmp_path / 'ours')]!r}]\n"
            "__import__('importlib').import_module('dganalysis.job_draw')\n"
            "print(n, 'torch' in sys.modules, [m for m in sys.modules if m.startswith('dganalysis.train')])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=PACKAGE.parent).stdout.split("\n")[0]
    assert out == "[24, 24] False []", out


def test_records_does_not_import_train():
    edges = import_edges(PACKAGE)
    above = {m: sorted(t for t in out if t == "dganalysis.train" or t.startswith("dganalysis.train."))
             for m, out in edges.items() if m.startswith(TORCH_FREE)}
    assert not any(above.values()), above
