"""What code and machine produced a result: the provenance stamp of jobs, runs, reports and audits.

The same job gives other numbers under another torch, on a CPU with AMX-bf16 units (bf16 autocast by default,
:func:`dganalysis.training.train.make_runtime`) than on one without, or on another thread count, so every result says what
made it, as DomainBed (Gulrajani & Lopez-Paz, 2021) prints its versions into every ``out.txt``. :func:`stamp`
gives one flat mapping:

``dganalysis``
    the installed package's version;
``commit`` / ``dirty``
    the git commit of the checkout the package is imported from and whether its tracked files are modified
    (both None for an installed wheel, or where git is missing);
``python``, ``torch``, ``numpy``, ``cuda``
    versions (``cuda`` is the CUDA version torch was built with; None for a CPU build);
``cpu`` / ``cpu_bf16``
    the CPU model (``/proc/cpuinfo``, else :func:`platform.processor`) and whether it has AMX-bf16 tile units;
``gpu``
    the GPU's name when the result was computed on one (else None);
``device``, ``precision``, ``threads``
    where and how the computation ran (``cpu`` or ``cuda:<name>``; ``fp32`` or ``bf16``; the torch thread count,
    None on CUDA), when the caller knows them;
``cuda_backends``
    on CUDA, the cuDNN and TF32 settings the computation ran under (:func:`cuda_backends`: ``cudnn_enabled``,
    ``cudnn_benchmark``, ``cudnn_deterministic``, ``cudnn_allow_tf32``, ``matmul_allow_tf32``,
    ``float32_matmul_precision``; as :func:`dganalysis.training.train.make_runtime` set them for the job's mode); on CPU
    :data:`NOT_CUDA`; None when the device is not known.

The machine-wide part is computed once per process (:func:`environment`; the git call is the costly part) and
without importing torch or numpy (versions from the installed distributions' metadata), so the audit and ``collect``
may stamp their outputs cheaply. :func:`differences` compares the stamps of the runs a table or an audit combines and
words one warning per field that differs, naming the runs; ``dganalysis env`` prints :func:`stamp` for bug reports.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: the key under which spec.json, records and audit settings carry the stamp
PROVENANCE_KEY = "provenance"
#: the stamp's fields in order (see the module docstring)
FIELDS = ("dganalysis", "commit", "dirty", "python", "torch", "numpy", "cuda", "cpu", "cpu_bf16", "gpu", "device",
          "precision", "threads", "cuda_backends")
#: a stamp's ``cuda_backends`` (and a drop-in record's) for a computation on a CPU
NOT_CUDA = "not applicable (CPU run: cuDNN and TF32 are CUDA settings)"
#: fields compared across the runs of one table or audit (:func:`differences`), with their plural wording;
#: ``precision`` is compared among the runs of one algorithm (``precision="auto"`` trains some algorithms in fp32
#: on purpose, :attr:`dganalysis.algorithms.base.Algorithm.BF16_AUTOCAST`); thread counts are not compared (a
#: sweep's workers may get other shares of the cores; each record says its own)
COMPARED = {"dganalysis": "dganalysis versions", "commit": "commits", "python": "Python versions",
            "torch": "torch versions", "numpy": "numpy versions", "cuda": "CUDA versions", "cpu": "CPUs",
            "gpu": "GPUs", "device": "devices"}
_GIT_TIMEOUT_S = 5.0


def _version(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (None when not installed), read from its metadata."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _package_version() -> str:
    from dganalysis import __version__

    return _version("dganalysis") or __version__


def _torch_cuda() -> str | None:
    """The CUDA version torch was built with, from ``torch.version`` when torch is imported, else from the text of
    its ``version.py`` (so as not to import torch)."""
    if "torch" in sys.modules:
        return getattr(getattr(sys.modules["torch"], "version", None), "cuda", None)
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            text = (Path(folder) / "version.py").read_text(encoding="utf-8")
        except OSError:
            continue
        m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", text, re.M)
        return m.group(1) if m else None
    return None


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU's model name (``model name`` of ``/proc/cpuinfo``; elsewhere :func:`platform.processor`, else the
    machine type)."""
    text = _cpuinfo() if cpuinfo is None else cpuinfo
    m = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
    return m.group(1).strip() if m else (platform.processor() or platform.machine() or "unknown")


