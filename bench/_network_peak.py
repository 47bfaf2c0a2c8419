"""Training images/s of each network the quick profile trains, against the machine's peak FLOP/s and against
DomainBed's own ERM update on the same network and minibatches (``train_throughput.py --networks``).

One training step is ERM's update as both codebases write it: the training domains' minibatches concatenated,
forward, cross-entropy, ``zero_grad``, backward, Adam step (Gulrajani & Lopez-Paz, 2021, ``algorithms.ERM``). Ours is
:class:`dganalysis.algorithms.erm.ERM`, set up as :func:`dganalysis.training.train.build_algorithm` does (channels_last
inputs and weights on a CPU and on CUDA); DomainBed's is ``domainbed.algorithms.ERM`` imported from
``$DOMAINBED_SRC``, with its featurizer and classifier replaced by a copy of ours (same weights) and its Adam
rebuilt over them, fed contiguous NCHW tensors as its ``DataLoader`` gives them. Data loading and evaluation are
not timed: the minibatches are random tensors made before the clock starts.

The model's FLOPs per step (forward and backward of the concatenated batch) are counted by
``torch.utils.flop_counter.FlopCounterMode`` (matrix products and convolutions; the optimizer, normalisation and
activations are not counted, so the fraction of peak is a lower bound on the arithmetic done). Beside the
nominal peak, a large fp32 matrix product is timed on the same threads ("% matmul": what the cores deliver now,
boost clock and other processes included). The CPU's nominal peak is
an estimate from ``lscpu`` (printed with its parts): cores × clock × fp32 FLOPs per cycle per core, 32 for two
256-bit FMA pipes (AVX2 on AMD Zen; Zen 4's AVX-512 runs on the same 256-bit pipes), 64 for two 512-bit FMA pipes
(Intel server cores with AVX-512, AMD Zen 5); AMX-bf16 tiles add 1,024 bf16 FLOPs per cycle per core (Intel's
figure for Sapphire Rapids); without AMX, AVX-512 BF16's dot product (``vdpbf16ps``, flag ``avx512_bf16``: Zen 4,
Cooper Lake) does two bf16 products per fp32 lane, twice the fp32 rate on the same pipes. On CUDA the peak is
looked up by the device's name (dense, without sparsity) when known.
"""

from __future__ import annotations

import copy
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

#: (label, featurizer, input shape, classes, training domains): the quick profile's networks at its batch size
#: (32 per domain), with the domain counts of the notebooks that train them, and ResNet-18 at 32 and 64 px.
CONFIGS: tuple[tuple[str, str, tuple[int, int, int], int, int], ...] = (
    ("smallcnn 16px (00, 04, 05, 06)", "smallcnn", (1, 16, 16), 10, 5),
    ("smallcnn_bn 32px (02, 03)", "smallcnn_bn", (1, 32, 32), 30, 2),
    ("mlp 16px (07)", "mlp", (1, 16, 16), 10, 5),
    ("resnet18 32px", "resnet18", (3, 32, 32), 10, 3),
    ("resnet18 64px", "resnet18", (3, 64, 64), 10, 3),
)

#: dense fp32 (non-tensor-core) and bf16 tensor-core peaks in TFLOP/s by a substring of the CUDA device's name
#: (NVIDIA's data sheets, SXM parts).
CUDA_PEAKS_TFLOPS: dict[str, tuple[float, float]] = {"H200": (67.0, 989.0), "H100": (67.0, 989.0),
                                                     "A100": (19.5, 312.0)}


@dataclass
class Peak:
    """Peak FLOP/s of the device (fp32 and, where there are matrix units for it, bf16) and how it was found."""

    fp32: float | None
    bf16: float | None
    how: str
    cores: int = 0  #: CPU cores the peak counts (0 on CUDA)

    def share(self, threads: int) -> Peak:
        """The peak of the ``threads`` cores a computation can use (all of them on CUDA)."""
        if not self.cores or threads >= self.cores:
            return self
        f = threads / self.cores
        return Peak(self.fp32 * f if self.fp32 else None, self.bf16 * f if self.bf16 else None,
                    f"{self.how}; {threads} of its {self.cores} cores used: x {threads}/{self.cores}", threads)


