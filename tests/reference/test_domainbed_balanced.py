"""DomainBed's ``class_balanced`` weights (``lib/misc.make_weights_for_balanced_classes``) equal ours
(:func:`dganalysis.data.balanced.class_balanced_weights`) exactly, on an imbalanced shuffled label vector."""

from __future__ import annotations

import numpy as np
import torch

from dganalysis.data import balanced

LABELS = np.array([0] * 90 + [1] * 10 + [2] * 20)


def test_weights_equal_domainbeds_function(domainbed):
    labels = LABELS[np.random.RandomState(0).permutation(len(LABELS))]
    theirs = domainbed.misc.make_weights_for_balanced_classes([(None, int(y)) for y in labels])
    torch.testing.assert_close(balanced.class_balanced_weights(labels).float(), theirs, rtol=0, atol=0)
