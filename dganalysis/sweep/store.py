"""The job store shared by many processes: job states on disk and claims with leases.

Layout (one folder per job, named by :attr:`Job.job_id`)::

    <store>/<job_id>/spec.json  results.jsonl  [model.pt]  done | failed   claim   history.log
    <store>/.lock                                                           (takeovers are serialised here)

Any number of processes may run sweeps on one store at once (two notebooks, a papermill batch and
JupyterLab, the tasks of a Slurm array). The rules:

- A job runs only under a **claim**: ``<job_dir>/claim``, created atomically (written to a temporary file,
  then ``os.link``-ed into place, which fails if a claim exists — atomic on local file systems and on NFS).
  It names the host, PID and a random token of the holder and a lease (seconds). A heartbeat thread of the
  holder renews the lease by touching the file every ``lease / 4`` seconds.
- A claim is **stale** when its file was not renewed for longer than its lease (the holder's node died or
  hangs), or at once when the holder is on this host and its PID no longer runs (``kill -9``). A stale claim
  is taken over under an exclusive lock on ``<store>/.lock``, after checking again that it is the same stale
  claim; a live claim is never touched: the job is skipped for now and waited for.
- Under its claim a runner looks at the job again: a ``done`` job is never touched (someone finished it
  meanwhile); only a job without ``done`` is cleared and trained. So nothing another live runner holds is
  ever cleared or overwritten, and a finished job is never redone.
- A holder whose claim was taken over (it was frozen for longer than its lease) notices at its next
  checkpoint and stops without writing anything more (:class:`ClaimLost`).
- A CPU job's records name the thread count they were computed on (``threads``; float32 results depend on it
  and it is not part of the job hash): :func:`stored_threads` reads it, and a sweep refuses to reuse a finished
  job recorded on another count than it would use (:mod:`dganalysis.sweep.launcher`, ``mixed_threads``).
- ``history.log`` keeps one line per claim event (start, done, failed, takeover) with host, PID and time:
  who trained what, for audits.

Clocks of the hosts sharing a store must agree to well within a lease (staleness compares the claim file's
modification time with this host's clock). The lease is :data:`DEFAULT_LEASE_S` seconds, or
``$DGANALYSIS_LEASE_S``, or the ``lease_s`` argument.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dganalysis.validation import ConfigError

log = logging.getLogger(__name__)

#: default lease of a claim, in seconds (a dead node's job is taken over this long after its last renewal)
DEFAULT_LEASE_S = 120.0
CLAIM = "claim"
HISTORY = "history.log"
LOCK = ".lock"


def lease_seconds(lease_s: float | None = None) -> float:
    """``lease_s``, else ``$DGANALYSIS_LEASE_S``, else :data:`DEFAULT_LEASE_S`; must be > 0."""
    if lease_s is None:
        text = os.environ.get("DGANALYSIS_LEASE_S")
        try:
            lease_s = float(text) if text else DEFAULT_LEASE_S
        except ValueError:
            raise ConfigError(f"$DGANALYSIS_LEASE_S: expected a number of seconds, got {text!r}") from None
    if not lease_s > 0:
        raise ConfigError(f"lease_s: expected a positive number of seconds, got {lease_s!r}")
    return float(lease_s)


class ClaimLost(RuntimeError):
    """Our claim on a job was taken over by another runner (we did not renew it within the lease)."""


# --------------------------------------------------------------------------- reading claims
@dataclass(frozen=True)
class ClaimInfo:
    """A claim as found on disk."""

    host: str
    pid: int
    token: str
    started: float
    lease_s: float
    renewed: float  # modification time of the claim file

    def age(self, now: float | None = None) -> float:
        """Seconds since the last renewal."""
        return (time.time() if now is None else now) - self.renewed

    def is_stale(self, now: float | None = None) -> bool:
        """Not renewed within its lease, or held by a process of this host that no longer runs."""
        if self.age(now) > self.lease_s:
            return True
        return self.host == socket.gethostname() and not pid_alive(self.pid)

    def describe(self) -> str:
        """``host:pid`` and how long ago it was renewed."""
        return f"{self.host}:{self.pid} (renewed {self.age():.0f} s ago, lease {self.lease_s:g} s)"


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (a zombie counts as dead)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def read_claim(job_dir: str | Path) -> ClaimInfo | None:
    """The claim of ``job_dir``, or None when there is none (an unreadable claim reads as stale)."""
    path = Path(job_dir) / CLAIM
    try:
        st = path.stat()
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        d = json.loads(text)
        return ClaimInfo(str(d["host"]), int(d["pid"]), str(d["token"]), float(d["started"]), float(d["lease_s"]),
                         st.st_mtime)
    except (ValueError, KeyError, TypeError):
        # being written (file systems without hard links) or damaged: stale once a default lease has passed
        log.warning("%s: unreadable claim file; stale %g s after its last change", path, DEFAULT_LEASE_S)
        return ClaimInfo("?", -1, f"unreadable:{st.st_ino}:{st.st_mtime_ns}", 0.0, DEFAULT_LEASE_S, st.st_mtime)


def live_claim(job_dir: str | Path) -> ClaimInfo | None:
    """The claim of ``job_dir`` if another live runner holds it, else None."""
    info = read_claim(job_dir)
    return info if info is not None and not info.is_stale() else None


@contextlib.contextmanager
def store_lock(store_dir: str | Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<store>/.lock`` (released by the kernel if this process dies).

    Held only for the few milliseconds of a takeover or a release. Where the file system has no locks
    (some network mounts), takeovers go on without it and a warning is logged once.
    """
    import fcntl

    path = Path(store_dir) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:  # pragma: no cover - file systems without locks
            _warn_no_lock(path, e)
        yield
    finally:
        os.close(fd)  # closing releases the lock


