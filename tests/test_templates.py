"""The pages' templates (dganalysis.templates): escaped as html.escape escapes, HTML passed through, a missing value
an error, every template loadable from the package."""

import html
from importlib import resources

import jinja2
import pytest

from dganalysis import templates

TRICKY = """a & b < c > d "quoted" it's"""


def test_printed_values_are_escaped_as_html_escape_does():
    page = templates.template_environment().from_string("<p title='{{ x }}'>{{ x }} {{ n }} {{ none }}</p>")
    got = page.render(x=TRICKY, n=0.5, none=None)
    assert got == f"<p title='{html.escape(TRICKY)}'>{html.escape(TRICKY)} 0.5 None</p>"
    assert "&quot;" in got and "&#x27;" in got and "&#34;" not in got and "&#39;" not in got  # not jinja2's own


def test_html_and_safe_are_printed_as_they_are():
    page = templates.template_environment().from_string("{{ svg }}|{{ raw|safe }}|{{ text }}")
    assert page.render(svg=templates.Html("<svg a='1'/>"), raw="<b>", text="<b>") == "<svg a='1'/>|<b>|&lt;b&gt;"


def test_a_missing_value_is_an_error_and_whitespace_is_kept():
    with pytest.raises(jinja2.UndefinedError, match="missing"):
        templates.template_environment().from_string("{{ missing }}").render()
    assert templates.template_environment().from_string("{% if 1 %}a{% endif %}\n  b\n").render() == "a\n  b\n"


def test_every_template_is_package_data_and_loads():
    names = sorted(p.name for p in resources.files("dganalysis.templates").iterdir() if p.name.endswith(".j2"))
    assert names == ["audit.html.j2", "report.html.j2"]
    for name in names:
        assert templates.template_environment().get_template(name) is not None
