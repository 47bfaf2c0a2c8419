"""dganalysis: reliable evaluation of domain generalization (DG).

A thin library behind parameterised notebooks: datasets, DG algorithms, sweeps,
model selection, the evaluation protocols of the four seed papers, shift and
worst-case estimators, and figure/table export.
"""

from dganalysis import compat as _compat

_compat.install_on_import()  # the torchvision shim, without importing torch now

__version__ = "0.1.0"
