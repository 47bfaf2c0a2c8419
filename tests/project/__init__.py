"""Tests of the repository as a whole rather than one module: documentation, docstrings, citation, code
conventions, notebooks, the profiles' parameter files."""
