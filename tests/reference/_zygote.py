"""DomainBed's unmodified scripts run from a pre-imported process: each run its own process, without the imports.

A fresh ``python`` that runs DomainBed's ``scripts/train.py`` spends seconds importing torch, torchvision and
DomainBed before its first step. Here one helper process per pytest process (started on the first run, ended when
pytest exits) runs :data:`~tests.reference._harness.SCRIPT_PRELUDE` and imports torch, torchvision and DomainBed's
modules once; for each run it **forks** a child that applies the run's environment variables, working directory and
thread count (``torch.set_num_threads`` from ``OMP_NUM_THREADS``), executes the run's prelude (e.g. the
``N_WORKERS`` patch) and then DomainBed's script with ``runpy`` under the run's ``sys.argv``, stdout and stderr
going to files. Each run thus starts from a copy of a process in which nothing has been computed: the helper forks
before any torch operation, so no OpenMP thread pool exists yet (the helper checks that it holds one thread when it
is ready, and refuses to serve otherwise), and the child's DataLoader workers (DomainBed's ``N_WORKERS=8``) are
forked from the child as in a fresh process. The child ends through the interpreter's normal exit (atexit handlers
stop its loader workers), its exit status reported back.

Needs ``os.fork`` (Linux, macOS); elsewhere the runs are skipped, saying so.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from ._harness import SCRIPT_PRELUDE

ROOT = Path(__file__).resolve().parents[2]
#: the environment every DomainBed run gets on top of pytest's: one OpenMP thread, no GPU
BASE_ENV = {"OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}

#: the helper's loop, after SCRIPT_PRELUDE: one JSON request a line on stdin, JSON replies on the original stdout
_SERVER = r'''
import json, os, traceback
_reply = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
import torch, torchvision  # noqa
import domainbed.datasets, domainbed.algorithms, domainbed.networks, domainbed.hparams_registry  # noqa
import domainbed.model_selection, domainbed.lib.misc, domainbed.lib.fast_data_loader  # noqa
import domainbed.lib.query, domainbed.lib.reporting  # noqa


def _child(req):
    """In the forked child: the run's files, environment, cwd and threads, its prelude, then the script."""
    _reply.close()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, req["stdout"]), (2, req["stderr"])):
        f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    if os.environ.get("OMP_NUM_THREADS"):
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    sys.argv = [req["argv0"], *req["argv"]]
    try:
        exec(compile(req["prelude"], "<prelude>", "exec"), {"__name__": "__prelude__"})
        runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _serve():
    """Answer requests until stdin closes; returns an exit status only in a forked child."""
    _reply.write(json.dumps({"ready": len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1})
                 + "\n")
    while True:
        line = sys.stdin.readline()
        if not line:
            return None
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            return _child(req)
        _reply.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        _reply.write(json.dumps({"status": os.waitstatus_to_exitcode(status)}) + "\n")


_code = _serve()
if _code is not None:
    sys.exit(_code)
'''


class ScriptRunner:
    """The helper process: DomainBed (``root``) and this repository on its ``sys.path``, modules imported."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._log = tempfile.NamedTemporaryFile(prefix="dga_zygote_", suffix=".log", delete=False)  # noqa: SIM115
        env = {**os.environ, "PYTHONPATH": f"{self.root}{os.pathsep}{ROOT}", **BASE_ENV}
        self._buf = b""
        self._proc = subprocess.Popen([sys.executable, "-c", SCRIPT_PRELUDE + _SERVER], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=self._log, env=env)
        ready = self._read(300)
        if ready.get("ready") != 1:
            self.close()
            raise RuntimeError(f"the DomainBed helper holds {ready.get('ready')} threads before forking (one expected:"
                               " a thread pool would be copied into each run broken)")

    def _read(self, timeout: float) -> dict:
        """The helper's next reply (one JSON line), waiting at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError(f"no answer from the DomainBed helper in {timeout} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the DomainBed helper died: {Path(self._log.name).read_text()[-3000:]}")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, argv: Sequence[str], *, logs: Path, module: str = "domainbed.scripts.train", prelude: str = "",
            env: Mapping[str, str] | None = None, timeout: float = 600) -> tuple[int, str]:
        """Run ``module`` as ``__main__`` with ``sys.argv[1:] = argv`` in a forked child; its stdout and stderr
        are written to ``<logs>.stdout`` / ``<logs>.stderr``. Returns the exit status and the last 3,000 characters of
        stderr. The child is killed after ``timeout`` seconds (status -9)."""
        stderr = Path(f"{logs}.stderr")
        req = {"module": module, "argv0": module.rsplit(".", 1)[-1] + ".py", "argv": list(argv), "prelude": prelude,
               "env": {**os.environ, **BASE_ENV, **(env or {})}, "cwd": os.getcwd(),
               "stdout": f"{logs}.stdout", "stderr": str(stderr)}
        self._proc.stdin.write(json.dumps(req).encode() + b"\n")
        self._proc.stdin.flush()
        pid = self._read(60)["pid"]
        try:
            status = self._read(timeout)["status"]
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            status = self._read(60)["status"]
        return status, stderr.read_text()[-3000:] if stderr.exists() else ""

    def close(self) -> None:
        """End the helper (closing its stdin ends its loop)."""
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        self._log.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._log.name)


_RUNNERS: dict[Path, ScriptRunner] = {}


def script_runner(root: Path) -> ScriptRunner:
    """This pytest process's helper for the DomainBed checkout ``root`` (started on first use, ended at exit)."""
    if not hasattr(os, "fork"):
        pytest.skip("DomainBed's scripts run from a forked, pre-imported process: os.fork is not available here")
    root = Path(root)
    if root in _RUNNERS and _RUNNERS[root]._proc.poll() is not None:
        _RUNNERS.pop(root).close()
    if root not in _RUNNERS:
        _RUNNERS[root] = ScriptRunner(root)
        atexit.register(_RUNNERS[root].close)
    return _RUNNERS[root]


def workers_patch(workers: int | None) -> str:
    """The prelude that sets DomainBed's ``N_WORKERS`` (loader worker processes) to ``workers``; None: its 8."""
    if workers is None:
        return ""
    return f"import domainbed.datasets as _d\n_d.MultipleDomainDataset.N_WORKERS = {workers}\n"


def run_train(root: Path, argv: Sequence[str], out: Path, *, workers: int | None = None, prelude: str = "",
              env: Mapping[str, str] | None = None, timeout: float = 600) -> list[dict]:
    """DomainBed's unmodified ``scripts/train.py`` with ``argv`` and ``--output_dir out``, its ``N_WORKERS`` patched
    to ``workers`` after ``prelude``; asserts it exits 0 and returns its records (``out/results.jsonl``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    status, err = script_runner(root).run([*argv, "--output_dir", str(out)], logs=out.parent / f"{out.name}_train",
                                          prelude=prelude + workers_patch(workers), env=env, timeout=timeout)
    assert status == 0, err
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