def _lscpu() -> dict[str, str]:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}


def cpu_peak(info: dict[str, str] | None = None) -> Peak:
    """fp32 (and bf16: AMX or AVX-512 BF16) peak of this CPU from ``lscpu`` (or ``info``, its fields by name): cores × GHz ×
    FLOPs/cycle/core (module doc)."""
    info = _lscpu() if info is None else info
    flags = set(info.get("Flags", "").split())
    cores = int(info.get("Core(s) per socket", "0") or 0) * int(info.get("Socket(s)", "1") or 1) or (os.cpu_count() or 1)
    ghz, src = None, ""
    if info.get("CPU max MHz"):
        ghz, src = float(info["CPU max MHz"]) / 1000, "lscpu 'CPU max MHz'"
    elif m := re.search(r"@\s*([\d.]+)\s*GHz", info.get("Model name", "")):
        ghz, src = float(m.group(1)), "the model name"
    else:
        try:
            mhz = [float(x) for x in re.findall(r"cpu MHz\s*:\s*([\d.]+)", open("/proc/cpuinfo").read())]
            if mhz:
                ghz, src = max(mhz) / 1000, "/proc/cpuinfo 'cpu MHz' (a VM's nominal clock; boost not seen)"
        except OSError:
            pass
    if ghz is None:
        return Peak(None, None, "no clock found in lscpu or /proc/cpuinfo")
    vendor, family = info.get("Vendor ID", ""), int(info.get("CPU family", "0") or 0)
    if "avx512f" in flags and (vendor == "GenuineIntel" or (vendor == "AuthenticAMD" and family >= 26)):
        per, why = 64, "two 512-bit FMA pipes (AVX-512)"
    elif "fma" in flags and "avx2" in flags:
        per, why = 32, "two 256-bit FMA pipes (AVX2 FMA" + ("; AVX-512 double-pumped on Zen 4)" if "avx512f" in flags
                                                            else ")")
    else:
        per, why = 8, "no FMA: one 128-bit multiply and add per cycle assumed"
    fp32 = cores * ghz * 1e9 * per
    bf16_per, bf16_why = ((1024, "AMX-bf16") if "amx_bf16" in flags else
                          (2 * per, "AVX-512 BF16 dot products") if "avx512_bf16" in flags else (0, ""))
    bf16 = cores * ghz * 1e9 * bf16_per if bf16_per else None
    how = (f"{info.get('Model name', '?')}: {cores} cores × {ghz:.2f} GHz (from {src}) × {per} fp32 FLOPs/cycle "
           f"({why}) = {fp32 / 1e9:.0f} GFLOP/s fp32")
    if bf16:
        how += f"; {bf16_why}: {cores} × {ghz:.2f} GHz × {bf16_per:,} = {bf16 / 1e9:,.0f} GFLOP/s bf16"
    return Peak(fp32, bf16, how, cores)


def cuda_peak(device: torch.device) -> Peak:
    """Peaks of a CUDA device from :data:`CUDA_PEAKS_TFLOPS` by name (None when the name is not listed)."""
    name = torch.cuda.get_device_name(device)
    for key, (fp32, bf16) in CUDA_PEAKS_TFLOPS.items():
        if key in name:
            return Peak(fp32 * 1e12, bf16 * 1e12, f"{name}: data-sheet peaks {fp32} TFLOP/s fp32, {bf16} bf16 (dense)")
    return Peak(None, None, f"{name}: peak not listed in bench/_network_peak.py")


