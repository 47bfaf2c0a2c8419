"""Reading and auditing a large DomainBed-format sweep: DomainBed's ``collect_results`` vs ours (first read, and a
repeated read through the columnar index of :mod:`dganalysis.records.index`).

The sweep is generated (simulated accuracies, DomainBed's record layout: ``args``, ``hparams``, ``env{i}_{in,out}_acc``,
``epoch``, ``loss``, ``mem_gb``, ``step``, ``step_time``; one folder per run with ``results.jsonl`` and ``done``).
Default size: 4 datasets × 14 algorithms × 10 test-env sets (4 single + 6 pairs) × 20 hparams × 3 trials = 33,600
runs × 17 checkpoints = 571,200 records, as measured in the issue; ``--small`` writes 1/40 of it.

Each measurement runs in a fresh subprocess; CPU seconds (user + system) and peak RSS are that child's own
(``os.wait4``), so imports count for both sides.
DomainBed's side runs ``python -m domainbed.scripts.collect_results --input_dir DIR`` from ``$DOMAINBED_SRC`` (reads
every record, makes its three selections, prints their tables). Ours, each first on a sweep without our index (scan,
parse, index, select, cache) and then repeated on the unchanged sweep:

* ``dganalysis collect DIR`` — the same command-level task (the three selections' tables, printed); repeated, it
  scans the job folders and prints the output kept under their key (:class:`dganalysis.records.memo.SweepMemo`);
* :func:`dganalysis.records.indexed.select_indexed` — the three selections as frames, the part of
  ``dganalysis audit`` that does what ``collect_results`` does; repeated, it reads the cached selections (pandas is
  imported to return frames);
* ``dganalysis audit DIR`` — the whole audit without a report (selections, the per-draw selection, claims,
  across-dataset tests, every raw-sweep analysis; more work than ``collect_results`` does); repeated, it restores
  its kept output; ``--fresh`` repeated: every statistic recomputed, the selections read from the index's cache;
* "index → tidy frame → select": the whole tidy frame built from the index and selected afresh with
  :func:`dganalysis.records.selection.select` (what an analysis needing every row pays).

Both figures are printed idle and with every core busy (:mod:`bench._busy`).

Usage::

    DOMAINBED_SRC=/path/to/DomainBed python bench/audit_scale.py [--small] [--dir DIR [--reuse]] [--keep]
        [--repeats N] [--no-loaded]

Each figure is the median of ``--repeats`` runs (default 3), the commands interleaved, so a slow spell of a shared
machine falls on every command alike; the range is printed beside it. Each ratio is printed two ways: the ratio of
the medians, and the median of each repeat's own ratio (DomainBed's run and ours a minute apart, so a drift of the
machine's speed over the bench cancels). Both sides run with their compiled bytecode
kept (as an installed Python package has it: this project's machines set ``PYTHONDONTWRITEBYTECODE``, so the bench
keeps the children's bytecode in a folder of its own, ``PYTHONPYCACHEPREFIX``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._busy import busy_load, default_load, load_line  # noqa: E402

DATASETS = {"VLCS": 4, "PACS": 4, "OfficeHome": 4, "TerraIncognita": 4}
ALGORITHMS = ["ERM", "IRM", "GroupDRO", "Mixup", "MLDG", "CORAL", "MMD", "DANN", "CDANN", "MTL", "SagNet", "ARM",
              "VREx", "RSC"]


def generate(root: Path, datasets: int, algorithms: int, hparams: int, trials: int, checkpoints: int,
             seed: int = 0) -> tuple[int, int]:
    """Write a simulated DomainBed sweep under ``root``; returns (runs, records)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    runs = records = 0
    for ds, n_envs in list(DATASETS.items())[:datasets]:
        test_sets = [[i] for i in range(n_envs)] + [list(p) for p in itertools.combinations(range(n_envs), 2)]
        for alg, tenvs, h, t in itertools.product(ALGORITHMS[:algorithms], test_sets, range(hparams), range(trials)):
            run = root / f"{ds}_{alg}_{'-'.join(map(str, tenvs))}_h{h}_t{t}"
            run.mkdir(parents=True)
            args = {"algorithm": alg, "checkpoint_freq": 300, "data_dir": "/datasets/domainbed", "dataset": ds,
                    "holdout_fraction": 0.2, "hparams": None, "hparams_seed": h,
                    "output_dir": f"/sweeps/big/{run.name}", "save_model_every_checkpoint": False,
                    "seed": int(rng.integers(2**31)), "skip_model_save": False, "steps": 5001,
                    "task": "domain_generalization", "test_envs": tenvs, "trial_seed": t, "uda_holdout_fraction": 0}
            hp = {"batch_size": int(rng.integers(8, 64)), "class_balanced": False, "data_augmentation": True,
                  "lr": float(10 ** rng.uniform(-5, -3.5)), "nonlinear_classifier": False, "resnet18": False,
                  "resnet_dropout": float(rng.choice([0.0, 0.1, 0.5])), "weight_decay": float(10 ** rng.uniform(-6, -2))}
            head, hps = json.dumps(args), json.dumps(hp)
            quality = rng.uniform(0.4, 0.9, size=n_envs)
            lines = []
            for c in range(checkpoints):
                progress = 1 - np.exp(-3 * (c + 1) / checkpoints)
                rec = [f'{{"args": {head}']
                for i in range(n_envs):
                    a_in, a_out = np.clip(quality[i] * progress + rng.normal(0, 0.02, 2), 0, 1)
                    rec.append(f'"env{i}_in_acc": {float(a_in)!r}, "env{i}_out_acc": {float(a_out)!r}')
                rec.append(f'"epoch": {c * 300 / 1000:.6f}, "hparams": {hps}, "loss": {float(2 * (1 - progress) + 0.1)!r}, '
                           f'"mem_gb": 4.4{c}, "step": {c * 300}, "step_time": {float(rng.uniform(0.2, 0.4))!r}}}')
                lines.append(", ".join(rec))
            (run / "results.jsonl").write_text("\n".join(lines) + "\n")
            (run / "done").write_text("done")
            runs += 1
            records += checkpoints
    return runs, records


