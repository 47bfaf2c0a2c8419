"""The HTML report (`dganalysis report`): one self-contained page from a tiny fake outputs tree."""

import base64
import html
import json
import re

import numpy as np
import pytest
from PIL import Image

from dganalysis.cli import main
from dganalysis.studies.report import LINK_LINE, index_summary, link_from_index, render_report, write_report


def _png(path, colour):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 3), colour).save(path)
    path.with_suffix(".pdf").write_bytes(b"%PDF-fake")


def _outputs(tmp_path):
    out = tmp_path / "outputs" / "quick"
    _png(out / "figures" / "00_curve.png", (255, 0, 0))
    _png(out / "figures" / "stray_figure.png", (0, 0, 255))
    tables = out / "tables"
    for ext, text in (("md", "**Accuracy (%), mean ± SE**\n\n| algorithm | acc |\n|---|---|\n| ERM | 91.2 ± 0.4 |\n"),
                      ("csv", "algorithm,acc\nERM,91.234\n"), ("tex", "\\begin{tabular}...")):
        (tables / f"00_acc.{ext}").parent.mkdir(parents=True, exist_ok=True)
        (tables / f"00_acc.{ext}").write_text(text)
    (tables / "csv_only.csv").write_text("a,b\n1,<x>\n")
    history = {
        "00_demo": {"output": str(out / "notebooks/00_demo.ipynb"), "ok": True, "seconds": 90.0, "error": "",
                    "figures": [str(out / "figures/00_curve.pdf"), str(out / "figures/00_curve.png")],
                    "tables": [str(tables / "00_acc.csv"), str(tables / "00_acc.md"), str(tables / "00_acc.tex")]},
        "01_broken": {"output": str(out / "notebooks/01_broken.ipynb"), "ok": False, "seconds": 3.0,
                      "error": "cell 4 failed: RuntimeError: <boom>", "figures": [], "tables": []},
    }
    (out / "runs.json").write_text(json.dumps(history))
    (out / "index.md").write_text(
        "# dganalysis outputs — profile `quick`\n\n**Summary:** Table 7 reproduced (gray 22.9% vs binary 84.7%).\n\n"
        "| notebook | status | minutes |\n|---|---|---|\n| [00_demo](notebooks/00_demo.ipynb) | ok | 1.5 |\n\n"
        "## 00_demo\n\n- figure `00_curve`: [png](figures/00_curve.png)\n- table `00_acc`: [md](tables/00_acc.md)\n\n"
        "## 01_broken\n\n(no figures or tables written)\n")
    return out


def test_report_is_one_self_contained_page(tmp_path):
    out = _outputs(tmp_path)
    page = render_report(out, "quick")
    # the index summary on top, its figure/table links pointing into the page
    assert page.index("Table 7 reproduced") < page.index('id="nb-00_demo"')
    assert ">png</a>" not in page  # the per-notebook link lists of index.md are replaced by the sections
    # every figure embedded byte for byte, the one no run recorded too
    embedded = [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)]
    assert embedded == [(out / "figures" / f"{n}.png").read_bytes() for n in ("00_curve", "stray_figure")]
    # tables: the Markdown form (caption, formatted numbers); a CSV-only table from its CSV, escaped
    assert "<strong>Accuracy (%), mean ± SE</strong>" in page and "<td>91.2 ± 0.4</td>" in page
    assert 'id="tab-csv_only"' in page and "&lt;x&gt;" in page and "<x>" not in page
    # the failing notebook is visible, its error escaped
    assert "FAILED</span> — cell 4 failed: RuntimeError: &lt;boom&gt;" in page
    # nothing outside the page is needed to display it
    assert not re.search(r'<(script|link)\b', page)
    assert not [s for s in re.findall(r'src="([^"]+)"', page) if not s.startswith("data:image/png;base64,")]


