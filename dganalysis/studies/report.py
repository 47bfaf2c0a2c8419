"""One self-contained HTML page for a profile's outputs: ``outputs/<profile>/report.html``.

The page opens with what made it, once (:mod:`dganalysis.provenance`: ``index.md``'s line saying what ran the
notebooks, else the package, commit and versions writing the page), then the findings at a glance
(:mod:`dganalysis.studies.findings`: the count of each verdict, and each finding as one line — a coloured verdict badge,
the paper, the claim, our number — that unfolds to its full paper, claim, verdict, numbers and data), then the rest of
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
import re
from pathlib import Path

from dganalysis import io, provenance
from dganalysis.studies.findings import read_findings, read_variant_findings
from dganalysis.studies.run_history import VARIANTS_DIR, NotebookRun, read_history, run_folder, split_label
from dganalysis.validation import MissingInputError
from dganalysis.verdicts import VERDICTS, Verdict

REPORT_NAME = "report.html"
LINK_LINE = f"HTML report (summary, every figure and table on one page): [{REPORT_NAME}]({REPORT_NAME})"

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
@media (max-width: 50em) {
  .findings summary { grid-template-columns: 9.5em minmax(0, 1fr); }
  .findings summary > span { white-space: normal; }
  .findings .claim, .findings .ours { grid-column: 1 / -1; }
  nav ul { columns: 1; }
}
"""


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


def findings_html(rows: list[dict]) -> str:
    """The findings at a glance: the count of each verdict, then one line per finding (badge, paper, claim, our
    number) that unfolds (``<details>``) to the finding's full paper, claim, verdict, numbers and data."""
    if not rows:
        return f'<section id="findings"><h2>Findings</h2><p>{html.escape(_NO_FINDINGS)}</p></section>'
    e = html.escape
    counts = "".join(f'<li class="{verdict_class(v)}"><span class="n">{n}</span> {e(v)}</li>'
                     for v, n in verdict_counts(rows).items())
    items = []
    for r in rows:
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
            f"<dt>data</dt><dd>{e(data)}</dd></dl></details></li>")
    return (f'<section id="findings"><h2>Findings: {len(rows)} claim(s) tested on this run</h2>'
            f'<ul class="counts">{counts}</ul><ol class="findings">{"".join(items)}</ol>'
            '<p class="meta">Click a line for its full claim, verdict, numbers and the data they rest on.</p>'
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
