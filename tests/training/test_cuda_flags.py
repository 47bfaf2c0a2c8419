"""The cuDNN/TF32 settings of a CUDA job, checked on the CPU: :func:`dganalysis.provenance.cuda_flags` chooses them by mode
(DomainBed's deterministic cuDNN and no TF32 matrix products in ``domainbed_exact``; TF32 and autotuning in our
default engine), :func:`dganalysis.training.train.make_runtime` applies them (torch's flags patched back after each test)
and the provenance stamp says the settings in force."""

from __future__ import annotations

import pytest
import torch

from dganalysis import provenance
from dganalysis.training import train

EXACT = {"matmul_allow_tf32": False, "cudnn_allow_tf32": True, "cudnn_benchmark": False, "cudnn_deterministic": True}
DEFAULT = {"matmul_allow_tf32": True, "cudnn_allow_tf32": True, "cudnn_benchmark": True, "cudnn_deterministic": False}


@pytest.fixture
def torch_flags():
    """torch's cuDNN/TF32 flags, restored after the test (torch.backends.cuda.matmul answers through __getattr__,
    which monkeypatch.setattr does not take)."""
    b = torch.backends
    targets = ((b.cuda.matmul, "allow_tf32"), (b.cudnn, "allow_tf32"), (b.cudnn, "benchmark"), (b.cudnn, "deterministic"))
    saved = [getattr(obj, attr) for obj, attr in targets]
    precision = torch.get_float32_matmul_precision()
    yield
    for (obj, attr), value in zip(targets, saved):
        setattr(obj, attr, value)
    torch.set_float32_matmul_precision(precision)


def read_flags() -> dict[str, bool]:
    got = provenance.cuda_backends(torch.device("cuda"))
    return {k: got[k] for k in EXACT}


def test_the_flags_by_mode_and_device():
    assert provenance.cuda_flags("domainbed_exact", "cuda") == EXACT
    assert provenance.cuda_flags("default", "cuda") == DEFAULT
    assert provenance.cuda_flags("domainbed_exact", "cpu") == provenance.cuda_flags("default", "cpu") == {}
    with pytest.raises(ValueError, match="exactish"):
        provenance.cuda_flags("exactish", "cuda")


@pytest.mark.parametrize("first,then", [("default", "domainbed_exact"), ("domainbed_exact", "default")])
def test_setup_applies_every_flag_whatever_ran_before(torch_flags, first, then):
    train._cuda_setup(torch.device("cuda"), provenance.cuda_flags(first, "cuda"))  # no index: no set_device call
    train._cuda_setup(torch.device("cuda"), provenance.cuda_flags(then, "cuda"))
    assert read_flags() == provenance.cuda_flags(then, "cuda")
    assert torch.get_float32_matmul_precision() == ("highest" if then == "domainbed_exact" else "high")


@pytest.mark.parametrize("exact", [True, False])
def test_make_runtime_sets_and_records_the_mode_flags(torch_flags, monkeypatch, exact):
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: pytest.fail("no device index was given"))
    runtime = train.make_runtime("cuda", "fp32", None, exact=exact)
    want = EXACT if exact else DEFAULT
    assert read_flags() == want
    assert {k: runtime.backends[k] for k in want} == want
    stamp = provenance.stamp("cuda:Some GPU", "fp32", None, runtime.backends)  # a worded device: no CUDA call
    assert stamp["cuda_backends"] == runtime.backends and list(stamp) == list(provenance.FIELDS)
    assert "cudnn_deterministic=" + str(exact) in provenance.format_stamp(stamp)


def test_cpu_runtime_and_stamp_say_not_applicable(torch_flags):
    before = read_flags()
    runtime = train.make_runtime("cpu", "fp32", None, exact=True)
    assert runtime.backends == provenance.NOT_CUDA == train.runtime_stamp(runtime, True)["cuda_backends"]
    assert read_flags() == before  # nothing set off CUDA
    assert provenance.stamp()["cuda_backends"] is None  # device not known
