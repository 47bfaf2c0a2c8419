"""Every command ``docs/domainbed.md`` shows runs (so the page cannot drift from the code).

Commands are read from the page: every line of its ``bash`` blocks (continuations joined, comments dropped) and every
inline code span that starts with ``dganalysis``, ``python -m dganalysis.`` or ``python -m domainbed.``; an optional
``[...]`` part gives two commands, without and with it. Each runs in this process, in a folder holding a fake
DomainBed data root (``PACS`` with DomainBed's class folders, one image each), ``runs`` and ``dga_runs`` (a made
DomainBed sweep), and the page's ``pacs.yaml``: ``dganalysis sweep`` and the downloads with ``--dry-run`` (nothing
here reaches the internet), the drop-in sweep with the ``dummy`` launcher; the data paths shown (``/data``, ``/data/db``, ``./data``) become the fake root, other absolute
paths folders of the test's. A dry run may only report missing pretrained weight files (none are installed here),
never data. The commands that cannot run are listed in :data:`SKIPPED` (or match :func:`skip_reason`) with why.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from dganalysis import cli
from dganalysis.scripts import collect_results, download, list_top_hparams
from dganalysis.scripts import sweep as drop_in_sweep
from dganalysis.scripts import train as drop_in_train
from tests.reference.test_domainbed_selection import write_sweep

DOC = Path(__file__).resolve().parents[2] / "docs" / "domainbed.md"

#: commands of the page this test does not run, and why
SKIPPED = {
    "dganalysis run --dry-run": "the notebooks' dry run of a whole profile (tests/studies/test_dryrun.py runs it)",
    "dganalysis collect --input_dir D --latex": "D stands for a folder: run here as `dganalysis collect --input_dir runs --latex`",
    "dganalysis collect D --format latex": "D stands for a folder: run here as `dganalysis collect runs --format latex`",
    **{verb: "a verb named in the prose, not a whole command line" for verb in (
        "dganalysis sweep", "dganalysis train", "dganalysis collect", "dganalysis audit",
        "dganalysis sweep --launcher slurm")},
}
DATA_PATHS = ("/data", "/data/db", "./data")
DRIVERS = {"dganalysis.scripts.sweep": drop_in_sweep.main, "dganalysis.scripts.train": drop_in_train.main,
           "dganalysis.scripts.collect_results": collect_results.main,
           "dganalysis.scripts.list_top_hparams": list_top_hparams.main, "dganalysis.scripts.download": download.main}


def skip_reason(cmd: str) -> str | None:
    """Why ``cmd`` is not run here, or None."""
    if cmd in SKIPPED:
        return SKIPPED[cmd]
    if "domainbed.scripts." in cmd:
        return "DomainBed's own script (tests/reference/test_domainbed_scripts_*.py run it beside ours)"
    if "..." in cmd:
        return "an elided command line (...); its full form runs where the page shows one"
    return None


def doc_commands(text: str) -> list[str]:
    """The page's commands, in order (see the module docstring)."""
    cmds: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                cmds.append(re.sub(r"\s+", " ", line))
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for span in re.findall(r"`([^`]+)`", prose):
        span = re.sub(r"\s+", " ", span).strip()
        if span.startswith(("dganalysis ", "python -m dganalysis.", "python -m domainbed.")):
            optional = re.search(r" \[([^\]]+)\]", span)
            if optional:
                cmds += [span.replace(optional.group(0), ""), span.replace(optional.group(0), " " + optional.group(1))]
            else:
                cmds.append(span)
    return list(dict.fromkeys(cmds))


def fake_root(root: Path) -> Path:
    """DomainBed's PACS layout: every environment and class folder, one (empty) image each."""
    from dganalysis.data.benchmarks import BENCHMARKS

    pacs = BENCHMARKS["PACS"]
    for env in pacs.env_folders:
        for cls in pacs.classes:
            folder = root / pacs.folder / env / cls
            folder.mkdir(parents=True)
            (folder / "0.jpg").write_bytes(b"")
    return root


def _argv(cmd: str, work: Path, root: Path) -> list[str]:
    out = []
    for tok in shlex.split(cmd):
        tok = tok.rstrip("/") if tok not in ("/",) else tok
        if tok in DATA_PATHS:
            tok = str(root)
        elif tok.startswith("/"):
            tok = str(work / tok.strip("/").replace("/", "_"))
        out.append(tok)
    return out


