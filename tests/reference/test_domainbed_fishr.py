"""Fishr against DomainBed's: identical weights and minibatches, float64, steps crossing the anneal step (λ = 0
for steps 0–1, Adam reset at step 2), the moving average of the gradient variances running from step 0.

DomainBed computes the per-sample gradients of its classifier with BackPACK (``backpack-for-pytorch``, a test
extra; ours uses ``torch.func``). DomainBed pins BackPACK 1.3, which does not import under torch 2; BackPACK ≥ 1.4
hooks modules with *full* backward hooks, which do not fire when ``backward(inputs=<the classifier's
parameters>)`` needs no gradient w.r.t. the classifier's input, so DomainBed's call would leave ``grad_batch``
unset. :func:`backpack_sees_head_input` adds the classifier's input to those ``inputs`` during DomainBed's update:
the gradients BackPACK computes and the parameters' ``.grad`` are unchanged (only that non-leaf input gets a
``.grad`` as well). Skipped, saying why, where BackPACK is not installed.
"""

import contextlib

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_float64, run_steps

pytest.importorskip("backpack", reason="DomainBed's Fishr needs backpack-for-pytorch: pip install -e '.[test]'")


@pytest.fixture(autouse=True)
def _float64():
    with default_float64():
        yield


@contextlib.contextmanager
def backpack_sees_head_input(head: torch.nn.Module):
    """During the block, a ``backward(inputs=...)`` also asks for the gradient w.r.t. ``head``'s latest input."""
    seen: list[torch.Tensor] = []
    hook = head.register_forward_hook(lambda _m, inp, _out: seen.append(inp[0]))
    original = torch.Tensor.backward

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if inputs is not None and seen:
            inputs = [*inputs, seen[-1]]
        return original(self, gradient, retain_graph, create_graph, inputs)

    torch.Tensor.backward = backward
    try:
        yield
    finally:
        torch.Tensor.backward = original
        hook.remove()


def update_domainbed_fishr(model, minibatches):
    with backpack_sees_head_input(model.classifier):
        return model.update(minibatches)


@pytest.mark.parametrize("ema", [0.95, 0.5])
def test_fishr_matches_domainbed(domainbed, ema):
    hp = {"penalty_anneal_iters": 2, "lambda": 100.0, "ema": ema}
    pair = build_pair(domainbed, "Fishr", hparams=hp)
    hist = run_steps(pair, 5, loss_keys={"loss": "loss", "nll": "nll", "penalty": "penalty"},
                     update_theirs=update_domainbed_fishr)
    assert all(lt["penalty"] > 0 for lt, _ in hist)
    assert_same_predictions(pair)