def test_summary_links_point_into_the_page(tmp_path):
    out = _outputs(tmp_path)
    (out / "index.md").write_text("# t\n\nsee [the curve](figures/00_curve.png) and [acc](tables/00_acc.md)\n\n## 00_demo\n")
    page = render_report(out, "quick")
    assert 'href="#fig-00_curve"' in page and 'href="#tab-00_acc"' in page
    assert 'id="fig-00_curve"' in page and 'id="tab-00_acc"' in page


def test_index_summary_stops_at_the_first_notebook_section():
    text = "# t\n\nsummary\n\n## Findings\n\nmore\n\n## 00_demo\n\nper notebook\n"
    assert index_summary(text, ["00_demo"]) == "# t\n\nsummary\n\n## Findings\n\nmore\n"
    assert index_summary(text, ["99_none"]) == text


def test_write_report_links_it_from_the_index_once(tmp_path):
    out = _outputs(tmp_path)
    path = write_report(out, "quick")
    assert path == out / "report.html" and path.read_text().startswith("<!DOCTYPE html>")
    link_from_index(out)
    index = (out / "index.md").read_text().splitlines()
    assert index[0].startswith("# dganalysis outputs") and index.count(LINK_LINE) == 1
    assert LINK_LINE not in path.read_text()  # the page does not link to itself


def test_cli_report(tmp_path, capsys):
    out = _outputs(tmp_path)
    assert main(["report", "--outputs", str(out), "-o", str(tmp_path / "shared.html")]) == 0
    assert "shared.html" in capsys.readouterr().out and (tmp_path / "shared.html").is_file()
    assert not (out / "report.html").exists()


def test_no_run_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no run recorded"):
        render_report(tmp_path / "empty", "quick")
    assert main(["report", "--outputs", str(tmp_path / "missing")]) == 2
    assert "no outputs for profile 'quick'" in capsys.readouterr().err
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "runs.json").write_text('{"00": {"ok": true}}')
    with pytest.raises(ValueError, match="runs.json: not a run history"):
        render_report(tmp_path / "bad", "quick")


FINDINGS = [("01a", "Paper A", "claim one holds", "gap 3.1 pp", "reproduced"),
            ("01b", "Paper A", "claim two holds " + "long " * 40, "gap 0.4 pp", "partly"),
            ("02a", "Paper <B>", "claim three", "rho 0.12", "not reproduced"),
            ("03a", "Paper C", "claim four", "n=12", "not decided (too small: 12 models)"),
            ("04a", "Paper D", "claim five", "acc 71.0%", "reproduced"),
            ("05a", "Paper E", "claim six", "—", "measured")]


def _with_findings(tmp_path):
    from dganalysis.studies.runner import write_index

    out = _outputs(tmp_path)
    for key, paper, finding, ours, verdict in FINDINGS:
        (out / "findings").mkdir(exist_ok=True)
        (out / "findings" / f"{key}.json").write_text(json.dumps(
            {"key": key, "paper": paper, "finding": finding, "ours": ours, "verdict": verdict, "data": "SIMULATED"}))
    from dganalysis.studies.run_history import read_history

    write_index(out, "quick", read_history(out))
    return out


def test_findings_summary_counts_and_one_line_per_finding(tmp_path):
    from dganalysis.studies.findings import read_findings
    from dganalysis.studies.report import verdict_class, verdict_counts, verdict_of

    out = _with_findings(tmp_path)
    page = render_report(out, "quick")
    rows = read_findings(out)
    counts = verdict_counts(rows)
    assert counts == {"reproduced": 2, "partly": 1, "not reproduced": 1, "not decided": 1, "measured": 1}
    assert sum(counts.values()) == len(FINDINGS)
    shown = dict((v, int(n)) for n, v in re.findall(r'<li class="v-[a-z-]+"><span class="n">(\d+)</span> ([^<]+)</li>',
                                                     page))
    assert shown == counts
    # each finding: one <li> with its verdict's badge class, its details folded with the full (escaped) text
    items = re.findall(r'<li class="finding (v-[a-z-]+)-row" id="finding-([^"]+)"><details><summary>'
                       r'<span class="badge (v-[a-z-]+)">', page)
    assert [(k, c) for c, k, _ in items] == [(k, verdict_class(v)) for k, _, _, _, v in FINDINGS]
    assert all(a == b for a, _, b in items)
    assert [verdict_class(v) for *_, v in FINDINGS] == ["v-reproduced", "v-partly", "v-not-reproduced",
                                                         "v-not-decided", "v-reproduced", "v-measured"]
    assert verdict_of("not decided (too small: 12 models)") == "not decided"
    assert "Paper &lt;B&gt;" in page and "Paper <B>" not in page
    assert "<dd>not decided (too small: 12 models)</dd>" in page and ("long " * 40).strip() in page
    assert page.index('id="findings"') < page.index('id="summary"') < page.index('id="nb-00_demo"')
    # the index's findings table is not repeated below
    assert "<th>paper</th>" not in page


