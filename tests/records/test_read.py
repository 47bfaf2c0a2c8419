"""records.load on hand-written job stores and DomainBed sweep directories."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dganalysis.records import load, load_many, store
from dganalysis.records import read as results


def write_run(root: Path, name: str, records: list[dict], status: str | None = "done", tail: str = "") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    if status:
        (d / status).write_text("")
    return d


def db_record(dataset="PACS", test_envs=(0,), step=0, n_envs=4, hseed=0, tseed=0, algorithm="ERM", **extra):
    rec = {"args": {"dataset": dataset, "algorithm": algorithm, "test_envs": list(test_envs), "hparams_seed": hseed,
                    "trial_seed": tseed, "holdout_fraction": 0.2, "output_dir": "x"},
           "hparams": {"lr": 5e-5, "batch_size": 32}, "step": step, "epoch": 0.5, "loss": 1.0, "mem_gb": 1.0,
           "step_time": 0.1, **extra}
    for i in range(n_envs):
        rec[f"env{i}_in_acc"] = round(0.1 * i + 0.01 * step, 4)
        rec[f"env{i}_out_acc"] = round(0.1 * i + 0.02 * step, 4)
    return rec


def test_domainbed_sweep_dir(tmp_path):
    write_run(tmp_path, "0a1b", [db_record(step=s) for s in (0, 300)])
    write_run(tmp_path, "9f8e", [db_record(test_envs=(1, 3), step=0, hseed=2, tseed=1)])
    df = load(tmp_path, progress=False)
    assert list(df.columns) == results.COLUMNS
    assert len(df) == 3 * 4 * 2  # records x envs x splits
    one = df[df["job_id"] == "0a1b"]
    assert list(one.loc[one["step"] == 0, "domain"].unique()) == ["A", "C", "P", "S"]  # DomainBed's PACS names
    assert set(one["train_domains"]) == {"C,P,S"} and set(one["test_domains"]) == {"A"}
    assert set(one["val_domains"]) == {""}
    roles = one.drop_duplicates("domain").set_index("domain")["role"].to_dict()
    assert roles == {"A": "test", "C": "train", "P": "train", "S": "train"}
    row = one[(one["domain"] == "P") & (one["split"] == "out") & (one["step"] == 300)].iloc[0]
    assert row["acc"] == pytest.approx(0.2 + 6.0)  # the record's value, untouched
    assert json.loads(row["hparams"]) == {"batch_size": 32, "lr": 5e-5}
    two = df[df["job_id"] == "9f8e"].iloc[0]
    assert (two["test_domains"], two["train_domains"], two["hparams_seed"], two["trial_seed"]) == ("C,S", "A,P", 2, 1)
    assert df["step"].dtype == "int64" and df["acc"].dtype == "float64"


@pytest.mark.parametrize(
    ("dataset", "n_envs", "names"),
    [("ColoredMNIST", 3, ["+90%", "+80%", "-90%"]), ("TerraIncognita", 4, ["L100", "L38", "L43", "L46"]),
     ("MyData", 3, ["env0", "env1", "env2"]), ("PACS", 5, ["env0", "env1", "env2", "env3", "env4"])],
)
def test_domain_names(tmp_path, dataset, n_envs, names):
    write_run(tmp_path, "r", [db_record(dataset=dataset, n_envs=n_envs)])
    df = load(tmp_path, progress=False)
    assert list(df["domain"].unique()) == names


def test_ood_bench_val_envs(tmp_path):
    write_run(tmp_path, "r", [db_record(dataset="NICO", n_envs=4, test_envs=(3,))])
    rec = json.loads((tmp_path / "r" / "results.jsonl").read_text())
    rec["args"]["val_envs"] = [2]
    (tmp_path / "r" / "results.jsonl").write_text(json.dumps(rec) + "\n")
    df = load(tmp_path, progress=False)
    assert df.drop_duplicates("domain").set_index("domain")["role"].to_dict() == {
        "env0": "train", "env1": "train", "env2": "val", "env3": "test"}
    assert set(df["val_domains"]) == {"env2"}


def test_our_store_with_names_and_unused_domains(tmp_path):
    rec = db_record(dataset="PaHCC", n_envs=4, test_envs=(3,))
    rec.update(domains=["kai", "song", "hei", "hw"], train_domains=["song", "kai"], test_domains=["hw"],
               val_domains=["hei"], elapsed=1.0, device="cpu")
    rec2 = dict(rec, train_domains=["kai"], val_domains=[])
    write_run(tmp_path, "job1", [rec])
    write_run(tmp_path, "job2", [rec2])
    df = load(tmp_path, progress=False)
    j1 = df[df["job_id"] == "job1"]
    assert set(j1["train_domains"]) == {"kai,song"}  # env order, not list order
    assert j1.drop_duplicates("domain").set_index("domain")["role"].to_dict() == {
        "kai": "train", "song": "train", "hei": "val", "hw": "test"}
    j2 = df[df["job_id"] == "job2"]
    assert j2.drop_duplicates("domain").set_index("domain")["role"].to_dict() == {
        "kai": "train", "song": "unused", "hei": "unused", "hw": "test"}


def test_skips_failed_and_unfinished_with_logged_count(tmp_path, caplog):
    write_run(tmp_path, "done1", [db_record()])
    write_run(tmp_path, "failed1", [db_record()], status="failed")
    write_run(tmp_path, "running1", [db_record()], status=None)
    write_run(tmp_path, "running2", [db_record()], status=None)
    with caplog.at_level(logging.INFO, logger="dganalysis.records"):
        df = load(tmp_path, progress=False)
    assert set(df["job_id"]) == {"done1"}
    assert "read 1 of 4 job folders" in caplog.text and "1 failed, 2 unfinished" in caplog.text
    df = load(tmp_path, include_unfinished=True, progress=False)
    assert set(df["job_id"]) == {"done1", "running1", "running2"}
    assert store.job_status(tmp_path / "failed1") == "failed"


def test_torn_last_line_tolerated_and_bad_line_named(tmp_path, caplog):
    write_run(tmp_path, "torn", [db_record(step=0), db_record(step=1)], tail='{"args": {"dataset": "PA')
    with caplog.at_level(logging.WARNING):
        df = load(tmp_path, progress=False)
    assert sorted(df["step"].unique()) == [0, 1] and "torn last record" in caplog.text
    bad = tmp_path / "bad"
    d = write_run(bad, "r", [db_record(step=0), db_record(step=1)])
    lines = (d / "results.jsonl").read_text().splitlines()
    (d / "results.jsonl").write_text(lines[0] + "\n{not json\n" + lines[1] + "\n")
    with pytest.raises(ValueError, match=r"r/results\.jsonl:2: unreadable JSON record"):
        load(bad, progress=False)


def test_bad_records_name_file_and_line(tmp_path):
    rec = db_record()
    del rec["args"]["trial_seed"]
    write_run(tmp_path, "r", [db_record(), rec])
    with pytest.raises(ValueError, match=r"results\.jsonl:2: record lacks \['trial_seed'\]"):
        load(tmp_path, progress=False)
    rec = db_record(test_envs=(7,))
    write_run(tmp_path / "b", "r", [rec])
    with pytest.raises(ValueError, match="out of range"):
        load(tmp_path / "b", progress=False)
    write_run(tmp_path / "c", "r", [{"step": 0, "args": db_record()["args"]}])
    with pytest.raises(ValueError, match="no env"):
        load(tmp_path / "c", progress=False)
    with pytest.raises(ValueError, match="path.*does not exist"):
        load(tmp_path / "nope", progress=False)


def test_many_dirs_nested_and_single_job(tmp_path):
    write_run(tmp_path / "sweepA" / "out", "r1", [db_record(algorithm="ERM")])
    write_run(tmp_path / "sweepB", "r2", [db_record(algorithm="CORAL")])
    both = load_many([tmp_path / "sweepA", tmp_path / "sweepB"], progress=False)
    assert set(both["algorithm"]) == {"ERM", "CORAL"}
    assert set(load(tmp_path, progress=False)["job_id"]) == {"r1", "r2"}  # nested search
    assert set(load(tmp_path / "sweepB" / "r2", progress=False)["job_id"]) == {"r2"}  # a job folder itself


def test_repeated_checkpoint_keeps_last(tmp_path):
    first, again = db_record(step=5), db_record(step=5)
    again["env0_in_acc"] = 0.99
    write_run(tmp_path, "r", [db_record(step=0), first, again])
    df = load(tmp_path, progress=False)
    assert len(df) == 2 * 4 * 2
    assert df[(df["step"] == 5) & (df["domain"] == "A") & (df["split"] == "in")]["acc"].item() == 0.99


def test_read_record_accuracies_follow_dict_rules_and_name_the_first_bad_key():
    """_read_record's accuracies: the usual floats by the cached key plan; an integer becomes its float, null NaN;
    two keys naming one (env, split) pair keep the later one (as a dict built in key order does); an error names
    the first bad key in the record's order."""
    import math

    def rec(**accs):
        return {"args": {"dataset": "PACS", "algorithm": "ERM", "test_envs": [0], "hparams_seed": 0, "trial_seed": 0},
                "step": 3, **accs}

    _, layout, accs = results._read_record(rec(env1_in_acc=0.25, env0_out_acc=0.5, env0_in_acc=0.75), "f:1")
    assert accs == [0.75, 0.5, 0.25] and [r[:2] for r in layout] == [("env0", "in"), ("env0", "out"), ("env1", "in")]
    _, _, accs = results._read_record(rec(env0_in_acc=1, env0_out_acc=None), "f:1")
    assert type(accs[0]) is float and accs[0] == 1.0 and math.isnan(accs[1])
    _, _, accs = results._read_record(rec(env1_in_acc=0.25, env01_in_acc=0.5, env0_in_acc=0.75), "f:1")
    assert accs == [0.75, 0.5]
    with pytest.raises(ValueError, match=r"f:1: env1_out_acc = 'x'"):
        results._read_record(rec(env0_in_acc=0.5, env1_out_acc="x", env0_out_acc=True), "f:1")
    with pytest.raises(ValueError, match=r"f:1: env01_in_acc = True"):
        results._read_record(rec(env01_in_acc=True, env1_in_acc=0.5), "f:1")  # overwritten later, still refused


