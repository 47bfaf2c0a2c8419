"""The docs link to Python, NumPy, pandas, SciPy and PyTorch through intersphinx (docs/conf.py), and the build with
warnings as errors still passes where their inventories cannot be fetched (CI and other machines without network).

Each build here is a one-page site with the project's own conf.py (the whole site's build is tests/project/test_docs.py).
"""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = "# Home\n\nA {py:class}`numpy.ndarray` and a {py:class}`pandas.DataFrame`.\n"


@pytest.fixture(autouse=True)
def _sphinx():
    for mod in ("sphinx", "myst_parser", "pydata_sphinx_theme"):
        pytest.importorskip(mod, reason=f"{mod} is not installed: pip install -e '.[docs]' builds the docs")


def _site(tmp_path: Path, page: str = PAGE) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(ROOT / "docs" / "conf.py", src / "conf.py")
    (src / "index.md").write_text(page, encoding="utf-8")
    return src


def _build(src: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", str(src), str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, **env})


#: every HTTP(S) fetch goes to a proxy on a closed local port: the inventories cannot be reached, network or not
UNREACHABLE = {"https_proxy": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
               "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "no_proxy": "", "NO_PROXY": ""}


def test_intersphinx_maps_the_five_libraries():
    conf = runpy.run_path(str(ROOT / "docs" / "conf.py"))
    assert "sphinx.ext.intersphinx" in conf["extensions"]
    assert set(conf["intersphinx_mapping"]) == {"python", "numpy", "pandas", "scipy", "torch"}
    assert all(url.startswith("https://") for url, _ in conf["intersphinx_mapping"].values())


def test_build_passes_with_warnings_as_errors_when_inventories_are_unreachable(tmp_path):
    src = _site(tmp_path)
    proc = _build(src, tmp_path / "out", {**UNREACHABLE, "DGANALYSIS_INTERSPHINX_DIR": ""})
    assert proc.returncode == 0, f"offline build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "failed to reach any of the inventories" in proc.stdout + proc.stderr, "expected the fetch to be reported"
    html = (tmp_path / "out" / "index.html").read_text()
    assert "numpy.ndarray" in html and "numpy.org" not in html  # plain text, no link


def test_local_inventories_give_links_offline(tmp_path):
    """An objects.inv in DGANALYSIS_INTERSPHINX_DIR is used instead of the fetch: the reference becomes a link to the
    library's site. The inventory is made here by building a one-class site with Sphinx."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "conf.py").write_text("project = 'numpy'\n", encoding="utf-8")
    (lib / "index.rst").write_text("numpy\n=====\n\n.. py:class:: numpy.ndarray\n\n   An array.\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-q", "-b", "html", str(lib), str(tmp_path / "libout")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    inv = tmp_path / "inv"
    inv.mkdir()
    shutil.copy(tmp_path / "libout" / "objects.inv", inv / "numpy.inv")
    src = _site(tmp_path)
    proc = _build(src, tmp_path / "out", {**UNREACHABLE, "DGANALYSIS_INTERSPHINX_DIR": str(inv)})
    assert proc.returncode == 0, f"build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    html = (tmp_path / "out" / "index.html").read_text()
    assert 'href="https://numpy.org/doc/stable/index.html#numpy.ndarray"' in html