class DomainBedStyleERM(torch.nn.Module):
    """ERM's update as DomainBed's ``algorithms.ERM`` writes it (concatenate, cross-entropy, ``zero_grad()``,
    backward, Adam step, ``loss.item()``), written here for machines without ``$DOMAINBED_SRC``."""

    def __init__(self, featurizer: torch.nn.Module, classifier: torch.nn.Module, lr: float, weight_decay: float):
        super().__init__()
        self.featurizer, self.classifier = featurizer, classifier
        self.network = torch.nn.Sequential(featurizer, classifier)
        self.optimizer = torch.optim.Adam(self.network.parameters(), lr=lr, weight_decay=weight_decay)

    def update(self, minibatches, unlabeled=None) -> dict[str, float]:
        all_x = torch.cat([x for x, _ in minibatches])
        all_y = torch.cat([y for _, y in minibatches])
        loss = F.cross_entropy(self.predict(all_x), all_y)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return {"loss": loss.item()}

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


def domainbed_source() -> tuple[object | None, str]:
    """DomainBed's ``algorithms`` module from ``$DOMAINBED_SRC`` (or ``shared/reference/DomainBed`` beside or in
    the repository), and a line saying which; None (and why) when it cannot be imported."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    candidates = [os.environ.get("DOMAINBED_SRC") or "", os.path.join(root, "shared", "reference", "DomainBed"),
                  os.path.join(os.path.dirname(root), "shared", "reference", "DomainBed")]
    src = next((c for c in candidates if c and os.path.isdir(os.path.join(c, "domainbed"))), None)
    if src is None:
        return None, ("DomainBed: no checkout ($DOMAINBED_SRC unset, no shared/reference/DomainBed): its ERM update "
                      "is replaced by the same steps written here (DomainBedStyleERM)")
    if src not in sys.path:
        sys.path.insert(0, src)
    try:
        from domainbed import algorithms as db_algorithms
    except ImportError as e:
        return None, f"DomainBed at {src} does not import ({e}): its ERM update written here instead (DomainBedStyleERM)"
    return db_algorithms, f"DomainBed: algorithms.ERM imported from {src}"


def measured_gemm(device: torch.device, seconds: float = 1.0) -> float:
    """FLOP/s of a large fp32 matrix product on ``device`` (torch's threads; TF32 where the CUDA set-up allows it):
    what this machine's cores deliver now, beside the nominal peak (which assumes the nominal clock)."""
    n = 4096 if device.type == "cuda" else 1024
    a, b = torch.rand(n, n, device=device), torch.rand(n, n, device=device)
    for _ in range(2):
        a @ b
    _sync(device)
    reps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or reps < 3:
        a @ b
        reps += 1
        if device.type == "cuda" and reps % 50 == 0:
            _sync(device)
    _sync(device)
    return 2 * n**3 * reps / (time.perf_counter() - t0)


def _domainbed_erm(ours, n_classes: int, n_domains: int, hparams: dict):
    """DomainBed's ERM (its ``update``) over a copy of our network: built on a 1-d input (its MLP, the cheapest
    featurizer it accepts for any shape), then given our featurizer and classifier and a fresh Adam. Without a
    DomainBed checkout, :class:`DomainBedStyleERM`."""
    db_algorithms, _ = domainbed_source()
    if db_algorithms is None:
        return DomainBedStyleERM(copy.deepcopy(ours.featurizer).to(memory_format=torch.contiguous_format),
                                 copy.deepcopy(ours.classifier), hparams["lr"], hparams["weight_decay"])
    db_hparams = {"lr": hparams["lr"], "weight_decay": hparams["weight_decay"], "nonlinear_classifier": False,
                  "mlp_width": 8, "mlp_depth": 3, "mlp_dropout": 0.0, "batch_size": hparams["batch_size"]}
    algo = db_algorithms.ERM((4,), n_classes, n_domains, db_hparams)
    algo.featurizer = copy.deepcopy(ours.featurizer).to(memory_format=torch.contiguous_format)
    algo.classifier = copy.deepcopy(ours.classifier)
    algo.network = torch.nn.Sequential(algo.featurizer, algo.classifier)
    algo.optimizer = torch.optim.Adam(algo.network.parameters(), lr=db_hparams["lr"],
                                      weight_decay=db_hparams["weight_decay"])
    return algo


def step_flops(algorithm, minibatches) -> int:
    """Forward + backward FLOPs of one ERM step on ``minibatches`` (FlopCounterMode; no optimizer step taken)."""
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.cat([x for x, _ in minibatches])
    y = torch.cat([y for _, y in minibatches])
    with FlopCounterMode(display=False) as counter:
        loss = F.cross_entropy(algorithm.predict(x), y)
        loss.backward()
    algorithm.zero_grad(set_to_none=True)
    return int(counter.get_total_flops())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(algorithm, pool, device: torch.device, seconds: float, min_steps: int, autocast: bool) -> tuple[int, float]:
    """Run ``update`` over the minibatch pool (cycled) until ``seconds`` have passed and at least ``min_steps``
    were taken; returns (steps, wall seconds)."""
    ours = type(algorithm).__module__.startswith("dganalysis")
    _sync(device)
    n, t0 = 0, time.perf_counter()
    while True:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            if ours:
                algorithm.update(pool[n % len(pool)], n)
            else:
                algorithm.update(pool[n % len(pool)])  # DomainBed's signature: update(minibatches, unlabeled=None)
        n += 1
        if n >= min_steps and time.perf_counter() - t0 >= seconds:
            _sync(device)
            return n, time.perf_counter() - t0


def bench_config(label: str, featurizer: str, shape: tuple[int, int, int], n_classes: int, n_domains: int,
                 batch: int, device: torch.device, peak: Peak, seconds: float, rounds: int, bf16: bool,
                 gemm: float | None = None) -> dict:
    """Images/s and fraction of peak of ours (fp32; bf16 autocast too when ``bf16``) and DomainBed's ERM on one
    network; ``rounds`` alternating rounds, medians reported."""
    from dganalysis.algorithms import create

    hparams = {"featurizer": featurizer, "batch_size": batch, "lr": 1e-3, "weight_decay": 0.0,
               "nonlinear_classifier": False}
    torch.manual_seed(0)
    ours = create("ERM", shape, n_classes, n_domains, hparams).to(device)
    db = _domainbed_erm(ours, n_classes, n_domains, hparams).to(device)
    ours.to(memory_format=torch.channels_last)  # as dganalysis.training.train.build_algorithm (4-d weights only)
    ours.train()
    db.train()
    gen = torch.Generator().manual_seed(1)
    pool_nchw = [[(torch.rand(batch, *shape, generator=gen).to(device),
                   torch.randint(n_classes, (batch,), generator=gen).to(device)) for _ in range(n_domains)]
                 for _ in range(4)]
    pool_cl = [[(x.contiguous(memory_format=torch.channels_last), y) for x, y in mb] for mb in pool_nchw]
    flops = step_flops(ours, pool_cl[0])
    imgs = batch * n_domains
    # the same computation on both sides: the first step's loss (same weights, same minibatch)
    loss_diff = abs(ours.update(pool_cl[0], 0)["loss"] - db.update(pool_nchw[0])["loss"])
    variants = [("ours", ours, pool_cl, False), ("DomainBed", db, pool_nchw, False)]
    if bf16:
        variants.insert(1, ("ours bf16", ours, pool_cl, True))
    for _, algo, pool, ac in variants:  # warm-up: oneDNN primitives, allocator, cuDNN autotuning
        time_steps(algo, pool, device, 0.0, 3, ac)
    rates: dict[str, list[float]] = {name: [] for name, *_ in variants}
    for r in range(rounds):
        for name, algo, pool, ac in (variants if r % 2 == 0 else variants[::-1]):
            n, wall = time_steps(algo, pool, device, seconds, 3, ac)
            rates[name].append(n * imgs / wall)
    out = {"label": label, "batch": f"{batch}x{n_domains}", "gflop_per_img": flops / imgs / 1e9,
           "loss_diff": loss_diff}
    for name, rs in rates.items():
        med = statistics.median(rs)
        p = peak.bf16 if name.endswith("bf16") else peak.fp32
        out[name] = (med, min(rs), max(rs), (med * flops / imgs / p) if p else None,
                     (med * flops / imgs / gemm) if gemm else None)
    return out


def _pct(x: float | None) -> str:
    return f"{100 * x:6.2f}%" if x is not None else "     ?"


def report(rows: list[dict], names: list[str]) -> list[str]:
    """Markdown table lines: images/s (median; min-max over rounds), % of the nominal peak and of the measured
    matrix product, ratio ours / DomainBed."""
    head = "| network | batch | GFLOP/img (fwd+bwd) | " + " | ".join(
        f"{n} img/s (min-max) | {n} % peak | {n} % matmul" for n in names)
    head += " | ours / DomainBed | first-step loss, ours - DomainBed |"
    lines = [head, "|" + "---|" * (3 + 3 * len(names) + 2)]
    for row in rows:
        cells = [row["label"], row["batch"], f"{row['gflop_per_img']:.4f}"]
        for n in names:
            med, lo, hi, frac, frac_gemm = row[n]
            cells += [f"{med:,.0f} ({lo:,.0f}-{hi:,.0f})", _pct(frac).strip(), _pct(frac_gemm).strip()]
        cells += [f"{row['ours'][0] / row['DomainBed'][0]:.2f}x", f"{row['loss_diff']:.1e}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def networks_bench(device_name: str, seconds: float, rounds: int, load: int, threads: int | None,
                   only: list[str] | None, batch: int, batch_mult: int) -> None:
    """The ``--networks`` bench: every :data:`CONFIGS` row idle, then with ``load`` busy processes (CPU only)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from bench import _busy
    from dganalysis.training.train import make_runtime

    device = torch.device(device_name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {device_name}: torch {torch.__version__} sees no CUDA device")
    runtime = make_runtime(device, "fp32", None, threads)  # TF32/cuDNN set-up on CUDA, malloc set-up on CPU
    if device.type == "cpu" and runtime.threads:
        torch.set_num_threads(runtime.threads)
    peak = cuda_peak(device) if device.type == "cuda" else cpu_peak().share(torch.get_num_threads())
    bf16 = device.type == "cuda" or peak.bf16 is not None
    print(f"peak: {peak.how}")
    gemm = measured_gemm(device)
    print(f"measured: a {4096 if device.type == 'cuda' else 1024}^2 fp32 matrix product runs at {gemm / 1e9:,.0f} "
          f"GFLOP/s here now ({100 * gemm / peak.fp32:.0f}% of the nominal peak)" if peak.fp32 else
          f"measured: fp32 matrix product {gemm / 1e9:,.0f} GFLOP/s")
    print(domainbed_source()[1])
    print(f"torch {torch.__version__}, device {device}, torch threads {torch.get_num_threads()}, "
          f"batch {batch * batch_mult} per domain, {rounds} alternating rounds of >= {seconds:g} s per variant; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    names = ["ours"] + (["ours bf16"] if bf16 else []) + ["DomainBed"]
    phases = [("idle", 0)] + ([("loaded", load)] if load > 0 and device.type == "cpu" else [])
    for phase, n_busy in phases:
        rows = []
        with _busy.busy_load(n_busy):
            time.sleep(1.0 if n_busy else 0.0)
            print(f"\n== {phase}: {n_busy} busy processes started by this script; {_busy.load_line()}", flush=True)
            for cfg in CONFIGS:
                if only and not any(o in cfg[0] for o in only):
                    continue
                rows.append(bench_config(*cfg, batch * batch_mult, device, peak, seconds, rounds, bf16, gemm))
                print("\n".join(report(rows[-1:], names)[2:]), flush=True)
            print(f"load average after {phase}: {os.getloadavg()[0]:.2f}")
        print(f"\n### {phase} ({n_busy} busy processes; {_busy.load_line()})\n")
        print("\n".join(report(rows, names)), flush=True)