def cpu_has_amx_bf16(cpuinfo: str | None = None) -> bool:
    """Whether the CPU has AMX-bf16 tile units (the ``amx_bf16`` flag of ``/proc/cpuinfo``): where
    ``precision="auto"`` trains in bf16 on CPU (:func:`dganalysis.training.train.make_runtime`)."""
    return "amx_bf16" in cpu_flags(cpuinfo)


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The instruction-set flags of the CPU (the first ``flags`` line of ``/proc/cpuinfo``; empty elsewhere)."""
    text = _cpuinfo() if cpuinfo is None else cpuinfo
    m = re.search(r"^flags\s*:\s*(.+)$", text, re.M)
    return frozenset(m.group(1).split()) if m else frozenset()


def cpu_has_bf16_instructions(cpuinfo: str | None = None) -> bool:
    """Whether the CPU computes in bf16 natively (AVX-512 BF16 or AMX-bf16); elsewhere torch emulates bf16 with
    fp32 kernels and conversions, several times slower than fp32 itself."""
    return bool(cpu_flags(cpuinfo) & {"avx512_bf16", "amx_bf16"})


def cpu_kind(cpuinfo: str | None = None) -> str:
    """The CPU's kind in one line, for timings and skip reasons: its model name, family and model numbers and the
    widest vector and matrix instruction sets it has (AVX2, AVX-512F, AVX-512 BF16, AMX-bf16), e.g.
    ``AMD EPYC 7R13 Processor (family 25 model 1; avx2)``."""
    text = _cpuinfo() if cpuinfo is None else cpuinfo
    flags = cpu_flags(text)
    isa = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    fam, mod = (re.search(rf"^{k}\s*:\s*(\S+)$", text, re.M) for k in ("cpu family", "model"))
    where = f"family {fam.group(1)} model {mod.group(1)}; " if fam and mod else ""
    return f"{cpu_model(text)} ({where}{', '.join(isa) or 'no AVX2'})"


def git_state(package_dir: Path | None = None) -> tuple[str | None, bool | None]:
    """(commit, whether tracked files are modified) of the git checkout the package is imported from; (None, None)
    when it is not imported from a checkout's top folder (an installed wheel, even inside another repository), or
    git is missing or refuses."""
    pkg = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent
    top = pkg.parent
    if not (top / ".git").exists() or not (top / "pyproject.toml").is_file():
        return None, None

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(top), *args], capture_output=True, text=True,
                                 timeout=_GIT_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit.strip(), (None if status is None else bool(status.strip()))


@functools.lru_cache(maxsize=1)
def environment() -> dict[str, Any]:
    """The machine-wide part of the stamp (package, commit, versions, CPU), computed once per process; imports
    neither torch nor numpy."""
    commit, dirty = git_state()
    info = _cpuinfo()
    return {"dganalysis": _package_version(), "commit": commit, "dirty": dirty,
            "python": platform.python_version(), "torch": _version("torch"), "numpy": _version("numpy"),
            "cuda": _torch_cuda(), "cpu": cpu_model(info), "cpu_bf16": cpu_has_amx_bf16(info)}


def device_name(device: Any) -> str:
    """``cpu``, or ``cuda:<GPU name>`` for a CUDA device (a ``torch.device`` or its string), as records write it."""
    text = str(device)
    if not text.startswith("cuda"):
        return text.split(":", 1)[0]
    import torch

    return f"cuda:{torch.cuda.get_device_name(torch.device(text))}"


#: the modes :func:`cuda_flags` knows: our engine's and DomainBed's ``train.py`` replayed (:mod:`dganalysis.training.exact`)
CUDA_FLAG_MODES = ("default", "domainbed_exact")


def cuda_flags(mode: str, device_type: str) -> dict[str, bool]:
    """The cuDNN and TF32 settings a job of ``mode`` (:data:`CUDA_FLAG_MODES`) sets on a device of type ``device_type``
    (``cuda``, ``cpu``, ...); ``{}`` off CUDA, where they do not apply.

    ``domainbed_exact`` sets what DomainBed's ``scripts/train.py`` runs under: ``cudnn.deterministic = True`` and
    ``cudnn.benchmark = False`` (its two lines), TF32 left at torch's defaults, which are off for matrix products
    (``torch.backends.cuda.matmul.allow_tf32``, False since torch 1.12) and on for cuDNN convolutions
    (``torch.backends.cudnn.allow_tf32``, True). ``default`` is our engine's speed setting: TF32 on for both and
    cuDNN autotuning (``benchmark``), not deterministic. Every flag is set either way, so a process that runs jobs of
    both modes one after the other leaves none of one mode's settings to the next."""
    if mode not in CUDA_FLAG_MODES:
        raise ValueError(f"cuda_flags: mode {mode!r}, expected one of {CUDA_FLAG_MODES}")
    if device_type != "cuda":
        return {}
    exact = mode == "domainbed_exact"
    return {"matmul_allow_tf32": not exact, "cudnn_allow_tf32": True, "cudnn_benchmark": not exact,
            "cudnn_deterministic": exact}