_WARNED: set[str] = set()


def _warn_no_lock(path: Path, err: OSError) -> None:  # pragma: no cover
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        log.warning("%s: file locks unavailable (%s); claim takeovers are not serialised", path, err)


def append_history(job_dir: str | Path, event: str, **fields: Any) -> None:
    """One line ``time event host:pid key=value ...`` appended to ``<job_dir>/history.log``."""
    extra = " ".join(f"{k}={v}" for k, v in fields.items())
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {event} {socket.gethostname()}:{os.getpid()} {extra}".rstrip()
    with open(Path(job_dir) / HISTORY, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


# --------------------------------------------------------------------------- holding claims
class JobClaim:
    """A claim this process holds; renewed by a heartbeat thread until :meth:`release`.

    Use :func:`try_claim` to get one. ``check()`` raises :class:`ClaimLost` when another runner took the
    job over; call it before every write into the job folder.
    """

    def __init__(self, job_dir: Path, token: str, lease_s: float) -> None:
        self.job_dir = job_dir
        self.token = token
        self.lease_s = lease_s
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"claim-{job_dir.name}", daemon=True)
        self._thread.start()

    @property
    def path(self) -> Path:
        return self.job_dir / CLAIM

    def _beat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            self.renew()

    def renew(self) -> bool:
        """Touch the claim file if it is still ours; returns whether it is."""
        info = read_claim(self.job_dir)
        if info is None or info.token != self.token:
            if not self.lost:
                log.warning("%s: claim lost (taken over by %s)", self.job_dir, info.describe() if info else "nobody")
            self.lost = True
            return False
        try:
            os.utime(self.path)
        except OSError as e:  # pragma: no cover - store unreachable for a moment; the next beat retries
            log.warning("%s: could not renew the claim: %s", self.path, e)
        return True

    def check(self) -> None:
        """Raise :class:`ClaimLost` if another runner holds the job now."""
        if self.lost or not self.renew():
            raise ClaimLost(f"{self.job_dir}: another runner took this job over; stopping without writing")

    def release(self) -> None:
        """Stop renewing and remove the claim file if it is still ours."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        with store_lock(self.job_dir.parent):
            info = read_claim(self.job_dir)
            if info is not None and info.token == self.token:
                self.path.unlink()

    def __enter__(self) -> JobClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _create_exclusive(tmp: Path, path: Path) -> None:
    """Make ``path`` a copy of ``tmp`` atomically, failing with FileExistsError if it exists: a hard link (atomic
    on local and network file systems), or ``O_CREAT | O_EXCL`` where hard links are not supported."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here (some FUSE/SMB mounts)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w") as fh:
            fh.write(tmp.read_text())


