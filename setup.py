"""The optional compiled reader of sweep records (``dganalysis/audit/_jsonl.c``); the rest of the package is described
in pyproject.toml. ``optional=True``: where it cannot be compiled (no C compiler, no 128-bit integers), pip installs
the package without it and the audit's index reads records with msgspec (the same numbers, slower)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("dganalysis.audit._jsonl", ["dganalysis/audit/_jsonl.c"], optional=True)])
