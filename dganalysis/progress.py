"""Progress where the user is looking: a notebook's sweeps under papermill's cell counter, and the long reads of
the command line (:func:`bars`).

A notebook runs in a Jupyter kernel, so its sweeps' progress bars land in the notebook, not in the terminal that
ran ``dganalysis run``. The plumbing: the runner (:mod:`dganalysis.studies.runner`) sets ``$DGANALYSIS_PROGRESS_FILE``
(:data:`PROGRESS_FILE_ENV`) before it starts each notebook's kernel, which inherits it; every
:func:`~dganalysis.sweep.launcher.run_sweep` of that kernel appends one entry to that JSON file and rewrites it
atomically after each job (:class:`SweepProgress`); a thread of the runner polls it (:class:`ProgressWatcher`) and
draws, on stderr under papermill's bar, the jobs done of the current sweep with an ETA (elapsed time per finished
job × jobs left). When the notebook ends, :func:`sweep_totals` gives the jobs and sweep minutes the index records.

File format: ``{"sweeps": [{"total", "done", "failed", "skipped", "started", "updated", "finished"}, ...]}``, times
in seconds since the epoch; ``total`` counts the jobs to train (``skipped``: already done in the store).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dganalysis import io

PROGRESS_FILE_ENV = "DGANALYSIS_PROGRESS_FILE"
REDRAW_S = 10.0  #: the watcher redraws an unchanged line (its ETA) at most this often

_BARS: contextvars.ContextVar[bool] = contextvars.ContextVar("dganalysis_progress_bars", default=False)


@contextlib.contextmanager
def bars(enabled: bool = True) -> Iterator[None]:
    """Within this block, long reads that have no ``progress`` parameter of their own draw a tqdm bar on stderr: the
    index build of a large store (:func:`dganalysis.records.index.update_index`, under ``collect`` and ``audit``). The
    command line turns them on where stderr is a terminal; off by default (a library call draws nothing unasked)."""
    token = _BARS.set(bool(enabled))
    try:
        yield
    finally:
        _BARS.reset(token)


def bars_shown() -> bool:
    """Whether the caller asked for progress bars (:func:`bars`)."""
    return _BARS.get()


def progress_file() -> Path | None:
    """The file named by ``$DGANALYSIS_PROGRESS_FILE`` (None when unset: nobody is watching)."""
    value = os.environ.get(PROGRESS_FILE_ENV)
    return Path(value) if value else None


def read_progress(path: str | Path) -> dict[str, Any]:
    """The progress file's content (``{"sweeps": []}`` when it is missing or not yet readable)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"sweeps": []}
    return data if isinstance(data, dict) and isinstance(data.get("sweeps"), list) else {"sweeps": []}


class SweepProgress:
    """One sweep's entry in the progress file: :meth:`tick` after each job, :meth:`close` at the end. Writes
    nothing when ``path`` is None."""

    def __init__(self, path: str | Path | None, total: int, skipped: int = 0) -> None:
        self.path = Path(path) if path is not None else None
        now = time.time()
        self.entry = {"total": int(total), "done": 0, "failed": 0, "skipped": int(skipped), "started": now,
                      "updated": now, "finished": False}
        self.index: int | None = None
        if self.path is not None:
            data = read_progress(self.path)
            self.index = len(data["sweeps"])
            self._write(data)

    def _write(self, data: dict[str, Any] | None = None) -> None:
        if self.path is None:
            return
        data = data or read_progress(self.path)
        sweeps = data["sweeps"]
        if self.index is None or self.index >= len(sweeps):
            self.index = len(sweeps)
            sweeps.append(self.entry)
        else:
            sweeps[self.index] = self.entry
        self.entry["updated"] = time.time()
        try:
            io.write_json(self.path, data)
        except OSError:  # progress is a courtesy: never fail a sweep for it
            pass

    def tick(self, failed: bool = False) -> None:
        """One more job finished (``failed``: it failed)."""
        self.entry["done"] += 1
        self.entry["failed"] += bool(failed)
        self._write()

    def close(self) -> None:
        self.entry["finished"] = True
        self._write()