def test_provenance_once_viewport_and_no_fixed_widths(tmp_path):
    out = _with_findings(tmp_path)
    page = render_report(out, "quick")
    assert page.count("Made with ") == 1 and page.count('id="provenance"') == 1
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    css = re.search(r"<style>(.*)</style>", page, re.S)[1]
    assert "overflow-wrap: anywhere" in css and "max-width: 72rem" in css
    # no fixed width beyond the content's max: no `width: N` and no pixel (min-/max-)width
    assert not re.search(r"(?<![-a-z])width\s*:\s*\d", css) and not re.search(r"width\s*:\s*[\d.]+px", css)
    assert re.findall(r"max-width\s*:\s*([^;)]+)[;)]", css) == ["72rem", "100%", "100%", "46rem", "50em"]
    assert not re.search(r'\swidth="\d', page) and not re.search(r'style="[^"]*width', page)
    assert not re.search(r'<(script|link)\b', page)


def test_forest_plots_scale_with_the_page(tmp_path):
    """Inline SVG: sized by its viewBox at width 100% (inside a 46rem figure), no fixed width outside the plots."""
    out = _with_decisions(tmp_path)
    page = render_report(out, "SIMULATED")
    svgs = re.findall(r"<svg\b[^>]*>", page)
    assert len(svgs) == 4  # 06a, 06b, 06c, 07a; 08a holds a measurement only
    assert all('viewBox="0 0 ' in s and ' width="100%"' in s and "height=" not in s for s in svgs)
    outside = re.sub(r"<svg\b.*?</svg>", "", page, flags=re.S)
    assert not re.search(r'\swidth="\d', outside) and not re.search(r'style="[^"]*width', outside)
    assert not re.search(r'<(script|link)\b', page) and "<?xml" not in page and "<!DOCTYPE svg" not in page
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids)), "ids repeated across the inline plots"


def test_no_findings_says_so(tmp_path):
    out = _outputs(tmp_path)
    page = render_report(out, "quick")
    assert "(no notebook recorded a finding yet)" in page and 'class="counts"' not in page


def _chromium():
    import shutil

    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _chromium_cmd(exe, profile, width, height):
    return [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={width},{height}",
            "--virtual-time-budget=2000"]


@pytest.mark.parametrize("width", [1400, 800])
def test_no_horizontal_scroll_in_chromium(tmp_path, width):
    """Every finding unfolded, old records and decisions with their forest plots alike: no horizontal scroll."""
    import subprocess

    exe = _chromium()
    if exe is None:
        pytest.skip("headless Chromium not found: `apt-get install -y chromium` enables the rendered-page check")
    out = _with_decisions(tmp_path)
    page = render_report(out, "SIMULATED")
    assert page.count("<svg") == 4
    probe = ("<script>addEventListener('load', () => { document.querySelectorAll('details').forEach(d => d.open = true);"
             " const e = document.documentElement; const s = [...document.querySelectorAll('svg')]"
             ".map(g => g.getBoundingClientRect()).map(r => Math.round(r.width) + ':' + Math.round(r.height));"
             " document.body.setAttribute('data-probe', e.scrollWidth + 'x' + window.innerWidth);"
             " document.body.setAttribute('data-svgs', s.join(',')); });</script></body>")
    html_file = tmp_path / "probe.html"
    html_file.write_text(page.replace("</body>", probe))
    cmd = _chromium_cmd(exe, tmp_path / "profile", width, 900) + ["--dump-dom", html_file.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r'data-probe="(\d+)x(\d+)"', proc.stdout)
    assert m, f"chromium could not render the page: {proc.stderr[-2000:]}"
    scroll, inner = int(m[1]), int(m[2])
    assert inner == width and scroll <= inner, f"horizontal scroll at {width} px: scrollWidth {scroll} > {inner}"
    # the plots are drawn, at most 46rem (736 px) wide and within the window
    sizes = [tuple(map(int, s.split(":"))) for s in re.search(r'data-svgs="([^"]*)"', proc.stdout)[1].split(",")]
    assert len(sizes) == 4 and all(0 < w <= min(736, width) and h > 0 for w, h in sizes), sizes


