"""One-shot check of dganalysis's CUDA paths on a GPU machine; writes a JSON report (and runs on a CPU too).

None of the project's CUDA paths had run on a GPU before this script (the project's machines and CI have none).
Run once on a CUDA machine, it checks through the project's own entry points, each step in its own try/except,
the report rewritten after every step (a run cut short still leaves what it did):

- ``environment``: Python, torch, torchvision, numpy, CUDA and cuDNN versions, the GPU, its memory, the CPU;
- ``runtime``: :func:`dganalysis.training.train.resolve_device` / :func:`~dganalysis.training.train.make_runtime` on CUDA (TF32 and
  cuDNN autotuning switched on, bf16 autocast under ``precision="auto"``, no thread count) and on the CPU;
- ``step_*``: the same seeded model built by :func:`~dganalysis.training.train.build_algorithm` on CUDA and on the CPU, one
  fp32 update (TF32 off) on the same minibatch: initial weights, logits, loss and logits after the step compared;
- ``job_*``: one job through :func:`dganalysis.training.train.run_job` on CUDA and the same job on the CPU (same seed):
  ``done`` and the checkpoint records written, device recorded as CUDA, the precision the project's rules pick
  (bf16 for ERM, fp32 for WCDG, whose ``BF16_AUTOCAST`` is False), the data path, accuracies finite and close to the
  CPU run's. The two devices draw their minibatches from different generators (the device's), so the runs train on
  different (equally distributed) batch sequences: accuracies are compared within a tolerance, never bit for bit;
- ``feed_paths``: :mod:`dganalysis.data.feed` and :mod:`dganalysis.data.stream` on CUDA on simulated JPEGs in
  PACS's folder layout: the device-resident path against the CPU's, the streamed path (CPU decoding) against the
  device path (equal, as ``tests/data/test_benchmarks.py`` expects on the CPU), the streamed path with CUDA JPEG
  decoding (:func:`~dganalysis.data.stream.decode_jpeg_cuda`, nvJPEG: other decoder, so compared within a
  tolerance), seeded training draws, ``choose_mode`` with ``torch.cuda.mem_get_info``;
- ``throughput``: training images/s of the project's step (minibatch draw on the device + ``update``) for the
  small CNNs at 28–32 px and ResNet-18 at 64 px, on CUDA and on this machine's CPU, warm-up first, CUDA
  synchronised around the timers;
- ``sweep_pool``: :func:`dganalysis.sweep.run_sweep` with two local worker processes, each given ``cuda:{slot %
  n_gpus}``.

No data are downloaded: the datasets are scikit-learn's bundled digits (RotatedDigits, ColoredDigits; simulated
glyphs when scikit-learn is missing), DomainBed's simulated Debug28 and simulated JPEGs written here.

Run: ``PYTHONPATH=$PWD python3 bench/cuda_check.py --out OUT/cuda_check.json`` (``bash bench/cuda_check.sh`` does
this on the GPU machine); on a CPU: ``--device cpu --quick`` (CUDA replaced by the CPU: a check of this script).
The exit code is 0 whatever a check found; the report's ``summary`` lists what failed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import logging
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the repository's dganalysis, wherever the script is started from

try:  # a machine without these still gets a report saying so
    import numpy as np
    import torch

    import dganalysis  # noqa: F401 - installs the torchvision shim before torchvision is imported

    IMPORT_ERROR = None
except Exception as _e:  # noqa: BLE001
    IMPORT_ERROR = f"{type(_e).__name__}: {_e}"

SYNTH = "_CudaCheckGlyphs"  # simulated digits-like glyphs (when scikit-learn is missing)
BENCH_PREFIX = "_CudaCheckBench"  # random images for the throughput steps


# --------------------------------------------------------------------------- report
def _jsonable(obj: Any) -> Any:
    """Plain JSON: non-finite floats as strings, numpy/torch scalars as numbers, paths and devices as strings."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (bool, int, str)) or obj is None:
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if hasattr(obj, "item") and callable(obj.item) and getattr(obj, "ndim", 0) == 0:
        return _jsonable(obj.item())
    return str(obj)


class Failures(list):
    """The failed expectations of one check (a check passes when it raises nothing and this stays empty)."""

    def expect(self, cond: Any, message: str) -> bool:
        if not cond:
            self.append(message)
            print(f"    FAIL: {message}", flush=True)
        return bool(cond)


class Report:
    """The JSON report, rewritten (atomically) after every check."""

    def __init__(self, path: Path, args: argparse.Namespace) -> None:
        self.path = path
        self.t0 = time.time()
        self.deadline = self.t0 + args.budget
        self.data: dict[str, Any] = {
            "tool": "bench/cuda_check.py", "format": 1, "started_utc": _utc(), "finished_utc": None,
            "complete": False, "args": vars(args), "environment": {}, "checks": {}, "summary": {},
        }

    def remaining(self) -> float:
        return self.deadline - time.time()

    def run(self, name: str, fn: Callable[[Failures], dict[str, Any]], need_s: float = 0.0,
            skip: str | None = None) -> dict[str, Any]:
        """Run check ``name``: ``fn(failures)`` returns its details; an exception is the check's error."""
        entry: dict[str, Any] = {"status": "skip", "seconds": 0.0, "failures": [], "error": None, "details": {}}
        if skip is None and self.remaining() < need_s:
            skip = f"time budget: {self.remaining():.0f} s left, about {need_s:.0f} s needed"
        if skip is not None:
            entry["skip_reason"] = skip
            print(f"[{name}] skipped: {skip}", flush=True)
        else:
            print(f"[{name}] ... ({self.remaining():.0f} s of budget left)", flush=True)
            fails = Failures()
            t = time.time()
            try:
                entry["details"] = fn(fails)
                entry["status"] = "fail" if fails else "pass"
            except Exception as e:  # noqa: BLE001 - every check reports its error and the run goes on
                entry["status"] = "error"
                entry["error"] = f"{type(e).__name__}: {e}"
                entry["traceback"] = traceback.format_exc()[-4000:]
                print(f"    ERROR: {entry['error']}", flush=True)
            entry["failures"] = list(fails)
            entry["seconds"] = round(time.time() - t, 2)
            print(f"[{name}] {entry['status'].upper()} in {entry['seconds']:.1f} s", flush=True)
        self.data["checks"][name] = entry
        self.write()
        return entry

    def write(self, complete: bool = False) -> None:
        checks = self.data["checks"]
        self.data["summary"] = {
            **{s: sum(c["status"] == s for c in checks.values()) for s in ("pass", "fail", "error", "skip")},
            "not_passed": [n for n, c in checks.items() if c["status"] in ("fail", "error")],
            "wall_s": round(time.time() - self.t0, 1),
        }
        self.data["complete"] = complete
        self.data["finished_utc"] = _utc()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(_jsonable(self.data), indent=1))
        os.replace(tmp, self.path)