def run(cmd: str, work: Path, root: Path, capsys) -> tuple[int, str, str]:
    """Run one command of the page here (see the module docstring); (status, stdout, stderr)."""
    argv = _argv(cmd, work, root)
    capsys.readouterr()
    if argv[0] == "dganalysis":
        args = argv[1:]
        if args[0] == "sweep":
            args += ["--dry-run", "--no-progress"]
        if args[0] == "download":  # nothing here may reach the internet
            args += [] if "--dry-run" in args else ["--dry-run"]
        status = cli.main(args)
    else:
        assert argv[:2] == ["python", "-m"], cmd
        args = argv[3:]
        if argv[2] == "dganalysis.scripts.sweep" and "--command_launcher" in args:
            args[args.index("--command_launcher") + 1] = "dummy"
            args += [] if "--skip_confirmation" in args else ["--skip_confirmation"]
        if argv[2] == "dganalysis.scripts.download":  # nothing here may reach the internet
            args += [] if "--dry-run" in args else ["--dry-run"]
        status = DRIVERS[argv[2]](args)
    got = capsys.readouterr()
    return status, got.out, got.err


def test_every_command_of_the_page_runs(tmp_path, capsys, monkeypatch):
    text = DOC.read_text(encoding="utf-8")
    commands = doc_commands(text)
    assert len(commands) > 10 and any("--data_dir /data" in c and c.startswith("dganalysis sweep") for c in commands)
    assert not set(SKIPPED) - set(commands), "SKIPPED names commands the page no longer shows"
    root = fake_root(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DGANALYSIS_DATA", raising=False)
    write_sweep(tmp_path / "runs", 4, n_envs=4, n_hparams=2, trials=(0, 1), steps=(0, 50))
    shutil.copytree(tmp_path / "runs", tmp_path / "dga_runs")
    yaml = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    (tmp_path / "pacs.yaml").write_text(yaml.replace("/data/db", str(root)), encoding="utf-8")
    ran, skipped = [], []
    for cmd in commands:
        if skip_reason(cmd):
            skipped.append(cmd)
            continue
        if cmd.startswith("export "):
            name, _, value = shlex.split(cmd)[1].partition("=")
            monkeypatch.setenv(name, value)
            continue
        status, out, err = run(cmd, tmp_path, root, capsys)
        problems = [x for x in err.splitlines() if x.startswith("  - ")]
        if status == 2 and cmd.startswith("dganalysis sweep") and problems:  # a dry run's problems: weights only
            assert not [p for p in problems if p.startswith("  - dataset ")], (cmd, problems)
            assert "needs root=" not in err, (cmd, err)
        else:
            assert status == 0, (cmd, out[-1500:], err[-1500:])
        ran.append(cmd)
    assert any(c.startswith("dganalysis sweep --datasets PACS") for c in ran)
    assert any(c.startswith("python -m dganalysis.scripts.sweep launch") for c in ran)
    assert len(ran) >= 8, ran


def test_a_sweep_without_data_dir_names_the_flag(tmp_path, capsys, monkeypatch):
    """The "needs root=" problem names --data_dir and $DGANALYSIS_DATA; with either, the data is found."""
    root = fake_root(tmp_path / "data")
    monkeypatch.delenv("DGANALYSIS_DATA", raising=False)
    argv = ["sweep", "--datasets", "PACS", "--algorithms", "ERM", "--steps", "5", "--checkpoint_freq", "5",
            "--output_dir", str(tmp_path / "runs"), "--dry-run", "--no-progress"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "needs root=" in err and "--data_dir" in err and "$DGANALYSIS_DATA" in err
    for extra, env in (([" --data_dir", str(root)], None), ([], str(root))):
        if env:
            monkeypatch.setenv("DGANALYSIS_DATA", env)
        cli.main([*argv, *[e.strip() for e in extra]])
        assert "  - dataset " not in capsys.readouterr().err


def test_a_cache_folder_given_as_data_dir_is_refused_naming_cache_dir(tmp_path, capsys):
    cache = tmp_path / "cache"
    (cache / "imported").mkdir(parents=True)
    base = ["sweep", "--datasets", "RotatedDigits", "--algorithms", "ERM", "--steps", "5", "--checkpoint_freq", "5",
            "--output_dir", str(tmp_path / "runs"), "--dry-run", "--no-progress"]
    assert cli.main([*base, "--data_dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert f"--cache_dir {cache}" in err and len(err.strip().splitlines()) == 1
    assert cli.main([*base, "--cache_dir", str(cache)]) == 0
    both = fake_root(tmp_path / "shared")  # a shared folder holding the data and our cache is a data root
    (both / "imported").mkdir()
    pacs = [*base, "--data_dir", str(both)]
    pacs[pacs.index("RotatedDigits")] = "PACS"
    cli.main(pacs)
    assert "--cache_dir" not in capsys.readouterr().err


@pytest.mark.parametrize("cmd,skip", [("python -m domainbed.scripts.train --x", True), ("dganalysis sweep ...", True),
                                      ("dganalysis collect runs", False)])
def test_skip_rules(cmd, skip):
    assert (skip_reason(cmd) is not None) == skip
