"""Rendering of instruction, reference and response texts: Markdown, made safe.

Model outputs are untrusted input shown to raters and researchers. They are rendered as
Markdown (code blocks highlighted by Pygments) and then sanitised with nh3, so a
response cannot run script, inject event handlers or link to `javascript:` URLs.
"""

from __future__ import annotations

import markdown
import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe
from markdown.extensions import Extension

register = template.Library()

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s",
    "span", "strong", "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr",
    "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "ol": {"start"},
    "th": {"align", "colspan", "rowspan", "scope"},
    "td": {"align", "colspan", "rowspan"},
    # Pygments marks tokens with classes; `pygments.css` styles them.
    "div": {"class"},
    "pre": {"class"},
    "code": {"class"},
    "span": {"class"},
}
URL_SCHEMES = {"http", "https", "mailto"}


class _RawHtmlAsText(Extension):
    """Treat HTML written inside a text as text.

    A model that answers "use a <div> here" must be shown saying exactly that, not
    have its tag interpreted (and then stripped by the sanitiser).
    """

    def extendMarkdown(self, md):  # noqa: N802 (Markdown's API name)
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")


def markdown_to_safe_html(text: str) -> str:
    """Markdown -> sanitised HTML (fenced code, tables, Pygments highlighting)."""
    # A Markdown instance keeps state between conversions and is not thread-safe, so
    # each call gets its own.
    md = markdown.Markdown(
        extensions=["fenced_code", "codehilite", "tables", _RawHtmlAsText()],
        extension_configs={
            "codehilite": {"css_class": "codehilite", "guess_lang": False}
        },
        output_format="html",
    )
    html = md.convert(text or "")
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


@register.filter(is_safe=True)
def render_markdown(text: str | None) -> SafeString:
    """`{{ response.text|render_markdown }}`: the text as safe HTML."""
    return mark_safe(markdown_to_safe_html(text or ""))  # noqa: S308 (sanitised by nh3)