# ------------------------------------------------------------------------------------------------- decisions
def simulated_decisions(seed: int = 0) -> list[tuple[str, str, str, object]]:
    """Findings decided by the engine on SIMULATED data (normal draws, ``seed``): ``(key, paper, finding,
    FindingResult)``. Notebook 06: one finding reproduced (a paired difference and an equivalence), one not
    reproduced (a difference against the paper on partly shared seeds, a rank claim, a zero-variance claim), one
    reproduced alone (one claim, p ≈ 0.023) that the notebook's family of 5 tested claims leaves undecided; notebook 07:
    a Welch claim without ROPE, a permutation claim and a measurement; notebook 08: a measurement only."""
    import itertools

    import numpy as np
    import pandas as pd

    from dganalysis.findings import engine

    rng = np.random.default_rng(seed)
    s8 = range(8)
    a06 = engine.decide_finding([
        engine.Claim("DANN − ERM", pd.Series(rng.normal(2.0, 0.5, 8), index=s8),
                     pd.Series(rng.normal(0, 0.5, 8), index=s8), 1, rope=0.5),
        engine.Claim("CORAL − ERM (paper: no difference)", pd.Series(rng.normal(0.02, 0.1, 10)), None, 0, rope=0.5)])
    x = rng.normal(size=8)
    b06 = engine.decide_finding([
        engine.Claim("SagNet − ERM", pd.Series(rng.normal(-1.5, 0.4, 6), index=range(6)),
                     pd.Series(rng.normal(0, 0.4, 8), index=range(2, 10)), 1, rope=0.3),
        engine.RankClaim("test ranking agrees with validation ranking", x, x + rng.normal(0, 0.3, 8), 1),
        engine.Claim("IRM − ERM", pd.Series([70.0] * 4, index=range(10, 14)),
                     pd.Series(rng.normal(70, 1, 4), index=range(20, 24)), 1, rope=0.5)])
    c06 = engine.decide_finding([engine.Claim("MixStyle − ERM", pd.Series(rng.normal(0.4, 0.5, 8)), None, 1)])
    d = rng.normal(0.4, 0.5, 6)
    flips = [np.array(f) for f in itertools.product([-1, 1], repeat=6)]
    a07 = engine.decide_finding([
        engine.Claim("ERM − Oracle", pd.Series(rng.normal(0.5, 1, 5), index=range(5)),
                     pd.Series(rng.normal(0, 1, 5), index=range(10, 15)), 1),
        engine.PermutationClaim("predictor A ranks models better than B", d, statistic=lambda v: float(np.mean(v)),
                                permute=lambda v, r: v * r.choice([-1, 1], len(v)), count=64,
                                enumerate=lambda v: [v * f for f in flips], estimate_words="mean gain"),
        engine.Measurement("shift estimate", 0.31, "0.31 of a domain")])
    a08 = engine.decide_finding([engine.Measurement("Spearman of the published table", 0.62, "ρ = 0.62 (12 models)")])
    return [("06a", "SIMULATED paper F", "DANN beats ERM; CORAL and ERM are equivalent", a06),
            ("06b", "SIMULATED paper F", "SagNet beats ERM; rankings agree; IRM beats ERM", b06),
            ("06c", "SIMULATED paper F", "MixStyle beats ERM", c06),
            ("07a", "SIMULATED paper G", "ERM trails the oracle; predictor A ranks better than B", a07),
            ("08a", "SIMULATED paper H", "the published table's rank correlation", a08)]