def _utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def _no_tf32():
    """fp32 matmuls and convolutions in full precision on CUDA for the block (make_runtime switches TF32 on)."""
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


# --------------------------------------------------------------------------- data made here (nothing downloaded)
def _have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return False


def register_synthetic() -> None:
    """``_CudaCheckGlyphs``: simulated 1×28×28 glyphs, 4 classes (a bar whose orientation is the class), 3 domains
    differing in background, contrast and noise, 400 images each (small-image regime)."""
    from dganalysis.data import Domain, DomainDataset, register_dataset
    from dganalysis.data.registry import DATASETS

    if SYNTH in DATASETS:
        return

    def build(n_per_domain: int = 400, size: int = 28, seed: int = 0, data_dir=None) -> DomainDataset:
        rng = np.random.RandomState(seed)
        yy, xx = np.mgrid[0:size, 0:size] - (size - 1) / 2
        domains = []
        for d, (bg, fg, noise) in enumerate(((10, 230, 12), (60, 200, 25), (110, 170, 40))):
            labels = rng.randint(0, 4, n_per_domain)
            imgs = np.empty((n_per_domain, 1, size, size), np.uint8)
            for k, c in enumerate(labels):
                angle = c * np.pi / 4 + rng.normal(0, 0.12)
                dx, dy = rng.normal(0, 2, 2)
                dist = np.abs((xx - dx) * np.sin(angle) - (yy - dy) * np.cos(angle))
                bar = (dist < 2.2) & (np.hypot(xx - dx, yy - dy) < size * 0.38)
                img = np.where(bar, fg, bg) + rng.normal(0, noise, (size, size))
                imgs[k, 0] = np.clip(img, 0, 255).astype(np.uint8)
            domains.append(Domain(f"g{d}", imgs, labels.astype(np.int64)))
        return DomainDataset(SYNTH, ["0", "45", "90", "135"], domains, {"source": "simulated (bench/cuda_check.py)"})

    build.small_images = True
    register_dataset(SYNTH)(build)


def register_bench(channels: int, size: int) -> str:
    """A dataset of random uint8 images of ``channels``×``size``² (3 domains of 512, 10 classes), for timing."""
    from dganalysis.data import Domain, DomainDataset, register_dataset
    from dganalysis.data.registry import DATASETS

    name = f"{BENCH_PREFIX}{channels}x{size}"
    if name in DATASETS:
        return name

    def build(data_dir=None) -> DomainDataset:
        rng = np.random.RandomState(0)
        domains = [Domain(f"b{d}", rng.randint(0, 256, (512, channels, size, size), dtype=np.uint8),
                          rng.randint(0, 10, 512).astype(np.int64)) for d in range(3)]
        return DomainDataset(name, [str(k) for k in range(10)], domains, {"source": "random (bench/cuda_check.py)"})

    build.small_images = size <= 32
    register_dataset(name)(build)
    return name


