"""torchvision imports on its own, before dganalysis, in the environment quickstart.sh sets up: the .pth hook of
dganalysis.tvhook registers the schemas a CUDA torchvision wheel beside a CPU torch lacks, at the first
`import torchvision` (a no-op where torchvision's C++ ops load). DomainBed's own scripts in that environment:
tests/reference/test_domainbed_tvhook.py."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from dganalysis.tvhook import PTH_NAME, install_pth

CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=env or CLEAN_ENV, cwd="/")


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("site")
    install_pth(str(d))
    return d


def test_pth_hook_lets_torchvision_import_first(site_dir):
    proc = _run(f"import site, sys; site.addsitedir({str(site_dir)!r}); "
                "assert 'torch' not in sys.modules, 'the hook must not import torch at start'; "
                "import torchvision; import torchvision.models; import torchvision.ops; "
                "assert 'dganalysis' not in sys.modules; "
                "assert not any(type(f).__name__ == 'TorchvisionFinder' for f in sys.meta_path); print('ok')")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.parametrize("code", [
    "import dganalysis; import torchvision; import torchvision.models",
    "import torchvision; import dganalysis; import torchvision.ops",
    "import dganalysis.compat as c; c.torchvision(); import torchvision.models",
])
def test_hook_and_dganalysis_together_in_any_order(site_dir, code):
    """The .pth hook's copy of the rule and dganalysis's own both run in one process: the schemas are defined once
    and stay defined (a second, failed definition once replaced the first fragment, which took them with it)."""
    proc = _run(f"import site; site.addsitedir({str(site_dir)!r}); {code}; print('ok')")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


def test_the_installed_environment_has_the_hook():
    """In the venv quickstart.sh builds (CI's), a plain interpreter imports torchvision first."""
    pth = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    if not pth.is_file():
        pytest.skip(f"{pth} not installed (quickstart.sh installs it; this interpreter is not its venv)")
    proc = _run("import torchvision, torchvision.models; import dganalysis; print('ok')")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
