"""Compat shim, registries, hyperparameters, featurizers, plots."""

import numpy as np
import pandas as pd
import pytest
import torch

import dganalysis  # noqa: F401 - installs the compat shim
from dganalysis import hparams, plots
from dganalysis.nets import build_featurizer


def test_torchvision_imports_on_this_torch():
    from dganalysis.compat import torchvision

    tv = torchvision()
    net = tv.models.resnet18(weights=None)
    assert net.fc.in_features == 512


def test_hparams_one_rng_per_name():
    specs = {"a": hparams.HParam(1.0, hparams.uniform(0, 1)), "b": hparams.HParam(2, hparams.choice([5, 6, 7]))}
    h1 = hparams.resolve(specs, 3)
    more = {**specs, "c": hparams.HParam(0.0, hparams.log10_uniform(-2, 0))}
    h2 = hparams.resolve(more, 3)
    assert h1["a"] == h2["a"] and h1["b"] == h2["b"]  # adding c changes nothing else
    assert hparams.resolve(specs, 0) == {"a": 1.0, "b": 2}
    assert hparams.resolve(specs, 4) != hparams.resolve(specs, 5)
    g = hparams.resolve(more, 7, search_overrides={"c": {"log10_uniform": [-2, -1]}})
    assert 0.01 <= g["c"] <= 0.1
    assert hparams.resolve(specs, 7, overrides={"a": 9})["a"] == 9
    with pytest.raises(KeyError, match="unknown hyperparameters"):
        hparams.resolve(specs, 1, overrides={"zz": 1})
    with pytest.raises(ValueError, match="unknown distribution"):
        hparams.parse_distribution({"gauss": [0, 1]}, "c")


@pytest.mark.parametrize("kind,shape,n", [("cnn", (1, 16, 16), 128), ("smallcnn", (3, 16, 16), 128), ("smallcnn_bn", (1, 16, 16), 128),
                                          ("mlp", (2, 8, 8), 128), ("resnet18", (1, 32, 32), 512)])
def test_featurizers(kind, shape, n):
    f = build_featurizer(shape, {"featurizer": kind, "conv1_3x3": True})
    assert f.n_outputs == n and f(torch.rand(2, *shape)).shape == (2, n)


def test_unknown_names_list_known():
    from dganalysis import algorithms, data

    with pytest.raises(KeyError, match="known: .*ERM"):
        algorithms.get_algorithm("NoSuchMethod")
    with pytest.raises(KeyError, match="known: .*RotatedDigits"):
        data.load_dataset("NoSuchData")
    with pytest.raises(ValueError, match="featurizer"):
        build_featurizer((1, 8, 8), {"featurizer": "vgg"})


def test_save_figure_and_table(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    paths = plots.save_figure(fig, "line", tmp_path)
    assert [p.name for p in paths] == ["line.pdf", "line.png"] and all(p.stat().st_size > 100 for p in paths)
    df = pd.DataFrame({"method": ["ERM", "CORAL"], "acc": [91.234, np.nan]})
    plots.save_table(df, "t", tmp_path, caption="Accuracy (%)")
    assert (tmp_path / "tables" / "t.csv").read_text().startswith("method,acc")
    assert "91.2" in (tmp_path / "tables" / "t.md").read_text()
    assert "\\caption{Accuracy (\\%)}" in (tmp_path / "tables" / "t.tex").read_text()
    assert plots.format_mean_se(91.23, 0.456) == "91.2 ± 0.5" and plots.format_mean_se(1.0, float("nan")) == "1.0 ± —"
    with pytest.raises(ValueError, match="figure/table name"):
        plots.save_figure(fig, "a b", tmp_path)