# --------------------------------------------------------------------------- checks
def check_environment(report: Report, device: torch.device) -> dict[str, Any]:
    """Versions, GPU and CPU (recorded in the report's ``environment``)."""
    import dganalysis.training.train as train

    env: dict[str, Any] = {
        "python": sys.version.split()[0], "executable": sys.executable, "platform": platform.platform(),
        "torch": torch.__version__, "torch_cuda": torch.version.cuda, "numpy": np.__version__,
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "cuda_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
        "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
        "cpu_default_precision": train._cpu_default_precision(), "requested_device": str(device),
        "dganalysis_root": str(ROOT), "env": {k: v for k, v in os.environ.items() if k.startswith("DGANALYSIS_")},
    }
    for mod in ("torchvision", "PIL", "sklearn", "scipy", "pandas", "yaml", "tqdm", "threadpoolctl"):
        try:
            m = __import__(mod)
            env[mod] = getattr(m, "__version__", "present")
        except Exception as e:  # noqa: BLE001
            env[mod] = f"missing ({type(e).__name__}: {e})"
    try:
        env["git_commit"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                           text=True, timeout=10).stdout.strip() or None
    except Exception:  # noqa: BLE001 - the copy on the GPU machine may have no .git
        env["git_commit"] = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                env["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        free, total = torch.cuda.mem_get_info(0)
        env.update({
            "gpu_name": torch.cuda.get_device_name(0), "gpu_capability": list(torch.cuda.get_device_capability(0)),
            "gpu_total_gib": round(total / 2**30, 2), "gpu_free_gib": round(free / 2**30, 2),
            "gpu_multiprocessors": props.multi_processor_count, "bf16_supported": torch.cuda.is_bf16_supported(),
        })
    report.data["environment"] = env
    for k in ("python", "torch", "torch_cuda", "cudnn", "torchvision", "gpu_name", "gpu_total_gib", "gpu_free_gib",
              "cpu_model", "cpu_count", "torch_threads", "cpu_default_precision"):
        print(f"    {k}: {env.get(k)}", flush=True)
    return env


def check_runtime(fails: Failures, device: torch.device) -> dict[str, Any]:
    """make_runtime / resolve_device on the device and on the CPU, against the rules of dganalysis.training.train."""
    from dganalysis.training.train import _cpu_default_precision, make_runtime, resolve_device

    out: dict[str, Any] = {"resolve_device_none": str(resolve_device(None))}
    if device.type == "cuda":
        fails.expect(resolve_device(None).type == "cuda", "resolve_device(None) is not cuda on a CUDA machine")
    rt = make_runtime(device, "auto", None)
    out["device"] = {"device": str(rt.device), "cuda": rt.cuda, "precision": rt.precision, "autocast": rt.autocast,
                     "channels_last": rt.channels_last, "eval_batch_size": rt.eval_batch_size, "threads": rt.threads}
    if device.type == "cuda":
        fails.expect(rt.cuda and rt.precision == "bf16" and rt.autocast, f"CUDA runtime {out['device']}: expected bf16")
        fails.expect(rt.threads is None and rt.eval_batch_size == 4096, "CUDA runtime: threads None, eval batch 4096")
        out["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
        out["tf32_cudnn"] = torch.backends.cudnn.allow_tf32
        out["cudnn_benchmark"] = torch.backends.cudnn.benchmark
        fails.expect(out["tf32_matmul"] and out["tf32_cudnn"] and out["cudnn_benchmark"], "_cuda_setup flags not set")
        rt0 = make_runtime("cuda:0", "auto", None)  # an indexed device: torch.cuda.set_device
        out["indexed"] = {"device": str(rt0.device), "current_device": torch.cuda.current_device()}
        fails.expect(torch.cuda.current_device() == 0, "make_runtime('cuda:0') did not leave device 0 current")
        fails.expect(make_runtime(device, "fp32", None).precision == "fp32", "precision='fp32' not kept on CUDA")
    cpu = make_runtime("cpu", "auto", None)
    out["cpu"] = {"precision": cpu.precision, "threads": cpu.threads, "eval_batch_size": cpu.eval_batch_size}
    expected = os.environ.get("DGANALYSIS_CPU_PRECISION", _cpu_default_precision())
    fails.expect(cpu.precision == expected, f"CPU precision {cpu.precision}, expected {expected}")
    return out


def _max_abs(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.detach().float().cpu() - b.detach().float().cpu()).abs().max()) if a.numel() else 0.0


def check_step(fails: Failures, device: torch.device, job, rel_tol: float = 1e-3) -> dict[str, Any]:
    """The job's model built on the device and on the CPU from one seed; one fp32 update (TF32 off) on the same
    CPU-drawn minibatch: initial weights equal, logits, loss and updated logits within ``rel_tol`` (relative to
    the logits' scale)."""
    from dganalysis.training.train import build_algorithm, build_data, make_runtime

    rt_dev, rt_cpu = make_runtime(device, "fp32", None), make_runtime("cpu", "fp32", None)
    data_cpu, data_dev = build_data(job, None, rt_cpu), build_data(job, None, rt_dev)
    try:
        alg_cpu, alg_dev = build_algorithm(job, data_cpu, rt_cpu), build_algorithm(job, data_dev, rt_dev)
        w_diff = max(_max_abs(a, b) for a, b in zip(alg_cpu.state_dict().values(), alg_dev.state_dict().values()))
        fails.expect(w_diff == 0.0, f"initial weights differ between devices (max |diff| {w_diff:g})")
        gen = torch.Generator().manual_seed(0)
        bs = int(data_cpu.hparams["batch_size"])
        mb_cpu = [s.sample(bs, gen) for s in data_cpu.train_splits]
        mb_dev = [(x.to(device), y.to(device)) for x, y in mb_cpu]
        x_eval = next(data_cpu.splits[data_cpu.test_idx[0]][0].eval_batches(256))[0]
        out: dict[str, Any] = {"algorithm": job.algorithm, "batch": [len(mb_cpu), *mb_cpu[0][0].shape],
                               "initial_weight_max_abs_diff": w_diff}
        with _no_tf32():
            alg_cpu.eval(), alg_dev.eval()
            with torch.no_grad():
                l0c, l0d = alg_cpu.predict(x_eval), alg_dev.predict(x_eval.to(device))
            alg_cpu.train(), alg_dev.train()
            oc, od = alg_cpu.update(mb_cpu, 0), alg_dev.update(mb_dev, 0)
            alg_cpu.eval(), alg_dev.eval()
            with torch.no_grad():
                l1c, l1d = alg_cpu.predict(x_eval), alg_dev.predict(x_eval.to(device))
            _sync(device)
        scale = max(1.0, float(l0c.abs().max()))
        out.update({
            "logit_scale": scale, "logits_before_max_abs_diff": _max_abs(l0c, l0d),
            "logits_after_max_abs_diff": _max_abs(l1c, l1d), "logits_moved_by_step_cpu": _max_abs(l1c, l0c),
            "update_outputs_cpu": oc, "update_outputs_device": od,
            "loss_abs_diff": {k: abs(float(oc[k]) - float(od[k])) for k in oc if k in od},
        })
        tol = rel_tol * scale
        fails.expect(out["logits_before_max_abs_diff"] <= tol, f"logits before the step differ by "
                     f"{out['logits_before_max_abs_diff']:.3g} > {tol:.3g}")
        # after the step: Adam's first step is lr * g / (|g| + eps), so a gradient at rounding level may take either
        # sign on the two devices; allowed: 10x the forward tolerance or 5% of how far the step moved the logits
        tol_after = max(10 * tol, 0.05 * out["logits_moved_by_step_cpu"])
        fails.expect(out["logits_after_max_abs_diff"] <= tol_after, f"logits after one step differ by "
                     f"{out['logits_after_max_abs_diff']:.3g} > {tol_after:.3g}")
        for k, d in out["loss_abs_diff"].items():
            fails.expect(d <= max(1e-3, 1e-3 * abs(float(oc[k]))), f"update output {k} differs by {d:.3g}")
        return out
    finally:
        data_cpu.splits.close()
        data_dev.splits.close()


def _records(job_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (job_dir / "results.jsonl").read_text().splitlines() if line.strip()]


def _summary(recs: list[dict[str, Any]], n_domains: int) -> dict[str, Any]:
    last = recs[-1]
    accs = {f"env{i}_{s}_acc": last.get(f"env{i}_{s}_acc") for i in range(n_domains) for s in ("in", "out")}
    return {"steps": [r["step"] for r in recs], "loss_first": recs[0].get("loss"), "loss_last": last.get("loss"),
            "final_accs": accs, "device": last.get("device"), "precision": last.get("precision"),
            "data_path": last.get("data_path"), "threads": last.get("threads"), "mem_gb": last.get("mem_gb"),
            "elapsed_s": last.get("elapsed"), "step_time_s": last.get("step_time")}


def _finite_accs(recs: list[dict[str, Any]], n_domains: int) -> bool:
    vals = [r.get(f"env{i}_{s}_acc") for r in recs for i in range(n_domains) for s in ("in", "out")]
    return all(isinstance(v, float) and math.isfinite(v) and 0.0 <= v <= 1.0 for v in vals)


def _run_one(job, job_dir: Path, device: str, feed: str | None, data_dir: Path | None) -> tuple[list, float]:
    from dganalysis.training.train import run_job

    t = time.time()
    with mock.patch.dict(os.environ):  # the environment restored after the job
        os.environ.pop("DGANALYSIS_FEED", None)
        if feed is not None:
            os.environ["DGANALYSIS_FEED"] = feed
        run_job(job, job_dir, data_dir=data_dir, device=device)
    _sync(torch.device(device))
    return _records(job_dir), time.time() - t


def check_job(fails: Failures, device: torch.device, spec: dict[str, Any], work: Path) -> dict[str, Any]:
    """``spec['job']`` through run_job on the device (once per feed mode in ``spec['feeds']``) and on the CPU:
    records, device, precision and data path as the rules say; accuracies finite and, where ``spec['tol']`` is set,
    the mean accuracy over the training domains within it of the CPU run's."""
    from dganalysis.training.train import computed_part

    job, n_dom = spec["job"], spec["n_domains"]
    data_dir = spec.get("data_dir")
    cuda = device.type == "cuda"
    expect_steps = sorted({s for s in range(job.steps) if s % job.checkpoint_freq == 0} | {job.steps - 1})
    out: dict[str, Any] = {"job": job.to_dict(), "job_id": job.job_id, "runs": {}}
    train_i = spec["train_idx"]

    def train_mean(recs):
        return float(np.mean([recs[-1][f"env{i}_{s}_acc"] for i in train_i for s in ("in", "out")]))

    ref, t_ref = _run_one(job, work / "cpu", "cpu", spec.get("cpu_feed"), data_dir)
    out["runs"]["cpu"] = {**_summary(ref, n_dom), "wall_s": round(t_ref, 2)}
    fails.expect(_finite_accs(ref, n_dom), "CPU run: non-finite or out-of-range accuracies")
    for feed in spec["feeds"]:
        key = f"{device.type}_{feed or 'auto'}"
        recs, t_dev = _run_one(job, work / key, str(device), feed, data_dir)
        s = _summary(recs, n_dom)
        run: dict[str, Any] = {**s, "wall_s": round(t_dev, 2)}
        out["runs"][key] = run
        fails.expect((work / key / "done").is_file(), f"{key}: no 'done' file")
        fails.expect(s["steps"] == expect_steps, f"{key}: checkpoints at {s['steps']}, expected {expect_steps}")
        fails.expect(_finite_accs(recs, n_dom), f"{key}: non-finite or out-of-range accuracies")
        fails.expect(all(math.isfinite(r.get("loss", float("nan"))) for r in recs), f"{key}: non-finite loss")
        if cuda:
            fails.expect(str(s["device"]).startswith("cuda:"), f"{key}: device recorded {s['device']!r}")
            fails.expect(s["threads"] is None, f"{key}: threads recorded {s['threads']!r} (None on CUDA)")
            fails.expect(isinstance(s["mem_gb"], float) and s["mem_gb"] > 0, f"{key}: mem_gb {s['mem_gb']!r}")
            fails.expect(s["precision"] == spec["precision"], f"{key}: precision {s['precision']}, "
                         f"expected {spec['precision']} (project rules)")
        want_path = feed or spec.get("auto_path")
        if want_path:
            fails.expect(s["data_path"] == want_path, f"{key}: data_path {s['data_path']!r}, expected {want_path!r}")
        diffs = {k: (v - ref[-1][k]) if isinstance(v, float) else None for k, v in s["final_accs"].items()}
        run["acc_diff_vs_cpu"] = diffs
        run["acc_max_abs_diff_vs_cpu"] = max(abs(d) for d in diffs.values() if d is not None)
        run["train_mean_acc"], run["train_mean_acc_cpu"] = train_mean(recs), train_mean(ref)
        run["train_mean_acc_diff"] = run["train_mean_acc"] - run["train_mean_acc_cpu"]
        run["identical_to_cpu"] = [computed_part(r) for r in recs] == [computed_part(r) for r in ref]
        if spec.get("tol") is not None:
            fails.expect(abs(run["train_mean_acc_diff"]) <= spec["tol"],
                         f"{key}: mean training-domain accuracy {run['train_mean_acc']:.3f} vs CPU "
                         f"{run['train_mean_acc_cpu']:.3f} (|diff| > {spec['tol']})")
        print(f"    {key}: {s['device']} {s['precision']} {s['data_path']} loss {s['loss_first']:.3f}->"
              f"{s['loss_last']:.3f} train acc {run['train_mean_acc']:.3f} (cpu {run['train_mean_acc_cpu']:.3f}) "
              f"max |acc diff| {run['acc_max_abs_diff_vs_cpu']:.3f} {t_dev:.1f} s (cpu {t_ref:.1f} s)", flush=True)
    if spec.get("repeat") and spec["feeds"]:  # the same job again on the device: are the records reproducible?
        feed = spec["feeds"][0]
        again, _ = _run_one(job, work / "again", str(device), feed, data_dir)
        first = _records(work / f"{device.type}_{feed or 'auto'}")
        same = [computed_part(r) for r in again] == [computed_part(r) for r in first]
        out["repeat_identical_on_device"] = same
        out["repeat_max_abs_acc_diff"] = max(abs(a[k] - b[k]) for a, b in zip(again, first) for k in a
                                             if k.endswith("_acc"))
        print(f"    rerun on {device.type}: records identical = {same}", flush=True)
    return out


def check_feed(fails: Failures, device: torch.device, root: Path, cache: Path, size: int) -> dict[str, Any]:
    """feed.py / stream.py on the device against the CPU path (see the module doc)."""
    import dganalysis.data.feed as feed
    from dganalysis.data import load_dataset
    from dganalysis.data.encoded import EncodedDataset
    from dganalysis.data.pipeline import DomainBedPipeline
    from dganalysis.data.stream import decode_jpeg_cuda

    cuda = device.type == "cuda"
    enc = load_dataset("PACS", root=root, image_size=size, data_dir=cache)
    fails.expect(isinstance(enc, EncodedDataset), f"PACS loaded as {type(enc).__name__}, not EncodedDataset")
    out: dict[str, Any] = {"n_images": [len(d) for d in enc.domains], "image_size": size,
                           "all_jpeg": [d.all_jpeg for d in enc.domains]}
    fails.expect(all(out["all_jpeg"]), "the simulated JPEG domains are not all_jpeg")
    index = [(np.arange(len(d))[::2], np.arange(len(d))[1::2]) for d in enc.domains]
    pipe = DomainBedPipeline(size=size)

    def eval_all(f) -> list[tuple[torch.Tensor, torch.Tensor]]:
        batches = []
        for pair in f:
            for split in pair:
                for x, y in split.eval_batches(7):
                    batches.append((x.float().cpu(), y.cpu()))
        return batches

    def compare(a, b) -> tuple[bool, float]:
        if len(a) != len(b):
            return False, float("inf")
        labels = all(torch.equal(ya, yb) for (_, ya), (_, yb) in zip(a, b))
        shapes = all(xa.shape == xb.shape for (xa, _), (xb, _) in zip(a, b))
        if not (labels and shapes):
            return False, float("inf")
        pairs = [(xa, xb) for (xa, _), (xb, _) in zip(a, b)]
        return all(torch.equal(xa, xb) for xa, xb in pairs), max((_max_abs(xa, xb) for xa, xb in pairs), default=0.0)

    ref_f = feed.make_feed(enc, index, torch.device("cpu"), False, pipe, mode="device", workers=4)
    ref = eval_all(ref_f)
    dev_f = feed.make_feed(enc, index, device, True, pipe, mode="device", workers=4)
    fails.expect(dev_f.mode == "device" and dev_f[0][0].images.device.type == device.type,
                 "device feed: images not on the device")
    dev = eval_all(dev_f)
    eq, diff = compare(dev, ref)
    out["device_vs_cpu_device"] = {"equal": eq, "max_abs_diff": diff}
    fails.expect(diff <= 1e-5, f"device path eval batches differ from the CPU's by {diff:g}")

    stm_f = feed.make_feed(enc, index, device, True, pipe, seed=3, mode="stream", workers=4, gpu_decode=False)
    stm = eval_all(stm_f)
    eq, diff = compare(stm, dev)
    out["stream_cpu_decode_vs_device"] = {"equal": eq, "max_abs_diff": diff}
    fails.expect(eq, f"stream path (CPU decoding) eval batches differ from the device path's (max {diff:g})")

    # seeded training draws on the streamed path (the producer's NumPy draws), pinned memory on CUDA
    x, y = stm_f[0][0].sample(6, torch.Generator(device=device).manual_seed(0))
    fails.expect(tuple(x.shape) == (6, 3, size, size) and x.device.type == device.type and bool(torch.isfinite(x).all()),
                 f"stream sample: shape {tuple(x.shape)} on {x.device}")
    again = feed.make_feed(enc, index, device, True, pipe, seed=3, mode="stream", workers=4, gpu_decode=False)
    _, y2 = again[0][0].sample(6, torch.Generator(device=device).manual_seed(0))
    fails.expect(torch.equal(y.cpu(), y2.cpu()), "stream sample: labels of two feeds of one seed differ")
    xd, yd = dev_f[0][0].sample(6, torch.Generator(device=device).manual_seed(0))
    fails.expect(tuple(xd.shape) == (6, 3, size, size) and xd.device.type == device.type and bool(torch.isfinite(xd).all()),
                 f"device sample: shape {tuple(xd.shape)} on {xd.device}")
    for f in (ref_f, dev_f, stm_f, again):
        f.close()

    # choose_mode: the device's free memory (torch.cuda.mem_get_info on CUDA) and the fall-back to streaming
    free = feed.free_memory(device)
    out["free_memory_gib"] = round(free / 2**30, 2)
    out["auto_mode"] = feed.choose_mode(enc, device, pipeline=DomainBedPipeline(size=size, augment=False))
    fails.expect(out["auto_mode"] == "device", f"auto mode on {device}: {out['auto_mode']} for a tiny dataset")
    saved = feed.free_memory
    try:
        feed.free_memory = lambda dev: enc.decoded_nbytes()
        out["auto_mode_when_full"] = feed.choose_mode(enc, device, pipeline=DomainBedPipeline(size=size, augment=False))
    finally:
        feed.free_memory = saved
    fails.expect(out["auto_mode_when_full"] == "stream", "auto mode with too little free memory is not 'stream'")

    if not cuda:
        out["gpu_decode"] = "skipped: not a CUDA device"
        return out
    gd: dict[str, Any] = {}
    out["gpu_decode"] = gd
    dom = enc.domains[0]
    raw = [np.frombuffer(dom.raw(i), np.uint8).copy() for i in range(len(dom))]
    try:
        gpu = decode_jpeg_cuda(raw, size, device)
        _sync(device)
    except Exception as e:  # noqa: BLE001 - torchvision built without nvJPEG: report, then the streamed check fails
        gd["available"] = False
        gd["error"] = f"{type(e).__name__}: {e}"
        fails.append(f"decode_jpeg_cuda failed: {gd['error']}")
        return out
    gd["available"] = True
    cpu = torch.from_numpy(dom.decode(np.arange(len(dom)), size))
    d = (gpu.cpu().int() - cpu.int()).abs().float()
    gd.update({"shape": list(gpu.shape), "dtype": str(gpu.dtype), "device": str(gpu.device),
               "uint8_mean_abs_diff_vs_pillow": float(d.mean()), "uint8_max_abs_diff_vs_pillow": float(d.max())})
    fails.expect(gpu.dtype == torch.uint8 and tuple(gpu.shape) == (len(dom), 3, size, size) and gpu.is_cuda,
                 f"decode_jpeg_cuda: {gpu.dtype} {tuple(gpu.shape)} on {gpu.device}")
    fails.expect(gd["uint8_mean_abs_diff_vs_pillow"] <= 4.0, f"nvJPEG + resize vs Pillow: mean |diff| "
                 f"{gd['uint8_mean_abs_diff_vs_pillow']:.2f} levels > 4")
    gstm = feed.make_feed(enc, index, device, True, pipe, seed=3, mode="stream", workers=4)  # gpu_decode default
    gd["stream_source_gpu_decode"] = gstm[0][0].source.gpu_decode
    fails.expect(gd["stream_source_gpu_decode"], "streamed JPEGs on CUDA: HostSource.gpu_decode is off by default")
    gbatches = eval_all(gstm)
    eq, diff = compare(gbatches, dev)
    mean = float("inf")  # shapes or labels differ
    if math.isfinite(diff) and gbatches:
        mean = float(np.mean([float((a - b).abs().mean()) for (a, _), (b, _) in zip(gbatches, dev)]))
    gd["stream_gpu_decode_vs_device"] = {"equal": eq, "max_abs_diff": diff, "mean_abs_diff": mean,
                                         "units": "normalised (ImageNet mean/std); 1 uint8 level ~ 0.017"}
    fails.expect(math.isfinite(diff) and mean <= 0.07, f"stream with CUDA decoding vs device path: mean |diff| {mean:.3g}")
    x, y = gstm[0][0].sample(6, torch.Generator(device=device).manual_seed(0))
    fails.expect(tuple(x.shape) == (6, 3, size, size) and x.is_cuda and bool(torch.isfinite(x).all()),
                 "stream sample with CUDA decoding: bad batch")
    gstm.close()
    return out


def measure(featurizer: str, channels: int, size: int, batch_size: int, device: str, precision: str,
            seconds: float, warmup_s: float) -> dict[str, Any]:
    """Training images/s of the project's step (the job's minibatch draw from its device splits, then ``update``
    under the runtime's autocast), ERM on 3 domains of random images, after ``warmup_s`` of warm-up."""
    from dganalysis.sweep import Job
    from dganalysis.training.train import build_algorithm, build_data, job_threads, make_runtime

    name = register_bench(channels, size)
    job = Job(dataset=name, algorithm="ERM", train_domains=["b0", "b1", "b2"], test_domains=[], steps=1,
              hparams_overrides={"featurizer": featurizer, "batch_size": batch_size})
    rt = make_runtime(device, precision, None)
    dev = rt.device
    with job_threads(rt):
        data = build_data(job, None, rt)
        try:
            alg = build_algorithm(job, data, rt)
            gen = torch.Generator(device=dev).manual_seed(0)

            def steps(n_min: int, secs: float) -> tuple[int, float]:
                _sync(dev)
                t0, n = time.perf_counter(), 0
                while n < n_min or time.perf_counter() - t0 < secs:
                    mbs = [s.sample(batch_size, gen) for s in data.train_splits]
                    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=rt.autocast):
                        alg.update(mbs, n)
                    n += 1
                _sync(dev)
                return n, time.perf_counter() - t0

            steps(3, warmup_s)
            n, t = steps(3, seconds)
        finally:
            data.splits.close()
    per_step = batch_size * len(data.train_splits)
    return {"featurizer": featurizer, "input": [channels, size, size], "device": str(dev), "precision": rt.precision,
            "threads": rt.threads, "batch_per_domain": batch_size, "images_per_step": per_step, "steps": n,
            "seconds": round(t, 3), "images_per_s": round(n * per_step / t, 1), "ms_per_step": round(1000 * t / n, 2)}


