"""The `dganalysis` command: every verb is documented in --help and wired."""

import subprocess
import sys

import pytest

from dganalysis.cli import build_parser, main


def test_help_documents_every_verb(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for verb in ("run", "sweep", "collect", "list"):
        assert verb in text
    for verb, option in (("run", "--profile"), ("sweep", "--dry-run"), ("collect", "--selection")):
        with pytest.raises(SystemExit):
            main([verb, "--help"])
        assert option in capsys.readouterr().out


def test_list_and_dry_run(capsys, tmp_path):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "00_quickstart" in out and "RotatedDigits" in out and "ERM" in out
    code = main(["sweep", "--dataset", "RotatedDigits", "--dataset-kwargs", '{"image_size": 8, "angles": [0, 30, 60]}',
                 "--algorithms", "ERM", "--steps", "5", "--checkpoint-freq", "5", "--store", str(tmp_path / "store"), "--dry-run"])
    assert code == 0
    assert not any((tmp_path / "store").glob("*/done"))  # a dry run trains nothing
    assert "pending" in capsys.readouterr().out


def test_bad_profile_is_rejected():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--profile", "huge"])


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "dganalysis.cli", "list"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "algorithms:" in r.stdout


def test_run_checks_parameter_kinds_before_executing(tmp_path, monkeypatch, capsys):
    import shutil
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    (tmp_path / "notebooks").mkdir()
    shutil.copy(root / "notebooks" / "00_quickstart.ipynb", tmp_path / "notebooks")
    (tmp_path / "params" / "quick").mkdir(parents=True)
    (tmp_path / "params" / "quick" / "00_quickstart.yaml").write_text("sweep: {steps: 40.9}\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "00_quickstart", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "00_quickstart.yaml: parameter 'sweep.steps'" in err and "expected an integer" in err and "\n" not in err
    assert not (tmp_path / "outputs").exists()  # nothing executed


def test_config_error_is_one_line_and_other_exceptions_show_their_traceback(monkeypatch, capsys):
    """A :class:`ConfigError` (bad input, said by our checks) is one line, exit status 2; any other exception is a
    bug: its traceback, then a line saying so and how to report it, exit status 1."""
    from dganalysis import cli
    from dganalysis.validation import ConfigError

    def bad_input(args):
        raise ConfigError("--thing 3: expected 1 or 2")

    monkeypatch.setattr(cli, "_cmd_env", bad_input)
    assert cli.main(["env"]) == 2
    err = capsys.readouterr().err
    assert err == "dganalysis env: error: --thing 3: expected 1 or 2\n"

    def bug(args):
        return {}["missing key"]

    monkeypatch.setattr(cli, "_cmd_env", bug)
    assert cli.main(["env"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and "KeyError: 'missing key'" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("dganalysis env: internal error (KeyError): this is a bug in dganalysis")
    assert "`dganalysis env`" in last
