"""DomainBed's own scripts import in the environment quickstart.sh sets up, torchvision first: with the .pth hook of
:mod:`dganalysis.tvhook` installed, ``domainbed.scripts.train`` gets through its imports (torchvision through
``domainbed.datasets``/``networks``) in a fresh interpreter that has not imported dganalysis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dganalysis.tvhook import install_pth

CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env, cwd="/")


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory) -> Path:
    """A site directory holding only the .pth hook."""
    d = tmp_path_factory.mktemp("site")
    install_pth(str(d))
    return d


def test_domainbed_scripts_import_in_the_environment(domainbed, site_dir):
    # train.py imports torchvision (through domainbed.datasets/networks) before parsing its arguments: an unknown
    # flag makes argparse stop after the imports, with exit status 2
    proc = _run(f"import site, sys, runpy; site.addsitedir({str(site_dir)!r}); sys.argv = ['train', '--no-such-flag']; "
                "runpy.run_module('domainbed.scripts.train', run_name='__main__')",
                env={**CLEAN_ENV, "PYTHONPATH": str(domainbed.root)})
    assert proc.returncode == 2 and "unrecognized arguments: --no-such-flag" in proc.stderr, proc.stderr[-2000:]