def test_canonical_json_is_the_standard_encoders():
    """The setting and hparams JSON (one encoder each, made once) are JSONEncoder(sort_keys=True, separators,
    default=str).encode's text, on what records hold — nested dicts and lists, unicode, floats of every kind (1e-05,
    -0.0, NaN, infinities), non-str keys, bools, None, values only default=str can write — and on a bare string or
    number."""
    import json
    import math

    from dganalysis.records import read as results

    class Odd:
        def __str__(self) -> str:
            return "odd"

    values = [
        {"lr": 5e-05, "wd": -0.0, "b": True, "n": None, "s": "é\u2603", "l": [1, 2.5, {"z": 1, "a": [None]}]},
        {"x": float("nan"), "y": math.inf, "w": -math.inf, "o": Odd()}, {3: "int keys", 1: 2}, {1.5: True, 0.5: 1},
        {}, [], "plain", "é", 1.0, 7, None, {"k": {"deep": {"deeper": [0.1, 1e300, 1e-320]}}},
    ]
    for sep, ours in (((",", ":"), results._SETTING_JSON), ((", ", ": "), results._HPARAMS_JSON)):
        std = json.JSONEncoder(sort_keys=True, separators=sep, default=str)
        for v in values:
            assert ours(v) == std.encode(v), v
