"""Reading a store does not import torch: DomainBed's sweeps, our jobs without recorded ``hparams``, and our jobs with
them whose ``spec.json`` holds their id under today's hyperparameter-drawing rule (the id carries the rule's version,
:func:`dganalysis.training.job_draw.drawn_under_todays_rule`). ``dganalysis.records`` imports neither
``dganalysis.training.train`` nor anything that imports torch when it is imported.

One path does import torch, at the call: our job whose id is another drawing rule's (or whose spec holds no id) is
judged by drawing its hyperparameters again (:func:`dganalysis.records.store.check_draw`), and the draw is declared
on the algorithm classes (``HPARAMS`` on torch modules) and the registered dataset builders.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dganalysis.training.job import Job
from tests.project.test_import_graph import PACKAGE, import_edges

TORCH_FREE = ("dganalysis.records", "dganalysis.training.job_draw", "dganalysis.training.job")
#: a job spec of our engine, as ``spec.json`` holds it (without its ``job_id``)
SPEC = {"dataset": "PACS", "algorithm": "ERM", "train_domains": ["a"], "test_domains": ["b"]}
HPARAMS = {"batch_size": 32, "lr": 5e-5, "weight_decay": 0.0, "resnet_dropout": 0.0}


def _record(step: int, hparams: bool) -> dict:
    r = {"args": {"dataset": "PACS", "algorithm": "ERM", "test_envs": [0], "hparams_seed": 0, "trial_seed": 0,
                  "holdout_fraction": 0.2}, "step": step, "loss": 1.0 + step / 100}
    if hparams:
        r["hparams"] = HPARAMS
    for i in range(4):
        r[f"env{i}_in_acc"], r[f"env{i}_out_acc"] = 0.1 * i + 0.01 * step, 0.1 * i + 0.02 * step
    return r


def _job(root: Path, name: str, spec: dict | None, hparams: bool = False) -> None:
    d = root / name
    d.mkdir(parents=True)
    (d / "results.jsonl").write_text("".join(json.dumps(_record(s, hparams)) + "\n" for s in (0, 5, 10)))
    (d / "done").write_text("")
    if spec is not None:
        (d / "spec.json").write_text(json.dumps(spec))


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=PACKAGE.parent).stdout.split("\n")[0]


def test_loading_a_store_does_not_import_torch(tmp_path):
    _job(tmp_path / "domainbed", "run0", None, hparams=True)  # DomainBed's layout: results.jsonl (with hparams), done
    _job(tmp_path / "ours", "job0", {})  # ours: spec.json too (records without hparams are not judged)
    # ours with hparams, drawn under today's rule: its spec.json holds the id its spec has today
    _job(tmp_path / "today", "job1", {**SPEC, "job_id": Job.from_dict(SPEC).job_id}, hparams=True)
    paths = [str(tmp_path / "domainbed"), str(tmp_path / "ours"), str(tmp_path / "today")]
    code = ("import sys, dganalysis.records as r\n"
            "from dganalysis.records.index import load_indexed\n"
            f"n = [len(r.load(p, progress=False)) for p in {paths!r}]\n"
            f"n += [len(load_indexed(p, cache_dir={str(tmp_path / 'cache')!r})) for p in {paths!r}]\n"
            "__import__('importlib').import_module('dganalysis.training.job_draw')\n"
            "print(n, 'torch' in sys.modules, [m for m in sys.modules if m.startswith('dganalysis.training.train')])\n")
    assert _run(code) == "[24, 24, 24, 24, 24, 24] False []"


@pytest.mark.parametrize("job_id", [None, "another rule's id"])
def test_judging_a_job_of_another_drawing_rule_is_the_one_path_that_imports_torch(tmp_path, job_id):
    """The check above can fail: the same reader does import torch once a job of ours must be drawn again, its
    ``spec.json`` holding no id or an id other than its spec's today (another drawing rule's)."""
    _job(tmp_path / "ours", "job0", SPEC if job_id is None else {**SPEC, "job_id": job_id}, hparams=True)
    code = ("import sys, dganalysis.records as r\n"
            f"r.load({str(tmp_path / 'ours')!r}, progress=False, strict=False)\n"
            "print('torch' in sys.modules)\n")
    assert _run(code) == "True"


def test_records_does_not_import_train():
    edges = import_edges(PACKAGE)
    above = {m: sorted(t for t in out if t == "dganalysis.training.train")
             for m, out in edges.items() if m.startswith(TORCH_FREE)}
    assert not any(above.values()), above