def try_claim(job_dir: str | Path, lease_s: float | None = None) -> JobClaim | ClaimInfo:
    """Claim ``job_dir`` for this process: a :class:`JobClaim`, or the live holder's :class:`ClaimInfo`.

    A stale claim is taken over (and the takeover logged in ``history.log``).
    """
    job_dir = Path(job_dir)
    lease = lease_seconds(lease_s)
    job_dir.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    payload = {"host": socket.gethostname(), "pid": os.getpid(), "token": token, "started": time.time(),
               "lease_s": lease}
    tmp = job_dir / f".claim.{token}.tmp"
    tmp.write_text(json.dumps(payload) + "\n")
    try:
        for _ in range(20):
            try:
                _create_exclusive(tmp, job_dir / CLAIM)
            except FileExistsError:
                pass
            else:
                return JobClaim(job_dir, token, lease)
            info = read_claim(job_dir)
            if info is None:
                continue  # released between our link and our read: try again
            if not info.is_stale():
                return info
            with store_lock(job_dir.parent):
                now = read_claim(job_dir)
                if now is not None and now.token == info.token and now.is_stale():
                    (job_dir / CLAIM).unlink()
                    append_history(job_dir, "takeover", of=f"{info.host}:{info.pid}",
                                   silent_for=f"{info.age():.1f}s")
                    log.info("%s: took over the stale claim of %s", job_dir, info.describe())
        raise RuntimeError(f"{job_dir}: could not claim the job after 20 attempts (claims keep changing)")
    finally:
        tmp.unlink(missing_ok=True)


# --------------------------------------------------------------------------- job states
def job_state(job: Any, store_dir: str | Path) -> str:
    """``done``, ``failed``, ``running`` (a live claim), ``partial`` (a folder left by a dead runner) or ``new``.

    ``done`` needs ``model.pt`` too when the job asks for its model.
    """
    d = Path(store_dir) / job.job_id
    if (d / "done").exists() and (not job.save_model or (d / "model.pt").exists()):
        return "done"
    if live_claim(d) is not None:
        return "running"
    if (d / "failed").exists():
        return "failed"
    if d.exists():
        return "partial"
    return "new"


def failed_stamp(job_dir: str | Path) -> int | None:
    """Modification time (ns) of ``<job_dir>/failed``, None without one: identifies one failure."""
    try:
        return (Path(job_dir) / "failed").stat().st_mtime_ns
    except FileNotFoundError:
        return None


def stored_precision(job_dir: str | Path) -> str | None:
    """The ``precision`` of the job's first record (None when unknown)."""
    try:
        with open(Path(job_dir) / "results.jsonl", encoding="utf-8") as fh:
            first = fh.readline()
        value = json.loads(first).get("precision")
    except (OSError, ValueError, AttributeError):
        return None
    return str(value) if value is not None else None


def stored_threads(job_dir: str | Path) -> int | None:
    """The CPU ``threads`` every record of the job was computed on; None when unknown (no records, records written
    before the count was recorded, DomainBed's, or a CUDA job's null). Records of one job that name different
    counts are an error: such a job mixes two computations."""
    counts = set()
    try:
        with open(Path(job_dir) / "results.jsonl", encoding="utf-8") as fh:
            for line in fh:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a torn last line: the reader of the records reports it
                if isinstance(rec, dict) and rec.get("threads") is not None:
                    counts.add(int(rec["threads"]))
    except OSError:
        return None
    if len(counts) > 1:
        raise ConfigError(f"{job_dir}/results.jsonl: records computed on different thread counts {sorted(counts)}; "
                         "train the job again (remove its folder)")
    return counts.pop() if counts else None
