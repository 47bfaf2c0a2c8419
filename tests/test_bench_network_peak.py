"""bench/_network_peak.py (``train_throughput.py --networks``): the peak estimate from lscpu's fields, and that the
two sides it times compute the same step (ours and DomainBed's ERM update on the same network and minibatch)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import _network_peak as npk  # noqa: E402

ZEN4 = {"Model name": "AMD EPYC", "Vendor ID": "AuthenticAMD", "CPU family": "25", "Core(s) per socket": "2",
        "Socket(s)": "1", "CPU max MHz": "2600.0", "Flags": "fma avx2 avx512f avx512_bf16"}


def test_cpu_peak_from_lscpu_fields():
    zen4 = npk.cpu_peak(ZEN4)
    assert zen4.fp32 == pytest.approx(2 * 2.6e9 * 32) and zen4.cores == 2
    assert zen4.bf16 == pytest.approx(2 * 2.6e9 * 64) and "AVX-512 BF16" in zen4.how  # vdpbf16ps: 2x fp32's rate
    assert npk.cpu_peak({**ZEN4, "Flags": "fma avx2 avx512f"}).bf16 is None
    assert "32 fp32 FLOPs/cycle" in zen4.how and "2 cores" in zen4.how
    assert zen4.share(1).fp32 == pytest.approx(2.6e9 * 32)
    xeon = npk.cpu_peak({**ZEN4, "Vendor ID": "GenuineIntel", "CPU family": "6", "Model name": "Xeon @ 2.10GHz",
                         "CPU max MHz": "", "Flags": "fma avx2 avx512f amx_bf16 amx_tile"})
    assert xeon.fp32 == pytest.approx(2 * 2.1e9 * 64) and xeon.bf16 == pytest.approx(2 * 2.1e9 * 1024)
    old = npk.cpu_peak({**ZEN4, "Flags": "sse2"})
    assert old.fp32 == pytest.approx(2 * 2.6e9 * 8)


def _same_step(featurizer: str, shape: tuple[int, int, int]) -> float:
    from dganalysis.algorithms import create

    hp = {"featurizer": featurizer, "batch_size": 8, "lr": 1e-3, "weight_decay": 0.0, "nonlinear_classifier": False}
    torch.manual_seed(0)
    ours = create("ERM", shape, 10, 2, hp)
    theirs = npk._domainbed_erm(ours, 10, 2, hp)
    ours.to(memory_format=torch.channels_last)
    gen = torch.Generator().manual_seed(0)
    mb = [(torch.rand(8, *shape, generator=gen), torch.randint(10, (8,), generator=gen)) for _ in range(2)]
    mb_cl = [(x.contiguous(memory_format=torch.channels_last), y) for x, y in mb]
    diffs = [abs(ours.update(mb_cl, s)["loss"] - theirs.update(mb)["loss"]) for s in range(3)]
    assert npk.step_flops(ours, mb_cl) > 0
    return max(diffs)


def test_both_sides_train_the_same_network_written_here(monkeypatch):
    monkeypatch.setenv("DOMAINBED_SRC", "")
    monkeypatch.setattr(npk, "domainbed_source", lambda: (None, "none"))
    assert _same_step("smallcnn", (1, 16, 16)) < 1e-5  # three steps: the same weights, optimizer and data


@pytest.mark.skipif(not os.environ.get("DOMAINBED_SRC"), reason="set DOMAINBED_SRC to a DomainBed checkout to compare "
                    "with its algorithms.ERM")
def test_both_sides_train_the_same_network_domainbed():
    assert npk.domainbed_source()[0] is not None
    assert _same_step("smallcnn_bn", (1, 16, 16)) < 1e-5
