"""The selection rules on the index's record arrays (dganalysis.records.rules) equal the tidy-frame computation of the
same rules (the test oracle tests/records/_frame_oracle.py) and dganalysis.records.select on the tidy frame, row for
row and bit for bit; a sweep whose records repeat a step is left to the frame (load drops the repeated rows)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dganalysis.records import index, load, rules, selection
from dganalysis.records.rules import gather, select_records
from dganalysis.records.selection_methods import BUILT_IN, OUTPUT
from tests.records._frame_oracle import select_frame
from tests.records.test_index import domainbed_dir, our_store, rec, write_run


def records_of(*roots: Path, include_unfinished=None):
    chunks, _ = index.kept_jobs([(r, index.update_index(r)) for r in roots], include_unfinished, strict=False)
    return gather(chunks)


def frame_of(got: dict[str, list]) -> pd.DataFrame:
    return pd.DataFrame(got, columns=OUTPUT)


def check_equal(roots: list[Path], methods=BUILT_IN, tie_tols=(0.0,), include_unfinished=None):
    df = load(roots, include_unfinished=include_unfinished, strict=False, progress=False)
    rec_ = records_of(*roots, include_unfinished=include_unfinished)
    assert rec_ is not None
    compared = 0
    for method, tol, per_draw in itertools.product(methods, tie_tols, (False, True)):
        want = select_frame(df, method, tie_tol=tol, per_draw=per_draw)
        pd.testing.assert_frame_equal(want, selection.select(df, method, tie_tol=tol, per_draw=per_draw),
                                      check_exact=True)
        got = frame_of(select_records(rec_, method, tie_tol=tol, per_draw=per_draw)).astype(want.dtypes.to_dict())
        pd.testing.assert_frame_equal(want.reset_index(drop=True), got, check_exact=True)
        compared += len(want)
    return compared


def sweep(root: Path, seed: int, n_envs=4, hparams=3, trials=2, steps=(0, 50, 100), pairs=True, ties=False,
          nan_rate=0.0, drop_helpers=0.0) -> Path:
    """A DomainBed-format sweep with leave-one-out helpers; ``ties``: accuracies on a coarse grid (many equal
    scores); ``nan_rate``: null accuracies; ``drop_helpers``: the share of pair runs removed."""
    rng = np.random.default_rng(seed)
    tests = [[e] for e in range(n_envs)] + ([[a, b] for a in range(n_envs) for b in range(a + 1, n_envs)] if pairs else [])
    for alg in ("ERM", "CORAL"):
        for te in tests:
            if len(te) > 1 and rng.random() < drop_helpers:
                continue
            for h in range(hparams):
                for t in range(trials):
                    lines = []
                    for s in steps:
                        r = {"args": {"dataset": "PACS", "algorithm": alg, "test_envs": te, "hparams_seed": h,
                                      "trial_seed": t}, "hparams": {"lr": 1e-3 * (h + 1)}, "step": s, "loss": 1.0}
                        for i in range(n_envs):
                            for split in ("in", "out"):
                                v = float(rng.integers(0, 4) / 4) if ties else float(rng.uniform(0.3, 0.9))
                                r[f"env{i}_{split}_acc"] = None if rng.random() < nan_rate else v
                        lines.append(json.dumps(r))
                    d = root / f"{alg}_{'-'.join(map(str, te))}_h{h}_t{t}"
                    d.mkdir(parents=True)
                    (d / "results.jsonl").write_text("\n".join(lines) + "\n")
                    (d / "done").write_text("")
    return root


@pytest.mark.parametrize("kind", ["plain", "ties", "nan", "missing_helpers", "three_envs_no_pairs"])
def test_equal_to_select_on_simulated_sweeps(tmp_path, kind):
    opts = {"plain": {}, "ties": {"ties": True}, "nan": {"nan_rate": 0.1}, "missing_helpers": {"drop_helpers": 0.4},
            "three_envs_no_pairs": {"n_envs": 3, "pairs": False}}[kind]
    root = sweep(tmp_path / "s", seed=len(kind), **opts)
    n = check_equal([root], tie_tols=(0.0, 0.1) if kind == "ties" else (0.0, 0.01))
    assert n > 0


def test_equal_to_select_on_the_index_test_stores(tmp_path):
    """The stores of the index tests (DomainBed's special cases; our store with val domains and names); the
    duplicates of the 'resumed' job make gather refuse (the frame decides), so it is compared without that job."""
    db = domainbed_dir(tmp_path / "db")
    assert records_of(db) is None  # 'resumed' records step 5 twice: load drops a duplicate row
    import shutil

    shutil.rmtree(db / "resumed")
    for h in range(3):  # leave-one-out helpers of test env 0
        for d in (1, 2, 3):
            write_run(db, f"helper_h{h}_{d}", [rec(test_envs=(0, d), step=s, hseed=h) for s in (0, 10, 20)])
    ours = our_store(tmp_path / "ours")
    for include in (None, True, False):
        assert check_equal([db], include_unfinished=include) > 0
        check_equal([ours], include_unfinished=include)
        check_equal([db, ours], include_unfinished=include)


def test_several_helpers_for_one_domain_are_averaged(tmp_path):
    """Two or three helper runs hold out the same domain (test envs (0, 1) under other names, one with other
    accuracies): their accuracies are averaged as pandas' grouped mean averages them, on the arrays as on the
    frame."""
    root = sweep(tmp_path / "s", seed=3, hparams=1, trials=1)
    src = root / "ERM_0-1_h0_t0"
    copy = root / "ERM_0-1_h0_t0_again"
    copy.mkdir()
    (copy / "results.jsonl").write_text((src / "results.jsonl").read_text())
    (copy / "done").write_text("")
    third = root / "ERM_0-1_h0_t0_third"
    third.mkdir()
    (third / "results.jsonl").write_text((src / "results.jsonl").read_text().replace("0.", "0.1", 40))
    (third / "done").write_text("")
    assert check_equal([root]) > 0


def test_domain_orders_are_the_frames(tmp_path):
    """The environment order collect's tables use, taken from the arrays, is records.read.domain_orders of the frame
    (first appearance per dataset), also with datasets whose runs list their domains by name."""
    from dganalysis.records.read import domain_orders as frame_orders

    db = sweep(tmp_path / "s", seed=5, n_envs=3, pairs=False)
    ours = our_store(tmp_path / "ours")
    for roots in ([db], [ours], [db, ours]):
        df = load(roots, progress=False)
        assert rules.record_domain_orders(records_of(*roots)) == frame_orders(df)
