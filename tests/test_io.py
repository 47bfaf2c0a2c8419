"""Every file dganalysis writes honours the umask (as open() does): figures, tables, report.html, collect -o and
every other atomic write go through dganalysis.io, whose temporary files would otherwise stay 0600."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent('''
    import json, os, sys
    from pathlib import Path
    import pandas as pd
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from dganalysis import io, plots
    from dganalysis.cli import main
    from dganalysis.studies.report import write_report
    from dganalysis.studies.run_history import NotebookRun, record_run
    from dganalysis.studies.runner import write_index
    out = Path(sys.argv[1])
    paths = [io.write_text(out / "a.txt", "x"), io.write_json(out / "b.json", {}), io.write_bytes(out / "c.bin", b"")]
    paths += plots.save_table(pd.DataFrame({"a": [1.0]}), "t", out)
    fig = plt.figure(); plt.plot([0, 1])
    paths += plots.save_figure(fig, "f", out)
    store = out / "store" / "job"
    store.mkdir(parents=True)
    rec = {"args": {"dataset": "PACS", "algorithm": "ERM", "test_envs": [0], "hparams_seed": 0, "trial_seed": 0},
           "step": 0, **{f"env{i}_{s}_acc": 0.5 for i in range(4) for s in ("in", "out")}}
    (store / "results.jsonl").write_text(json.dumps(rec) + "\\n"); (store / "done").write_text("")
    assert main(["collect", str(out / "store"), "-o", str(out / "tables.txt")]) == 0
    paths.append(out / "tables.txt")
    write_index(out, "quick", record_run(out, NotebookRun("00_x", out / "n.ipynb", True, 1.0)))
    paths += [out / "index.md", out / "runs.json", write_report(out, "quick")]
    for p in paths:
        print(oct(os.stat(p).st_mode & 0o777), p)
''')


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_outputs_honour_the_umask(tmp_path, umask):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-c", f"import os; os.umask({umask}); exec({SCRIPT!r})", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [ln.split(" ", 1) for ln in proc.stdout.splitlines() if ln.startswith("0o")]
    assert len(lines) >= 12, proc.stdout
    want = oct(0o666 & ~umask)
    bad = [(m, p) for m, p in lines if m != want]
    assert not bad, f"expected {want} for every file, got {bad}"


def test_file_mode_follows_the_umask_in_process(tmp_path):
    from dganalysis import io

    old = os.umask(0o027)
    try:
        path = io.write_text(tmp_path / "x.txt", "x")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o640 and io.current_umask() == 0o027
    finally:
        os.umask(old)
