"""Presentation of agreement statistics: a value with its interval and count, or
"not enough data (n=..)" when it is undefined (never 0, never NaN)."""

from __future__ import annotations

import math

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from analysis.selectors.agreement.result import Stat

register = template.Library()


def _number(value: float, kind: str) -> str:
    if kind == "share":
        return f"{100 * value:.0f}%"
    if kind == "signed":
        return f"{value:+.2f}"
    return f"{value:.2f}"


def _defined(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def format_number(value, kind: str = "corr") -> str:
    """A bare number as the `stat` filter shows values of `kind` ("" if undefined)."""
    if kind == "count":
        return str(value) if value is not None else ""
    if kind == "signed" and value == 0:
        return "0"  # a baseline of no difference, not a measured +0.00
    return _number(float(value), kind) if _defined(value) else ""


def _parts(result) -> tuple | None:
    """(value, n, ci, reason) of an agreement :class:`Stat` or of a statistic's
    JSON {"value", "n", "ci", "reason"} (another page's figures); None otherwise."""
    if isinstance(result, Stat):
        return result.value, result.n, result.ci, result.reason
    if isinstance(result, dict):
        return (
            result.get("value"),
            result.get("n") or 0,
            result.get("ci") or None,
            result.get("reason") or "",
        )
    return None


@register.filter
def stat(result, kind: str = "corr") -> SafeString:
    """`{{ r|stat:"corr" }}` for a statistic (an agreement :class:`Stat` or its
    JSON {"value", "n", "ci", "reason"}): the value, its 95% interval and n; kinds:
    corr (0.00), share (0%), signed (+0.00)."""
    parts = _parts(result)
    if parts is None:
        return mark_safe('<span class="stat-undefined">not enough data (n=0)</span>')
    value, n, ci, reason = parts
    if not _defined(value):
        return format_html(
            '<span class="stat-undefined" title="{}">not enough data (n={})</span>',
            reason or "not enough data",
            n,
        )
    ci_html = ""
    if ci and len(ci) == 2 and _defined(ci[0]) and _defined(ci[1]):
        ci_html = format_html(
            '<span class="stat-ci" title="95% bootstrap interval">[{}, {}]</span>',
            _number(ci[0], kind),
            _number(ci[1], kind),
        )
    return format_html(
        '<span class="stat-value">{}</span>{}<span class="stat-n">n={}</span>',
        _number(value, kind),
        ci_html,
        n,
    )


@register.filter
def stat_reason(result, kind: str = "corr") -> SafeString:
    """`stat`, except that an undefined figure shows its reason in words (the reader
    needs it to act, e.g. "no response ... comes from the judge's own model family"),
    then its n."""
    value, n, _, reason = _parts(result) or (None, 0, None, "")
    if _defined(value) or not reason:
        return stat(result, kind)
    return format_html(
        '<span class="stat-undefined">{}</span><span class="stat-n">n={}</span>',
        reason,
        n,
    )


@register.filter
def stat_value(result, kind: str = "corr") -> str:
    """Only the number (for tooltips), or "not enough data"."""
    value = (_parts(result) or (None,))[0]
    return _number(value, kind) if _defined(value) else "not enough data"


@register.filter
def ability_class(name) -> str:
    """`Logical Thinking` -> `ability-logical_thinking` (app.css colours)."""
    return "ability-" + str(name or "").strip().lower().replace(" ", "_")
