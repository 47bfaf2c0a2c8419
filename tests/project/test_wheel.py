"""The built wheel works on its own: installed (not editable) into a fresh virtual environment, away from any
checkout, ``dganalysis list``, ``env``, ``collect``, ``audit shipped:domainbed`` and ``run --profile quick --dry-run
00_quickstart`` work from it; the wheel holds every module, notebook and profile YAML of the sources.

SLOW (marked ``slow``; ~20-40 s on a loaded 2-core machine, most of it the commands' start-ups). The wheel
is built from a copy of the sources (the package, notebooks/, params/ and the top-level files, as git lists them, so
nothing stale in the checkout's ``build/`` can leak in) with ``python -m build --wheel --no-isolation`` (``pip wheel
--no-build-isolation`` where ``build`` is not installed: the same setuptools backend), and installed with ``--no-deps``
into a venv that sees this environment's installed packages (torch, pandas, ...) through a ``.pth`` line — their
own ``.pth`` files, this checkout's editable install among them, are not processed, so ``import dganalysis`` can only
find the wheel's copy (the test checks it).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

#: what the wheel is built from: the package and the folders it ships (pyproject's data-files), plus top-level files
SOURCES = ("dganalysis/", "notebooks/", "params/")


def _sources(dest: Path) -> None:
    """Copy the files git lists (tracked, or new and not ignored) of :data:`SOURCES` and the top level to ``dest``."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to list the sources (runs in the repository's CI)")
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in listed:
        if rel and (rel.startswith(SOURCES) or "/" not in rel) and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)


def _build(src: Path, out: Path) -> Path:
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(src)]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=src)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    wheels = sorted(out.glob("dganalysis-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _venv(where: Path, wheel: Path) -> Path:
    """A fresh venv holding the wheel only, seeing this environment's packages (:data:`__doc__`)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                           "-q", str(wheel)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (Path(purelib) / "_dganalysis_test_heavy.pth").write_text("".join(f"{p}\n" for p in ours))
    return where / "bin"


def test_wheel_installs_and_its_commands_work_outside_a_checkout(tmp_path):
    start = time.monotonic()
    src = tmp_path / "src"
    _sources(src)
    wheel = _build(src, tmp_path / "dist")
    print(f"sources copied and wheel built: {time.monotonic() - start:.1f} s")
    assert wheel.name.startswith("dganalysis-") and wheel.name.endswith(".whl")
    if not (src / "setup.py").exists():  # no compiled part: one wheel for every platform and Python 3
        assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as zf:  # the pages' templates travel as package data
        names = set(zf.namelist())
    templates = sorted(f"dganalysis/templates/{p.name}" for p in (src / "dganalysis" / "templates").glob("*.j2"))
    assert templates and set(templates) <= names, sorted(set(templates) - names)
    modules = {p.relative_to(src).as_posix() for p in (src / "dganalysis").rglob("*.py")}
    assert modules <= names, sorted(modules - names)  # every module ships, whichever notebook needs it
    data = wheel.name.split("-py3")[0] + ".data/data/share/dganalysis/"  # pyproject's data-files
    shipped = {data + p.relative_to(src).as_posix() for p in (*(src / "notebooks").glob("*.ipynb"),
                                                              *(src / "params").glob("*/*.yaml"))}
    assert len(shipped) > 20 and shipped <= names, sorted(shipped - names)  # every notebook and profile YAML
    bin_dir = _venv(tmp_path / "venv", wheel)
    work = tmp_path / "elsewhere"  # no notebooks/ or params/ here: the wheel's own copy must be found
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DGANALYSIS_PROJECT", "VIRTUAL_ENV")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"

    def run(*args: str) -> subprocess.CompletedProcess:
        t0 = time.monotonic()
        done = subprocess.run([str(bin_dir / args[0]), *args[1:]], capture_output=True, text=True, cwd=work, env=env,
                              timeout=300)
        print(f"{' '.join(args[:3])}: {time.monotonic() - t0:.1f} s")  # shown with pytest -s
        return done

    where = run("python", "-c", "import dganalysis; print(dganalysis.__file__)")
    assert where.returncode == 0 and Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where

    loaded = run("python", "-c", "from dganalysis import templates as t; "
                 "env = t.template_environment(); "
                 "print([env.get_template(n).name for n in env.list_templates(['j2'])])")
    assert loaded.returncode == 0 and "audit.html.j2" in loaded.stdout and "report.html.j2" in loaded.stdout, loaded

    listed = run("dganalysis", "list")
    assert listed.returncode == 0, listed.stderr
    assert "00_quickstart" in listed.stdout and "ERM" in listed.stdout and "RotatedMNIST" in listed.stdout

    shown = run("dganalysis", "env")
    assert shown.returncode == 0 and "commit:     —" in shown.stdout, shown  # an installed wheel has no commit

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from audit._simulated_sweep import write_sweep
    finally:
        sys.path.remove(str(ROOT / "tests"))
    store = write_sweep(work / "sweep", {"ERM": 0.0, "Fish": 0.01}, {"PACS": 4}, trials=2, hparams=1)
    collected = run("dganalysis", "collect", str(store))
    assert collected.returncode == 0, collected.stderr
    assert "Model selection: training-domain validation" in collected.stdout and "Fish" in collected.stdout

    audited = run("dganalysis", "audit", "shipped:domainbed", "--selection", "training_domain")  # one of three: faster
    assert audited.returncode == 0, audited.stderr
    assert audited.stdout.startswith("audit shipped:domainbed") and "claims" in audited.stdout, audited.stdout

    # one notebook's plan, from the wheel's own notebook and YAML (the files of every other one are checked above)
    planned = run("dganalysis", "run", "--profile", "quick", "--dry-run", "00_quickstart")
    assert planned.returncode == 0, planned.stdout[-3000:] + planned.stderr[-3000:]
    assert "every YAML valid" in planned.stdout
    assert not (tmp_path / "venv" / "share" / "dganalysis" / "outputs").exists()  # runs write ./outputs, not there
    print(f"wheel {wheel.name}: built, installed and its commands run in {time.monotonic() - start:.1f} s")
