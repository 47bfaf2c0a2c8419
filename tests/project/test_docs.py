"""The documentation site: built with warnings as errors, every page opened in headless Chromium.

The build is ``python -m sphinx -W --keep-going -b html docs <tmp>`` (what the README says); Chromium renders
each page (``--dump-dom``) and the rendered DOM is checked: a title, every internal link pointing at a page and
anchor that exist, and the API reference listing the library's main entry points. Without Chromium the page checks
skip, saying how to enable them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
API_NAMES = ("dganalysis.shift.estimate_shift", "dganalysis.dro.worst_case_curve", "dganalysis.records.selection.select")


class _Page(HTMLParser):
    """Title, element ids and link targets of one rendered page."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def broken_links(pages: dict[Path, _Page], site: Path) -> list[str]:
    """Internal links (same site) whose page or anchor does not exist, as 'page -> href' lines."""
    bad = []
    for path, page in pages.items():
        for href in page.hrefs:
            parts = urlsplit(href)
            if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file() or site.resolve() not in target.parents:
                bad.append(f"{path.relative_to(site)} -> {href} (no such page)")
                continue
            if parts.fragment and target in pages and unquote(parts.fragment) not in pages[target].ids:
                bad.append(f"{path.relative_to(site)} -> {href} (no such anchor)")
    return bad


def build(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(DOCS), str(out)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for mod in ("sphinx", "myst_parser", "pydata_sphinx_theme"):
        pytest.importorskip(mod, reason=f"{mod} is not installed: pip install -e '.[docs]' builds the docs")
    out = tmp_path_factory.mktemp("docs") / "html"
    proc = build(out)
    assert proc.returncode == 0, f"sphinx -W failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def chromium() -> str:
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        pytest.skip("headless Chromium not found: `apt-get install -y chromium` (Debian; .ci/run does it as root) "
                    "enables the rendered-page checks")
    return exe


def dump_dom(exe: str, page: Path, profile: Path) -> str:
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           f"--user-data-dir={profile}", "--virtual-time-budget=2000", "--dump-dom", page.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "<html" in proc.stdout, f"chromium could not render {page}: {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def rendered(site, tmp_path_factory) -> dict[Path, _Page]:
    exe = chromium()
    files = sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)
    tmp = tmp_path_factory.mktemp("chromium")

    def one(i_page):
        i, page = i_page
        return page, parse(dump_dom(exe, page, tmp / f"profile{i}"))

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return dict(pool.map(one, enumerate(files)))


def test_docs_build_with_warnings_as_errors(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    for page in ("index.html", "guide.html", "library.html", "cli.html", "reference/api.html"):
        assert page in pages, f"{page} missing from the built site ({sorted(pages)})"


def test_docs_build_fails_on_a_warning(tmp_path):
    """-W makes a broken cross-reference an error (so the build above proves the pages are clean)."""
    pytest.importorskip("myst_parser", reason="myst-parser is not installed: pip install -e '.[docs]'")
    src = tmp_path / "src"  # the site's own configuration, two pages (the whole site's build is the test above)
    src.mkdir()
    shutil.copy(DOCS / "conf.py", src / "conf.py")
    (src / "index.md").write_text("# Home\n\n```{toctree}\nbroken\n```\n", encoding="utf-8")
    (src / "broken.md").write_text("# Broken\n\nSee {doc}`no_such_page`.\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(src), str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode != 0 and "no_such_page" in proc.stderr


def test_every_page_renders_with_a_title_and_no_broken_internal_link(site, rendered):
    untitled = [str(p.relative_to(site)) for p, page in rendered.items() if not page.title.strip()]
    assert not untitled, f"pages without a title: {untitled}"
    bad = broken_links(rendered, site)
    assert not bad, "broken internal links:\n" + "\n".join(bad)


def test_api_page_lists_the_main_entry_points(site, rendered):
    api = rendered[site / "reference" / "api.html"]
    missing = [name for name in API_NAMES if name not in api.ids]
    assert not missing, f"the API reference does not document {missing}"


def test_broken_links_finds_a_missing_page_and_anchor(tmp_path):
    """The link checker itself: a missing page and a missing anchor are both reported."""
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    a.write_text("x"), b.write_text("x")
    pages = {a: parse('<a href="b.html#here">1</a><a href="c.html">2</a><a href="b.html#gone">3</a>'
                      '<a href="https://example.org/x">4</a>'),
             b: parse('<title>B</title><p id="here">')}
    bad = broken_links(pages, tmp_path)
    assert bad == ["a.html -> c.html (no such page)", "a.html -> b.html#gone (no such anchor)"]
