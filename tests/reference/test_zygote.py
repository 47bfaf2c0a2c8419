"""The pre-imported DomainBed runner (``_zygote.py``): each run gets its own argv, environment, working directory,
thread count, prelude and log files, and its exit status comes back (scripts' records are compared elsewhere)."""

from __future__ import annotations

import json

from tests.reference._zygote import script_runner

#: a prelude that reports what the run sees, then exits with the status it was given
_REPORT = """
import json, os, sys, torch
print(json.dumps({"argv": sys.argv[1:], "x": os.environ.get("DGA_ZYGOTE_X"), "cwd": os.getcwd(),
                  "threads": torch.get_num_threads(), "omp": os.environ["OMP_NUM_THREADS"]}))
print("to stderr", file=sys.stderr)
raise SystemExit(int(sys.argv[1]))
"""


def test_each_run_gets_its_own_argv_env_cwd_and_status(domainbed, tmp_path, monkeypatch):
    runner = script_runner(domainbed.root)
    monkeypatch.chdir(tmp_path)
    for code, x, threads in ((0, "a", "1"), (3, "b", "2")):
        status, err = runner.run([str(code), "--flag"], logs=tmp_path / f"run{code}", module="domainbed.lib.misc",
                                 prelude=_REPORT, env={"DGA_ZYGOTE_X": x, "OMP_NUM_THREADS": threads})
        seen = json.loads((tmp_path / f"run{code}.stdout").read_text())
        assert status == code and err == "to stderr\n"
        assert seen == {"argv": [str(code), "--flag"], "x": x, "cwd": str(tmp_path), "threads": int(threads),
                        "omp": threads}


def test_a_failing_script_reports_its_traceback(domainbed, tmp_path):
    status, err = script_runner(domainbed.root).run(["--steps", "1"], logs=tmp_path / "run",
                                                    prelude="raise ValueError('no such run')")
    assert status == 1 and "ValueError: no such run" in err


def test_a_run_past_its_timeout_is_killed(domainbed, tmp_path):
    runner = script_runner(domainbed.root)
    status, _ = runner.run([], logs=tmp_path / "run", prelude="import time\ntime.sleep(60)", timeout=1)
    assert status == -9
    status, _ = runner.run(["0"], logs=tmp_path / "again", module="domainbed.lib.misc", prelude="raise SystemExit(0)")
    assert status == 0  # the helper still answers
