"""A SIMULATED DomainBed-format sweep directory for the audit tests: ``results.jsonl`` + ``done`` per run, records
with DomainBed's keys, accuracies drawn around planted per-algorithm effects (nothing is trained)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ENVS = {"PACS": 4, "VLCS": 4, "OfficeHome": 4}


def write_sweep(root: Path, algorithms: dict[str, float], datasets: dict[str, int] | None = None, trials: int = 3,
                hparams: int = 2, steps: tuple[int, ...] = (0, 100), noise: float = 0.01, seed: int = 0,
                pairs: bool = False) -> Path:
    """One run per (dataset, algorithm, test env, hparams seed, trial seed); ``algorithms`` maps a name to its
    planted accuracy offset (fraction). ``pairs`` adds DomainBed's two-test-env runs (leave-one-out helpers)."""
    rng = np.random.default_rng(seed)
    datasets = datasets or ENVS
    root.mkdir(parents=True, exist_ok=True)
    for ds, n_env in datasets.items():
        test_sets = [[e] for e in range(n_env)]
        if pairs:
            test_sets += [[a, b] for a in range(n_env) for b in range(a + 1, n_env)]
        for alg, offset in algorithms.items():
            for te in test_sets:
                for h in range(hparams):
                    for t in range(trials):
                        lines = []
                        base = 0.6 + offset + rng.normal(0, noise)
                        for s in steps:
                            rec = {"args": {"dataset": ds, "algorithm": alg, "test_envs": te, "hparams_seed": h,
                                            "trial_seed": t}, "hparams": {"lr": 1e-3 * (h + 1)}, "step": s,
                                   "loss": 1.0}
                            for i in range(n_env):
                                rec[f"env{i}_in_acc"] = float(np.clip(base + rng.normal(0, noise / 3), 0, 1))
                                rec[f"env{i}_out_acc"] = float(np.clip(base + rng.normal(0, noise / 3), 0, 1))
                            lines.append(json.dumps(rec))
                        d = root / f"{ds}_{alg}_{'-'.join(map(str, te))}_{h}_{t}"
                        d.mkdir()
                        (d / "results.jsonl").write_text("\n".join(lines) + "\n")
                        (d / "done").write_text("")
    return root
