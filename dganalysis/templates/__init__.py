"""The HTML pages' jinja2 templates, shipped beside this module as package data, and :func:`render_template`.

* ``report.html.j2`` — a profile's report page (:mod:`dganalysis.studies.report`);
* ``audit.html.j2`` — the audit's page (:mod:`dganalysis.audit.outputs`).

Autoescaping is on: a value a template prints is escaped as :func:`html.escape` escapes it (``&``, ``<``, ``>``,
``"`` as ``&quot;``, ``'`` as ``&#x27;``; jinja2's own escaping writes the quotes as ``&#34;`` and ``&#39;``), unless
it is HTML already (:class:`Html`, a template's ``|safe``): an inline SVG, Markdown rendered by markdown-it, a pandas
table. Whitespace is written in a template as the page has it (no block trimming; a tag's ``-`` strips the
whitespace beside it).
"""

from __future__ import annotations

import functools
import html
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2


class Html(str):
    """HTML text (an inline SVG, rendered Markdown, a pandas table, text escaped already): a template prints it as it
    is (the autoescape leaves an object with ``__html__`` alone)."""

    def __html__(self) -> str:
        return str(self)


def _escaped(value: Any) -> Any:
    """What a template prints for ``value``: markup as it is, anything else ``html.escape(str(value))``."""
    if hasattr(value, "__html__"):
        return value
    return Html(html.escape(str(value)))


@functools.cache
def template_environment() -> jinja2.Environment:
    """The templates' environment: loaded from this package, autoescaped (see the module docstring), undefined names
    an error. jinja2 is imported here, when a page is first rendered (~0.06 s), not with the package."""
    import jinja2

    return jinja2.Environment(loader=jinja2.PackageLoader("dganalysis", "templates"), autoescape=True,
                              finalize=_escaped, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render_template(name: str, **context: Any) -> str:
    """The template ``name`` (e.g. ``"report.html.j2"``) rendered with ``context``."""
    return template_environment().get_template(name).render(**context)
