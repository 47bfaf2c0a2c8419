"""Each paper's finding, reproduced or not, recorded by the notebook that tests it and listed atop ``index.md``.

A notebook calls :func:`record_finding` once per claim it tests (the paper, the claim, our number, a verdict);
the records are small JSON files under ``<output_dir>/findings/`` (atomic writes), so a rerun of one notebook
replaces only its own lines. :func:`findings_markdown` renders them as the one-screen summary of the index, and
:func:`findings_prose` as the notebook's sentences about its own run.

Verdicts are a :class:`Verdict` (a ``str`` enum: ``"reproduced"``, ``"partly"``, ``"not reproduced"``, ``"not
decided"``), optionally followed by a reason in parentheses, e.g. ``"not decided (too small: n = 4 models …)"``.
Two rules say when a run is too small to decide, applied where verdicts are made:

- **too few units for the test** — :func:`~dganalysis.stats.rank_tests.spearman_test` returns the exact
  permutation p-value for small n and :func:`spearman_too_small` says when no outcome can reach p < α: a two-sided
  Spearman test over n items has smallest p = 2/n! (both perfect orders), 1/12 ≈ 0.083 at n = 4, so it needs
  n ≥ 5 for α = 0.05. p-values are printed with :func:`format_p`, never as ``p=0``.
- **too short a run to refute** — :func:`decide` (called by :func:`record_finding` / :func:`replace_findings` with
  the run's ``steps``) turns "not reproduced" and "partly" from a run shorter than :data:`PAPER_STEPS` (DomainBed's
  5,000 steps, Gulrajani & Lopez-Paz 2021, the training length of the claims tested here) into
  ``"not decided (too small: steps = 10 < 5,000 …)"``; a positive verdict stands (a short run that shows the
  effect shows it).
"""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path

from dganalysis import io


class Verdict(str, Enum):
    """The verdict on one paper's claim (a ``str``: compares and serialises as its value)."""

    REPRODUCED = "reproduced"
    PARTLY = "partly"
    NOT_REPRODUCED = "not reproduced"
    NOT_DECIDED = "not decided"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @classmethod
    def parse(cls, text: object) -> tuple[Verdict, str]:
        """``(verdict, reason)`` of ``"<verdict>"`` or ``"<verdict> (<reason>)"``; ValueError for anything else."""
        s = str(text.value if isinstance(text, Verdict) else text)
        for v in sorted(cls, key=lambda v: -len(v.value)):  # "not reproduced" before "reproduced"
            if s == v.value:
                return v, ""
            if s.startswith(v.value + " (") and s.endswith(")"):
                return v, s[len(v.value) + 2:-1]
        raise ValueError(f"verdict={text!r}: expected one of {VERDICTS}, optionally followed by ' (reason)'")


VERDICTS = tuple(v.value for v in Verdict)
#: DomainBed's default training length (Gulrajani & Lopez-Paz 2021), the length of the runs behind the claims tested
PAPER_STEPS = 5000


def too_small(reason: str) -> str:
    """``"not decided (too small: <reason>)"``."""
    return f"{Verdict.NOT_DECIDED.value} (too small: {reason})"


def decide(verdict: str | Verdict, *, steps: int | None = None, min_steps: int = PAPER_STEPS) -> str:
    """The verdict to record: a negative one ("not reproduced", "partly") from a run of fewer than ``min_steps``
    training steps becomes ``not decided (too small: steps = …)``; anything else is returned unchanged."""
    v, _ = Verdict.parse(verdict)
    if steps is not None and steps < min_steps and v in (Verdict.NOT_REPRODUCED, Verdict.PARTLY):
        return too_small(f"steps = {steps:,} < {min_steps:,}, the papers' training length; a shorter run cannot "
                         f"refute the claim; it read {v.value!r}")
    return str(verdict.value if isinstance(verdict, Verdict) else verdict)


def spearman_too_small(n: int, alpha: float = 0.05, what: str = "models") -> str | None:
    """``not decided (too small: n = …)`` when no ranking of ``n`` items can reach p < ``alpha``, else None (the
    smallest p-value is :func:`~dganalysis.stats.rank_tests.spearman_min_p`'s)."""
    from dganalysis.stats.rank_tests import spearman_min_p  # deferred: reading findings needs no numpy/scipy

    if spearman_min_p(n) < alpha:
        return None
    need = next(k for k in range(2, 20) if spearman_min_p(k) < alpha)
    return too_small(f"n = {n} {what}; a two-sided Spearman test needs n ≥ {need} to reach p < {alpha:g} "
                     f"(smallest exact p with n = {n}: 2/{n}! = {spearman_min_p(n):.3g})")


