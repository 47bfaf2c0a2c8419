"""ARM against DomainBed's: the context channel averaged over support sets of ``batch_size`` images, DomainBed's
test-time chunking rule, and its optimiser that leaves the context network untrained. ``ARM_CML`` (context
network trained) is our variant; a test pins that it departs."""

import pytest
import torch

from tests.reference._harness import INPUT_SHAPE, build_pair, default_key_map, run_steps

BATCH = 4


def arm_key_map(name: str) -> str:
    if name.startswith("context_net.context_net."):
        return "featurizer.context_net." + name[len("context_net.context_net."):]
    name = default_key_map(name)
    for prefix in ("featurizer.", "network.0."):
        if name.startswith(prefix):
            return prefix + "base." + name[len(prefix):]
    return name


def _predict_both(pair, x):
    pair.theirs.eval()
    pair.ours.eval()
    with torch.no_grad():
        return pair.theirs.predict(x), pair.ours.predict(x)


def test_arm_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "ARM", hparams={"batch_size": BATCH}, key_map=arm_key_map)
    ctx0 = [p.detach().clone() for p in pair.ours.featurizer.context_net.parameters()]
    run_steps(pair, 3, key_map=arm_key_map, batch_size=BATCH)
    # DomainBed's context network is never stepped, and neither is ours
    assert all(torch.equal(a, b) for a, b in zip(ctx0, pair.ours.featurizer.context_net.parameters()))
    torch.testing.assert_close(pair.ours.featurizer.context_net[1].running_mean,
                               pair.theirs.context_net.context_net[1].running_mean, rtol=0, atol=1e-12)
    g = torch.Generator().manual_seed(3)
    for n in (2 * BATCH, BATCH + 3):  # whole support sets, and a batch that is not a multiple of them
        pt, po = _predict_both(pair, torch.rand((n, *INPUT_SHAPE), generator=g, dtype=torch.float64))
        torch.testing.assert_close(po, pt, rtol=0, atol=1e-9)


def test_arm_cml_variant_departs(domainbed):
    pair = build_pair(domainbed, "ARM", our_name="ARM_CML", hparams={"batch_size": BATCH}, key_map=arm_key_map)
    with pytest.raises(AssertionError, match="parameters differ"):
        run_steps(pair, 1, key_map=arm_key_map, batch_size=BATCH)


def test_arm_is_evaluated_in_domainbed_batches(domainbed):
    """DomainBed evaluates in batches of 64 (``FastDataLoader(batch_size=64)``); ARM's prediction depends on the
    batch, so ``train.evaluate`` uses ARM's ``EVAL_BATCH_SIZE`` = 64 whatever the job's evaluation batch size."""
    import re
    from pathlib import Path

    from dganalysis.data.feed import DeviceSplit
    from dganalysis.data.pipeline import PlainPipeline
    from dganalysis.training.train import evaluate

    src = (Path(domainbed.root) / "domainbed" / "scripts" / "train.py").read_text()
    assert re.search(r"eval_loaders = \[FastDataLoader\(\s*dataset=env,\s*batch_size=64", src)
    pair = build_pair(domainbed, "ARM", hparams={"batch_size": BATCH}, key_map=arm_key_map)
    g = torch.Generator().manual_seed(0)
    n = 64 * 2 + 9
    images = (torch.rand((n, *INPUT_SHAPE), generator=g) * 255).to(torch.uint8).numpy()
    labels = torch.randint(0, 3, (n,), generator=g).numpy()
    split = DeviceSplit(images, labels, torch.device("cpu"), False, PlainPipeline())
    pair.ours.float()
    got = evaluate(pair.ours, [(split, split)], batch_size=512, autocast=False)["env0_in_acc"]
    pair.theirs.float().eval()
    x = torch.from_numpy(images).float() / 255
    with torch.no_grad():
        logits = torch.cat([pair.theirs.predict(x[i:i + 64]) for i in range(0, n, 64)])
        assert not torch.allclose(logits, pair.theirs.predict(x))  # the batching matters
    assert got == int((logits.argmax(1) == torch.from_numpy(labels)).sum()) / n