def eta_seconds(entry: dict[str, Any], now: float | None = None) -> float | None:
    """Seconds left for a sweep entry: elapsed / jobs finished × jobs left (None before the first job ends)."""
    done, total = int(entry.get("done", 0)), int(entry.get("total", 0))
    if done <= 0:
        return None
    elapsed = (now or time.time()) - float(entry.get("started", 0.0))
    return max(0.0, elapsed / done * (total - done))


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def sweep_line(entry: dict[str, Any], number: int, now: float | None = None) -> str:
    """``sweep 2: 7/12 jobs (1 failed), 3 already done, ETA 04:10`` for one entry."""
    text = f"sweep {number}: {entry.get('done', 0)}/{entry.get('total', 0)} jobs"
    if entry.get("failed"):
        text += f" ({entry['failed']} failed)"
    if entry.get("skipped"):
        text += f", {entry['skipped']} already done"
    return text + (", finished" if entry.get("finished") else f", ETA {_clock(eta_seconds(entry, now))}")


def sweep_totals(path: str | Path) -> dict[str, Any]:
    """Totals over a notebook's sweeps: ``sweeps``, ``trained`` (jobs run, failed included), ``failed``,
    ``skipped`` (already done), ``minutes`` (wall time inside the sweeps); {} when it ran no sweep."""
    sweeps = read_progress(path)["sweeps"]
    if not sweeps:
        return {}
    minutes = sum(max(0.0, float(s.get("updated", 0)) - float(s.get("started", 0))) for s in sweeps) / 60
    return {"sweeps": len(sweeps), "trained": sum(int(s.get("done", 0)) for s in sweeps),
            "failed": sum(int(s.get("failed", 0)) for s in sweeps),
            "skipped": sum(int(s.get("skipped", 0)) for s in sweeps), "minutes": round(minutes, 2)}


class ProgressWatcher:
    """A thread that polls a progress file every ``interval`` seconds and shows the current sweep as a tqdm line
    on ``stderr`` (below papermill's cell counter, ``position=1``); use as a context manager."""

    def __init__(self, path: str | Path, label: str = "", interval: float = 1.0, file=None) -> None:
        self.path, self.label, self.interval, self.file = Path(path), label, float(interval), file
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="dganalysis-progress", daemon=True)
        self._bar = None
        self._shown: int | None = None  # index of the sweep the bar shows
        self.lines: list[str] = []  # what was shown, one entry per change (for tests and logs)
        self._last_state: tuple | None = None
        self._last_draw = 0.0

    def __enter__(self) -> ProgressWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()
        if self._bar is not None:
            self._bar.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def poll(self) -> None:
        """Read the file once and update the line."""
        import sys

        from tqdm.auto import tqdm

        sweeps = read_progress(self.path)["sweeps"]
        if not sweeps:
            return
        i = len(sweeps) - 1
        entry = sweeps[i]
        text = sweep_line(entry, i + 1)
        if self._shown != i:
            if self._bar is not None:
                self._bar.close()
            # the whole line is the description: tqdm puts ", " before a non-empty {postfix}, whatever the format
            self._bar = tqdm(total=int(entry.get("total", 0)), position=1, leave=False, file=self.file or sys.stderr,
                             desc=f"{self.label} {text}".strip(), unit="job",
                             bar_format="{desc} {percentage:3.0f}%|{bar:20}|")
            self._shown = i
        if not self.lines or self.lines[-1] != text:
            self.lines.append(text)
        state = (i, int(entry.get("done", 0)), bool(entry.get("finished")))
        now = time.monotonic()
        if state == self._last_state and now - self._last_draw < REDRAW_S:
            return  # nothing new: redraw (the ETA) at most every REDRAW_S seconds, so logs do not fill up
        self._last_state, self._last_draw = state, now
        self._bar.n = state[1]
        self._bar.set_description_str(f"{self.label} {text}".strip(), refresh=False)
        self._bar.refresh()


__all__ = ["PROGRESS_FILE_ENV", "ProgressWatcher", "SweepProgress", "eta_seconds", "progress_file", "read_progress", "sweep_line",
           "sweep_totals"]
