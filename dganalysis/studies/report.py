"""One self-contained HTML page for a profile's outputs: ``outputs/<profile>/report.html``.

The page opens with what made it, once (:mod:`dganalysis.provenance`: ``index.md``'s line saying what ran the
notebooks, else the package, commit and versions writing the page), then the findings at a glance
(:mod:`dganalysis.studies.findings`: the count of each verdict, and each finding as one line — a coloured verdict badge,
the paper, the claim, our number — that unfolds to its full paper, claim, verdict, numbers and data and, for a finding
decided by :mod:`dganalysis.findings.engine`, its claims as a forest plot (inline SVG: each claim's estimate and
simultaneous interval against its ROPE and zero, coloured by outcome) with a table of their tests, the family and the
engine's why; each notebook's findings open with their verdict counts under one family of all its claims), then the rest of
the summary of ``index.md`` (everything above the first per-notebook section), then one section per notebook with its status, every figure it wrote (PNG,
embedded as base64, so the page can be mailed or attached on its own) and every table
(its Markdown form, with caption and the notebook's number format; a table saved only as
CSV or LaTeX is shown from its CSV). Figures and tables in ``figures/`` and ``tables/``
that no recorded run wrote (e.g. from a notebook run by hand with papermill) are listed in a
last section, so the page shows every figure and table of the folder. ``dganalysis run``
writes the page after each run and links it from ``index.md``; ``dganalysis report``
rebuilds it from what is on disk.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
import re
import textwrap
from pathlib import Path

from dganalysis import io, provenance
from dganalysis.findings import engine
from dganalysis.studies.findings import read_findings, read_variant_findings
from dganalysis.studies.run_history import VARIANTS_DIR, NotebookRun, read_history, run_folder, split_label
from dganalysis.validation import MissingInputError
from dganalysis.verdicts import VERDICTS, Verdict

REPORT_NAME = "report.html"
LINK_LINE = f"HTML report (summary, every figure and table on one page): [{REPORT_NAME}]({REPORT_NAME})"

#: a claim's outcome → the colour of its marks, its table cell and the legend (as the verdict badges: green, red, amber)
OUTCOME_COLOURS = {engine.PAPER: "#1b7f3b", engine.AGAINST: "#b3261e", engine.UNDECIDED: "#a36b00"}

_CSS = """
*, *::before, *::after { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 72rem; margin: 1.5em auto;
       padding: 0 1em; color: #222; line-height: 1.45; overflow-wrap: anywhere; }
h1, h2, h3 { line-height: 1.2; } h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .85em; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: left; vertical-align: top;
         overflow-wrap: anywhere; word-break: break-word; }