def _with_decisions(tmp_path):
    """The findings fixture (old records, no decision) plus the SIMULATED decisions, recorded as notebooks do."""
    from dganalysis.studies.findings import record_finding

    out = _with_findings(tmp_path)
    for key, paper, finding, result in simulated_decisions():
        record_finding(out, key, paper, finding, result.ours(), result.verdict, "SIMULATED (normal draws, seed 0)",
                       decision=result)
    return out


def _finding_li(page, key):
    return re.search(rf'<li class="finding [^"]*" id="finding-{key}">.*?</details></li>', page, re.S)[0]


def test_decisions_render_a_forest_plot_per_finding(tmp_path):
    """One SVG per finding with tested claims: one mark per claim, a ROPE band for each mean claim with rope > 0, an
    interval for each tested mean claim, the zero line; then the claims table, the family and the why."""
    out = _with_decisions(tmp_path)
    page = render_report(out, "SIMULATED")
    for key, _, _, result in simulated_decisions():
        li = _finding_li(page, key)
        claims = result.claims
        if not claims:  # a measurement only: no plot, the measurement listed
            assert "<svg" not in li and "measured (no test" in li and "Spearman of the published table" in li
            continue
        assert li.count("<svg") == 1
        marks = sorted(int(i) for i in re.findall(rf'id="{key}-claim-(\d+)"', li))
        assert marks == list(range(len(claims)))
        ropes = sorted(int(i) for i in re.findall(rf'id="{key}-rope-(\d+)"', li))
        assert ropes == [i for i, c in enumerate(claims) if c.kind == "mean" and c.rope > 0]
        cis = sorted(int(i) for i in re.findall(rf'id="{key}-ci-(\d+)"', li))
        assert cis == [i for i, c in enumerate(claims) if c.kind == "mean" and np.isfinite(c.ci_low)]
        assert re.search(rf'id="{key}-zero-0"', li)
        # the table: one row per claim with its outcome; the family; the why
        rows = re.findall(r'<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>'
                          r'<td class="o-([a-z]+)">', li)
        assert [(html.unescape(r[0]), r[5]) for r in rows] == [(c.name, c.outcome) for c in claims]
        assert f"family: {result.m} claim(s), one joint step-down at α = 0.05" in li
        if result.why:
            assert html.escape(result.why) in li
        for c in claims:  # the paper's direction beside each claim in the plot
            want = ("paper: ρ &gt; 0" if c.kind == "rank" else "paper: Δ ≈ 0" if c.direction == 0
                    else f"paper: {'Δ' if c.kind == 'mean' else 'stat.'} &gt; 0")
            assert want in li, (key, c.name, want)
    b = _finding_li(page, "06b")
    assert "4 paired trials (6 unpaired dropped)" in b and "zero variance" in b
    assert "rank or permutation statistic" in page and "Spearman ρ" in _finding_li(page, "06b")
    # the old records keep today's rendering: no decision, no plot, no table
    for key, *_ in FINDINGS:
        li = _finding_li(page, key)
        assert "<svg" not in li and 'class="decision"' not in li and "<dt>data</dt>" in li


def test_result_of_reads_a_record_back():
    from dganalysis.studies.report import result_of

    for *_, result in simulated_decisions():
        back = result_of(json.loads(json.dumps(result.as_record())))
        assert (back.m, back.alpha, back.why, back.verdict) == (result.m, result.alpha, result.why, result.verdict)
        assert [c.as_dict() for c in back.claims] == [c.as_dict() for c in result.claims]
        assert [(m.name, m.value, m.words) for m in back.measurements] == \
            [(m.name, m.value, m.words) for m in result.measurements]


