"""Sphinx configuration of the dganalysis documentation (MyST Markdown pages, PyData theme).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (warnings are errors;
``tests/project/test_docs.py`` builds the site the same way and opens every page in headless Chromium).
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

project = "dganalysis"
author = "the dganalysis authors"
copyright = "the dganalysis authors"  # noqa: A001 (Sphinx's name)

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]
source_suffix = {".md": "markdown"}
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

html_theme = "pydata_sphinx_theme"
html_title = "dganalysis"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