def check_throughput(fails: Failures, device: torch.device, seconds: float, warmup_s: float,
                     nets: list[tuple[str, int, int, int]], deadline: float) -> dict[str, Any]:
    """Images/s per net: the device (project precision; on CUDA also fp32 and an 8× batch) and the CPU; a
    measurement that would start after ``deadline`` (time.time()) is skipped."""
    rows, ratios = [], {}
    for featurizer, channels, size, bs in nets:
        label = f"{featurizer}@{size}px"
        runs = {}
        variants = [("device", str(device), "auto", bs)]
        if device.type == "cuda":
            variants += [("device_fp32", str(device), "fp32", bs), ("device_batch_x8", str(device), "auto", 8 * bs)]
        variants.append(("cpu", "cpu", "auto", bs))
        for key, dev, precision, b in variants:
            if time.time() > deadline:
                runs[key] = {"net": label, "variant": key, "skipped": "time budget"}
                rows.append(runs[key])
                continue
            try:
                r = measure(featurizer, channels, size, b, dev, precision, seconds, warmup_s)
            except Exception as e:  # noqa: BLE001 - one failed measurement does not lose the others
                r = {"featurizer": featurizer, "device": dev, "error": f"{type(e).__name__}: {e}"}
                fails.append(f"{label} {key}: {r['error']}")
            r["net"], r["variant"] = label, key
            runs[key] = r
            rows.append(r)
            if "images_per_s" in r:
                print(f"    {label:16s} {key:16s} {r['device']:7s} {r['precision']:4s} batch {r['images_per_step']:5d}"
                      f"  {r['images_per_s']:10.1f} img/s  {r['ms_per_step']:8.2f} ms/step", flush=True)
        if "images_per_s" in runs["device"] and "images_per_s" in runs["cpu"]:
            ratios[label] = round(runs["device"]["images_per_s"] / runs["cpu"]["images_per_s"], 2)
            print(f"    {label}: {device.type} / cpu = {ratios[label]}x (same batch)", flush=True)
    return {"rows": rows, "ratio_device_over_cpu": ratios, "seconds_per_measurement": seconds,
            "warmup_s": warmup_s}


