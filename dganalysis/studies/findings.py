"""Each paper's finding, reproduced or not, recorded by the notebook that tests it and listed atop ``index.md``.

A notebook calls :func:`record_finding` once per claim it tests (the paper, the claim, our number, a verdict);
the records are small JSON files under ``<output_dir>/findings/`` (atomic writes), so a rerun of one notebook
replaces only its own lines. :func:`findings_markdown` renders them as the one-screen summary of the index, and
:func:`findings_prose` as the notebook's sentences about its own run.

Verdicts and the rules that make a run too small to decide are :mod:`dganalysis.verdicts`'s (the
protocols make them; this module records and lists them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dganalysis import io
from dganalysis.findings.engine import FindingResult, pooled
from dganalysis.verdicts import PAPER_STEPS, Verdict, verdict_to_record


def record_finding(output_dir: str | Path, key: str, paper: str, finding: str, ours: str, verdict: str | Verdict,
                   data: str = "", *, steps: int | None = None, min_steps: int = PAPER_STEPS,
                   decision: FindingResult | None = None) -> Path:
    """Write one finding to ``<output_dir>/findings/<key>.json``; ``key`` (e.g. ``"03a"``) orders the summary.

    ``verdict`` is a :class:`~dganalysis.verdicts.Verdict` (or its text, optionally with `` (reason)``); ``ours`` holds the number(s) that
    decide it; ``data`` says what the number rests on: real (which set) or SIMULATED, and each test domain's size
    (:func:`dganalysis.data.provenance.data_label`); ``steps``: the training length of the runs behind it
    (:func:`~dganalysis.verdicts.verdict_to_record` makes a negative verdict from a run shorter than ``min_steps`` "not decided");
    ``decision``: the :class:`~dganalysis.findings.engine.FindingResult` the verdict came from (its claims, family,
    p-values and why are kept in the record under ``"decision"``, for the report's forest plots and for re-adjusting).
    """
    verdict = verdict_to_record(verdict, steps=steps, min_steps=min_steps)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", key):
        raise ValueError(f"key={key!r}: expected letters, digits, '_', '.', '-'")
    rec = {"key": key, "paper": paper, "finding": finding, "ours": ours, "verdict": verdict, "data": data}
    if decision is not None:
        rec["decision"] = decision.as_record()
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


def verdict_counts_line(rows: list[dict]) -> str:
    """One sentence counting the findings per verdict (a verdict's reason ignored), e.g. ``"20 findings: reproduced 9,
    measured 3, not decided 8."``; each finding's claims are decided in one family (docs/findings.md)."""
    counts = {v.value: 0 for v in Verdict}
    for r in rows:
        try:
            counts[Verdict.parse(r.get("verdict"))[0].value] += 1
        except ValueError:
            continue
    return (f"{len(rows)} findings: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v)
            + " (each finding's claims decided in one family by the audit's engine; see docs/findings.md).")


def decisions_markdown(rows: list[dict], alpha: float = 0.05) -> str:
    """Markdown for a notebook's decided findings (rows with a ``decision``): the verdict counts when all their
    claims form one family (:func:`dganalysis.findings.engine.pooled`), then each finding's ``why``."""
    decided = [r for r in rows if r.get("decision") is not None]
    if not decided:
        return "No finding of this run was decided by the engine."
    counts = ", ".join(f"{k} {v}" for k, v in pooled([r["decision"] for r in decided], alpha).items() if v)
    out = [f"Under one family of all this notebook's findings: {counts}.", ""]
    out += [f"* *why* ({r['finding'][:60]}…): {r['decision'].why}" for r in decided if r["decision"].why]
    return "\n".join(out)


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

    Each row has ``paper, finding, ours, verdict`` and may have ``data`` and ``decision`` (the
    :class:`~dganalysis.findings.engine.FindingResult` behind the verdict); ``data`` here is the default for rows
    without one. Use one prefix per notebook so a rerun drops stale lines. ``steps``: the training length of the
    runs behind the rows (see :func:`~dganalysis.verdicts.verdict_to_record`).
    """
    folder = Path(output_dir) / "findings"
    for row in rows:  # validate everything before removing anything
        Verdict.parse(row.get("verdict"))
    for p in folder.glob(f"{prefix}*.json") if folder.is_dir() else []:
        p.unlink()
    return [record_finding(output_dir, f"{prefix}{chr(97 + i)}", r["paper"], r["finding"], r["ours"], r["verdict"],
                           r.get("data") or data, steps=steps, min_steps=min_steps, decision=r.get("decision"))
            for i, r in enumerate(rows)]


def read_variant_findings(output_dir: str | Path, base_rows: list[dict], variants: dict[str, str | Path]) -> list[dict]:
    """``base_rows`` and the findings of each variant run (variant name -> its output folder, see
    :mod:`dganalysis.studies.runner`), each variant's row labelled in its ``paper`` cell (``[variant <name>]``) and keyed
    ``<key>@<variant>`` so it sorts beside the base run's row of the same claim."""
    rows = list(base_rows)
    for name, folder in variants.items():
        rows += [{**r, "key": f"{r['key']}@{name}", "paper": f"{r['paper']} [variant {name}]", "variant": name}
                 for r in read_findings(folder)]
    return sorted(rows, key=lambda r: str(r["key"]))
