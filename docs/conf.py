"""Sphinx configuration of the dganalysis documentation (MyST Markdown pages, PyData theme).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (warnings are errors;
``tests/project/test_docs.py`` builds the site the same way and opens every page in headless Chromium).
"""

from __future__ import annotations

import logging
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

project = "dganalysis"
author = "the dganalysis authors"
copyright = "the dganalysis authors"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_nb",  # MyST Markdown pages (it loads myst_parser) and the executed notebooks of docs/executed/
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.napoleon",
]
# docs/executed/ holds notebooks run by `dganalysis run` and published with `dganalysis report --docs`: shown with
# their outputs, never executed by the build.
nb_execution_mode = "off"
nb_merge_streams = True
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: autodoc reads the docstrings; autosummary makes the tables (no generated stub files).
autosummary_generate = False
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
# The heavy optional imports are never needed to read a docstring.
autodoc_mock_imports = ["wilds", "backpack", "pytorch_fid", "submitit"]
napoleon_google_docstring = True
napoleon_numpy_docstring = True
nitpicky = False
suppress_warnings = ["myst.header"]

# Links to the documentation of the libraries the API takes and returns (numpy.ndarray, pandas.DataFrame,
# torch.Tensor, ...). The inventories are fetched at build time; a build without network (CI, a laptop on a train)
# must still pass with -W, so a fetch that fails is reported as a message instead of a warning
# (_OfflineInventories below) and those references stay plain text. intersphinx_timeout bounds a hanging fetch.
# Offline with links: download each project's objects.inv beforehand as <name>.inv into a folder and name it in
# DGANALYSIS_INTERSPHINX_DIR (e.g. `curl -o inv/numpy.inv https://numpy.org/doc/stable/objects.inv`).
INTERSPHINX_DOCS = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "pandas": "https://pandas.pydata.org/docs",
    "scipy": "https://docs.scipy.org/doc/scipy",
    "torch": "https://docs.pytorch.org/docs/stable",
}
_INV_DIR = os.environ.get("DGANALYSIS_INTERSPHINX_DIR", "")


def _inventory(name: str) -> str | None:
    """A local <name>.inv in DGANALYSIS_INTERSPHINX_DIR, else None (fetch objects.inv from the site)."""
    path = os.path.join(_INV_DIR, f"{name}.inv")
    return path if _INV_DIR and os.path.isfile(path) else None


intersphinx_mapping = {name: (url, _inventory(name)) for name, url in INTERSPHINX_DOCS.items()}
intersphinx_timeout = 10
intersphinx_cache_limit = 30  # days


class _OfflineInventories(logging.Filter):
    """Turns intersphinx's "failed to reach any of the inventories" warning into an info message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and "failed to reach any of the inventories" in str(record.msg):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = "intersphinx (offline?): " + str(record.msg) + " -- links to that project are left out"
        return True


def setup(app) -> None:  # noqa: ANN001 (Sphinx's application object)
    for name in ("sphinx.ext.intersphinx", "sphinx.ext.intersphinx._load"):  # where Sphinx 8-9 log it from
        logging.getLogger("sphinx." + name).addFilter(_OfflineInventories())


html_theme = "pydata_sphinx_theme"
html_title = "dganalysis"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
