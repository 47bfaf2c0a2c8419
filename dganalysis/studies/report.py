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
rebuilds it from what is on disk. This module gathers what the page shows; its HTML is the template ``report.html.j2``
(:mod:`dganalysis.templates`).
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import math
import re
import textwrap
from pathlib import Path

from dganalysis import io, provenance, templates
from dganalysis.findings import engine
from dganalysis.studies.findings import read_findings, read_variant_findings
from dganalysis.studies.run_history import VARIANTS_DIR, NotebookRun, read_history, run_folder, split_label
from dganalysis.validation import MissingInputError
from dganalysis.verdicts import VERDICTS, Verdict

REPORT_NAME = "report.html"
LINK_LINE = f"HTML report (summary, every figure and table on one page): [{REPORT_NAME}]({REPORT_NAME})"

#: a claim's outcome → the colour of its marks, its table cell and the legend (as the verdict badges: green, red, amber)
OUTCOME_COLOURS = {engine.PAPER: "#1b7f3b", engine.AGAINST: "#b3261e", engine.UNDECIDED: "#a36b00"}


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


def decision_view(decision: dict, uid: str) -> dict:
    """What the page shows of a finding's decision inside its folded details (the template's ``decision`` macro): the
    forest plot (:func:`forest_svg`) and its legend, the claims' rows (claim, test, n, p, p_adj, outcome), the family
    ("m claims, one joint step-down at α"), any measurements and the engine's ``why``."""
    result = result_of(decision)
    svg = forest_svg(decision, uid)
    claims = [{"name": c.name, "test": c.test, "n": _n_text(c), "p": _two_p(c.p, c.p_equiv),
               "p_adj": _two_p(c.p_adj, c.p_equiv_adj), "outcome": c.outcome} for c in result.claims]
    measured = "; ".join(f"{m.name}: {m.words or f'{m.value:g}'}" for m in result.measurements)
    return {"svg": templates.Html(svg), "legend": list(_OUTCOME_WORDS.items()), "claims": claims, "m": result.m,
            "alpha": f"{result.alpha:g}", "measured": measured, "why": result.why}


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
    least one decision. As for each finding (:func:`dganalysis.verdicts.verdict_to_record`), when the run's findings say
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


def _pooled_view(nb: str, info: dict) -> dict:
    counts = ", ".join(f"{n} {v}" for v, n in info["counts"].items() if n)
    extra = []
    if info["without"]:
        extra.append(f"{info['without']} finding(s) without a recorded decision left out")
    if info["too_small"]:
        extra.append("the run is too short to refute: not reproduced/partly read as not decided")
    return {"anchor": _anchor("pooled", nb), "notebook": nb,
            "claims": f"{info['claims']} claim{'' if info['claims'] == 1 else 's'}", "alpha": f"{info['alpha']:g}",
            "counts": counts, "tail": f" ({'; '.join(extra)})" if extra else ""}


def findings_view(rows: list[dict]) -> dict:
    """The findings at a glance (the template's ``findings_section``): the count of each verdict, then one line per
    finding (badge, paper, claim, our number) that unfolds (``<details>``) to the finding's full paper, claim,
    verdict, numbers and data, and, for a record with a ``"decision"``, its forest plot and claims table
    (:func:`decision_view`). Each notebook whose findings hold decisions opens with its verdict counts under one
    family of all its claims (:func:`pooled_by_notebook`)."""
    counts = [(verdict_class(v), v, n) for v, n in verdict_counts(rows).items()]
    items, pooled, seen = [], pooled_by_notebook(rows), set()
    for r in rows:
        nb = notebook_of(r.get("key", ""))
        first = nb in pooled and nb not in seen
        seen.add(nb)
        decision = r.get("decision")
        verdict = str(r.get("verdict", ""))
        paper, finding, ours = (str(r.get(k, "")) for k in ("paper", "finding", "ours"))
        items.append({"pooled": _pooled_view(nb, pooled[nb]) if first else None,
                      "decision": decision_view(decision, str(r.get("key", ""))) if isinstance(decision, dict)
                      else None,
                      "cls": verdict_class(r.get("verdict")), "anchor": _anchor("finding", str(r.get("key", ""))),
                      "verdict": verdict, "verdict_short": verdict_of(verdict), "paper": paper,
                      "paper_short": _short(paper, 60), "finding": finding, "finding_short": _short(finding, 110),
                      "ours": ours, "ours_short": _short(ours, 70), "data": str(r.get("data") or "not stated")})
    return {"none": _NO_FINDINGS, "counts": counts, "lines": items}


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