def cuda_backends(device: Any) -> dict[str, Any] | str:
    """The cuDNN and TF32 settings in force for a computation on ``device``, read from torch (after
    :func:`dganalysis.training.train.make_runtime` set them): ``cudnn_enabled``, ``cudnn_benchmark``, ``cudnn_deterministic``,
    ``cudnn_allow_tf32``, ``matmul_allow_tf32``, ``float32_matmul_precision``; on a CPU, :data:`NOT_CUDA` (they do
    not apply)."""
    if getattr(device, "type", str(device).split(":")[0]) != "cuda":
        return NOT_CUDA
    import torch

    b = torch.backends
    return {"cudnn_enabled": bool(b.cudnn.enabled), "cudnn_benchmark": bool(b.cudnn.benchmark),
            "cudnn_deterministic": bool(b.cudnn.deterministic), "cudnn_allow_tf32": bool(b.cudnn.allow_tf32),
            "matmul_allow_tf32": bool(b.cuda.matmul.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def stamp(device: Any = None, precision: str | None = None, threads: int | None = None,
          backends: Mapping[str, Any] | str | None = None) -> dict[str, Any]:
    """The provenance of a computation on ``device`` (a ``torch.device``, ``cpu``/``cuda[:i]``, or an already worded
    ``cuda:<name>``; None: not known) in ``precision`` on ``threads`` torch threads under the cuDNN/TF32 settings
    ``backends`` (:func:`cuda_backends`; None: :data:`NOT_CUDA` on a CPU, else not known): :func:`environment` plus
    ``gpu``, ``device``, ``precision``, ``threads``, ``cuda_backends`` (see the module docstring). A CUDA device is
    named through torch (the caller computes on it, so CUDA is already initialised)."""
    out = dict(environment())
    dev = None
    if device is not None:
        text = str(device)
        dev = text if text.startswith("cuda:") and not text[5:].isdigit() else device_name(device)
    out["gpu"] = dev[5:] if dev is not None and dev.startswith("cuda:") else None
    out["device"], out["precision"] = dev, precision
    out["threads"] = None if threads is None else int(threads)
    if backends is None and dev is not None and not dev.startswith("cuda"):
        backends = NOT_CUDA
    out["cuda_backends"] = dict(backends) if isinstance(backends, Mapping) else backends
    return out


def local_stamp() -> dict[str, Any]:
    """The stamp of this machine as a run of it would compute (``dganalysis env``, a profile's index): the device
    ``resolve_device`` picks (CUDA when available), the precision ``precision="auto"`` picks on it (bf16 on CUDA and
    AMX-bf16 CPUs unless ``$DGANALYSIS_CPU_PRECISION`` says otherwise), and the thread count in force (CPU). Imports
    torch."""
    import torch

    if torch.cuda.is_available():  # the cuDNN/TF32 settings a job of the default mode sets (dganalysis.training.train)
        return stamp("cuda:0", "bf16", None, cuda_flags("default", "cuda"))
    from dganalysis import threads

    auto = "bf16" if environment()["cpu_bf16"] else "fp32"
    try:
        count: int | None = threads.fixed_count(None)
    except ValueError:  # a bad $DGANALYSIS_THREADS: the jobs say so; the stamp leaves the count out
        count = None
    return stamp("cpu", os.environ.get("DGANALYSIS_CPU_PRECISION") or auto, count)


def format_stamp(prov: Mapping[str, Any]) -> str:
    """``prov`` as ``name: value`` lines (the fields of :data:`FIELDS` first, in order; a commit with
    ``(modified)`` when its tree was)."""
    lines = []
    for k in [*FIELDS, *(k for k in prov if k not in FIELDS)]:
        if k in prov and k != "dirty":
            lines.append(f"{k + ':':12s}{_shown(prov, k)}")
    return "\n".join(lines)


def one_line(prov: Mapping[str, Any]) -> str:
    """``prov`` on one line (index.md, report.html): package and commit, versions, device, precision, threads."""
    parts = [f"dganalysis {prov.get('dganalysis')}"]
    if prov.get("commit"):
        parts[0] += f" (commit {str(prov['commit'])[:12]}{', modified' if prov.get('dirty') else ''})"
    parts += [f"Python {prov.get('python')}", f"torch {prov.get('torch')}", f"numpy {prov.get('numpy')}",
              f"CUDA {prov.get('cuda') or '—'}",
              f"CPU {prov.get('cpu')} ({'AMX-bf16' if prov.get('cpu_bf16') else 'no AMX-bf16'})"]
    if prov.get("gpu"):
        parts.append(f"GPU {prov['gpu']}")
    if prov.get("precision"):
        parts.append(f"precision {prov['precision']}")
    if prov.get("threads") is not None:
        parts.append(f"{prov['threads']} threads")
    return ", ".join(parts)


def _shown(prov: Mapping[str, Any], key: str) -> str:
    value = prov.get(key)
    if key == "commit" and value:
        return f"{str(value)[:12]}{' (modified)' if prov.get('dirty') else ''}"
    if isinstance(value, Mapping):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return "—" if value is None else str(value)


def differences(runs: Iterable[tuple[str, str, str | None, Mapping[str, Any] | None]]) -> list[str]:
    """One line per field of :data:`COMPARED` whose value differs among ``runs`` — (where: the store, run: a job id
    or folder, algorithm, provenance) each — and per algorithm whose runs differ in ``precision``; runs without a
    provenance (older stores, DomainBed's) are left out. Each line lists every value with its number of runs, the
    stores and one run as an example, e.g. ``runs made under different torch versions: 2.13.0+cpu (40 runs in
    /a; e.g. 3f2c...), 2.5.1 (40 runs in /b; e.g. 9a01...)``."""
    groups: dict[tuple[str, str | None], dict[str, list]] = {}
    for where, run, algorithm, prov in runs:
        if not isinstance(prov, Mapping):
            continue
        for field in COMPARED:
            if field in prov:
                _add(groups, (field, None), _shown(prov, field), where, run)
        if prov.get("precision") is not None:
            _add(groups, ("precision", algorithm), str(prov["precision"]), where, run)
    lines = []
    for (field, algorithm), values in groups.items():
        if len(values) < 2:
            continue
        what = COMPARED[field] if algorithm is None else f"precisions ({algorithm})"
        shown = []
        for value, (n, stores, example) in sorted(values.items(), key=lambda kv: -kv[1][0]):
            shown.append(f"{value} ({n} run{'s' if n != 1 else ''} in {', '.join(stores)}; e.g. {example})")
        lines.append(f"runs made under different {what}: {', '.join(shown)}")
    return lines


def _add(groups: dict, key: tuple, value: str, where: str, run: str) -> None:
    entry = groups.setdefault(key, {}).setdefault(value, [0, [], run])
    entry[0] += 1
    if where not in entry[1]:
        entry[1].append(where)
