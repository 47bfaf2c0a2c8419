"""The compat shim: torchvision imports and builds its models on the installed torch."""

import dganalysis  # noqa: F401 - installs the compat shim


def test_torchvision_imports_on_this_torch():
    from dganalysis.compat import torchvision

    tv = torchvision()
    net = tv.models.resnet18(weights=None)
    assert net.fc.in_features == 512
