"""Names and explanations of meta-evaluation and probe figures in templates, from
their one home, :mod:`analysis.glossary`: ``{{ key|figure_label }}``,
``{{ key|figure_help }}``, and ``{{ x|number:kind }}`` for a bare number shown the
way the ``stat`` filter shows values of that kind."""

from __future__ import annotations

from django import template

from analysis.glossary import figure
from analysis.templatetags.agreement_ui import format_number

register = template.Library()


@register.filter
def figure_label(key) -> str:
    return figure(str(key)).label


@register.filter
def figure_help(key) -> str:
    return figure(str(key)).help


@register.filter
def number(value, kind: str = "corr") -> str:
    """A bare number (a probe's baseline) as `stat` shows a value of `kind`."""
    return format_number(value, kind)