OURS = """
import sys
from dganalysis.records.index import load_indexed
from dganalysis.records.indexed import select_indexed
from dganalysis.records import select
methods = ("training_domain", "leave_one_out", "oracle")
if sys.argv[2] == "audit":  # the audit's path: selections cached beside the index
    n = sum(len(s) for s in select_indexed(sys.argv[1], methods).values())
else:  # the tidy frame through the index, selected afresh
    n = sum(len(select(load_indexed(sys.argv[1]), m)) for m in methods)
print(n)
"""


def measure(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(CPU seconds user+system, peak RSS in MB, wall seconds) of ``cmd`` run as a child process (``os.wait4`` gives
    that child's own resource usage, so one measurement's peak does not leak into the next)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd[:2])} ... failed ({proc.returncode}):\n{err.read()[-3000:]}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, wall


def _forget(sweep: Path) -> None:
    """Remove our index and cached results beside ``sweep``."""
    from dganalysis.records.index_file import INDEX_NAME, LOCK_NAME

    for name in (INDEX_NAME, LOCK_NAME):
        (sweep / name).unlink(missing_ok=True)
    shutil.rmtree(sweep / (INDEX_NAME + ".select"), ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--small", action="store_true", help="1/40 of the default size (1 dataset, 14 algorithms, 6 hparams)")
    p.add_argument("--datasets", type=int, default=4)
    p.add_argument("--algorithms", type=int, default=14)
    p.add_argument("--hparams", type=int, default=20)
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--checkpoints", type=int, default=17)
    p.add_argument("--dir", help="where to write the sweep (default: a temporary folder, removed at the end)")
    p.add_argument("--keep", action="store_true", help="keep the generated sweep")
    p.add_argument("--reuse", action="store_true", help="with --dir: measure the sweep generated there earlier "
                   "(same options) instead of writing it again")
    p.add_argument("--load", type=int, default=default_load(), help="busy processes for the loaded figures")
    p.add_argument("--no-loaded", action="store_true", help="skip the figures with every core busy")
    p.add_argument("--repeats", type=int, default=3, help="runs of each measurement (interleaved; medians printed)")
    a = p.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed bench still stops its busy processes
    if a.small:
        a.datasets, a.hparams = 1, 2  # 1 × 14 × 10 × 2 × 3 = 840 runs (1/40)
    src = os.environ.get("DOMAINBED_SRC")
    if not src or not (Path(src) / "domainbed" / "scripts" / "collect_results.py").is_file():
        raise SystemExit("set DOMAINBED_SRC to a DomainBed checkout (domainbed/scripts/collect_results.py under it)")
    for name in ("datasets", "algorithms", "hparams", "trials", "checkpoints", "repeats"):
        if getattr(a, name) < 1:
            raise SystemExit(f"--{name}: expected a positive number, got {getattr(a, name)}")
    if a.datasets > len(DATASETS) or a.algorithms > len(ALGORITHMS):
        raise SystemExit(f"--datasets ≤ {len(DATASETS)} and --algorithms ≤ {len(ALGORITHMS)}")
    base = Path(a.dir) if a.dir else Path(tempfile.mkdtemp(prefix="audit_scale_"))
    sweep = base / "sweep"
    if sweep.exists() and not a.reuse:
        shutil.rmtree(sweep)
    t0 = time.perf_counter()
    if a.reuse and sweep.exists():
        n_runs = sum(1 for d in sweep.iterdir() if (d / "results.jsonl").is_file())
        print(f"simulated sweep reused (--reuse): {n_runs} runs at {sweep}")
    else:
        n_runs, records = generate(sweep, a.datasets, a.algorithms, a.hparams, a.trials, a.checkpoints)
        size = sum(f.stat().st_size for f in sweep.glob("*/results.jsonl"))
        print(f"simulated sweep: {n_runs} runs × {a.checkpoints} checkpoints = {records} records, {size / 1e6:.0f} MB "
              f"(written in {time.perf_counter() - t0:.0f} s) at {sweep}")
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent), src])}
    # DomainBed imports optional packages at module level (timm, wilds, gdown); stub the missing ones
    stub = ("import importlib, sys, types\nimport dganalysis  # its torchvision shim, as tests/reference/conftest.py\n"
            "for n in ('timm', 'gdown', 'wilds', 'wilds.datasets', 'wilds.datasets.camelyon17_dataset',"
            " 'wilds.datasets.fmow_dataset'):\n"
            "    try: importlib.import_module(n)\n"
            "    except ImportError:\n"
            "        m = types.ModuleType(n); m.__path__ = []; m.Camelyon17Dataset = m.FMoWDataset = object;"
            " sys.modules[n] = m\n"
            "import runpy; sys.argv = ['collect_results', '--input_dir', sys.argv[1]]\n"
            "runpy.run_module('domainbed.scripts.collect_results', run_name='__main__')\n")

    def commands(d: Path) -> dict[str, list[str]]:
        audit = [py, "-m", "dganalysis.cli", "audit", str(d)]
        return {"theirs": [py, "-c", stub, str(d)], "collect": [py, "-m", "dganalysis.cli", "collect", str(d)],
                "audit_cli": audit, "audit_fresh": [*audit, "--fresh"],
                **{mode: [py, "-c", OURS, str(d), mode] for mode in ("audit", "frame")}}

    cmds = commands(sweep)
    theirs_cmd, collect_cmd = cmds["theirs"], cmds["collect"]
    # Both sides run with compiled bytecode kept between runs, as any Python install has it (pip compiles what it
    # installs; an interpreter writes what it imports). This machine sets PYTHONDONTWRITEBYTECODE, so the children
    # keep theirs in one folder of the bench (PYTHONPYCACHEPREFIX), filled by a warm-up run of each command below.
    cached = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cached["PYTHONPYCACHEPREFIX"] = str(base / "pycache")
    warm = base / "warm"
    if not warm.exists():
        generate(warm, 1, 2, 1, 1, 2)
    for cmd in commands(warm).values():
        measure(cmd, cached)
    for label, n_busy in (("idle", 0), ("loaded", a.load)):
        if label == "loaded" and a.no_loaded:
            continue
        runs: dict[str, list[tuple[float, float, float]]] = {}
        with busy_load(n_busy):
            print(f"--- {label} ({n_busy} busy processes; {load_line()}); each figure the median of {a.repeats} "
                  "runs, interleaved")
            for _ in range(a.repeats):
                runs.setdefault("DomainBed collect_results", []).append(measure(theirs_cmd, cached))
                for first_cmd, name in ((collect_cmd, "`dganalysis collect`"), (cmds["audit"], "select_indexed"),
                                        (cmds["audit_cli"], "`dganalysis audit`")):
                    _forget(sweep)  # the first read starts without index or cached results
                    runs.setdefault(f"{name}, first read", []).append(measure(first_cmd, cached))
                    runs.setdefault(f"{name}, repeated", []).append(measure(first_cmd, cached))
                # the audit's statistics recomputed on the unchanged sweep (its selections read from the index)
                runs.setdefault("`dganalysis audit --fresh`, repeated", []).append(measure(cmds["audit_fresh"], cached))
                runs.setdefault("index → tidy frame → select", []).append(measure(cmds["frame"], cached))
            print(f"    ({load_line()} at the end)")
        rows = {name: (statistics.median(c for c, _, _ in ms), max(r for _, r, _ in ms),
                       statistics.median(w for _, _, w in ms), min(c for c, _, _ in ms), max(c for c, _, _ in ms))
                for name, ms in runs.items()}
        for name, (cpu, rss, wall, lo, hi) in rows.items():
            print(f"{name:44s} {cpu:8.2f} CPU-s ({lo:.2f}–{hi:.2f})  {rss:6.0f} MB peak  {wall:7.2f} s wall")
        theirs = rows["DomainBed collect_results"]
        base_runs = [c for c, _, _ in runs["DomainBed collect_results"]]
        for name, (cpu, rss, *_) in list(rows.items())[1:]:
            # each repeat's own ratio (DomainBed's run and ours minutes apart): a slow spell of the machine cancels
            paired = [b / c for b, (c, _, _) in zip(base_runs, runs[name])]
            print(f"ratio {name:44s} {theirs[0] / cpu:7.1f}× fewer CPU-s than DomainBed (paired by repeat: median "
                  f"{statistics.median(paired):.1f}×, {min(paired):.1f}–{max(paired):.1f}); peak memory "
                  f"{rss / theirs[1]:.2f}× DomainBed's")
    if not (a.keep or a.dir):
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
