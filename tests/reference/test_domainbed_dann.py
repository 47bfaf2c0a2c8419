"""DANN and CDANN against DomainBed's: alternating discriminator/generator steps, separate Adam optimisers with
betas (β1, 0.9), the discriminator's input-gradient penalty and (CDANN) the class-balanced conditional loss.
``DANN_GRL`` is our gradient-reversal variant; a test pins that it departs."""

import pytest
import torch

from tests.reference._harness import assert_same_predictions, build_pair, default_key_map, run_steps

HP = {"d_steps_per_g_step": 2, "grad_penalty": 0.1, "mlp_dropout": 0.1, "lambda": 0.5, "beta1": 0.5}


def dann_key_map(depth: int):
    """DomainBed's ``networks.MLP`` (input, hiddens.i, output) → our ``nn.Sequential`` (Linear, ReLU, Dropout)×."""
    def key_map(name: str) -> str:
        if name.startswith("discriminator."):
            part, rest = name[len("discriminator."):].split(".", 1)
            if part == "input":
                idx = 0
            elif part == "output":
                idx = 3 * (depth - 1)
            else:  # hiddens.i.weight
                i, rest = rest.split(".", 1)
                idx = 3 * (int(i) + 1)
            return f"discriminator.{idx}.{rest}"
        return default_key_map(name)
    return key_map


@pytest.mark.parametrize("name", ["DANN", "CDANN"])
def test_dann_matches_domainbed(domainbed, name):
    km = dann_key_map(3)
    pair = build_pair(domainbed, name, hparams=HP, key_map=km)
    # 5 updates: DomainBed's update_count 1..5 with d_steps_per_g_step=2 → D, G, D, D, G
    hist = run_steps(pair, 5, loss_keys="common", key_map=km, batch_size=4)
    kinds = ["disc_loss" if "disc_loss" in lt else "gen_loss" for lt, _ in hist]
    assert kinds == ["disc_loss", "gen_loss", "disc_loss", "disc_loss", "gen_loss"]
    assert_same_predictions(pair)


def test_cdann_class_weights_count_up_to_largest_label(domainbed):
    """DomainBed's class balance divides by (max label + 1), not by the number of classes present."""
    from dganalysis.data.balanced import class_balanced_weights, domainbed_cdann_weights

    y = torch.tensor([0, 0, 2, 2, 2])  # class 1 absent
    w = domainbed_cdann_weights(y)
    assert torch.allclose(w, torch.tensor([1 / 6, 1 / 6, 1 / 9, 1 / 9, 1 / 9], dtype=w.dtype))
    assert float(class_balanced_weights(y).sum()) == pytest.approx(1.0)  # the GRL variant's weights


def test_dann_grl_variant_departs(domainbed):
    """DANN_GRL (one joint step through a gradient reversal layer) is not DomainBed's DANN: pinned departure."""
    km = dann_key_map(3)
    pair = build_pair(domainbed, "DANN", our_name="DANN_GRL", hparams=HP, key_map=km)
    with pytest.raises(AssertionError, match="parameters differ|DomainBed disc_loss"):
        run_steps(pair, 2, loss_keys={"disc_loss": "disc_loss"}, key_map=km)