def test_pooled_counts_per_notebook(tmp_path):
    """Each notebook with decisions opens with its verdicts under one family of all its claims: the engine's pooled
    counts; notebook 06's third finding (p ≈ 0.023 alone) is reproduced on its own and not decided among 5."""
    from dganalysis.findings import engine
    from dganalysis.studies.report import notebook_of, pooled_by_notebook

    out = _with_decisions(tmp_path)
    page = render_report(out, "SIMULATED")
    sims = {k: r for k, *_, r in simulated_decisions()}
    nb06 = [sims["06a"], sims["06b"], sims["06c"]]
    assert [r.verdict for r in nb06] == ["reproduced", "not reproduced", "reproduced"]
    want = engine.pooled(nb06)
    assert want == {"reproduced": 1, "partly": 0, "not reproduced": 1, "not decided": 1, "measured": 0}
    line = re.search(r'<li class="pooled" id="pooled-06">(.*?)</li>', page)[1]
    assert "under one family of this notebook's 5 claims (α = 0.05): 1 reproduced, 1 not reproduced, " \
           "1 not decided" in line
    line07 = re.search(r'<li class="pooled" id="pooled-07">(.*?)</li>', page)[1]
    assert "of this notebook's 2 claims (α = 0.05): 1 not decided" in line07
    assert "of this notebook's 0 claims (α = 0.05): 1 measured" in page
    # the line sits right before its notebook's first finding; old records' notebooks get none
    assert page.index('id="pooled-06"') < page.index('id="finding-06a"') < page.index('id="pooled-07"')
    assert not re.search(r'id="pooled-0[1-5]"', page)
    rows = json.loads(json.dumps([{**json.loads((out / "findings" / f"{k}.json").read_text())} for k in sims]))
    got = pooled_by_notebook(rows)
    assert got["06"]["counts"] == want and got["06"]["claims"] == 5 and got["07"]["counts"]["not decided"] == 1
    assert (notebook_of("03b"), notebook_of("03b@long"), notebook_of("x")) == ("03", "03@long", "x")
    # a run too short to refute (as verdicts.verdict_to_record does per finding): pooled negatives read "not decided"
    short = [{**r, "verdict": "not decided (too small: steps = 300 < 5,000, …)"} if r["key"] == "06b" else r
             for r in rows]
    assert pooled_by_notebook(short)["06"]["counts"] == {**want, "not reproduced": 0, "not decided": 2}


def write_screenshots(folder):
    """Refresh ``docs/img/report_{1400,800}.png``: the page of the SIMULATED decisions above (the finding with the
    most kinds of claims unfolded) in headless Chromium. Run ``python tests/studies/test_report.py <folder>``."""
    import subprocess
    import tempfile
    from pathlib import Path

    from dganalysis.studies.findings import record_finding

    exe = _chromium()
    assert exe, "headless Chromium not found"
    with tempfile.TemporaryDirectory() as tmp:
        out = _outputs(Path(tmp))
        (out / "index.md").write_text("# dganalysis outputs — SIMULATED\n\n**Summary:** every finding on this page is "
                                      "SIMULATED (normal draws), to show the page.\n\n## 00_demo\n")
        for key, paper, finding, result in simulated_decisions():
            record_finding(out, key, paper, finding, result.ours(), result.verdict,
                           "SIMULATED (normal draws, seed 0)", decision=result)
        page = render_report(out, "SIMULATED").replace('id="finding-06b"><details>', 'id="finding-06b"><details open>')
        page = re.sub(r"Generated .*? from <code>[^<]*</code>\.", "Generated from SIMULATED records.", page)
        html_file = Path(tmp) / "page.html"
        html_file.write_text(page)
        for width in (1400, 800):
            target = Path(folder) / f"report_{width}.png"
            subprocess.run(_chromium_cmd(exe, Path(tmp) / "profile", width, 1000)
                           + [f"--screenshot={target.resolve()}", html_file.as_uri()], check=True,
                           capture_output=True, timeout=120)


if __name__ == "__main__":
    import sys

    write_screenshots(sys.argv[1] if len(sys.argv) > 1 else "docs/img")