def _figure_view(png: Path, folder: str = "") -> dict:
    """One embedded figure; ``folder`` is a variant run's folder (``variants/<v>/``, see
    :func:`dganalysis.studies.run_history.run_folder`), which also keeps its anchors apart from the base run's."""
    return {"anchor": _anchor("fig", folder + png.stem), "name": png.stem, "folder": folder,
            "data": base64.b64encode(png.read_bytes()).decode("ascii")}


def _table_view(folder: Path, stem: str, run_dir: str = "") -> dict:
    md, csv = folder / f"{stem}.md", folder / f"{stem}.csv"
    if md.is_file():
        body = _markdown(md.read_text(encoding="utf-8"))
    elif csv.is_file():
        import pandas as pd

        body = pd.read_csv(csv).to_html(index=False, border=0, na_rep="")
    else:
        body = ""  # saved as LaTeX only: the page says so
    return {"anchor": _anchor("tab", run_dir + stem), "stem": stem, "body": templates.Html(body)}


def _pngs(paths: list[Path], folder: Path) -> list[Path]:
    """The PNG of each figure path recorded for a run (the runner records both .pdf and .png), existing only."""
    stems = list(dict.fromkeys(Path(p).stem for p in paths))
    return [folder / f"{s}.png" for s in stems if (folder / f"{s}.png").is_file()]


def _table_stems(paths: list[Path], folder: Path) -> list[str]:
    stems = list(dict.fromkeys(Path(p).stem for p in paths))
    return [s for s in stems if any((folder / f"{s}.{ext}").is_file() for ext in ("md", "csv", "tex"))]


def _section_view(run: NotebookRun, figures: Path, tables: Path, run_dir: str = "") -> dict:
    """A notebook's section (the template's ``section``): its status, figures and tables."""
    return {"anchor": _anchor("nb", run.name), "name": run.name, "ok": run.ok, "error": run.error,
            "minutes": f"{run.seconds / 60:.1f}", "run_dir": run_dir,
            "figures": [_figure_view(p, run_dir) for p in _pngs(run.figures, figures)],
            "tables": [_table_view(tables, s, run_dir) for s in _table_stems(run.tables, tables)]}


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
            sections.append(_section_view(run, out / run_dir / "figures", out / run_dir / "tables", run_dir))
            continue
        sections.append(_section_view(run, figures, tables))
        seen_fig |= {f["name"] for f in sections[-1]["figures"]}
        seen_tab |= {t["stem"] for t in sections[-1]["tables"]}
    other_fig = sorted(p for p in figures.glob("*.png") if p.stem not in seen_fig) if figures.is_dir() else []
    other_tab = sorted({p.stem for p in tables.glob("*") if p.suffix in (".md", ".csv", ".tex")} - seen_tab) \
        if tables.is_dir() else []
    other = ({"figures": [_figure_view(p) for p in other_fig], "tables": [_table_view(tables, s) for s in other_tab]}
             if other_fig or other_tab else None)
    return templates.render_template(
        "report.html.j2", profile=profile, outcome_colours=OUTCOME_COLOURS, out=str(out),
        stamp=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        made_with=made_with or f"Made with {provenance.one_line(provenance.stamp())}.", findings=findings_view(rows),
        summary=templates.Html(_local_links(_markdown(summary))) if summary else "",
        toc=[{"anchor": _anchor("nb", r.name), "name": r.name, "ok": r.ok} for r in runs], sections=sections,
        other=other)


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
