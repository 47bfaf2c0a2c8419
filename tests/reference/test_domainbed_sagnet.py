"""SagNet against DomainBed's: three optimisers (featurizer, content head, style head), style and content
randomisation drawing ``torch.rand`` then ``torch.randperm`` from the global generator in DomainBed's order."""

from tests.reference._harness import assert_same_predictions, build_pair, default_key_map, run_steps


def sagnet_key_map(name: str) -> str:
    for theirs, ours in (("network_f.", "featurizer."), ("network_c.", "classifier."), ("network_s.", "style_net.")):
        if name.startswith(theirs):
            name = ours + name[len(theirs):]
    return default_key_map(name)


def test_sagnet_matches_domainbed(domainbed):
    pair = build_pair(domainbed, "SagNet", hparams={"sag_w_adv": 0.5}, key_map=sagnet_key_map)
    run_steps(pair, 3, loss_keys={k: k for k in ("loss_c", "loss_s", "loss_adv")}, key_map=sagnet_key_map, batch_size=4)
    assert_same_predictions(pair)
