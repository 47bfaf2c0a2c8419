"""Our reader of OoD-Bench's CelebA split files (``CelebA_Blond``, Ye et al. 2022, Table 2) on the real files that
ship with OoD-Bench (``data/celeba/blond_split/``): file lists and attributes equal an independent pandas read,
the label is ``Blond_Hair`` and the spurious ``Male`` correlation is the one the environments are built on.

OoD-Bench's ``CelebA_Blond`` dataset class lives in its DomainBed submodule (``external/DomainBed``), which the
reference snapshot does not include, so the class itself cannot be imported here; the images are not shipped either.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dganalysis.data.celeba import BLOND_HAIR, ENVIRONMENTS, MALE, read_split


def test_split_files_read_as_pandas_reads_them(oodbench_root):
    split_dir = oodbench_root / "data" / "celeba" / "blond_split"
    sizes = {}
    for env in ENVIRONMENTS:
        files, attrs = read_split(split_dir / f"{env}.csv")
        ref = pd.read_csv(split_dir / f"{env}.csv", index_col=0)
        assert files == list(ref.index)
        assert np.array_equal(attrs, ref.to_numpy())
        assert len(set(files)) == len(files)
        blond, male = attrs[:, BLOND_HAIR], attrs[:, MALE]
        sizes[env] = (len(files), float(np.mean(blond != male)))
        if env == "te_env":  # balanced test environment: every (blond, male) group the same size
            groups = np.unique(blond * 2 + male, return_counts=True)[1]
            assert len(groups) == 4 and len(set(groups)) == 1
    # the training environments tie blond to female far more than the test one (correlation shift)
    assert sizes["tr_env1"][1] > 0.9 and sizes["tr_env2"][1] > 0.9 and sizes["te_env"][1] == 0.5
    assert sizes["tr_env1"][0] == sizes["tr_env2"][0] > sizes["te_env"][0]