thead th { background: #f2f2f2; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
pre { white-space: pre-wrap; } code { background: #f5f5f5; padding: 0 .2em; overflow-wrap: anywhere; }
figcaption, .meta { color: #555; font-size: .85em; }
.failed { color: #b00020; font-weight: bold; } .ok { color: #1b5e20; }
nav ul { columns: 2; }
.counts { display: flex; flex-wrap: wrap; gap: .5em; margin: .8em 0; padding: 0; list-style: none; }
.counts li { border-radius: 1em; padding: .15em .8em; font-weight: 600; }
.findings { margin: 0; padding: 0; list-style: none; border-top: 1px solid #ddd; }
.findings > li { border-bottom: 1px solid #ddd; }
.findings summary { cursor: pointer; padding: .35em .2em; display: grid; gap: .3em .8em; align-items: baseline;
                    grid-template-columns: 9.5em minmax(6em, 14em) minmax(0, 1fr) minmax(6em, 18em); }
.findings summary::-webkit-details-marker { display: none; }
.findings summary > span { min-width: 0; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.findings .paper { color: #444; font-size: .9em; } .findings .ours { font-variant-numeric: tabular-nums; }
.findings details[open] summary { background: #fafafa; }
.findings dl { display: grid; grid-template-columns: minmax(4em, 8em) minmax(0, 1fr); gap: .2em .8em;
               margin: .3em 0 .8em; padding: 0 .5em; font-size: .9em; }
.findings dt { color: #555; font-weight: 600; } .findings dd { margin: 0; }
.badge { display: inline-block; border-radius: .8em; padding: 0 .6em; font-size: .85em; font-weight: 600;
         text-align: center; }
.v-reproduced { background: #d7f5dd; color: #0d5c1e; } .v-partly, .v-not-decided { background: #fff0c2; color: #6b4a00; }
.v-not-reproduced { background: #fde0e0; color: #8e1111; } .v-other, .v-measured { background: #e8e8e8; color: #444; }
.findings li.pooled { padding: .45em .3em; background: #f3f5f8; font-size: .88em; }
.decision { margin: 0 .5em .9em; font-size: .9em; } .decision p { margin: .3em 0; }
.claims td:last-child, .claims th:last-child { overflow-wrap: normal; word-break: normal; }
.forest { margin: .3em 0 .5em; max-width: 46rem; } .forest svg { display: block; height: auto; }
@media (max-width: 50em) {
  .findings summary { grid-template-columns: 9.5em minmax(0, 1fr); }
  .findings summary > span { white-space: normal; }
  .findings .claim, .findings .ours { grid-column: 1 / -1; }
  nav ul { columns: 1; }
}
""" + "".join(f".o-{o} {{ color: {c}; font-weight: 600; }}\n" for o, c in OUTCOME_COLOURS.items())


def _markdown(text: str) -> str:
    """Markdown → HTML (CommonMark + tables, raw HTML escaped) with markdown-it-py."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def _anchor(kind: str, stem: str) -> str:
    return f"{kind}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", stem)


def _local_links(fragment: str) -> str:
    """Point links to ``figures/X.png|pdf`` and ``tables/X.md|csv|tex`` at the embedded copies on this page."""
    fragment = re.sub(r'href="figures/([^"/]+)\.(?:png|pdf)"', lambda m: f'href="#{_anchor("fig", m[1])}"', fragment)
    return re.sub(r'href="tables/([^"/]+)\.(?:md|csv|tex)"', lambda m: f'href="#{_anchor("tab", m[1])}"', fragment)


def index_summary(index_text: str, notebook_names: list[str]) -> str:
    """The part of ``index.md`` above its first per-notebook section (``## <notebook>``)."""
    lines = index_text.splitlines()
    heads = {f"## {n}" for n in notebook_names}
    for i, line in enumerate(lines):
        if line.strip() in heads:
            return "\n".join(lines[:i]).rstrip() + "\n"
    return index_text


_FINDINGS_HEAD = "## Summary: each paper's finding on this run"
_NO_FINDINGS = "(no notebook recorded a finding yet)"
_PROVENANCE_PREFIX = "Made with "


def verdict_of(text: object) -> str:
    """The verdict of a finding without its reason (``"not decided (too small: …)"`` → ``"not decided"``); a text that
    is no :class:`~dganalysis.verdicts.Verdict` (e.g. ``"measured"``, ``"not run"``) is kept, up to its `` (``."""
    try:
        return Verdict.parse(text)[0].value
    except ValueError:
        return str(text or "not run").split(" (")[0].strip() or "not run"


def verdict_class(text: object) -> str:
    """The CSS class of a verdict's badge: ``v-reproduced`` (green), ``v-partly`` and ``v-not-decided`` (amber),
    ``v-not-reproduced`` (red), ``v-measured`` and ``v-other`` (grey: a measurement, not run, anything else)."""
    v = verdict_of(text)
    return "v-" + v.replace(" ", "-") if v in VERDICTS else "v-other"


def verdict_counts(rows: list[dict]) -> dict[str, int]:
    """How many findings have each verdict (:func:`verdict_of`): the known verdicts in their order, then the others."""
    seen = [verdict_of(r.get("verdict")) for r in rows]
    order = [v for v in VERDICTS if v in seen] + sorted({v for v in seen if v not in VERDICTS})
    return {v: seen.count(v) for v in order}


def _short(text: object, n: int) -> str:
    s = " ".join(str(text if text is not None else "").split())
    if len(s) <= n:
        return s
    cut = s[:n].rsplit(" ", 1)[0] if " " in s[: n] else s[:n]
    return cut.rstrip(" ,;:") + "…"


# ------------------------------------------------------------------------------------------------- decisions
_OUTCOME_WORDS = {engine.PAPER: "the paper's way", engine.AGAINST: "against the paper", engine.UNDECIDED: "undecided"}
_ROPE_COLOUR = "#d9d9d9"


def result_of(decision: dict) -> engine.FindingResult:
    """The :class:`~dganalysis.findings.engine.FindingResult` back from a record's ``"decision"``
    (:meth:`~dganalysis.findings.engine.FindingResult.from_record`)."""
    return engine.FindingResult.from_record(decision)


def _fin(v: float) -> bool:
    return v is not None and math.isfinite(v)


def _p_text(p: float) -> str:
    if not _fin(p):
        return "—"
    return "<0.0001" if p < 1e-4 else f"{p:.2g}"


def _direction_text(c: engine.ClaimResult) -> str:
    sym = "ρ" if c.kind == "rank" else "Δ" if c.kind == "mean" else "stat."
    if c.direction == 0:
        return f"paper: {sym} ≈ 0 (±{c.rope:g})"
    return f"paper: {sym} {'>' if c.direction > 0 else '<'} 0"


def _axis_of(c: engine.ClaimResult) -> tuple[str, str]:
    """The x-axis a claim is drawn on: mean claims share one per unit of measure, rank claims one (Spearman ρ),
    permutation claims one (their statistic)."""
    if c.kind == "mean":
        return ("mean", f"Δ ({c.unit_of_measure}); line: simultaneous interval")
    if c.kind == "rank":
        return ("rank", "Spearman ρ (point only: permutation test, no interval)")
    return ("permutation", "statistic (point only: permutation test, no interval)")


def forest_svg(decision: dict, uid: str) -> str:
    """A finding's claims as a forest plot, inline SVG (matplotlib, drawn without pyplot; ``""`` when the finding
    holds no tested claim).

    One row per claim, in the record's order: a mean claim's estimate (a dot) and its interval (a line, simultaneous
    over the finding, level 1 − α/m) against the shaded ROPE [−rope, +rope] and the zero line; a rank or permutation
    claim as its statistic alone (a diamond; no interval). Marks are coloured by the claim's outcome
    (:data:`OUTCOME_COLOURS`); each row says the paper's direction and the claim's adjusted p (the rank/permutation
    claim's raw p too). Claims measured in different units get their own panel (own x-axis). The root ``<svg>``
    has a ``viewBox`` and ``width="100%"`` so it scales with the page; ``uid`` (a finding's key) prefixes the ids of
    its marks (``<uid>-claim-<i>``, ``<uid>-ci-<i>``, ``<uid>-rope-<i>``, ``<uid>-zero-<k>``) and salts the ids
    matplotlib makes, so several plots live on one page."""
    result = result_of(decision)
    claims = list(enumerate(result.claims))
    if not claims:
        return ""
    import io as _bytes_io

    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.transforms import blended_transform_factory

    uid = re.sub(r"[^A-Za-z0-9_-]", "_", uid)
    panels: dict[tuple[str, str], list[tuple[int, engine.ClaimResult]]] = {}
    for i, c in claims:
        panels.setdefault(_axis_of(c), []).append((i, c))
    width, left, plot_w, row_h, axis_h, gap = 6.4, 1.85, 2.55, 0.36, 0.4, 0.08
    heights = [len(rows) * row_h + 0.1 for rows in panels.values()]
    total = sum(heights) + len(heights) * axis_h + (len(heights) - 1) * gap + 0.08
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": uid, "font.size": 8.5,
                                "axes.linewidth": 0.6, "xtick.major.width": 0.6, "xtick.labelsize": 7.5}):
        fig = Figure(figsize=(width, total))
        top = total - 0.08
        for k, ((kind, label), rows) in enumerate(panels.items()):
            h = heights[k]
            ax = fig.add_axes((left / width, (top - h) / total, plot_w / width, h / total))
            top -= h + axis_h + gap
            ax.set_ylim(len(rows) - 0.5, -0.5)
            ax.set_yticks([])
            for side in ("left", "right", "top"):
                ax.spines[side].set_visible(False)
            ax.set_xlabel(label, fontsize=7.5, color="#444", labelpad=2)
            ax.axvline(0, color="#444", lw=0.8, zorder=1, gid=f"{uid}-zero-{k}")
            xs = [0.0]
            names = blended_transform_factory(ax.transAxes, ax.transData)
            for j, (i, c) in enumerate(rows):
                colour = OUTCOME_COLOURS.get(c.outcome, "#555")
                if c.kind == "mean" and _fin(c.rope) and c.rope > 0:
                    ax.fill_betweenx([j - 0.42, j + 0.42], -c.rope, c.rope, color=_ROPE_COLOUR, lw=0, zorder=0,
                                     gid=f"{uid}-rope-{i}")
                    xs += [-c.rope, c.rope]
                if c.kind == "mean" and _fin(c.ci_low) and _fin(c.ci_high):
                    ax.plot([c.ci_low, c.ci_high], [j, j], color=colour, lw=2.2, solid_capstyle="butt", zorder=2,
                            gid=f"{uid}-ci-{i}")
                    ax.plot([c.ci_low, c.ci_low, float("nan"), c.ci_high, c.ci_high],
                            [j - 0.18, j + 0.18, float("nan"), j - 0.18, j + 0.18], color=colour, lw=1.2, zorder=2)
                    xs += [c.ci_low, c.ci_high]
                if _fin(c.estimate):
                    filled = c.kind != "mean" or _fin(c.ci_low)  # hollow: an estimate without a test
                    ax.plot([c.estimate], [j], "o" if c.kind == "mean" else "D", ms=6 if c.kind == "mean" else 5.5,
                            color=colour, mfc=colour if filled else "white", mew=1.3, zorder=3, gid=f"{uid}-claim-{i}")
                    xs.append(c.estimate)
                else:
                    ax.text(0.5, j, "no estimate", transform=names, ha="center", va="center", fontsize=7.5,
                            color=colour, gid=f"{uid}-claim-{i}", parse_math=False)
                name = textwrap.wrap(c.name, 26) or [""]
                name = "\n".join(name[:2]) + ("…" if len(name) > 2 else "")
                ax.text(-0.03, j, name, transform=names, ha="right", va="center", fontsize=8.5, linespacing=1.1,
                        parse_math=False)
                p = (f"p_adj {_p_text(c.p_adj)}" if c.kind == "mean"
                     else f"p {_p_text(c.p)}, p_adj {_p_text(c.p_adj)}")
                if c.kind == "mean" and c.direction == 0:
                    p = f"equiv. p_adj {_p_text(c.p_equiv_adj)}"
                if not (_fin(c.p) or _fin(c.p_equiv)):
                    p = "untested"  # zero variance or too few units: ``why`` says which
                ax.text(1.03, j, f"{_direction_text(c)}\n{p} → {c.outcome}", transform=names, ha="left",
                        va="center", fontsize=7.5, linespacing=1.15, color="#333", parse_math=False)
            if kind == "rank":
                ax.set_xlim(-1.08, 1.08)
                ax.set_xticks([-1, -0.5, 0, 0.5, 1])
            else:
                lo, hi = min(xs), max(xs)
                pad = 0.08 * (hi - lo) if hi > lo else 1.0
                ax.set_xlim(lo - pad, hi + pad)
            ax.tick_params(axis="x", length=2.5, pad=1.5, colors="#333")
        buf = _bytes_io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None})
    return _inline_svg(buf.getvalue(), uid, f"forest plot of {len(claims)} claim(s)")


def _inline_svg(svg: str, uid: str, label: str) -> str:
    """matplotlib's SVG made fit to sit inside HTML: no XML declaration, DOCTYPE, metadata or page-wide ``<style>``;
    every id prefixed with ``uid`` (and its references too: the ids must be unique on the page); whitespace between
    elements and inside path data collapsed; the root sized by its ``viewBox`` and ``width="100%"``."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'<style type="text/css">.*?</style>\s*', "", svg, flags=re.S)  # a page-wide `*` rule inline
    ids = {i for i in re.findall(r'\sid="([^"]+)"', svg) if not i.startswith(f"{uid}-")}
    if ids:
        pat = "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
        svg = re.sub(rf'(\sid=")({pat})"', rf'\g<1>{uid}-\g<2>"', svg)
        svg = re.sub(rf'#({pat})(?=[")])', rf"#{uid}-\g<1>", svg)
    svg = re.sub(r">\s+<", "><", svg)
    svg = re.sub(r"font-family:[^;\"]*;?\s*", "", svg)  # the text takes the page's font
    svg = re.sub(r'\stransform="rotate\(-?0 [^)]*\)"', "", svg)
    svg = re.sub(r'\sd="([^"]*)"', lambda m: ' d="' + " ".join(m[1].split()) + '"', svg)
    head_end = svg.index(">")
    head = re.sub(r'\s(width|height)="[^"]*"', "", svg[:head_end])
    return f'{head} width="100%" role="img" aria-label="{html.escape(label)}"{svg[head_end:]}'.strip()


def _n_text(c: engine.ClaimResult) -> str:
    if c.n_paired:
        return f"{c.n_paired} paired {c.units}" + (f" ({c.dropped} unpaired dropped)" if c.dropped else "")
    if c.n_base:
        return f"{c.n} vs {c.n_base} {c.units}"
    return f"{c.n} {c.units}"


def _two_p(p: float, pe: float) -> str:
    """A claim's difference p, and its equivalence p where it has one."""
    return _p_text(p) + (f" (equiv. {_p_text(pe)})" if _fin(pe) else "")


def decision_html(decision: dict, uid: str) -> str:
    """A finding's decision inside its folded details: the forest plot (:func:`forest_svg`) and its legend, a table
    (claim, test, n, p, p_adj, outcome), the family ("m claims, one joint step-down at α"), any measurements and the
    engine's ``why``."""
    e = html.escape
    result = result_of(decision)
    parts = ['<div class="decision">']
    svg = forest_svg(decision, uid)
    if svg:
        legend = " ".join(f'<span class="o-{o}">●</span> {e(w)}' for o, w in _OUTCOME_WORDS.items())
        parts.append(f'<figure class="forest">{svg}<figcaption>{legend} · grey band: the ROPE [−rope, +rope] · '
                     "dot and line: estimate and simultaneous interval (level 1 − α/m) · diamond: a rank or "
                     "permutation statistic, tested without an interval</figcaption></figure>")
    if result.claims:
        body = "".join(
            f'<tr><td>{e(c.name)}</td><td>{e(c.test)}</td><td>{e(_n_text(c))}</td>'
            f"<td>{e(_two_p(c.p, c.p_equiv))}</td><td>{e(_two_p(c.p_adj, c.p_equiv_adj))}</td>"
            f'<td class="o-{e(c.outcome)}">{e(c.outcome)}</td></tr>'
            for c in result.claims)
        parts.append('<table class="claims"><thead><tr><th>claim</th><th>test</th><th>n</th><th>p</th>'
                     f"<th>p_adj</th><th>outcome</th></tr></thead><tbody>{body}</tbody></table>")
        parts.append(f'<p class="family">family: {result.m} claim(s), one joint step-down at α = {result.alpha:g} '
                     "(difference and equivalence hypotheses together; intervals simultaneous over the family)</p>")
    if result.measurements:
        ms = "; ".join(f"{m.name}: {m.words or f'{m.value:g}'}" for m in result.measurements)
        parts.append(f'<p class="family">measured (no test, never counted as reproduced): {e(ms)}</p>')
    if result.why:
        parts.append(f'<p class="why"><b>why:</b> {e(result.why)}</p>')
    parts.append("</div>")
    return "".join(parts)


def notebook_of(key: object) -> str:
    """The notebook a finding belongs to, from its key: the leading digits (``"03b"`` → ``"03"``), with a variant
    run's name kept apart (``"03b@long"`` → ``"03@long"``: another run, another family)."""
    base, _, variant = str(key).partition("@")
    m = re.match(r"\d+", base)
    nb = m[0] if m else base.rstrip("abcdefghijklmnopqrstuvwxyz") or base
    return f"{nb}@{variant}" if variant else nb


def pooled_by_notebook(rows: list[dict]) -> dict[str, dict]:
    """Per notebook (:func:`notebook_of`), its findings' verdicts when **all** its claims form one family: the records'
    unadjusted p-values re-adjusted by one joint step-down (:func:`dganalysis.findings.engine.pooled`).

    Returns ``{notebook: {"claims": N tested claims, "counts": {verdict: count}, "without": findings without a
    recorded decision (left out), "too_small": whether the run was too short to refute}}`` for each notebook with at
    least one decision. As for each finding (:func:`dganalysis.verdicts.decide`), when the run's findings say
    ``too small: steps = …`` the pooled *not reproduced* and *partly* count as *not decided*."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(notebook_of(r.get("key", "")), []).append(r)
    out = {}
    for nb, rs in groups.items():
        decisions = [result_of(r["decision"]) for r in rs if isinstance(r.get("decision"), dict)]
        if not decisions:
            continue
        alpha = min(d.alpha for d in decisions)
        counts = engine.pooled(decisions, alpha)
        short = any("too small: steps" in str(r.get("verdict", "")) for r in rs)
        if short:
            for v in (Verdict.NOT_REPRODUCED.value, Verdict.PARTLY.value):
                counts[Verdict.NOT_DECIDED.value] += counts[v]
                counts[v] = 0
        n = sum(_fin(c.p) or _fin(c.p_equiv) for d in decisions for c in d.claims)
        out[nb] = {"claims": n, "counts": counts, "alpha": alpha, "without": len(rs) - len(decisions),
                   "too_small": short}
    return out


def _pooled_line(nb: str, info: dict) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in info["counts"].items() if n)
    extra = []
    if info["without"]:
        extra.append(f"{info['without']} finding(s) without a recorded decision left out")
    if info["too_small"]:
        extra.append("the run is too short to refute: not reproduced/partly read as not decided")
    tail = f" ({'; '.join(extra)})" if extra else ""
    claims = f"{info['claims']} claim{'' if info['claims'] == 1 else 's'}"
    return (f'<li class="pooled" id="{_anchor("pooled", nb)}"><b>notebook {html.escape(nb)}</b> — under one family '
            f"of this notebook's {claims} (α = {info['alpha']:g}): {html.escape(counts)}{html.escape(tail)}</li>")


def findings_html(rows: list[dict]) -> str:
    """The findings at a glance: the count of each verdict, then one line per finding (badge, paper, claim, our
    number) that unfolds (``<details>``) to the finding's full paper, claim, verdict, numbers and data, and, for a
    record with a ``"decision"``, its forest plot and claims table (:func:`decision_html`). Each notebook whose
    findings hold decisions opens with its verdict counts under one family of all its claims
    (:func:`pooled_by_notebook`)."""
    if not rows:
        return f'<section id="findings"><h2>Findings</h2><p>{html.escape(_NO_FINDINGS)}</p></section>'
    e = html.escape
    counts = "".join(f'<li class="{verdict_class(v)}"><span class="n">{n}</span> {e(v)}</li>'
                     for v, n in verdict_counts(rows).items())
    items, pooled, seen = [], pooled_by_notebook(rows), set()
    for r in rows:
        nb = notebook_of(r.get("key", ""))
        if nb in pooled and nb not in seen:
            items.append(_pooled_line(nb, pooled[nb]))
        seen.add(nb)
        decision = r.get("decision")
        extra = decision_html(decision, str(r.get("key", ""))) if isinstance(decision, dict) else ""
        verdict, cls = str(r.get("verdict", "")), verdict_class(r.get("verdict"))
        paper, finding, ours = (str(r.get(k, "")) for k in ("paper", "finding", "ours"))
        data = str(r.get("data") or "not stated")
        items.append(
            f'<li class="finding {cls}-row" id="{_anchor("finding", str(r.get("key", "")))}"><details><summary>'
            f'<span class="badge {cls}">{e(verdict_of(verdict))}</span>'
            f'<span class="paper" title="{e(paper)}">{e(_short(paper, 60))}</span>'
            f'<span class="claim" title="{e(finding)}">{e(_short(finding, 110))}</span>'
            f'<span class="ours" title="{e(ours)}">{e(_short(ours, 70))}</span></summary>'
            f"<dl><dt>paper</dt><dd>{e(paper)}</dd><dt>finding</dt><dd>{e(finding)}</dd>"
            f"<dt>verdict</dt><dd>{e(verdict)}</dd><dt>ours</dt><dd>{e(ours)}</dd>"
            f"<dt>data</dt><dd>{e(data)}</dd></dl>{extra}</details></li>")
    return (f'<section id="findings"><h2>Findings: {len(rows)} claim(s) tested on this run</h2>'
            f'<ul class="counts">{counts}</ul><ol class="findings">{"".join(items)}</ol>'
            '<p class="meta">Click a line for its full claim, verdict, numbers and the data they rest on, and, where the '
            "finding was decided by the engine, its claims as a forest plot with their tests. A notebook's line "
            "counts its verdicts again with all its claims in one family (a stricter step-down).</p>"
            "</section>")


def _findings_rows(out: Path, runs: list[NotebookRun]) -> list[dict]:
    """The findings the index lists (the base run's and each variant run's, as :func:`~dganalysis.studies.runner.
    write_index` reads them)."""
    rows = read_findings(out)
    variants = [v for v in (split_label(r.name)[1] for r in runs) if v is not None]
    if variants:
        rows = read_variant_findings(out, rows, {v: out / VARIANTS_DIR / v for v in variants})
    return rows


def _split_summary(lines: list[str]) -> tuple[list[str], str]:
    """The index summary without what the page shows itself (its provenance line, the findings heading and table)
    and that provenance line (``""`` when there is none)."""
    kept, prov, in_table = [], "", False
    for line in lines:
        st = line.strip()
        if st.startswith(_PROVENANCE_PREFIX) and not prov:
            prov = st
            continue
        if st in (_FINDINGS_HEAD, _NO_FINDINGS) or st.startswith("| paper | finding | verdict"):
            in_table = st.startswith("|")
            continue
        if in_table and st.startswith("|"):
            continue
        in_table = False
        kept.append(line)
    text = "\n".join(kept).strip()
    return ([text] if text else []), prov


def _figure_html(png: Path, folder: str = "") -> str:
    """One embedded figure; ``folder`` is a variant run's folder (``variants/<v>/``, see
    :func:`dganalysis.studies.run_history.run_folder`), which also keeps its anchors apart from the base run's."""
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    name = html.escape(png.stem)
    return (f'<figure id="{_anchor("fig", folder + png.stem)}"><img alt="{name}" src="data:image/png;base64,{data}">'
            f"<figcaption>figure <code>{name}</code> (PDF: <code>{html.escape(folder)}figures/"
            f"{html.escape(png.stem)}.pdf</code>)"
            "</figcaption></figure>")


def _table_html(folder: Path, stem: str, run_dir: str = "") -> str:
    md, csv = folder / f"{stem}.md", folder / f"{stem}.csv"
    if md.is_file():
        body = _markdown(md.read_text(encoding="utf-8"))
    elif csv.is_file():
        import pandas as pd

        body = pd.read_csv(csv).to_html(index=False, border=0, na_rep="")
    else:
        body = "<p>(saved as LaTeX only: " + html.escape(f"tables/{stem}.tex") + ")</p>"
    return (f'<div class="table" id="{_anchor("tab", run_dir + stem)}"><h3>table <code>{html.escape(stem)}</code></h3>'
            f"{body}</div>")


def _pngs(paths: list[Path], folder: Path) -> list[Path]:
    """The PNG of each figure path recorded for a run (the runner records both .pdf and .png), existing only."""
    stems = list(dict.fromkeys(Path(p).stem for p in paths))
    return [folder / f"{s}.png" for s in stems if (folder / f"{s}.png").is_file()]


def _table_stems(paths: list[Path], folder: Path) -> list[str]:
    stems = list(dict.fromkeys(Path(p).stem for p in paths))
    return [s for s in stems if any((folder / f"{s}.{ext}").is_file() for ext in ("md", "csv", "tex"))]


def _section(run: NotebookRun, figures: Path, tables: Path, run_dir: str = "") -> tuple[str, set[str], set[str]]:
    status = ('<span class="ok">ok</span>' if run.ok
              else f'<span class="failed">FAILED</span> — {html.escape(run.error)}')
    pngs, stems = _pngs(run.figures, figures), _table_stems(run.tables, tables)
    parts = [f'<section id="{_anchor("nb", run.name)}"><h2>{html.escape(run.name)}</h2>',
             f'<p class="meta">status: {status} · {run.seconds / 60:.1f} min · executed notebook: '
             f'<a href="notebooks/{html.escape(run.name)}.ipynb">notebooks/{html.escape(run.name)}.ipynb</a> · '
             f"{len(pngs)} figure(s), {len(stems)} table(s)"
             + (f" · output folder <code>{html.escape(run_dir)}</code>" if run_dir else "") + "</p>"]
    if not pngs and not stems:
        parts.append("<p>(no figures or tables written)</p>")
    parts += [_figure_html(p, run_dir) for p in pngs]
    parts += [_table_html(tables, s, run_dir) for s in stems]
    parts.append("</section>")
    return "\n".join(parts), {p.stem for p in pngs}, set(stems)


def render_report(out: Path, profile: str) -> str:
    """The HTML page for ``out`` = ``outputs/<profile>`` (see the module docstring)."""
    out = Path(out)
    runs = read_history(out)
    index = out / "index.md"
    if not runs and not index.is_file():
        raise MissingInputError(f"{out}: no run recorded (no runs.json or index.md); "
                                f"run `dganalysis run --profile {profile}` first")
    figures, tables = out / "figures", out / "tables"
    summary = index_summary(index.read_text(encoding="utf-8"), [r.name for r in runs]) if index.is_file() else ""
    lines = summary.splitlines()
    if lines and lines[0].startswith("# "):  # the page has its own title
        lines = lines[1:]
    kept, made_with = _split_summary([line for line in lines if line.strip() != LINK_LINE])
    summary = "\n".join(kept)
    rows = _findings_rows(out, runs)
    sections, seen_fig, seen_tab = [], set(), set()
    for run in runs:
        run_dir = run_folder(run.name)
        if run_dir:  # a variant run: its own figures and tables (dganalysis.studies.runner)
            text, _, _ = _section(run, out / run_dir / "figures", out / run_dir / "tables", run_dir)
            sections.append(text)
            continue
        text, f, t = _section(run, figures, tables)
        sections.append(text)
        seen_fig |= f
        seen_tab |= t
    other_fig = sorted(p for p in figures.glob("*.png") if p.stem not in seen_fig) if figures.is_dir() else []
    other_tab = sorted({p.stem for p in tables.glob("*") if p.suffix in (".md", ".csv", ".tex")} - seen_tab) \
        if tables.is_dir() else []
    if other_fig or other_tab:
        sections.append('<section id="nb-other"><h2>Other figures and tables in this folder</h2>'
                        "<p class=\"meta\">written by no run recorded in runs.json (e.g. an earlier run or a "
                        "notebook executed by hand)</p>"
                        + "\n".join([_figure_html(p) for p in other_fig] + [_table_html(tables, s) for s in other_tab])
                        + "</section>")
    toc = "".join(f'<li><a href="#{_anchor("nb", r.name)}">{html.escape(r.name)}</a>'
                  f'{"" if r.ok else " (FAILED)"}</li>' for r in runs)
    if other_fig or other_tab:
        toc += '<li><a href="#nb-other">other figures and tables</a></li>'
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    title = f"dganalysis — profile {html.escape(profile)}"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title><style>{_CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta" id="provenance">Generated {stamp} from <code>{html.escape(str(out))}</code>. '
        + html.escape(made_with or f"Made with {provenance.one_line(provenance.stamp())}.")
        + " Figures are embedded; the page needs no other file.</p>",
        findings_html(rows),
        f'<section id="summary">{_local_links(_markdown(summary))}</section>' if summary else "",
        f"<nav><h2>Notebooks</h2><ul>{toc}</ul></nav>" if toc else "",
        *sections, "</body></html>", ""])


def link_from_index(out: Path) -> None:
    """Add the report link under the title of ``<out>/index.md`` (once; nothing when there is no index)."""
    index = Path(out) / "index.md"
    if not index.is_file():
        return
    lines = index.read_text(encoding="utf-8").splitlines()
    if LINK_LINE in lines:
        return
    at = 1 if lines and lines[0].startswith("# ") else 0
    lines[at:at] = ["", LINK_LINE] if at else [LINK_LINE, ""]
    io.write_text(index, "\n".join(lines) + "\n")


def write_report(out: Path, profile: str, path: Path | None = None) -> Path:
    """Write the page (default ``<out>/report.html``) atomically and link it from ``index.md``."""
    out = Path(out)
    target = Path(path) if path is not None else out / REPORT_NAME
    written = io.write_text(target, render_report(out, profile))
    if target.resolve() == (out / REPORT_NAME).resolve():
        link_from_index(out)
    return written