def format_p(p: float, digits: int = 2) -> str:
    """``p=0.083``; never ``p=0``: below 1e-4 it reads ``p<0.0001``; NaN reads ``p=n/a``."""
    if p is None or p != p:
        return "p=n/a"
    if p < 1e-4:
        return "p<0.0001"
    return f"p={p:.{digits}g}"


def record_finding(output_dir: str | Path, key: str, paper: str, finding: str, ours: str, verdict: str | Verdict,
                   data: str = "", *, steps: int | None = None, min_steps: int = PAPER_STEPS) -> Path:
    """Write one finding to ``<output_dir>/findings/<key>.json``; ``key`` (e.g. ``"03a"``) orders the summary.

    ``verdict`` is a :class:`Verdict` (or its text, optionally with `` (reason)``); ``ours`` holds the number(s) that
    decide it; ``data`` says what the number rests on: real (which set) or SIMULATED, and each test domain's size
    (:func:`dganalysis.data.provenance.data_label`); ``steps``: the training length of the runs behind it
    (:func:`decide` makes a negative verdict from a run shorter than ``min_steps`` "not decided").
    """
    verdict = decide(verdict, steps=steps, min_steps=min_steps)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
        raise ValueError(f"key={key!r}: expected letters, digits, '_', '.', '-'")
    rec = {"key": key, "paper": paper, "finding": finding, "ours": ours, "verdict": verdict, "data": data}
    return io.write_json(Path(output_dir) / "findings" / f"{key}.json", rec)


def read_findings(output_dir: str | Path) -> list[dict]:
    """All recorded findings, sorted by key (unreadable files are skipped with their name in ``ours``)."""
    folder = Path(output_dir) / "findings"
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            out.append({"key": p.stem, "paper": "?", "finding": "?", "ours": f"unreadable record {p.name}",
                        "verdict": "not decided"})
    return out


def findings_markdown(rows: list[dict]) -> list[str]:
    """The summary table (Markdown lines): paper, finding, verdict, our number, and the data it rests on (a record
    without one says "not stated")."""
    if not rows:
        return ["(no notebook recorded a finding yet)"]
    cell = lambda s: str(s).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    lines = ["| paper | finding | verdict | ours | data (real or SIMULATED; test images) |", "|---|---|---|---|---|"]
    lines += [f"| {cell(r['paper'])} | {cell(r['finding'])} | **{cell(r['verdict'])}** | {cell(r['ours'])} | "
              f"{cell(r.get('data') or 'not stated')} |" for r in rows]
    return lines


def findings_prose(rows: list[dict]) -> str:
    """The findings of one run in words, as Markdown: one bullet per row — the claim, the verdict in bold, the numbers
    that decide it and the data they rest on. A notebook displays it instead of typing one run's numbers into its
    text, so the words follow the results under any parameters."""
    if not rows:
        return "No finding was recorded by this run."
    out = []
    for r in rows:
        data = f" (data: {r['data']})" if r.get("data") else ""
        out.append(f"* {r['finding']}: **{r['verdict']}**; this run: {r['ours']}{data}.")
    return "\n".join(out)


def replace_findings(output_dir: str | Path, prefix: str, rows: list[dict], data: str = "", *,
                     steps: int | None = None, min_steps: int = PAPER_STEPS) -> list[Path]:
    """Replace every finding whose key starts with ``prefix`` by ``rows`` (keys ``prefix`` + a, b, c, …).

    Each row has ``paper, finding, ours, verdict`` and may have ``data``; ``data`` here is the default for rows
    without one. Use one prefix per notebook so a rerun drops stale lines. ``steps``: the training length of the
    runs behind the rows (see :func:`decide`).
    """
    folder = Path(output_dir) / "findings"
    for row in rows:  # validate everything before removing anything
        Verdict.parse(row.get("verdict"))
    for p in folder.glob(f"{prefix}*.json") if folder.is_dir() else []:
        p.unlink()
    return [record_finding(output_dir, f"{prefix}{chr(97 + i)}", r["paper"], r["finding"], r["ours"], r["verdict"],
                           r.get("data") or data, steps=steps, min_steps=min_steps) for i, r in enumerate(rows)]


def read_variant_findings(output_dir: str | Path, base_rows: list[dict], variants: dict[str, str | Path]) -> list[dict]:
    """``base_rows`` and the findings of each variant run (variant name -> its output folder, see
    :mod:`dganalysis.studies.runner`), each variant's row labelled in its ``paper`` cell (``[variant <name>]``) and keyed
    ``<key>@<variant>`` so it sorts beside the base run's row of the same claim."""
    rows = list(base_rows)
    for name, folder in variants.items():
        rows += [{**r, "key": f"{r['key']}@{name}", "paper": f"{r['paper']} [variant {name}]", "variant": name}
                 for r in read_findings(folder)]
    return sorted(rows, key=lambda r: str(r["key"]))
