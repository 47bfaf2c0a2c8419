"""The HTML report (`dganalysis report`): one self-contained page from a tiny fake outputs tree."""

import base64
import json
import re

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
    assert re.findall(r"max-width\s*:\s*([^;)]+)[;)]", css) == ["72rem", "100%", "100%", "50em"]
    assert not re.search(r'\swidth="\d', page) and not re.search(r'style="[^"]*width', page)
    assert not re.search(r'<(script|link)\b', page)


def test_no_findings_says_so(tmp_path):
    out = _outputs(tmp_path)
    page = render_report(out, "quick")
    assert "(no notebook recorded a finding yet)" in page and 'class="counts"' not in page


@pytest.mark.parametrize("width", [1400, 800])
def test_no_horizontal_scroll_in_chromium(tmp_path, width):
    import shutil
    import subprocess

    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        pytest.skip("headless Chromium not found: `apt-get install -y chromium` enables the rendered-page check")
    out = _with_findings(tmp_path)
    page = render_report(out, "quick")
    probe = ("<script>addEventListener('load', () => { document.querySelectorAll('details').forEach(d => d.open = true);"
             " const e = document.documentElement; document.body.setAttribute('data-probe',"
             " e.scrollWidth + 'x' + window.innerWidth); });</script></body>")
    html_file = tmp_path / "probe.html"
    html_file.write_text(page.replace("</body>", probe))
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},900",
           "--virtual-time-budget=2000", "--dump-dom", html_file.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = re.search(r'data-probe="(\d+)x(\d+)"', proc.stdout)
    assert m, f"chromium could not render the page: {proc.stderr[-2000:]}"
    scroll, inner = int(m[1]), int(m[2])
    assert inner == width and scroll <= inner, f"horizontal scroll at {width} px: scrollWidth {scroll} > {inner}"
