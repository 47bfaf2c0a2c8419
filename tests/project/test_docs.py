"""The documentation site: built with warnings as errors, every page opened in headless Chromium.

The build is ``python -m sphinx -W --keep-going -b html docs <tmp>`` (what the README says); one headless Chromium
opens each page in turn (:class:`Browser`: its DevTools protocol over ``--remote-debugging-pipe``, the DOM read
once the page's load event has fired) and the rendered DOM is checked: a title, every internal link pointing at a page and
anchor that exist, and the API reference listing the library's main entry points. Without Chromium the page checks
skip, saying how to enable them.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
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


class Browser:
    """One headless Chromium driven over its DevTools pipe (it reads commands on fd 3 and writes replies on fd 4, each
    a JSON message ended by a NUL byte), so the pages share one browser start instead of paying one each."""

    def __init__(self, exe: str, profile: Path, timeout: float = 60.0) -> None:
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()
        self.timeout, self._buf, self._id, self._events, self._session = timeout, b"", 0, [], ""

        def pipe_fds() -> None:  # in the child, before exec: the pipe ends at the fds Chromium expects
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pipe_fds,
            pass_fds=(3, 4))
        os.close(to_child)
        os.close(from_child)

    def _read(self) -> dict:
        deadline = time.monotonic() + self.timeout
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError(f"chromium sent nothing for {self.timeout} s")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed its pipe: {self.proc.stderr.read().decode()[-2000:]}")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method: str, session: str = "", **params) -> dict:
        self._id += 1
        os.write(self._w, json.dumps({"id": self._id, "method": method, "params": params,
                                      **({"sessionId": session} if session else {})}).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                assert "error" not in reply, f"chromium: {method}: {reply['error']}"
                return reply.get("result", {})
            self._events.append(reply)

    def _wait(self, event: str) -> None:
        while not any(e.get("method") == event and e.get("sessionId") == self._session for e in self._events):
            self._events.append(self._read())

    def dom(self, page: Path) -> str:
        """The page's DOM once its load event has fired (its scripts have run)."""
        if not self._session:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            self.call("Page.enable", self._session)
        self._events.clear()
        self.call("Page.navigate", self._session, url=page.as_uri())
        self._wait("Page.loadEventFired")
        out = self.call("Runtime.evaluate", self._session, expression="document.documentElement.outerHTML",
                        returnByValue=True)["result"]["value"]
        assert "<head" in out, f"chromium could not render {page}"
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError, TimeoutError, RuntimeError, AssertionError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def rendered(site, tmp_path_factory) -> dict[Path, _Page]:
    browser = Browser(chromium(), tmp_path_factory.mktemp("chromium") / "profile")
    try:
        return {page: parse(browser.dom(page))
                for page in sorted(p for p in site.rglob("*.html") if "_static" not in p.parts)}
    finally:
        browser.close()


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