def check_sweep(fails: Failures, device: torch.device, work: Path, steps: int) -> dict[str, Any]:
    """run_sweep with 2 local worker processes, device left to the launcher (cuda:{slot % n_gpus} on CUDA)."""
    from dganalysis.sweep import ExecutionOptions, Job, run_sweep

    jobs = [Job(dataset="Debug28", algorithm="ERM", train_domains=["0", "1"], test_domains=["2"], steps=steps,
                checkpoint_freq=max(1, steps // 2), trial_seed=t, hparams_overrides={"batch_size": 8}) for t in (0, 1)]
    t = time.time()
    status = run_sweep(jobs, work / "store", n_workers=2, progress=False, execution=ExecutionOptions(device=None))
    out: dict[str, Any] = {"wall_s": round(time.time() - t, 2),
                           "status": status.to_dict(orient="records") if hasattr(status, "to_dict") else str(status)}
    devices = []
    for job in jobs:
        recs = _records(work / "store" / job.job_id)
        devices.append(recs[-1]["device"])
        fails.expect(_finite_accs(recs, 3), f"sweep job {job.job_id}: bad accuracies")
    out["devices"] = devices
    fails.expect(all(r.get("status") == "done" for r in out["status"]), f"sweep statuses {out['status']}")
    want = "cuda:" if device.type == "cuda" else "cpu"
    fails.expect(all(str(d).startswith(want) for d in devices), f"sweep jobs recorded devices {devices}")
    return out


# --------------------------------------------------------------------------- main
def third_party_modules() -> dict[str, str]:
    """The top-level modules outside the standard library that this run imported, with their versions (what the
    machine must have installed; bench/cuda_check.sh brings the small ones)."""
    names = sorted({n.split(".")[0] for n in list(sys.modules)} - set(sys.stdlib_module_names) - {"__main__"})
    return {n: str(getattr(sys.modules.get(n), "__version__", "")) for n in names if not n.startswith("_")}


def job_specs(args: argparse.Namespace, work: Path) -> list[tuple[str, dict[str, Any]]]:
    """The representative jobs (see the module doc)."""
    from dganalysis.sweep import Job

    steps = args.job_steps
    freq = steps if args.quick else max(1, steps // 3)
    # --quick (a CPU test of this script): an MLP and small batches
    over = {"batch_size": 8, "featurizer": "mlp"} if args.quick else {"batch_size": 32}
    specs = []
    if _have("sklearn"):
        a = Job(dataset="RotatedDigits", algorithm="ERM", train_domains=["0", "15", "30", "60", "75"],
                test_domains=["45"], steps=steps, checkpoint_freq=freq, hparams_overrides=over)
        specs.append(("job_erm_rotated_digits", dict(job=a, n_domains=6, train_idx=[0, 1, 2, 4, 5], feeds=[None],
                                                     auto_path="device", precision="bf16", tol=args.acc_tol,
                                                     repeat=True)))
        b = Job(dataset="ColoredDigits", algorithm="WCDG", train_domains=["+90%", "+80%"], test_domains=["-90%"],
                steps=max(2, steps // 2), checkpoint_freq=freq, hparams_overrides=over)
        specs.append(("job_wcdg_colored_digits", dict(job=b, n_domains=3, train_idx=[0, 1], feeds=[None],
                                                      auto_path="device", precision="fp32", tol=args.acc_tol)))
    else:  # no scikit-learn: the same two jobs on simulated glyphs
        register_synthetic()
        a = Job(dataset=SYNTH, algorithm="ERM", train_domains=["g0", "g1"], test_domains=["g2"], steps=steps,
                checkpoint_freq=freq, hparams_overrides=over)
        specs.append(("job_erm_glyphs", dict(job=a, n_domains=3, train_idx=[0, 1], feeds=[None], auto_path="device",
                                             precision="bf16", tol=args.acc_tol, repeat=True)))
        b = Job(dataset=SYNTH, algorithm="WCDG", train_domains=["g0", "g1"], test_domains=["g2"],
                steps=max(2, steps // 2), checkpoint_freq=freq, hparams_overrides=over)
        specs.append(("job_wcdg_glyphs", dict(job=b, n_domains=3, train_idx=[0, 1], feeds=[None], auto_path="device",
                                              precision="fp32", tol=args.acc_tol)))
    # DomainBed's image pipeline on encoded JPEGs, ResNet-18 from scratch: on the device and streamed (CUDA JPEG
    # decoding on CUDA); on the CPU "auto" streams with Pillow augmentation. Simulated classes: accuracies reported,
    # not compared.
    c_steps = 2 if args.quick else 6
    c = Job(dataset="PACS", algorithm="ERM", train_domains=["A", "C", "P"], test_domains=["S"], steps=c_steps,
            checkpoint_freq=max(1, c_steps // 2),
            dataset_kwargs={"root": str(work / "pacs_tree"), "image_size": args.image_size},
            hparams_overrides={"featurizer": "resnet18", "pretrained": None, "batch_size": 4 if args.quick else 16})
    specs.append(("job_erm_pacs_resnet18", dict(job=c, n_domains=4, train_idx=[0, 1, 2], feeds=["device", "stream"],
                                                precision="bf16", tol=None, data_dir=work / "cache")))
    return specs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="cuda_check.json", help="the JSON report (rewritten after every check)")
    p.add_argument("--device", default="cuda", help="the device under test (cpu: a dry run of this script)")
    p.add_argument("--quick", action="store_true", help="tiny jobs and short timings (a CPU test of the script)")
    p.add_argument("--budget", type=float, default=None, help="seconds: checks that would not fit are skipped "
                   "(default 300, --quick 110)")
    p.add_argument("--job-steps", type=int, default=None, help="steps of the digits jobs (default 300, --quick 6)")
    p.add_argument("--acc-tol", type=float, default=0.08, help="largest |mean training-domain accuracy difference| "
                   "between the device's and the CPU's run of a job")
    p.add_argument("--image-size", type=int, default=None, help="the PACS-layout JPEG job's size (64, --quick 32)")
    p.add_argument("--tp-seconds", type=float, default=None, help="seconds per timing (default 3, --quick 0.3)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads for the whole run (default: torch's "
                   "own count; --quick: 1, gentle on a shared machine)")
    p.add_argument("--skip", default="", help="comma-separated checks to skip: runtime, step (both step_* checks), "
                   "feed_paths, a job_* name, throughput, sweep_pool")
    args = p.parse_args(argv)
    q = args.quick
    args.budget = args.budget if args.budget is not None else (110.0 if q else 300.0)
    args.job_steps = args.job_steps if args.job_steps is not None else (6 if q else 300)
    args.image_size = args.image_size if args.image_size is not None else (32 if q else 64)
    args.tp_seconds = args.tp_seconds if args.tp_seconds is not None else (0.3 if q else 3.0)
    args.threads = args.threads if args.threads is not None else (1 if q else None)
    warmup_s = 0.1 if q else 1.5
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out_path = Path(args.out).resolve()
    report = Report(out_path, args)
    if IMPORT_ERROR is not None:
        report.data["environment"] = {"python": sys.version.split()[0], "executable": sys.executable,
                                      "import_error": IMPORT_ERROR}
        report.write(complete=True)
        print(f"cuda_check: cannot import numpy, torch or dganalysis: {IMPORT_ERROR}; report {out_path}", flush=True)
        return 0

    def on_term(signum, frame):  # `timeout` ends the run: keep what was found
        report.data["interrupted"] = f"signal {signum} after {time.time() - report.t0:.0f} s"
        report.write()
        print(f"interrupted by signal {signum}; report written to {out_path}", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_term)
    if args.threads:
        torch.set_num_threads(args.threads)  # the CPU jobs' fixed count (dganalysis.threads.fixed_count)
    device = torch.device(args.device)
    print(f"cuda_check: device {device}, quick={q}, budget {args.budget:.0f} s, report {out_path}", flush=True)
    report.run("environment", lambda f: check_environment(report, device))
    no_device = None
    if device.type == "cuda" and not torch.cuda.is_available():
        no_device = "torch.cuda.is_available() is False"
        report.data["environment"]["problem"] = no_device

    def sk(name: str) -> str | None:
        return "--skip" if name in skip else no_device

    with tempfile.TemporaryDirectory(prefix="cuda_check_") as tmp:
        work = Path(tmp)
        per_class = 3 if q else 6
        try:
            from bench.train_throughput import make_photo_tree  # simulated photos in PACS's layout, 64–128 px

            make_photo_tree(work / "pacs_tree", per_class)
        except Exception as e:  # noqa: BLE001 - the checks that need the tree report their own error
            print(f"writing the simulated JPEG tree failed: {type(e).__name__}: {e}", flush=True)
        report.run("runtime", lambda f: check_runtime(f, device), skip=sk("runtime"))
        specs: list[tuple[str, dict[str, Any]]] = []

        def build_specs(fails: Failures) -> dict[str, Any]:
            specs.extend(job_specs(args, work))
            return {name: spec["job"].describe() for name, spec in specs}

        report.run("job_specs", build_specs)
        for name, spec in specs[:2]:
            report.run(name.replace("job_", "step_"), lambda f, s=spec: check_step(f, device, s["job"]),
                       need_s=5, skip=sk("step"))
        report.run("feed_paths", lambda f: check_feed(f, device, work / "pacs_tree", work / "cache", 32),
                   need_s=10, skip=sk("feed_paths"))
        for i, (name, spec) in enumerate(specs):
            need = (60 if i == 0 else 30) if not q else 5
            report.run(name, lambda f, n=name, s=spec: check_job(f, device, s, work / n), need_s=need, skip=sk(name))
        # (featurizer, channels, size, batch per domain): the project's small-image defaults (batch 64) at 28-32 px,
        # its large-image default (batch 32) for ResNet-18 at 64 px; --quick: small batches
        nets = [("cnn", 1, 28, 64), ("smallcnn", 3, 32, 64), ("resnet18", 3, 64, 32)]
        if q:
            nets = [(f, c, s, 4) for f, c, s, _ in nets]
        report.run("throughput", lambda f: check_throughput(f, device, args.tp_seconds, warmup_s, nets,
                                                            report.deadline - (10 if q else 40)),
                   need_s=10 if q else 45, skip=sk("throughput"))
        report.run("sweep_pool", lambda f: check_sweep(f, device, work, 4 if q else 10), need_s=10 if q else 40,
                   skip=sk("sweep_pool"))
    report.data["third_party_modules"] = third_party_modules()
    report.write(complete=True)
    s = report.data["summary"]
    print(f"cuda_check: {s['pass']} passed, {s['fail']} failed, {s['error']} errors, {s['skip']} skipped in "
          f"{s['wall_s']:.0f} s; report {out_path}", flush=True)
    if s["not_passed"]:
        print(f"not passed: {', '.join(s['not_passed'])}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # noqa: BLE001 - exit 0 always: the report says what failed
        traceback.print_exc()
        code = 0
    sys.stdout.flush()
    os._exit(code)  # no teardown hang (prefetch threads, CUDA context)
